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

struct manager_config {
        const char *socket_path;
        const char *store_path;
        unsigned frequency_hz;
        uint64_t interval_ns;
        bool cpu, offcpu, wakeup;
        uint64_t offcpu_min_ns, offcpu_max_ns;
        uint64_t max_keys, max_stacks;   /* 0: sized from the machine */
        uint64_t kernel_memory;          /* bytes of the counts and stack maps in the kernel */
        uint64_t unwind_memory;          /* bytes of unwind rows in the kernel */
        unsigned socket_mode;
        const char *socket_group, *admin_group;
        unsigned max_clients;
        uint64_t client_timeout_ns;
        uint64_t symbol_cache_bytes;
        const char *debuginfod_urls;   /* NULL: no debuginfod */
        const char *debuginfod_cache;
        /* The settings profd runs with (the fields above come from it):
         * a reload compares the new ones with it, applies what can change
         * while running, and updates it in place (what needs a restart keeps
         * its running value). The caller keeps it alive until manager_free. */
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
