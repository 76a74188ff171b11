/* When a file's DWARF is read (issue 43): once keys with frames in it have had dwarf_min_samples samples, not at its first frame. Its frames stored before, by their symbol alone, are kept to be given their lines then. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"

/* Frames of one file kept to be given their lines; past this many, more
 * stay stored by their symbol alone (the caller counts them: the writer's
 * dwarf_deferred.not_kept). */
#define DWARF_DEFER_PENDING_MAX 65536

struct dwarf_defer {
        uint64_t samples; /* of keys with a frame in the file, since it was loaded */
        bool on;          /* its DWARF is read for its frames */
        hashmap *pending; /* file offset -> (void *) 1: stored by their symbol alone */
        char *module;     /* the mapping path they were stored under */
};

/* min 0: on from the start (every file's DWARF read at its first frame). */
void dwarf_defer_init(struct dwarf_defer *d, uint64_t min);
void dwarf_defer_done(struct dwarf_defer *d);

/* Adds the samples of a key with a frame in the file. Returns true when
 * this turned the file's DWARF on (the pending frames are then due). */
bool dwarf_defer_note(struct dwarf_defer *d, uint64_t samples, uint64_t min);

/* Keeps a frame stored by its symbol alone, under module. Returns 1 when
 * kept, 0 when kept already, -ENOSPC when not kept (another module than
 * the file's first, or past DWARF_DEFER_PENDING_MAX),
 * -ENOMEM. */
int dwarf_defer_pend(struct dwarf_defer *d, uint64_t offset, const char *module);

/* Takes the pending frames: *ret their offsets in increasing order (the
 * caller frees it; NULL when none), *ret_module their path (the caller
 * frees it). The file keeps none. Returns how many, or -ENOMEM (nothing
 * taken). */
int dwarf_defer_take(struct dwarf_defer *d, uint64_t **ret, char **ret_module);

/* Pending frames, and the heap they hold (for the symbol cache's budget). */
size_t dwarf_defer_pending(const struct dwarf_defer *d);
uint64_t dwarf_defer_bytes(const struct dwarf_defer *d);
