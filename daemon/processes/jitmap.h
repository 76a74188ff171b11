/* The code one process's JIT announced in its perf map (/tmp/perf-PID.map):
 * address ranges with names, fed the file's bytes in order as the JIT keeps
 * appending to it. Pure (no I/O), so unit tests feed it text.
 *
 * A JIT reuses the memory of code it freed, and the file is append-only: a
 * range named again later describes the code there now. So an entry that
 * any later entry overlaps, even partly, is dropped whole (its code was
 * freed; what is left of its range belongs to newer code, named or not):
 * the entries kept never overlap, and each is the latest word on its bytes. */
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef struct jitmap jitmap;

/* Why 65536: a large Node or JVM service has some ten thousand live compiled
 * functions; at about 100 bytes an entry (range, name, allocation) that
 * bounds one process's map to some 6 MiB. */
#define JITMAP_MAX_ENTRIES 65536
/* Why 4096: node and perf-map-agent lines are a name and a source location,
 * rarely over 300 bytes; a longer line is skipped (counted invalid) rather
 * than buffered without bound. */
#define JITMAP_MAX_LINE 4096

struct jitmap_stats {
        uint64_t lines;    /* lines read, valid or not */
        uint64_t invalid;  /* refused by perfmap_parse_line, or overlong */
        uint64_t replaced; /* entries dropped because a later one overlapped them */
        uint64_t dropped;  /* entries over max_entries, not kept (newest first) */
};

/* An empty map keeping at most max_entries (0 means JITMAP_MAX_ENTRIES).
 * Returns 0 or -ENOMEM. */
int jitmap_new(size_t max_entries, jitmap **ret);
/* Accepts NULL; returns NULL. */
jitmap *jitmap_free(jitmap *m);

/* Adds the complete lines ("\n"-terminated) at the start of text[0, len),
 * in file order, after those fed before. *ret_consumed is the number of
 * bytes used: up to the last complete line, so a line the JIT is still
 * writing is left for the next call with more text; the bytes of an
 * overlong line are consumed (and the rest of it skipped next time). Lines
 * perfmap_parse_line refuses are counted and skipped. When more than
 * max_entries would be kept, the newest are dropped and counted. Returns 0,
 * or -ENOMEM with the map as it was before the call and *ret_consumed 0. */
int jitmap_feed(jitmap *m, const char *text, size_t len, size_t *ret_consumed);

/* Forgets every entry and any partly skipped line (the file was replaced
 * or truncated); the counters and the epoch stay. */
void jitmap_reset(jitmap *m);

/* The name of the entry containing addr, or NULL. The string lives until the
 * next jitmap_feed, jitmap_reset or jitmap_free. */
const char *jitmap_lookup(const jitmap *m, uint64_t addr);

/* The number of entries kept. */
size_t jitmap_size(const jitmap *m);

/* Changes whenever an entry that was kept is dropped because a later one
 * overlaps it, or on jitmap_reset: an address may now name another
 * function, so whoever cached "address -> name" must start over. */
uint64_t jitmap_epoch(const jitmap *m);

void jitmap_get_stats(const jitmap *m, struct jitmap_stats *ret);
