/* The wire protocol's stack-line encoder and folded-text writer (protocol.h). */
#include "protocol.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

static bool reserve(struct stackline_buf *b, size_t more) {
        size_t cap;
        char *d;

        if (b->len + more <= b->cap)
                return true;
        cap = MAX(b->cap * 2, b->len + more + 256);
        d = realloc(b->data, cap);
        if (!d)
                return false;
        b->data = d;
        b->cap = cap;
        return true;
}

static bool put(struct stackline_buf *b, const char *s, size_t n) {
        if (!reserve(b, n))
                return false;
        memcpy(b->data + b->len, s, n);
        b->len += n;
        return true;
}

#define PUT_LITERAL(b, s) put((b), (s), sizeof(s) - 1)

/* Decodes one UTF-8 sequence at s (n bytes left): the code point and its
 * length, or 0 for an invalid sequence (overlong forms and surrogates too,
 * as jansson refuses them). */
size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *ret) {
        uint32_t c;
        size_t len;

        if (s[0] < 0x80) {
                *ret = s[0];
                return 1;
        }
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                len = 2, c = s[0] & 0x1f;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                len = 3, c = s[0] & 0x0f;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                len = 4, c = s[0] & 0x07;
        else
                return 0;
        if (len > n)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                c = (c << 6) | (s[i] & 0x3f);
        }
        if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10ffff)) || (c >= 0xd800 && c <= 0xdfff))
                return 0;
        *ret = c;
        return len;
}

bool utf8_valid(const char *str) {
        const unsigned char *p = (const unsigned char *) str;
        size_t n = strlen(str);

        while (n > 0) {
                uint32_t c;
                size_t len = p[0] < 0x80 ? 1 : utf8_decode(p, n, &c);

                if (len == 0)
                        return false;
                p += len;
                n -= len;
        }
        return true;
}

/* Copies the run at *s (n bytes left) of bytes from 0x20 to below max
 * but stop1 and stop2, and moves past it. Returns its length (0: none),
 * or SIZE_MAX when out of memory. */
static inline size_t put_run(struct stackline_buf *b, const unsigned char **s, size_t *n, unsigned char max,
                             unsigned char stop1, unsigned char stop2) {
        const unsigned char *p = *s;
        size_t run = 0;

        while (run < *n && p[run] >= 0x20 && p[run] < max && p[run] != stop1 && p[run] != stop2)
                run++;
        if (run > 0 && !put(b, (const char *) *s, run))
                return SIZE_MAX;
        *s += run;
        *n -= run;
        return run;
}

static bool put_u16(struct stackline_buf *b, uint32_t u) {
        char e[16];
        snprintf(e, sizeof(e), "\\u%04" PRIX32, u & 0xffff);
        return put(b, e, 6);
}

/* A JSON string: quotes, escapes, non-ASCII as \uXXXX (surrogate pairs above
 * the BMP), like jansson with JSON_ENSURE_ASCII. */
static bool put_string(struct stackline_buf *b, const char *str) {
        const unsigned char *s = (const unsigned char *) str;
        size_t n = strlen(str);

        if (!PUT_LITERAL(b, "\""))
                return false;
        while (n > 0) {
                size_t run = 0;
                uint32_t c;
                size_t len;

                /* plain ASCII is copied as a run */
                run = put_run(b, &s, &n, 0x80, '"', '\\');
                if (run == SIZE_MAX)
                        return false;
                if (run > 0)
                        continue;
                len = utf8_decode(s, n, &c);
                if (len == 0) {
                        c = 0xfffd;
                        len = 1;
                }
                s += len;
                n -= len;
                bool ok;
                switch (c) {
                case '"': ok = PUT_LITERAL(b, "\\\""); break;
                case '\\': ok = PUT_LITERAL(b, "\\\\"); break;
                case '\b': ok = PUT_LITERAL(b, "\\b"); break;
                case '\f': ok = PUT_LITERAL(b, "\\f"); break;
                case '\n': ok = PUT_LITERAL(b, "\\n"); break;
                case '\r': ok = PUT_LITERAL(b, "\\r"); break;
                case '\t': ok = PUT_LITERAL(b, "\\t"); break;
                default:
                        if (c < 0x10000)
                                ok = put_u16(b, c);
                        else {
                                c -= 0x10000;
                                ok = put_u16(b, 0xd800 | (c >> 10)) && put_u16(b, 0xdc00 | (c & 0x3ff));
                        }
                }
                if (!ok)
                        return false;
        }
        return PUT_LITERAL(b, "\"");
}

/* Whether text is its own JSON string body: printable ASCII without '"'
 * and '\\' (put_string would write it unchanged). */
static bool json_plain(const char *text, size_t n) {
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) text[i];

                if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
                        return false;
        }
        return true;
}

static bool put_int(struct stackline_buf *b, int64_t v) {
        char num[24];
        int n = snprintf(num, sizeof(num), "%" PRId64, v);
        return put(b, num, (size_t) n);
}

static bool put_bool(struct stackline_buf *b, bool v) {
        return v ? PUT_LITERAL(b, "true") : PUT_LITERAL(b, "false");
}

static bool put_frame(struct stackline_buf *b, const struct store_frame_out *fr, bool raw_names) {
        const char *name = raw_names && fr->raw_name ? fr->raw_name : fr->name;
        bool ok;

        ok = PUT_LITERAL(b, "{\"" PROTO_KEY_NAME "\":") && put_string(b, name) &&
             PUT_LITERAL(b, ",\"" PROTO_KEY_MODULE "\":") && put_string(b, fr->module) &&
             PUT_LITERAL(b, ",\"" PROTO_KEY_KERNEL "\":") && put_bool(b, fr->kernel) &&
             PUT_LITERAL(b, ",\"" PROTO_KEY_RESOLVED "\":") && put_bool(b, fr->resolved);
        /* addresses as signed integers, as jansson writes them (a kernel
         * address, top bit set, is negative; profctl reads it back) */
        if (ok && fr->has_address)
                ok = PUT_LITERAL(b, ",\"" PROTO_KEY_ADDRESS "\":") && put_int(b, (int64_t) fr->address);
        if (ok && fr->build_id)
                ok = PUT_LITERAL(b, ",\"" PROTO_KEY_BUILD_ID "\":") && put_string(b, fr->build_id);
        if (ok && fr->jit)
                ok = PUT_LITERAL(b, ",\"" PROTO_KEY_JIT "\":true");
        /* what debug info adds, only when there is some */
        if (ok && fr->file)
                ok = PUT_LITERAL(b, ",\"" PROTO_KEY_FILE "\":") && put_string(b, fr->file);
        if (ok && fr->line)
                ok = PUT_LITERAL(b, ",\"" PROTO_KEY_LINE "\":") && put_int(b, fr->line);
        if (ok && fr->inlined)
                ok = PUT_LITERAL(b, ",\"" PROTO_KEY_INLINED "\":true");
        if (ok && fr->raw_name && !streq(fr->raw_name, name))
                ok = PUT_LITERAL(b, ",\"" PROTO_KEY_RAW_NAME "\":") && put_string(b, fr->raw_name);
        return ok && PUT_LITERAL(b, "}");
}

/* One frame name as folded text (see folded_append_frame): the one
 * sanitizer. Frame names come from symbol tables and /proc, so they may hold
 * anything; ';' separates frames and '\n' ends the line, so those can't
 * pass, and other control characters would garble a terminal or an SVG. */
static bool put_folded_name(struct stackline_buf *b, const char *name) {
        const unsigned char *s = (const unsigned char *) (name ?: "");
        size_t n = strlen((const char *) s);

        /* an empty name would read as a missing frame (";;") */
        if (n == 0)
                return PUT_LITERAL(b, "[unknown]");
        while (n > 0) {
                uint32_t c;
                size_t len, run = 0;

                /* printable ASCII but ';' is copied as a run */
                run = put_run(b, &s, &n, 0x7f, ';', ';');
                if (run == SIZE_MAX)
                        return false;
                if (run > 0)
                        continue;
                len = s[0] < 0x80 ? 1 : utf8_decode(s, n, &c);
                if (len == 0 || s[0] < 0x20 || s[0] == 0x7f) {
                        if (!PUT_LITERAL(b, "?"))
                                return false;
                        len = MAX(len, (size_t) 1);
                } else if (s[0] == ';') {
                        if (!PUT_LITERAL(b, ":"))
                                return false;
                } else if (!put(b, (const char *) s, len))
                        return false;
                s += len;
                n -= len;
        }
        return true;
}

static const char *base_name(const char *path) {
        const char *slash = strrchr(path, '/');
        return slash ? slash + 1 : path;
}

int folded_append_frame(struct stackline_buf *b, const char *name, const char *file, unsigned line, bool kernel) {
        size_t start = b->len;
        bool ok = put_folded_name(b, name);

        if (ok && file && line) {
                char num[16];
                int len = snprintf(num, sizeof(num), ":%u)", line);

                ok = PUT_LITERAL(b, " (") && put_folded_name(b, base_name(file)) && put(b, num, (size_t) len);
        }
        if (ok && kernel)
                ok = PUT_LITERAL(b, "_[k]");
        if (!ok) {
                b->len = start;
                return -ENOMEM;
        }
        return 0;
}

int stackline_folded(struct stackline_buf *b, const struct store_stack_out *stack, const struct stack_style *style) {
        size_t start = b->len;
        bool ok = true, first = true;

        if (stack->group) {
                ok = put_folded_name(b, stack->group);
                first = false;
        }
        for (size_t i = 0; ok && i < stack->n_frames; i++) {
                const struct store_frame_out *fr = &stack->frames[i];

                ok = first || PUT_LITERAL(b, ";");
                first = false;
                if (!ok)
                        break;
                if (style->collapse_kernel && fr->kernel) {
                        if (i > 0 && stack->frames[i - 1].kernel) {
                                b->len--; /* the ';' just written */
                                continue;
                        }
                        ok = PUT_LITERAL(b, "[kernel]_[k]");
                        continue;
                }
                ok = folded_append_frame(b, style->raw_names && fr->raw_name ? fr->raw_name : fr->name,
                                         style->lines ? fr->file : NULL, fr->line, fr->kernel) >= 0;
        }
        /* a stack without frames still needs a name to be a line */
        if (ok && first)
                ok = PUT_LITERAL(b, "[unknown]");
        if (!ok) {
                b->len = start;
                return -ENOMEM;
        }
        return 0;
}

int stackline_append(struct stackline_buf *b, const struct store_stack_out *stack, const struct stack_style *style) {
        size_t start = b->len;
        bool ok, first = true;

        ok = PUT_LITERAL(b, "{\"" PROTO_KEY_TYPE "\":\"" PROTO_TYPE_STACK "\",\"" PROTO_KEY_VALUE "\":") && put_int(b, (int64_t) stack->value);
        if (ok && style->folded) {
                size_t text;

                /* written in place: the folded text is printable (control
                 * bytes became '?'), so it is its JSON string unless it has
                 * a '"', a '\\' or a byte past ASCII (rare) */
                ok = PUT_LITERAL(b, ",\"" PROTO_KEY_FOLDED "\":\"");
                text = b->len;
                ok = ok && stackline_folded(b, stack, style) >= 0;
                if (ok && !json_plain(b->data + text, b->len - text)) {
                        struct stackline_buf f = {};

                        ok = put(&f, b->data + text, b->len - text) && reserve(&f, 1);
                        if (ok) {
                                f.data[f.len] = '\0';
                                b->len = text - 1; /* before the opening '"' */
                                ok = put_string(b, f.data);
                                b->len--; /* its closing '"' comes below */
                        }
                        stackline_buf_done(&f);
                }
                ok = ok && PUT_LITERAL(b, "\"");
        } else if (ok) {
                ok = PUT_LITERAL(b, ",\"" PROTO_KEY_FRAMES "\":[");
                for (size_t i = 0; ok && i < stack->n_frames; i++) {
                        const struct store_frame_out *fr = &stack->frames[i];

                        if (style->collapse_kernel && fr->kernel) {
                                /* each run of kernel frames is one, without name or address */
                                if (i > 0 && stack->frames[i - 1].kernel)
                                        continue;
                                ok = (first || PUT_LITERAL(b, ",")) &&
                                     PUT_LITERAL(b, "{\"" PROTO_KEY_NAME "\":\"[kernel]\",\"" PROTO_KEY_MODULE
                                                    "\":\"[kernel]\",\"" PROTO_KEY_KERNEL "\":true,\""
                                                    PROTO_KEY_RESOLVED "\":false}");
                        } else
                                ok = (first || PUT_LITERAL(b, ",")) && put_frame(b, fr, style->raw_names);
                        first = false;
                }
                ok = ok && PUT_LITERAL(b, "]");
        }
        if (ok && stack->group)
                ok = PUT_LITERAL(b, ",\"" PROTO_KEY_GROUP "\":") && put_string(b, stack->group);
        ok = ok && PUT_LITERAL(b, "}\n");
        if (!ok) {
                b->len = start;
                return -ENOMEM;
        }
        return 0;
}

bool stackline_parse_plain_folded(const char *line, size_t len, uint64_t *ret_value, const char **ret_text,
                                  size_t *ret_text_len) {
        static const char head[] = "{\"" PROTO_KEY_TYPE "\":\"" PROTO_TYPE_STACK "\",\"" PROTO_KEY_VALUE "\":";
        static const char mid[] = ",\"" PROTO_KEY_FOLDED "\":\"";
        const char *p = line, *end = line + len, *text;
        uint64_t v = 0;

        if (len < sizeof(head) - 1 || memcmp(p, head, sizeof(head) - 1) != 0)
                return false;
        p += sizeof(head) - 1;
        /* a JSON integer as put_int writes it: no sign, no leading zero,
         * at most INT64_MAX (what jansson would read as an integer) */
        if (p >= end || *p < '0' || *p > '9' || (*p == '0' && p + 1 < end && p[1] >= '0' && p[1] <= '9'))
                return false;
        for (; p < end && *p >= '0' && *p <= '9'; p++) {
                if (v > ((uint64_t) INT64_MAX - (uint64_t) (*p - '0')) / 10)
                        return false;
                v = v * 10 + (uint64_t) (*p - '0');
        }
        if ((size_t) (end - p) < sizeof(mid) - 1 || memcmp(p, mid, sizeof(mid) - 1) != 0)
                return false;
        p += sizeof(mid) - 1;
        text = p;
        while (p < end && *p != '"')
                p++;
        /* the string ends at its first '"' only when it holds no escape */
        if (end - p != 2 || p[1] != '}' || !json_plain(text, (size_t) (p - text)))
                return false;
        *ret_value = v;
        *ret_text = text;
        *ret_text_len = (size_t) (p - text);
        return true;
}

int stackline_buf_append(struct stackline_buf *b, const char *s, size_t n) {
        return put(b, s, n) ? 0 : -ENOMEM;
}

void stackline_buf_done(struct stackline_buf *b) {
        free(b->data);
        *b = (struct stackline_buf) {};
}
