/* The columnar lines of a timeline answer: what "samples" and "spans"
 * lines share (timed-line.h). */
#include "timed-line.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int append_column(struct stackline_buf *b, const struct timed_column_out *c, const void *entries,
                         size_t size, size_t n, uint64_t t0) {
        char num[32];
        int r, k;

        r = stackline_buf_append(b, ",\"", 2);
        if (r >= 0)
                r = stackline_buf_append(b, c->key, strlen(c->key));
        if (r >= 0)
                r = stackline_buf_append(b, "\":[", 3);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                k = snprintf(num, sizeof(num), "%s%" PRIu64, i ? "," : "",
                             c->get((const char *) entries + i * size, t0));
                r = stackline_buf_append(b, num, (size_t) k);
        }
        if (r >= 0)
                r = stackline_buf_append(b, "]", 1);
        return r;
}

int timed_line_write(struct stackline_buf *b, const char *type, const char *t0_key, uint64_t t0,
                     const struct timed_column_out *columns, size_t n_columns, const void *entries, size_t size,
                     size_t n) {
        size_t len = b->len;
        char head[128];
        int r, k;

        k = snprintf(head, sizeof(head), "{\"" PROTO_KEY_TYPE "\":\"%s\",\"%s\":%" PRIu64, type, t0_key, t0);
        if (k < 0 || (size_t) k >= sizeof(head))
                return -EINVAL;
        r = stackline_buf_append(b, head, (size_t) k);
        for (size_t c = 0; r >= 0 && c < n_columns; c++)
                r = append_column(b, &columns[c], entries, size, n, t0);
        if (r >= 0)
                r = stackline_buf_append(b, "}\n", 2);
        if (r < 0)
                b->len = len;
        return r;
}

int timed_columns_parse(const json_t *line, const char *t0_key, struct timed_column *columns, size_t n_columns,
                        uint64_t *ret_t0, size_t *ret_n, const char *bad_origin, const char *bad_columns,
                        const char **ret_error) {
        const json_t *t0 = json_object_get(line, t0_key);
        size_t n = 0;

        *ret_error = NULL;
        if (!json_is_integer(t0) || json_integer_value(t0) < 0) {
                *ret_error = bad_origin;
                return -EBADMSG;
        }
        for (size_t c = 0; c < n_columns; c++) {
                const json_t *a = json_object_get(line, columns[c].key);

                if (!json_is_array(a) || json_array_size(a) == 0 || json_array_size(a) > TIMED_LINE_ENTRIES ||
                    (n && json_array_size(a) != n)) {
                        *ret_error = bad_columns;
                        return -EBADMSG;
                }
                n = json_array_size(a);
                columns[c].array = a;
        }
        *ret_t0 = (uint64_t) json_integer_value(t0);
        *ret_n = n;
        return 0;
}

bool timed_columns_at(const struct timed_column *columns, size_t n_columns, size_t i, uint64_t *values) {
        for (size_t c = 0; c < n_columns; c++) {
                const json_t *v = json_array_get(columns[c].array, i);

                if (!json_is_integer(v) || json_integer_value(v) < 0 ||
                    (uint64_t) json_integer_value(v) > columns[c].max)
                        return false;
                values[c] = (uint64_t) json_integer_value(v);
        }
        return true;
}
