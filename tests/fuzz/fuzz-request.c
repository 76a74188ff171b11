/* libFuzzer target: client request lines through request_parse, checking that
 * what it accepts honours the documented limits and that it never accepts or
 * refuses without saying so. */
#include <errno.h>

#include "../../bpf/profd.h"
#include "fuzz.h"
#include "request.h"

/* The bits parse_states may set: one per ps(1) letter it knows. */
#define STATE_BITS_KNOWN                                                         \
        ((1u << PROFD_STATE_RUNNING) | (1u << PROFD_STATE_SLEEPING) |            \
         (1u << PROFD_STATE_DISK) | (1u << PROFD_STATE_STOPPED) |                \
         (1u << PROFD_STATE_IDLE))

static void check_accepted(const struct request *r) {
        const struct query_request *q = &r->query;

        FUZZ_CHECK(r->op == REQUEST_STATUS || r->op == REQUEST_FLUSH || r->op == REQUEST_QUERY);
        if (r->op != REQUEST_QUERY) {
                FUZZ_CHECK(q->comm == NULL && q->pid == 0 && q->state_mask == 0);
                return;
        }
        FUZZ_CHECK(q->kind == PROFD_KIND_CPU || q->kind == PROFD_KIND_OFFCPU ||
                   q->kind == PROFD_KIND_WAKEUP);
        FUZZ_CHECK(q->until_ns < q->since_ns);
        FUZZ_CHECK(q->pid <= INT32_MAX);
        if (q->comm) {
                size_t n = strlen(q->comm);
                FUZZ_CHECK(n >= 1 && n <= REQUEST_COMM_MAX);
        }
        FUZZ_CHECK((q->state_mask & ~STATE_BITS_KNOWN) == 0);
        FUZZ_CHECK(q->state_mask == 0 || q->kind != PROFD_KIND_CPU);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct request r;
        char *error = NULL;
        int ret;

        /* Not NUL-terminated, as a line cut out of the socket buffer is not. */
        ret = request_parse((const char *) data, size, &r, &error);
        if (ret == 0) {
                FUZZ_CHECK(error == NULL);
                check_accepted(&r);
                request_done(&r);
                /* done twice must be harmless: the server's cleanup paths may */
                request_done(&r);
                FUZZ_CHECK(r.query.comm == NULL);
        } else {
                FUZZ_CHECK(ret == -EINVAL || ret == -ENOMEM);
                /* a refusal the client can read, not an empty line */
                if (ret == -EINVAL)
                        FUZZ_CHECK(error && error[0] != '\0');
                free(error);
        }
        return 0;
}
