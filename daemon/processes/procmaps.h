/* Parsers for files under /proc/PID that profd reads from processes it does
 * not control: maps lines and stat. Pure functions over strings, so they are
 * unit-tested and fuzzed without a live process. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct procmap {
        uint64_t start, end; /* virtual address range [start, end) */
        uint64_t offset;     /* file offset mapped at start */
        uint64_t inode;
        unsigned dev_major, dev_minor;
        bool readable, writable, executable, shared;
        char *path; /* malloc'd; NULL for anonymous mappings */
};

/* Parses one line of /proc/PID/maps ("start-end perms offset maj:min inode
 * [path]"; trailing newline allowed). On success *ret owns a copy of the path.
 * Returns 0, -EINVAL for a malformed line, -ENOMEM. */
int procmap_parse_line(const char *line, struct procmap *ret);
/* procmap_parse_line for who wants only the executable mappings: returns 1
 * for one (*ret owns its path), 0 for a well-formed line of another (its
 * path not copied: *ret->path is NULL), or what procmap_parse_line does. */
int procmap_parse_exec_line(const char *line, struct procmap *ret);
void procmap_done(struct procmap *m);

/* Folds the executable mapping [start, end) into sig, a signature of a
 * process's executable address ranges (0 for none, then each range in
 * address order): two reads of its maps that give the same signature found
 * the same ranges. */
uint64_t procmap_signature_add(uint64_t sig, uint64_t start, uint64_t end);

/* From the contents of /proc/PID/stat, the start time field (22, clock ticks
 * since boot). comm (field 2) may contain spaces and parentheses: parsing
 * starts after the last ')'. Returns 0 or -EINVAL. */
int procstat_parse_starttime(const char *stat, uint64_t *ret_ticks);

/* From the contents of /proc/PID/status, the real uid ("Uid:" line). Returns
 * 0 or -EINVAL. */
int procstatus_parse_uid(const char *status, uint32_t *ret_uid);

/* From the contents of /proc/PID/status, the effective uid (second field of
 * "Uid:"): whose rights the process runs with. Returns 0 or -EINVAL. */
int procstatus_parse_euid(const char *status, uint32_t *ret_uid);

/* From the contents of /proc/PID/cgroup, the cgroup v2 path ("0::/path").
 * *ret_path is malloc'd. Returns 0, -ENOENT (no v2 line), -ENOMEM. */
int proccgroup_parse_v2(const char *cgroup, char **ret_path);
