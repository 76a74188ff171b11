/* The view options of profctl's commands, defined once, and the getopt loop
 * of every command (options.h). */
#include "options.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "macro.h"
#include "util.h"

static const char *const format_names[_FORMAT_MAX] = {
        [FORMAT_TABLE] = "table",
        [FORMAT_FOLDED] = "folded",
        [FORMAT_JSON] = "json",
        [FORMAT_TREE] = "tree",
        [FORMAT_SVG] = "svg",
        [FORMAT_PPROF] = "pprof",
};

const char *view_format_to_string(ViewFormat f) {
        return f < _FORMAT_MAX ? format_names[f] : NULL;
}

#define TABLE_ONLY FORMAT_BIT(FORMAT_TABLE), "--format table"
#define TREE_ONLY FORMAT_BIT(FORMAT_TREE), "--format tree"
#define SVG_ONLY FORMAT_BIT(FORMAT_SVG), "--format svg"

/* Every view option once: its getopt entry, and the formats it applies to
 * (options only some formats use: naming the one that does not fit beats
 * ignoring it). Indexed by value - VIEW_FORMAT. */
static const struct view_option {
        struct option getopt;
        unsigned applies;          /* formats; 0: all */
        const char *applies_text;  /* "--format table" */
} view_option_table[VIEW_OPTION_END - VIEW_FORMAT] = {
#define V(o) [(o) - VIEW_FORMAT]
        V(VIEW_FORMAT)    = { { "format",    required_argument, NULL, VIEW_FORMAT    } },
        V(VIEW_FOLDED)    = { { "folded",    no_argument,       NULL, VIEW_FOLDED    } },
        V(VIEW_JSON)      = { { "json",      no_argument,       NULL, VIEW_JSON      } },
        V(VIEW_OUTPUT)    = { { "output",    required_argument, NULL, VIEW_OUTPUT    } },
        V(VIEW_BY)        = { { "by",        required_argument, NULL, VIEW_BY        }, TABLE_ONLY },
        V(VIEW_CHILDREN)  = { { "children",  no_argument,       NULL, VIEW_CHILDREN  }, TABLE_ONLY },
        /* folded and json stream every stack as profd sends it; cutting
         * them off would need them all in memory to find the largest */
        V(VIEW_LIMIT)     = { { "limit",     required_argument, NULL, VIEW_LIMIT     }, TABLE_ONLY },
        V(VIEW_LINES)     = { { "lines",     no_argument,       NULL, VIEW_LINES     } },
        V(VIEW_RAW_NAMES) = { { "raw-names", no_argument,       NULL, VIEW_RAW_NAMES } },
        V(VIEW_ROOT)      = { { "root",      required_argument, NULL, VIEW_ROOT      },
                              FORMATS_ALL & ~FORMAT_BIT(FORMAT_TABLE), "--format folded, tree, json, svg and pprof" },
        V(VIEW_FOCUS)     = { { "focus",     required_argument, NULL, VIEW_FOCUS     }, TREE_ONLY },
        V(VIEW_HIDE)      = { { "hide",      required_argument, NULL, VIEW_HIDE      }, TREE_ONLY },
        V(VIEW_MAX_DEPTH) = { { "max-depth", required_argument, NULL, VIEW_MAX_DEPTH }, TREE_ONLY },
        V(VIEW_ICICLE)    = { { "icicle",    no_argument,       NULL, VIEW_ICICLE    }, SVG_ONLY },
        V(VIEW_TITLE)     = { { "title",     required_argument, NULL, VIEW_TITLE     }, SVG_ONLY },
        V(VIEW_QUALITY)   = { { "quality",   no_argument,       NULL, VIEW_QUALITY   } },
#undef V
};

void view_options_done(struct view_options *v) {
        if (v->focus_text)
                regfree(&v->focus);
        if (v->hide_text)
                regfree(&v->hide);
        v->focus_text = v->hide_text = NULL;
}

int view_options_check_applies(const struct view_options *v) {
        for (size_t i = 0; i < ELEMENTSOF(view_option_table); i++) {
                const struct view_option *o = &view_option_table[i];

                if (o->applies && (v->given & (1u << i)) && !(o->applies & FORMAT_BIT(v->format)))
                        return cli_usage_error("--%s applies to %s", o->getopt.name, o->applies_text);
        }
        return 0;
}

static int parse_limit(const char *arg, size_t *ret) {
        uint64_t u;

        if (parse_uint_strict(arg, SIZE_MAX, &u) < 0)
                return cli_usage_error("--limit '%s' is not a row count (expected 0 for all, or a "
                                       "positive integer)", arg);
        *ret = (size_t) u;
        return 0;
}

static int parse_by(const char *arg, TopBy *ret) {
        if (top_by_from_string(arg, ret) < 0)
                return cli_usage_error("--by '%s' is not known (expected function, line or module)", arg);
        return 0;
}

static int compile_regex(const char *option, const char *arg, regex_t *re) {
        char msg[256];
        int r;

        /* REG_NOSUB: only whether it matches counts */
        r = regcomp(re, arg, REG_EXTENDED | REG_NOSUB);
        if (r != 0) {
                regerror(r, re, msg, sizeof(msg));
                return cli_usage_error("%s '%s' is not a valid regular expression: %s", option, arg, msg);
        }
        return 0;
}

/* "table, folded, json or svg": the formats a command takes. */
static void formats_list(unsigned formats, char *buf, size_t size) {
        size_t n = 0, left = (size_t) __builtin_popcount(formats);

        buf[0] = '\0';
        for (size_t i = 0; i < _FORMAT_MAX; i++) {
                if (!(formats & FORMAT_BIT(i)))
                        continue;
                left--;
                n += (size_t) snprintf(buf + n, n < size ? size - n : 0, "%s%s", format_names[i],
                                       left > 1 ? ", " : left == 1 ? " or " : "");
        }
}

static int parse_format(const struct command_options *cmd, struct view_options *v, const char *arg) {
        char expected[128];

        for (size_t i = 0; i < _FORMAT_MAX; i++) {
                if (!(cmd->formats & FORMAT_BIT(i)) || !streq(arg, format_names[i]))
                        continue;
                if (!cmd->format_last_wins && view_options_given(v, VIEW_FORMAT) && v->format != i)
                        return cli_usage_error("--format given twice, as %s and %s", format_names[v->format], arg);
                v->format = (ViewFormat) i;
                return 0;
        }
        formats_list(cmd->formats, expected, sizeof(expected));
        return cli_usage_error("--format '%s' is not known%s%s (expected %s)", arg,
                               cmd->formats != FORMATS_ALL ? " for " : "",
                               cmd->formats != FORMATS_ALL ? cmd->name : "", expected);
}

/* Takes view option opt with its argument. Returns 0 or -EINVAL. */
static int view_options_parse(const struct command_options *cmd, struct view_options *v, int opt, const char *arg) {
        uint64_t u;
        int r = 0;

        switch (opt) {
        case VIEW_FORMAT:
                r = parse_format(cmd, v, arg);
                break;
        case VIEW_FOLDED:
                v->folded = true;
                break;
        case VIEW_JSON:
                v->json = true;
                break;
        case VIEW_OUTPUT:
                if (!*arg)
                        return cli_usage_error("--output needs a file name, got ''");
                v->output = arg;
                break;
        case VIEW_BY:
                r = parse_by(arg, &v->by);
                break;
        case VIEW_CHILDREN:
                v->children = true;
                break;
        case VIEW_LIMIT:
                r = parse_limit(arg, &v->limit);
                break;
        case VIEW_LINES:
                v->lines = true;
                break;
        case VIEW_RAW_NAMES:
                v->raw_names = true;
                break;
        case VIEW_ROOT:
                if (!streq(arg, "process") && !streq(arg, "unit") && !streq(arg, "thread") && !streq(arg, "host"))
                        return cli_usage_error("--root '%s' is not known (expected process, unit, thread or "
                                               "host)", arg);
                v->root = arg;
                break;
        case VIEW_FOCUS:
        case VIEW_HIDE: {
                bool focus = opt == VIEW_FOCUS;
                regex_t *re = focus ? &v->focus : &v->hide;
                const char **text = focus ? &v->focus_text : &v->hide_text;

                if (*text) {
                        regfree(re);
                        *text = NULL;
                }
                r = compile_regex(focus ? "--focus" : "--hide", arg, re);
                if (r < 0)
                        return r;
                *text = arg;
                break;
        }
        case VIEW_MAX_DEPTH:
                r = parse_uint_strict(arg, SIZE_MAX, &u);
                if (r < 0 || u == 0)
                        return cli_usage_error("--max-depth '%s' is not a depth (expected a "
                                               "positive integer)", arg);
                v->max_depth = (size_t) u;
                break;
        case VIEW_ICICLE:
                v->icicle = true;
                break;
        case VIEW_TITLE:
                v->title = arg;
                break;
        case VIEW_QUALITY:
                v->quality = true;
                break;
        default:
                assert_not_reached();
        }
        if (r < 0)
                return r;
        v->given |= VIEW_OPT(opt);
        return 0;
}

/* Reports what getopt_long() stopped at; opterr is off so every message has
 * the same "profctl: " form. */
int command_bad_option(int c, char *const *argv) {
        const char *arg = argv[optind - 1];

        if (c == ':')
                return cli_usage_error("option '%s' needs a value", arg);
        /* long options in this file have values above 0xff; optopt holds one
         * when such an option was given "=value" it does not take */
        if (optopt > 0xff)
                return cli_usage_error("option '%s' takes no value", arg);
        if (optopt > 0)
                return cli_usage_error("unrecognized option '-%c'", optopt);
        return cli_usage_error("unrecognized option '%s'", arg);
}

/* The getopt table of cmd: --help, the filters, the view options it takes,
 * its own. Returns a malloc'd array or NULL. */
static struct option *command_getopt_table(const struct command_options *cmd) {
        static const struct option help = { "help", no_argument, NULL, 'h' };
        static const struct option filters[] = { FILTER_OPTIONS };
        size_t n_own = 0, n = 0;
        struct option *t;

        while (cmd->options && cmd->options[n_own].name)
                n_own++;
        t = calloc(1 + ELEMENTSOF(filters) + ELEMENTSOF(view_option_table) + n_own + 1, sizeof(*t));
        if (!t)
                return NULL;
        t[n++] = help;
        for (size_t i = 0; cmd->filters && i < ELEMENTSOF(filters); i++)
                t[n++] = filters[i];
        for (size_t i = 0; i < ELEMENTSOF(view_option_table); i++)
                if (cmd->views & (1u << i))
                        t[n++] = view_option_table[i].getopt;
        for (size_t i = 0; i < n_own; i++)
                t[n++] = cmd->options[i];
        return t; /* calloc made the terminating entry */
}

int command_parse_argv(const struct command_options *cmd, int argc, char *argv[], struct filters *f,
                       struct view_options *v, void *userdata) {
        _cleanup_free_ struct option *options = command_getopt_table(cmd);
        int opt, r;

        if (!options)
                return cli_error(-ENOMEM, "%m");
        optind = 0;
        while ((opt = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
                if (opt == 'h') {
                        cmd->help();
                        return 0;
                }
                if (opt >= FILTER_PID && opt < FILTER_OPTION_END)
                        r = filters_parse_option(f, opt, optarg) < 0 ? -EINVAL : 0;
                else if (opt >= VIEW_FORMAT && opt < VIEW_OPTION_END)
                        r = view_options_parse(cmd, v, opt, optarg);
                else if (opt >= VIEW_OPTION_END && cmd->parse_option)
                        r = cmd->parse_option(userdata, opt, optarg);
                else
                        r = command_bad_option(opt, argv);
                if (r < 0)
                        return r;
        }
        if (optind < argc)
                return cli_usage_error("%s takes no arguments, got '%s'", cmd->name, argv[optind]);
        return 1;
}
