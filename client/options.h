/* The options of profctl's commands: one table of the view options (--format,
 * --json, --output, --by, --limit, ...) with one parser, as filters.h is for
 * the filters, and the one getopt loop every command's arguments go through.
 * A command says which filters and view options it takes and parses only its
 * own options itself. Usage errors are printed here ("profctl: --limit 'x' is
 * not a row count ..."); functions return -EINVAL after one. */
#pragma once

#include <getopt.h>
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#include "filters.h"
#include "render.h"

/* getopt_long values of the view options, numbered on from the filters';
 * a command numbers its own options from VIEW_OPTION_END on. */
enum {
        VIEW_FORMAT = FILTER_OPTION_END,
        VIEW_FOLDED,
        VIEW_JSON,
        VIEW_OUTPUT,
        VIEW_BY,
        VIEW_CHILDREN,
        VIEW_LIMIT,
        VIEW_LINES,
        VIEW_RAW_NAMES,
        VIEW_ROOT,
        VIEW_FOCUS,
        VIEW_HIDE,
        VIEW_MAX_DEPTH,
        VIEW_ICICLE,
        VIEW_TITLE,
        VIEW_QUALITY,
        VIEW_OPTION_END,
};

/* --limit's default for tables: enough to see where the time went on one
 * screen; --limit 0 shows all. */
#define QUERY_LIMIT_DEFAULT 25

/* A set of view options: VIEW_OPT(VIEW_JSON) | VIEW_OPT(VIEW_OUTPUT). */
#define VIEW_OPT(o) (1u << ((o) - VIEW_FORMAT))
#define VIEW_OPTS_ALL (VIEW_OPT(VIEW_OPTION_END) - 1)

/* The values of --format, in the order --help and the messages list them. */
typedef enum ViewFormat {
        FORMAT_TABLE,
        FORMAT_FOLDED,
        FORMAT_JSON,
        FORMAT_TREE,
        FORMAT_SVG,
        FORMAT_PPROF,
        _FORMAT_MAX,
} ViewFormat;

/* A set of formats: FORMAT_BIT(FORMAT_TABLE) | FORMAT_BIT(FORMAT_SVG). */
#define FORMAT_BIT(f) (1u << (f))
#define FORMATS_ALL (FORMAT_BIT(_FORMAT_MAX) - 1)

/* "table", "folded", ... */
const char *view_format_to_string(ViewFormat f);

/* The view options as given; what a command does not take stays zero. */
struct view_options {
        unsigned given;         /* VIEW_OPT() bits of the options given */
        ViewFormat format;      /* FORMAT_TABLE unless --format said otherwise */
        bool folded;            /* --folded, the old shorthand of --format folded */
        bool json;              /* the view as JSON */
        const char *output;     /* NULL: standard output */
        TopBy by;
        bool children;
        size_t limit;           /* valid if given */
        bool lines, raw_names;
        const char *root;       /* "process", "unit", "thread", "host" or NULL */
        regex_t focus, hide;    /* compiled if focus_text, hide_text */
        const char *focus_text, *hide_text;
        size_t max_depth;       /* valid if given */
        bool icicle;
        const char *title;
        bool quality;           /* --quality: the report alone */
};

/* Frees the compiled expressions. */
void view_options_done(struct view_options *v);

/* True if the option (a VIEW_* value) was given. */
static inline bool view_options_given(const struct view_options *v, int opt) {
        return v->given & VIEW_OPT(opt);
}

/* Usage errors for view options given that do not apply to the format
 * chosen ("--icicle applies to --format svg"), in the order of the table.
 * Returns 0 or -EINVAL. */
int view_options_check_applies(const struct view_options *v);

/* What a command's arguments are. */
struct command_options {
        const char *name;        /* "query": "query takes no arguments" */
        void (*help)(void);      /* prints --help */
        bool filters;            /* takes the filter options (filters.h) */
        unsigned views;          /* the view options it takes, VIEW_OPT() bits */
        unsigned formats;        /* with VIEW_FORMAT: the values it takes, FORMAT_BIT() bits */
        /* with VIEW_FORMAT: a second --format replaces the first (diff's way);
         * otherwise two different ones are a usage error (query's) */
        bool format_last_wins;
        /* its own options (values from VIEW_OPTION_END on), {}-terminated;
         * NULL: none */
        const struct option *options;
        /* Takes one of its own options. Returns 0 or -EINVAL after a usage
         * error. */
        int (*parse_option)(void *userdata, int opt, const char *arg);
};

/* Reports what getopt_long() stopped at (c is what it returned) as a usage
 * error. Returns -EINVAL. */
int command_bad_option(int c, char *const *argv);

/* Parses a command's arguments (argv[0] its name): -h/--help, the filters
 * into *f, the view options into *v, its own options through
 * cmd->parse_option(userdata, ...); refuses positional arguments. Checks
 * single options only: combinations are the command's to check. Returns 1
 * to go on, 0 after --help, -EINVAL after a usage error. */
int command_parse_argv(const struct command_options *cmd, int argc, char *argv[], struct filters *f,
                       struct view_options *v, void *userdata);
