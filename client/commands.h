/* profctl's commands, one file each (cmd-NAME.c): main picks one by its
 * name and hands it the arguments from the name on. */
#pragma once

#include "cli.h"

/* Each runs its command with argv[0] its name (as getopt wants) and t where
 * to ask, and returns the exit status: EXIT_SUCCESS (also after --help),
 * EXIT_FAILURE after profd's (or ClickHouse's) error or a failure to reach
 * it, EXIT_USAGE after a usage error; every failure has its message. */
int cmd_status(const struct cli_target *t, int argc, char *argv[]);
int cmd_flush(const struct cli_target *t, int argc, char *argv[]);
int cmd_query(const struct cli_target *t, int argc, char *argv[]);
int cmd_series(const struct cli_target *t, int argc, char *argv[]);
int cmd_diff(const struct cli_target *t, int argc, char *argv[]);
int cmd_top(const struct cli_target *t, int argc, char *argv[]);
int cmd_init(const struct cli_target *t, int argc, char *argv[]);

/* profctl heatmap (cmd-heatmap.c) */
int cmd_heatmap(const struct cli_target *t, int argc, char *argv[]);
/* captures (issue 44) */
int cmd_capture(const struct cli_target *t, int argc, char *argv[]);
