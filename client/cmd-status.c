/* profctl status and profctl flush: one request, one answer line, printed
 * as sent or in words. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "answer.h"
#include "cli.h"
#include "commands.h"
#include "options.h"
#include "render.h"
#include "util.h"

static void help_status(void) {
        printf("Usage: profctl status [--json]\n"
               "\n"
               "Show profd's version and uptime, its sampling frequency and event, the\n"
               "drain interval, what the store holds and every drop reason with its count.\n"
               "\n"
               "Options:\n"
               "      --json   Print profd's status object as it sent it\n"
               "  -h, --help   Show this help\n");
}

static void help_flush(void) {
        printf("Usage: profctl flush [--json]\n"
               "\n"
               "Make profd drain the kernel's maps now and wait until that drain is stored,\n"
               "so a query right after sees the latest samples.\n"
               "\n"
               "Options:\n"
               "      --json   Print profd's answer as it sent it\n"
               "  -h, --help   Show this help\n");
}

static int status_write_now(FILE *f, const json_t *status) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return status_write(f, status, (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec);
}

/* status and flush: one request, one answer line, printed as sent (--json)
 * or by write_human. */
static int run_simple(const struct cli_target *t, int argc, char *argv[], const struct command_options *cmd,
                      const char *answer, int (*write_human)(FILE *f, const json_t *line)) {
        _cleanup_json_ json_t *request = NULL;
        struct view_options view = {};
        const char *op = cmd->name;
        int r;

        r = command_parse_argv(cmd, argc, argv, NULL, &view, NULL);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;

        request = request_new(op, NULL, NULL);
        if (!request) {
                cli_error(-ENOMEM, "%m");
                return EXIT_FAILURE;
        }
        return ask_and_print(t->socket, request, op, answer, view.json, write_human);
}

int cmd_status(const struct cli_target *t, int argc, char *argv[]) {
        static const struct command_options options = {
                .name = "status",
                .help = help_status,
                .views = VIEW_OPT(VIEW_JSON),
        };

        return run_simple(t, argc, argv, &options, "status", status_write_now);
}

int cmd_flush(const struct cli_target *t, int argc, char *argv[]) {
        static const struct command_options options = {
                .name = "flush",
                .help = help_flush,
                .views = VIEW_OPT(VIEW_JSON),
        };

        return run_simple(t, argc, argv, &options, "flushed", flushed_write);
}
