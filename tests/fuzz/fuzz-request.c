/* libFuzzer target: client request lines through request_parse, checking that
 * what it accepts honours the documented limits and that it never accepts or
 * refuses without saying so. */
#include <errno.h>
#include <stdbool.h>

#include "../../bpf/profd.h"
#include "fuzz.h"
#include "request.h"
#include "timed-samples.h"

/* The bits parse_states may set: one per ps(1) letter it knows. */
#define STATE_BITS_KNOWN                                                         \
        ((1u << PROFD_STATE_RUNNING) | (1u << PROFD_STATE_SLEEPING) |            \
         (1u << PROFD_STATE_DISK) | (1u << PROFD_STATE_STOPPED) |                \
         (1u << PROFD_STATE_IDLE))

static bool ends_with(const char *s, const char *suffix) {
        size_t n = strlen(s), l = strlen(suffix);
        return n > l && strcmp(s + n - l, suffix) == 0;
}

static void check_string(const char *s) {
        if (s)
                FUZZ_CHECK(s[0] != '\0' && strlen(s) <= REQUEST_STRING_MAX);
}

static void check_accepted(const struct request *r) {
        const struct query_request *q = &r->query;
        uint64_t from, to;
        char *error = NULL;
        int ret;

        FUZZ_CHECK(r->op == REQUEST_STATUS || r->op == REQUEST_FLUSH || r->op == REQUEST_QUERY ||
                   r->op == REQUEST_SERIES || r->op == REQUEST_TIMELINE);
        if (r->op != REQUEST_QUERY && r->op != REQUEST_SERIES && r->op != REQUEST_TIMELINE) {
                FUZZ_CHECK(q->comm == NULL && q->pid == 0 && q->state_mask == 0 && q->exe == NULL &&
                           q->cgroup == NULL && q->unit == NULL && q->container == NULL);
                return;
        }
        FUZZ_CHECK(q->kind == PROFD_KIND_CPU || q->kind == PROFD_KIND_OFFCPU ||
                   q->kind == PROFD_KIND_WAKEUP);
        /* a window made of durations only is checked when read */
        if (!q->last && !(q->have_from && q->from.absolute) && !(q->have_to && q->to.absolute))
                FUZZ_CHECK((q->have_to ? q->to.ns : q->until_ns) < (q->have_from ? q->from.ns : q->since_ns));
        FUZZ_CHECK(!q->last || (!q->have_from && !q->have_to));
        FUZZ_CHECK(q->pid <= INT32_MAX && q->tid <= INT32_MAX);
        FUZZ_CHECK(!q->have_uid || q->uid != UINT32_MAX);
        check_string(q->comm);
        check_string(q->exe);
        check_string(q->cgroup);
        check_string(q->unit);
        if (q->comm && !request_is_glob(q->comm))
                FUZZ_CHECK(strlen(q->comm) <= REQUEST_COMM_MAX);
        if (q->exe && !request_is_glob(q->exe))
                FUZZ_CHECK(q->exe[0] == '/');
        if (q->cgroup) {
                size_t n = strlen(q->cgroup);
                FUZZ_CHECK(q->cgroup[0] == '/' && (n == 1 || q->cgroup[n - 1] != '/'));
        }
        if (q->unit) {
                FUZZ_CHECK(!strchr(q->unit, '/'));
                if (!request_is_glob(q->unit))
                        FUZZ_CHECK(ends_with(q->unit, ".service") || ends_with(q->unit, ".scope"));
        }
        if (q->container) {
                size_t n = strlen(q->container);
                FUZZ_CHECK(n >= REQUEST_CONTAINER_MIN && n <= REQUEST_CONTAINER_MAX &&
                           strspn(q->container, "0123456789abcdef") == n);
        }
        FUZZ_CHECK((q->state_mask & ~STATE_BITS_KNOWN) == 0);
        FUZZ_CHECK(q->state_mask == 0 || q->kind != PROFD_KIND_CPU);
        FUZZ_CHECK(q->group == STORE_GROUP_NONE || q->group == STORE_GROUP_PROCESS || q->group == STORE_GROUP_UNIT ||
                   q->group == STORE_GROUP_THREAD);
        if (r->op == REQUEST_SERIES)
                FUZZ_CHECK(q->group == STORE_GROUP_NONE && !q->raw_names &&
                           (q->step_ns == 0 || q->step_ns >= REQUEST_STEP_MIN_NS));
        else
                FUZZ_CHECK(q->step_ns == 0);
        /* a timeline: on-CPU samples or off-CPU blocks of a window, by
         * their own time, at most the cap; wakeups keep no times */
        if (r->op == REQUEST_TIMELINE)
                FUZZ_CHECK((q->kind == PROFD_KIND_CPU || q->kind == PROFD_KIND_OFFCPU) && !q->last && !q->by_drains && q->group == STORE_GROUP_NONE &&
                           q->max_samples <= TIMED_MAX_SAMPLES);
        else
                FUZZ_CHECK(q->max_samples == 0);
        /* resolving the window against a fixed "now" either gives an
         * ordered window or says why not */
        if (!q->last) {
                ret = request_window(q, 1795237200ULL * 1000000000ULL, &from, &to, &error);
                if (ret == 0)
                        FUZZ_CHECK(from <= to && error == NULL);
                else
                        FUZZ_CHECK((ret == -EINVAL && error && error[0]) || ret == -ENOMEM);
                free(error);
        }
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
                FUZZ_CHECK(r.query.comm == NULL && r.query.exe == NULL && r.query.cgroup == NULL &&
                           r.query.unit == NULL && r.query.container == NULL);
        } else {
                FUZZ_CHECK(ret == -EINVAL || ret == -ENOMEM);
                /* a refusal the client can read, not an empty line */
                if (ret == -EINVAL)
                        FUZZ_CHECK(error && error[0] != '\0');
                free(error);
        }
        return 0;
}
