/* Specification of the folded-stack lines profctl writes for flame graphs. */
#include <errno.h>
#include <stdlib.h>

#include "folded.h"
#include "macro.h"
#include "tests.h"

/* Runs folded_write_line into a memory stream; returns the text (caller
 * frees) and the writer's return value in *ret_r. */
static char *folded(const struct folded_frame *frames, size_t n, uint64_t value, int *ret_r) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        if (!f)
                abort();
        *ret_r = folded_write_line(f, frames, n, value);
        fclose(f);
        return text;
}

static void test_user_and_kernel_frames_root_first(void) {
        const struct folded_frame frames[] = {
                { "main", false },
                { "work", false },
                { "do_syscall_64", true },
        };
        int r;
        _cleanup_free_ char *s = folded(frames, ELEMENTSOF(frames), 42, &r);

        CHECK_INT_EQ(r, 0);
        CHECK_STR_EQ(s, "main;work;do_syscall_64_[k] 42\n");
}

static void test_separators_in_names_are_replaced(void) {
        const struct folded_frame frames[] = {
                { "a;b", false },          /* ';' would split the frame */
                { "line\nbreak", false },  /* '\n' would end the line */
                { "tab\there\x7f", false },
                { "ns::f(int, char)", false }, /* spaces are fine */
        };
        int r;
        _cleanup_free_ char *s = folded(frames, ELEMENTSOF(frames), 7, &r);

        CHECK_INT_EQ(r, 0);
        CHECK_STR_EQ(s, "a:b;line?break;tab?here?;ns::f(int, char) 7\n");
}

static void test_non_ascii_names_pass_unchanged(void) {
        const struct folded_frame frames[] = { { "caf\xc3\xa9", false } };
        int r;
        _cleanup_free_ char *s = folded(frames, 1, 1, &r);

        CHECK_STR_EQ(s, "caf\xc3\xa9 1\n");
}

static void test_empty_stack_and_names_are_unknown(void) {
        const struct folded_frame frames[] = { { "main", false }, { "", false }, { NULL, true } };
        int r;
        _cleanup_free_ char *empty = folded(NULL, 0, 5, &r);
        _cleanup_free_ char *blank = NULL;

        CHECK_INT_EQ(r, 0);
        CHECK_STR_EQ(empty, "[unknown] 5\n");

        blank = folded(frames, ELEMENTSOF(frames), 3, &r);
        CHECK_STR_EQ(blank, "main;[unknown];[unknown]_[k] 3\n");
}

static void test_large_weight_is_exact(void) {
        const struct folded_frame frames[] = { { "f", false } };
        int r;
        _cleanup_free_ char *s = folded(frames, 1, UINT64_MAX, &r);

        CHECK_STR_EQ(s, "f 18446744073709551615\n");
}

static void test_lines_accumulate(void) {
        const struct folded_frame a[] = { { "main", false }, { "a", false } };
        const struct folded_frame b[] = { { "main", false }, { "b", false } };
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        if (!f)
                abort();
        CHECK_INT_EQ(folded_write_line(f, a, 2, 3), 0);
        CHECK_INT_EQ(folded_write_line(f, b, 2, 4), 0);
        fclose(f);
        CHECK_STR_EQ(text, "main;a 3\nmain;b 4\n");
}

static void test_failed_stream_is_eio(void) {
        const struct folded_frame frames[] = { { "main", false } };
        /* a read-only stream fails every write */
        FILE *f = fopen("/dev/null", "r");

        if (!f)
                abort();
        CHECK_INT_EQ(folded_write_line(f, frames, 1, 1), -EIO);
        fclose(f);
}

int main(void) {
        test_user_and_kernel_frames_root_first();
        test_separators_in_names_are_replaced();
        test_non_ascii_names_pass_unchanged();
        test_empty_stack_and_names_are_unknown();
        test_large_weight_is_exact();
        test_lines_accumulate();
        test_failed_stream_is_eio();
        TESTS_DONE();
}
