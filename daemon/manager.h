/* The manager owns the event loop and every part of profd: collector, process
 * table, symbolizer, store and server. It runs the drain on a timer, answers
 * requests, and drains once more on SIGTERM/SIGINT before exiting. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "conf.h"

/* Reads the settings again (file, then command line) for SIGHUP. Returns 0
 * and fills *ret, or a negative errno with *ret_error saying why. */
typedef int (*manager_reload_fn)(struct conf *ret, char **ret_error, void *userdata);

/* What profd runs with that is not a setting. */
struct manager_config {
        /* The settings profd runs with: the manager and the components it
         * starts read them (the threads take copies); a reload compares the
         * new ones with them row by row (conf_reload_diff), applies what can
         * change while running, and updates them in place (what needs a
         * restart keeps its running value). The caller keeps it alive until
         * manager_free. */
        struct conf *conf;
        manager_reload_fn reload; /* NULL: SIGHUP only logs that there is nothing to reload */
        void *reload_userdata;
        /* Tests only (profd's hidden --test-clock-rate, --test-clock-start-ago):
         * the wall clock runs this many times as fast, starting this many
         * seconds in the past. 0 or 1: the real clock. */
        uint64_t test_clock_rate, test_clock_start_ago_s;
};

typedef struct manager manager;

/* Sets everything up (BPF attached, store open, socket listening). Returns 0
 * or a negative errno with the reason logged. */
int manager_new(const struct manager_config *cfg, manager **ret);
manager *manager_free(manager *m);

/* Runs until SIGTERM or SIGINT, then drains once more. Returns 0 or a
 * negative errno. */
int manager_run(manager *m);
