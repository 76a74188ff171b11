/* Parsing and validation of client requests (one JSON object per line, see
 * docs/protocol.md). Pure: no I/O, so it is unit-tested and fuzzed. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum request_op {
        REQUEST_STATUS,
        REQUEST_FLUSH,
        REQUEST_QUERY,
};

/* Largest request line accepted; a query needs a few hundred bytes. */
#define REQUEST_MAX_BYTES (64 * 1024)

/* The longest comm the kernel keeps (TASK_COMM_LEN - 1): a longer name could
 * never match, so it is refused rather than silently matching nothing. */
#define REQUEST_COMM_MAX 15

struct query_request {
        int kind;           /* enum profd_kind */
        uint64_t since_ns;  /* window start, this long before now */
        uint64_t until_ns;  /* window end, this long before now */
        uint32_t pid;       /* 0: any */
        char *comm;         /* NULL: any */
        uint32_t state_mask; /* bits 1 << enum profd_state; 0: any */
        bool raw_names;      /* function names as in the symbol table (not demangled) */
};

struct request {
        enum request_op op;
        struct query_request query;
};

/* Parses one request. On failure returns -EINVAL (or -ENOMEM) and, for
 * -EINVAL, *ret_error is a malloc'd sentence naming the problem. */
int request_parse(const char *line, size_t len, struct request *ret, char **ret_error);
void request_done(struct request *r);
