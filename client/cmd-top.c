/* profctl top: a live table of the hottest functions, refreshed every
 * second, redrawn in place on a raw terminal. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "answer.h"
#include "cli.h"
#include "cmd-query.h"
#include "commands.h"
#include "options.h"
#include "protocol.h"
#include "util.h"

static void help_top(void) {
        printf("Usage: profctl top [FILTERS] [OPTIONS]\n"
               "\n"
               "A live table of the hottest functions, like perf top, asked again every second\n"
               "for the newest data: by default the most recent drain (profd stores samples\n"
               "once per drain interval), or a sliding window of --window. On a terminal the\n"
               "table is redrawn in place and 'q' quits; otherwise one table is printed per\n"
               "refresh.\n"
               "\n"
               "%s"
               "\n"
               "Options:\n"
               "      --window DUR     Show the last DUR (sliding) instead of the last drain\n"
               "      --by WHAT        Rows by function (default), line or module\n"
               "      --children       Sort by TOTAL instead of SELF\n"
               "      --limit N        Rows (default: what fits the terminal, else %d)\n"
               "      --iterations N   Stop after N refreshes (default: until 'q' or a signal)\n"
               "      --json           Print each refresh as one line of JSON: the table of\n"
               "                       'query --format table --json'\n"
               "  -h, --help           Show this help\n"
               "\n"
               "%s",
               filters_help, QUERY_LIMIT_DEFAULT, duration_help);
}

/* Set by SIGINT/SIGTERM: the loop ends and the terminal is restored. */
static volatile sig_atomic_t top_quit = 0;

static void top_on_signal(int sig _unused_) {
        top_quit = 1;
}

struct tty_state {
        bool raw;            /* stdin's settings were changed */
        struct termios saved;
        bool cursor_hidden;  /* stdout's cursor was hidden */
};

static struct tty_state tty;

static void tty_restore(void) {
        if (tty.raw) {
                (void) tcsetattr(STDIN_FILENO, TCSAFLUSH, &tty.saved);
                tty.raw = false;
        }
        if (tty.cursor_hidden) {
                fputs("\033[?25h", stdout);
                fflush(stdout);
                tty.cursor_hidden = false;
        }
}

/* Keys without Enter and without echo, so 'q' quits at once. */
static void tty_make_raw(void) {
        struct termios t;

        if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &tty.saved) < 0)
                return;
        t = tty.saved;
        t.c_lflag &= ~(ICANON | ECHO);
        t.c_cc[VMIN] = 0;
        t.c_cc[VTIME] = 0;
        if (tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0)
                tty.raw = true;
}

/* Rows of the terminal, 0 if unknown. */
static size_t terminal_rows(void) {
        struct winsize ws;

        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0)
                return 0;
        return ws.ws_row;
}

/* Waits until deadline (CLOCK_MONOTONIC ns) or a 'q'. Returns true to quit. */
static bool top_wait(uint64_t deadline) {
        for (;;) {
                struct timespec ts;
                struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
                uint64_t now;
                int r;

                if (top_quit)
                        return true;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                now = (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
                if (now >= deadline)
                        return false;
                r = poll(&p, tty.raw ? 1 : 0, (int) ((deadline - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC));
                if (r > 0 && (p.revents & POLLIN)) {
                        char buf[64];
                        ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

                        for (ssize_t i = 0; i < n; i++)
                                if (buf[i] == 'q' || buf[i] == 'Q')
                                        return true;
                }
        }
}

enum {
        ARG_WINDOW = VIEW_OPTION_END,
        ARG_ITERATIONS,
};

struct top_args {
        struct filters filters;
        struct view_options view; /* --json: one JSON table per refresh, one per line */
        const char *window;
        uint64_t iterations; /* 0: until told to stop */
};

static int top_parse_option(void *userdata, int opt, const char *arg) {
        struct top_args *a = userdata;
        uint64_t ns;
        int r;

        switch (opt) {
        case ARG_WINDOW:
                r = filters_check_duration("--window", arg, &ns);
                if (r < 0)
                        return r;
                if (ns == 0)
                        return cli_usage_error("--window must be longer than 0");
                a->window = arg;
                return 0;
        case ARG_ITERATIONS:
                r = parse_uint_strict(arg, UINT64_MAX, &a->iterations);
                if (r < 0 || a->iterations == 0)
                        return cli_usage_error("--iterations '%s' is not a count (expected a positive "
                                               "integer)", arg);
                return 0;
        default:
                assert_not_reached();
        }
}

static const struct command_options top_options = {
        .name = "top",
        .help = help_top,
        .filters = true,
        .views = VIEW_OPT(VIEW_BY) | VIEW_OPT(VIEW_CHILDREN) | VIEW_OPT(VIEW_LIMIT) | VIEW_OPT(VIEW_JSON),
        .options = (const struct option[]) {
                { "window",     required_argument, NULL, ARG_WINDOW     },
                { "iterations", required_argument, NULL, ARG_ITERATIONS },
                {}
        },
        .parse_option = top_parse_option,
};

/* Checks what single options can't: combinations. Returns 1 to go on,
 * -EINVAL on a usage error. */
static int top_check(struct top_args *a) {
        int r;

        /* a live view is of now: only a window ending now makes sense */
        if (a->filters.until || a->filters.to || a->filters.from)
                return cli_usage_error("top shows the newest data; use --window DUR (or --since) for its "
                                       "length, not --%s", a->filters.until ? "until" : a->filters.to ? "to" : "from");
        if (a->window && (a->filters.since || a->filters.last))
                return cli_usage_error("--window and --%s both say which samples to show; use one",
                                       a->filters.since ? "since" : "last");
        if (a->window) {
                a->filters.since = a->window;
        } else if (!a->filters.since)
                a->filters.last = true;
        r = filters_check(&a->filters);
        if (r < 0)
                return r;
        return 1;
}

/* One refresh: the table of the newest data, as one string so it is drawn
 * at once. */
static int top_frame(const struct cli_target *t, const struct top_args *a, const json_t *request, size_t limit,
                     char **ret, size_t *ret_size) {
        _cleanup_conn_ conn *c = NULL;
        _cleanup_(answer_end_done) struct answer_end end = {};
        struct query_args qa = { .filters = a->filters, .view = a->view };
        /* the window is said in words; the rest are the user's filters */
        struct filters shown = a->filters;
        _cleanup_free_ char *filters = NULL;
        char *text = NULL, now[64];
        size_t size = 0;
        struct timespec ts;
        FILE *f;
        int r;

        shown.last = false;
        shown.since = NULL;
        qa.view.limit = limit;
        filters = filters_describe(&shown);
        r = conn_open(t->socket, &c);
        if (r < 0)
                return r;
        f = open_memstream(&text, &size);
        if (!f)
                return cli_error(-ENOMEM, "%m");
        /* a script wants the tables alone (the window is in each) */
        if (!a->view.json) {
                clock_gettime(CLOCK_REALTIME, &ts);
                fprintf(f, "profctl top at %s: %s%s%s",
                        format_local_time(now, sizeof(now), (uint64_t) ts.tv_sec * NSEC_PER_SEC),
                        a->filters.since ? "the last " : "", a->filters.since ? a->filters.since : "the last drain",
                        filters && *filters ? ", " : "");
                if (filters && *filters)
                        fputs(filters, f);
                fputs(tty.raw ? " (q quits)\n" : "\n", f);
        }
        r = query_stream(c, &qa, request, f, &end);
        if (r >= 0 && end.total == 0 && !a->view.json)
                fputs("no samples match\n", f);
        if (fclose(f) != 0 && r >= 0)
                r = cli_error(-ENOMEM, "%m");
        if (r < 0) {
                free(text);
                return r;
        }
        *ret = text;
        *ret_size = size;
        return 0;
}

int cmd_top(const struct cli_target *t, int argc, char *argv[]) {
        struct top_args a = {};
        _cleanup_json_ json_t *request = NULL;
        struct sigaction sa = { .sa_handler = top_on_signal };
        bool redraw;
        int r = 0;

        r = command_parse_argv(&top_options, argc, argv, &a.filters, &a.view, &a);
        if (r > 0)
                r = top_check(&a);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
        /* JSON lines are for a program even on a terminal: no redrawing */
        redraw = isatty(STDOUT_FILENO) && !a.view.json;

        request = request_new(PROTO_OP_QUERY, &a.filters, &a.view);
        if (!request) {
                cli_error(-ENOMEM, "%m");
                return EXIT_FAILURE;
        }

        /* no SA_RESTART: poll() must return so the loop sees the flag */
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        atexit(tty_restore);
        if (redraw) {
                tty_make_raw();
                fputs("\033[?25l", stdout);
                tty.cursor_hidden = true;
        }

        for (uint64_t i = 0; !top_quit && (a.iterations == 0 || i < a.iterations); i++) {
                _cleanup_free_ char *frame = NULL;
                struct timespec ts;
                uint64_t start;
                size_t size = 0, limit = view_options_given(&a.view, VIEW_LIMIT) ? a.view.limit : QUERY_LIMIT_DEFAULT, rows;

                clock_gettime(CLOCK_MONOTONIC, &ts);
                start = (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
                /* title, window, blank, header: 4 lines above the rows, and
                 * one spare so the last row does not scroll the screen */
                if (redraw && !view_options_given(&a.view, VIEW_LIMIT) && (rows = terminal_rows()) > 6)
                        limit = rows - 5;

                r = top_frame(t, &a, request, limit, &frame, &size);
                if (r < 0)
                        break;
                if (redraw)
                        fputs("\033[H\033[2J", stdout);
                else if (i > 0 && !a.view.json)
                        fputc('\n', stdout);
                fwrite(frame, 1, size, stdout);
                if (fflush(stdout) != 0) {
                        r = cli_error(-EIO, "cannot write to standard output");
                        break;
                }
                if (a.iterations > 0 && i + 1 >= a.iterations)
                        break;
                if (top_wait(start + NSEC_PER_SEC))
                        break;
        }
        tty_restore();
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
