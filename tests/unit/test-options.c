/* profctl's command options (client/options.c): the one table of view
 * options, the one getopt loop, and which options a command takes. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "options.h"
#include "tests.h"

static int help_calls;

static void count_help(void) {
        help_calls++;
}

enum { ARG_OWN = VIEW_OPTION_END };

struct own {
        const char *value;
        int calls;
};

static int own_parse(void *userdata, int opt, const char *arg) {
        struct own *o = userdata;

        if (opt != ARG_OWN)
                return -EBADMSG; /* the loop handed over another option */
        o->value = arg;
        o->calls++;
        return 0;
}

/* query's shape: every view option and every format. */
static const struct command_options all = {
        .name = "all",
        .help = count_help,
        .filters = true,
        .views = VIEW_OPTS_ALL,
        .formats = FORMATS_ALL,
};

/* series' shape: two view options and one of its own. */
static const struct command_options some = {
        .name = "some",
        .help = count_help,
        .filters = true,
        .views = VIEW_OPT(VIEW_JSON) | VIEW_OPT(VIEW_OUTPUT),
        .options = (const struct option[]) {
                { "own", required_argument, NULL, ARG_OWN },
                {}
        },
        .parse_option = own_parse,
};

/* diff's shape for --format: fewer formats, the last --format wins. */
static const struct command_options table_or_svg = {
        .name = "tos",
        .help = count_help,
        .views = VIEW_OPT(VIEW_FORMAT) | VIEW_OPT(VIEW_ICICLE) | VIEW_OPT(VIEW_LIMIT),
        .formats = FORMAT_BIT(FORMAT_TABLE) | FORMAT_BIT(FORMAT_SVG),
        .format_last_wins = true,
};

/* Runs the loop on a NULL-terminated argument list (argv[0] added). */
#define PARSE(cmd, f, v, userdata, ...)                                                          \
        ({                                                                                       \
                char *_argv[] = { (char *) "cmd", __VA_ARGS__, NULL };                           \
                command_parse_argv(cmd, (int) ELEMENTSOF(_argv) - 1, _argv, f, v, userdata);     \
        })

static void test_every_view_option_lands_in_its_field(void) {
        struct filters f = {};
        struct view_options v = {};

        CHECK_INT_EQ(PARSE(&all, &f, &v, NULL, "--format", "tree", "--json", "--output", "out.txt", "--by", "line",
                           "--children", "--limit", "7", "--lines", "--raw-names", "--root", "unit", "--focus",
                           "^parse", "--hide", "memcpy", "--max-depth", "3", "--icicle", "--title", "T",
                           "--quality", "--folded", "--pid", "42"), 1);
        CHECK_INT_EQ(v.format, FORMAT_TREE);
        CHECK(v.json && v.folded && v.children && v.lines && v.raw_names && v.icicle && v.quality);
        CHECK_STR_EQ(v.output, "out.txt");
        CHECK_INT_EQ(v.by, TOP_BY_LINE);
        CHECK_INT_EQ(v.limit, 7);
        CHECK_STR_EQ(v.root, "unit");
        CHECK_STR_EQ(v.focus_text, "^parse");
        CHECK_STR_EQ(v.hide_text, "memcpy");
        CHECK_INT_EQ(regexec(&v.focus, "parse_request", 0, NULL, 0), 0);
        CHECK(regexec(&v.focus, "read_parse", 0, NULL, 0) != 0);
        CHECK_INT_EQ(v.max_depth, 3);
        CHECK_STR_EQ(v.title, "T");
        CHECK_INT_EQ(v.given, VIEW_OPTS_ALL);
        /* the filters went to the filters */
        CHECK_INT_EQ(f.pid, 42);
        view_options_done(&v);
}

static void test_unset_options_are_not_given(void) {
        struct filters f = {};
        struct view_options v = {};

        CHECK_INT_EQ(PARSE(&all, &f, &v, NULL, "--limit", "0"), 1);
        CHECK(view_options_given(&v, VIEW_LIMIT));
        CHECK_INT_EQ(v.limit, 0);
        CHECK(!view_options_given(&v, VIEW_FORMAT));
        CHECK(!view_options_given(&v, VIEW_MAX_DEPTH));
        CHECK_INT_EQ(v.format, FORMAT_TABLE);
}

static void test_a_command_takes_only_its_view_options(void) {
        struct filters f = {};
        struct view_options v = {};
        struct own o = {};

        CHECK_INT_EQ(PARSE(&some, &f, &v, &o, "--json", "--own", "x", "--output", "o"), 1);
        CHECK(v.json);
        CHECK_STR_EQ(v.output, "o");
        CHECK_STR_EQ(o.value, "x");
        CHECK_INT_EQ(o.calls, 1);
        CHECK_INT_EQ(v.given, VIEW_OPT(VIEW_JSON) | VIEW_OPT(VIEW_OUTPUT));
        /* --limit is a view option, but not this command's */
        CHECK_INT_EQ(PARSE(&some, &f, &v, &o, "--limit", "3"), -EINVAL);
        /* nor is --own the other command's */
        CHECK_INT_EQ(PARSE(&all, &f, &v, NULL, "--own", "x"), -EINVAL);
        /* a command without filters refuses them */
        CHECK_INT_EQ(PARSE(&table_or_svg, NULL, &v, NULL, "--pid", "1"), -EINVAL);
}

static void test_bad_values_are_usage_errors(void) {
        struct filters f = {};
        struct view_options v = {};

        CHECK_INT_EQ(PARSE(&all, &f, &v, NULL, "--limit", "x"), -EINVAL);
        CHECK_INT_EQ(PARSE(&all, &f, &v, NULL, "--limit", "-1"), -EINVAL);
        CHECK_INT_EQ(PARSE(&all, &f, &v, NULL, "--max-depth", "0"), -EINVAL);
        CHECK_INT_EQ(PARSE(&all, &f, &v, NULL, "--by", "file"), -EINVAL);
        CHECK_INT_EQ(PARSE(&all, &f, &v, NULL, "--root", "cgroup"), -EINVAL);
        CHECK_INT_EQ(PARSE(&all, &f, &v, NULL, "--focus", "("), -EINVAL);
        CHECK_INT_EQ(PARSE(&all, &f, &v, NULL, "--output", ""), -EINVAL);
        CHECK_INT_EQ(PARSE(&all, &f, &v, NULL, "--json=1"), -EINVAL);
        CHECK_INT_EQ(PARSE(&all, &f, &v, NULL, "--limit"), -EINVAL);
        CHECK_INT_EQ(PARSE(&all, &f, &v, NULL, "stray"), -EINVAL);
        view_options_done(&v);
}

static void test_format_values_and_repeats(void) {
        struct view_options v = {};

        /* a format the command does not take */
        CHECK_INT_EQ(PARSE(&table_or_svg, NULL, &v, NULL, "--format", "tree"), -EINVAL);
        v = (struct view_options) {};
        CHECK_INT_EQ(PARSE(&table_or_svg, NULL, &v, NULL, "--format", "table", "--format", "svg"), 1);
        CHECK_INT_EQ(v.format, FORMAT_SVG);
        /* query's way: the same format twice is fine, two different ones not */
        v = (struct view_options) {};
        CHECK_INT_EQ(PARSE(&all, &(struct filters) {}, &v, NULL, "--format", "svg", "--format", "svg"), 1);
        CHECK_INT_EQ(v.format, FORMAT_SVG);
        v = (struct view_options) {};
        CHECK_INT_EQ(PARSE(&all, &(struct filters) {}, &v, NULL, "--format", "svg", "--format", "pprof"), -EINVAL);
        CHECK_STR_EQ(view_format_to_string(FORMAT_PPROF), "pprof");
}

static void test_options_apply_to_their_formats(void) {
        struct view_options v = {};

        CHECK_INT_EQ(PARSE(&table_or_svg, NULL, &v, NULL, "--icicle"), 1);
        CHECK_INT_EQ(view_options_check_applies(&v), -EINVAL);
        v.format = FORMAT_SVG;
        CHECK_INT_EQ(view_options_check_applies(&v), 0);
        /* --limit is the table's */
        v = (struct view_options) {};
        CHECK_INT_EQ(PARSE(&table_or_svg, NULL, &v, NULL, "--limit", "5", "--format", "svg"), 1);
        CHECK_INT_EQ(view_options_check_applies(&v), -EINVAL);
        v.format = FORMAT_TABLE;
        CHECK_INT_EQ(view_options_check_applies(&v), 0);
        /* --root is every format's but the table's */
        v = (struct view_options) { .given = VIEW_OPT(VIEW_ROOT), .root = "process" };
        CHECK_INT_EQ(view_options_check_applies(&v), -EINVAL);
        v.format = FORMAT_FOLDED;
        CHECK_INT_EQ(view_options_check_applies(&v), 0);
        v.format = FORMAT_PPROF;
        CHECK_INT_EQ(view_options_check_applies(&v), 0);
}

static void test_help_stops_the_loop(void) {
        struct view_options v = {};
        struct own o = {};

        help_calls = 0;
        CHECK_INT_EQ(PARSE(&some, &(struct filters) {}, &v, &o, "--help", "--own", "x"), 0);
        CHECK_INT_EQ(help_calls, 1);
        CHECK_INT_EQ(o.calls, 0);
        CHECK_INT_EQ(PARSE(&some, &(struct filters) {}, &v, &o, "-h"), 0);
        CHECK_INT_EQ(help_calls, 2);
}

int main(void) {
        opterr = 0; /* as profctl's main: messages are profctl's own */
        test_every_view_option_lands_in_its_field();
        test_unset_options_are_not_given();
        test_a_command_takes_only_its_view_options();
        test_bad_values_are_usage_errors();
        test_format_values_and_repeats();
        test_options_apply_to_their_formats();
        test_help_stops_the_loop();
        TESTS_DONE();
}
