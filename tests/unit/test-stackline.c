/* The stack lines profd streams (stackline_append() in common/protocol.c,
 * written as text) say exactly what oracle_stack_line() below, built from
 * jansson objects as profd once wrote them, says:
 * same keys and values for every kind of frame, kernel frames collapsed for
 * unprivileged callers, raw names, groups, strings that need escaping; and
 * the text is byte for byte what jansson writes with JSON_ENSURE_ASCII. A
 * name that is not UTF-8 becomes U+FFFD instead of failing the answer. */
#include <jansson.h>
#include <stdlib.h>

#include "macro.h"
#include "protocol.h"
#include "tests.h"

static const struct store_frame_out frames[] = {
        { .name = "main", .raw_name = "main", .module = "/usr/bin/app", .build_id = "0123abcd", .address = 0x1139,
          .has_address = true, .resolved = true, .file = "app.c", .line = 10 },
        { .name = "ns::Klass::run(int)", .raw_name = "_ZN2ns5Klass3runEi", .module = "/usr/lib/libx.so",
          .address = 0x42, .has_address = true, .resolved = true },
        { .name = "helper", .raw_name = "helper", .module = "/usr/bin/app", .file = "inline.h", .line = 3,
          .address = 0x1140, .has_address = true, .resolved = true, .inlined = true },
        { .name = "LazyCompile:*f \"quoted\" \\ /srv/a.js:1", .raw_name = NULL, .module = "[jit]",
          .address = 0x7f0000001000, .has_address = true, .resolved = true, .jit = true },
        { .name = "caf\xc3\xa9_\xe2\x82\xac_\xf0\x9f\x98\x80\t\n\x01\x7f", .module = "/opt/\xc3\xbc/bin",
          .address = 1, .has_address = true, .resolved = true },
        { .name = "app+0x99", .raw_name = "app+0x99", .module = "/usr/bin/app", .address = 0x99, .has_address = true },
        { .name = "entry_SYSCALL_64", .raw_name = "entry_SYSCALL_64", .module = "[kernel.kallsyms]",
          .address = 0xffffffff81000100ULL, .has_address = true, .kernel = true, .resolved = true },
        { .name = "do_syscall_64", .raw_name = "do_syscall_64", .module = "[kernel.kallsyms]",
          .address = 0xffffffff81000200ULL, .has_address = true, .kernel = true, .resolved = true },
        { .name = "[lost]", .module = "[lost]", .kernel = true },
};

/* The oracle: the same line built from jansson objects, key by key (the
 * keys spelled out here rather than taken from protocol.h, so a misspelt
 * macro fails too). The folded string itself is checked by check_folded(). */
static json_t *oracle_folded_line(const struct store_stack_out *stack, const struct stack_style *style) {
        struct stackline_buf b = {};
        json_t *line = NULL;

        if (stackline_folded(&b, stack, style) >= 0)
                line = json_pack("{s:s, s:I, s:s%}", "type", "stack", "value", (json_int_t) stack->value,
                                 "folded", b.data ?: "", b.len);
        stackline_buf_done(&b);
        if (line && stack->group && json_object_set_new(line, "group", json_string(stack->group)) < 0) {
                json_decref(line);
                return NULL;
        }
        return line;
}

static json_t *oracle_stack_line(const struct store_stack_out *stack, const struct stack_style *style) {
        bool collapse_kernel = style->collapse_kernel, raw_names = style->raw_names;
        json_t *arr, *line;

        if (style->folded)
                return oracle_folded_line(stack, style);
        arr = json_array();
        if (!arr)
                return NULL;
        for (size_t i = 0; i < stack->n_frames; i++) {
                const struct store_frame_out *fr = &stack->frames[i];
                json_t *f;

                if (collapse_kernel && fr->kernel) {
                        /* what perf_event_paranoid=2 shows a user of the kernel: that
                         * it was there, no function and no address */
                        if (i > 0 && stack->frames[i - 1].kernel)
                                continue;
                        f = json_pack("{s:s, s:s, s:b, s:b}", "name", "[kernel]", "module", "[kernel]",
                                      "kernel", 1, "resolved", 0);
                } else {
                        const char *name = raw_names && fr->raw_name ? fr->raw_name : fr->name;

                        f = json_pack("{s:s, s:s, s:b, s:b}", "name", name, "module", fr->module,
                                      "kernel", fr->kernel, "resolved", fr->resolved);
                        if (f && fr->has_address)
                                json_object_set_new(f, "address", json_integer((json_int_t) fr->address));
                        if (f && fr->build_id)
                                json_object_set_new(f, "build_id", json_string(fr->build_id));
                        if (f && fr->jit)
                                json_object_set_new(f, "jit", json_true());
                        if (f && fr->file)
                                json_object_set_new(f, "file", json_string(fr->file));
                        if (f && fr->line)
                                json_object_set_new(f, "line", json_integer(fr->line));
                        if (f && fr->inlined)
                                json_object_set_new(f, "inlined", json_true());
                        if (f && fr->raw_name && !streq(fr->raw_name, name))
                                json_object_set_new(f, "raw_name", json_string(fr->raw_name));
                }
                if (!f || json_array_append_new(arr, f) < 0) {
                        json_decref(arr);
                        return NULL;
                }
        }
        line = json_pack("{s:s, s:I, s:o}", "type", "stack", "value", (json_int_t) stack->value, "frames", arr);
        if (line && stack->group && json_object_set_new(line, "group", json_string(stack->group)) < 0) {
                json_decref(line);
                return NULL;
        }
        return line;
}

/* Both writers on one stack: the same JSON value, and the same text. */
static void check_style(const struct store_stack_out *st, const struct stack_style *style) {
        struct stackline_buf b = {};
        json_t *want = oracle_stack_line(st, style), *got;
        json_error_t err;
        char *want_text;

        CHECK(want != NULL);
        CHECK_INT_EQ(stackline_append(&b, st, style), 0);
        CHECK(b.len > 0 && b.data[b.len - 1] == '\n');
        got = json_loadb(b.data, b.len, 0, &err);
        if (!got)
                fprintf(stderr, "stackline wrote invalid JSON (%s): %.*s\n", err.text, (int) b.len, b.data);
        CHECK(got && want && json_equal(got, want));
        want_text = want ? json_dumps(want, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
        CHECK(want_text && b.len == strlen(want_text) + 1 && memcmp(b.data, want_text, b.len - 1) == 0);
        if (want_text && (b.len != strlen(want_text) + 1 || memcmp(b.data, want_text, b.len - 1) != 0))
                fprintf(stderr, "jansson:   %s\nstackline: %.*s", want_text, (int) b.len, b.data);
        free(want_text);
        /* profctl's reader of plain folded lines: takes exactly the lines
         * without a group whose text needs no escape, and reads them as
         * the JSON parser does */
        if (style->folded && want) {
                const char *text = json_string_value(json_object_get(want, "folded")), *got_text;
                bool plain = !st->group;
                uint64_t value;
                size_t len;

                for (const char *c = text; plain && c && *c; c++)
                        plain = *c >= 0x20 && *c < 0x7f && *c != '"' && *c != '\\';
                CHECK(stackline_parse_plain_folded(b.data, b.len - 1, &value, &got_text, &len) == plain);
                if (plain && stackline_parse_plain_folded(b.data, b.len - 1, &value, &got_text, &len)) {
                        CHECK(value == st->value);
                        CHECK(len == strlen(text) && memcmp(got_text, text, len) == 0);
                }
        }
        json_decref(got);
        json_decref(want);
        stackline_buf_done(&b);
}

/* Lines the plain reader must leave to the JSON parser. */
static void test_plain_folded_refuses_every_other_line(void) {
        static const char *const others[] = {
                "{\"type\":\"stack\",\"value\":7,\"folded\":\"a;b\",\"group\":\"g\"}",
                "{\"type\":\"stack\",\"value\":07,\"folded\":\"a;b\"}",
                "{\"type\":\"stack\",\"value\":-7,\"folded\":\"a;b\"}",
                "{\"type\":\"stack\",\"value\":9223372036854775808,\"folded\":\"a\"}",
                "{\"type\":\"stack\",\"value\":7,\"folded\":\"a\\\"b\"}",
                "{\"type\":\"stack\",\"value\":7,\"folded\":\"a\\u00e9\"}",
                "{\"type\":\"stack\",\"value\":7,\"folded\":\"a\"} ",
                "{\"type\":\"stack\",\"value\":7,\"folded\":\"a\"",
                "{\"type\":\"stack\",\"value\":7,\"frames\":[]}",
                "{\"type\":\"end\",\"stacks\":1}",
                "{\"type\":\"stack\",\"value\":,\"folded\":\"a\"}",
                "{\"type\":\"stack\",\"value\":7,\"folded\":\"caf\xc3\xa9\"}",
                "",
        };
        const char *max = "{\"type\":\"stack\",\"value\":9223372036854775807,\"folded\":\"x;y z\"}", *text;
        uint64_t value;
        size_t len;

        for (size_t i = 0; i < ELEMENTSOF(others); i++) {
                bool taken = stackline_parse_plain_folded(others[i], strlen(others[i]), &value, &text, &len);

                if (taken)
                        fprintf(stderr, "plain folded reader took: %s\n", others[i]);
                CHECK(!taken);
        }
        CHECK(stackline_parse_plain_folded(max, strlen(max), &value, &text, &len));
        CHECK(value == (uint64_t) INT64_MAX && len == 5 && memcmp(text, "x;y z", 5) == 0);
}

/* Every style: frames and folded, with and without lines. */
static void check_same(const struct store_stack_out *st, bool collapse, bool raw) {
        for (int folded = 0; folded < 2; folded++)
                for (int lines = 0; lines <= folded; lines++)
                        check_style(st, &(struct stack_style) { .collapse_kernel = collapse, .raw_names = raw,
                                                                .folded = folded, .lines = lines });
}

/* The folded string itself, exactly. */
static void check_folded(const struct store_stack_out *st, const struct stack_style *style, const char *want) {
        struct stackline_buf b = {};

        CHECK_INT_EQ(stackline_folded(&b, st, style), 0);
        CHECK(b.len == strlen(want) && memcmp(b.data ?: "", want, b.len) == 0);
        if (b.len != strlen(want) || memcmp(b.data ?: "", want, b.len) != 0)
                fprintf(stderr, "folded: want %s\n        got  %.*s\n", want, (int) b.len, b.data ?: "");
        stackline_buf_done(&b);
}

static const struct stack_style plain_style = {};
#define STYLE_APPEND(b, st) stackline_append((b), (st), &plain_style)

int main(void) {
        struct store_stack_out st = { .frames = frames, .n_frames = ELEMENTSOF(frames) - 1, .value = 12345 };

        /* every frame kind, privileged and not, demangled and raw */
        for (int collapse = 0; collapse < 2; collapse++)
                for (int raw = 0; raw < 2; raw++)
                        check_same(&st, collapse, raw);
        /* with a group; a stack that is all kernel; one frame; the [lost] frame */
        st.group = "nginx.service \"x\"";
        check_same(&st, false, false);
        check_same(&st, true, false);
        st = (struct store_stack_out) { .frames = frames + 6, .n_frames = 3, .value = (uint64_t) 1 << 40 };
        check_same(&st, true, false);
        check_same(&st, false, true);
        st = (struct store_stack_out) { .frames = frames, .n_frames = 1, .value = 1 };
        check_same(&st, false, false);

        /* not UTF-8: jansson refuses the string, stackline writes U+FFFD */
        struct store_frame_out bad = { .name = "bad\xff\xc3(", .module = "/m", .resolved = true };
        struct stackline_buf b = {};
        json_t *o;

        st = (struct store_stack_out) { .frames = &bad, .n_frames = 1, .value = 1 };
        CHECK_INT_EQ(STYLE_APPEND(&b, &st), 0);
        o = json_loadb(b.data, b.len, 0, NULL);
        CHECK(o != NULL);
        if (o)
                CHECK_STR_EQ(json_string_value(json_object_get(json_array_get(json_object_get(o, "frames"), 0),
                                                               "name")),
                             "bad\xef\xbf\xbd\xef\xbf\xbd(");
        json_decref(o);
        /* appending goes after what the buffer holds */
        size_t first = b.len;
        CHECK_INT_EQ(STYLE_APPEND(&b, &st), 0);
        CHECK_INT_EQ(b.len, 2 * first);
        stackline_buf_done(&b);

        /* folded: names sanitized, kernel suffix, lines, groups, collapsing */
        st = (struct store_stack_out) { .frames = frames, .n_frames = 3, .value = 7 };
        check_folded(&st, &(struct stack_style) {}, "main;ns::Klass::run(int);helper");
        check_folded(&st, &(struct stack_style) { .raw_names = true }, "main;_ZN2ns5Klass3runEi;helper");
        check_folded(&st, &(struct stack_style) { .lines = true }, "main (app.c:10);ns::Klass::run(int);helper (inline.h:3)");
        st = (struct store_stack_out) { .frames = frames + 4, .n_frames = 5, .value = 7, .group = "a;b-1" };
        check_folded(&st, &(struct stack_style) {},
                     "a:b-1;caf\xc3\xa9_\xe2\x82\xac_\xf0\x9f\x98\x80????;app+0x99;entry_SYSCALL_64_[k];"
                     "do_syscall_64_[k];[lost]_[k]");
        check_folded(&st, &(struct stack_style) { .collapse_kernel = true },
                     "a:b-1;caf\xc3\xa9_\xe2\x82\xac_\xf0\x9f\x98\x80????;app+0x99;[kernel]_[k]");
        st = (struct store_stack_out) { .frames = &bad, .n_frames = 1, .value = 1 };
        check_folded(&st, &(struct stack_style) {}, "bad?" "?(");
        st = (struct store_stack_out) { .frames = frames, .n_frames = 0, .value = 1 };
        check_folded(&st, &(struct stack_style) {}, "[unknown]");
        test_plain_folded_refuses_every_other_line();
        /* what the writers keep as it is, and what they replace */
        CHECK(utf8_valid("") && utf8_valid("main") && utf8_valid("caf\xc3\xa9_\xf0\x9f\x98\x80"));
        CHECK(!utf8_valid("bad\xff") && !utf8_valid("\xc0\xaf") && !utf8_valid("\xed\xa0\x80") &&
              !utf8_valid("cut\xe2\x82"));
        TESTS_DONE();
}
