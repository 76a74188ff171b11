/* Short-lived processes grouped by what they ran, when retention merges
 * (issue 43). A build host starts tens of processes a second; kept by pid
 * in the 1- and 10-minute buckets, each is a process row, its own blocks
 * and its own entries for stacks it shares with every other instance of
 * the same compiler. When a merge step takes drains into a coarser bucket,
 * each process whose every block of samples is among the blocks it takes
 * (it was sampled only within them: a process that lived less than about
 * the bucket) is merged with the others of the same command, executable,
 * user and cgroup (so unit and container) into one group row of
 * `processes`: pid -1, a negative start_ns of its own (UNIQUE (pid,
 * start_ns)). Its entries lose their thread and peer ids, so a stack's
 * entries from many processes add up to one. Queries by pid stop finding
 * such a process once the raw window ends; by command, executable, user,
 * unit or container they find its samples as before (docs/schema.md).
 * Not for use outside daemon/store/. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "db.h"
#include "sample-pack.h"

/* pid of a group row */
#define PROCESS_GROUP_PID (-1)

/* Creates the temporary tables below on d's connection (once, at open):
 * temp.churn, the processes a merge step groups (process_id, group_id),
 * which retention's steps read whether or not they group, and
 * temp.churn_groups. Returns 0 or a negative errno. */
int process_groups_prepare(const struct db *d);

/* Whether a timeline (on-CPU or off-CPU) of the drains in drains_sql (a
 * parenthesised SELECT of drain ids) is still stored: it names their
 * processes and stacks by id. Returns 0 or a negative errno. */
int drains_timed(const struct db *d, const char *drains_sql, bool *ret);

/* Fills temp.churn (process_id, group_id) with the processes to group
 * among the blocks keyed in blocks_keys_sql (a parenthesised SELECT of
 * drain ids), creating the group rows that do not exist yet; empties it
 * first. Nothing is grouped while a timeline of the drains in
 * drains_sql still names them (the timeline's keys are held by those
 * processes' blocks: schema/0011). Inside the caller's transaction, on a
 * connection process_groups_prepare prepared.
 * Returns the number of processes to group, or a negative errno. */
int64_t process_groups_assign(const struct db *d, const char *blocks_keys_sql, const char *drains_sql);

/* An entry of a grouped process, as the group keeps it: no thread, no
 * peer. Pure. */
static inline void process_group_entry(struct sample_entry *e) {
        e->tid = 0;
        e->peer_tid = 0;
}
