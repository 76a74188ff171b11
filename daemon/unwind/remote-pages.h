/* A few pages of another process's memory, kept while one object graph is
 * read from it: a HotSpot Method's name is its ConstMethod, constant pool,
 * holder and Symbols; a CPython code object's, the object and its strings.
 * Each read through /proc/PID/mem is a system call that walks the other
 * process's page tables, whatever its size, and a Method's name took 27 of
 * them, most on the same few pages. Here the first byte wanted of a page
 * reads the whole page, and later reads within it are copies.
 *
 * Pure: the memory is read through the function given, so unit tests
 * feed it a buffer. Not thread-safe; one per reading thread. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REMOTE_PAGE_SIZE 4096u
#define REMOTE_PAGES 8u

/* Reads size bytes at addr: 0, -ESRCH when the process is gone, another
 * negative errno when that memory cannot be read. */
typedef int (*remote_read_fn)(void *userdata, uint64_t addr, void *buf, size_t size);

struct remote_pages_stats {
        uint64_t reads;        /* remote_pages_read calls */
        uint64_t copies;       /* of them, served from the pages held */
        uint64_t fills;        /* pages read whole */
        uint64_t direct;       /* reads passed through as they were (large, or their page unreadable whole) */
};

struct remote_pages {
        remote_read_fn read;
        void *userdata;
        uint8_t *data;                  /* REMOTE_PAGES pages, allocated at the first fill */
        uint64_t page[REMOTE_PAGES];    /* the address of each slot's page */
        uint64_t used[REMOTE_PAGES];    /* the tick it was last used at; 0: empty */
        uint64_t tick;
        struct remote_pages_stats stats;
};

/* Empty, reading through read(userdata, ...). */
void remote_pages_init(struct remote_pages *rp, remote_read_fn read, void *userdata);
/* The reader from now on, and every page forgotten: what the next read
 * wants is read again (call before each object graph read: the process
 * runs on between them). Keeps the buffer. */
void remote_pages_begin(struct remote_pages *rp, remote_read_fn read, void *userdata);
/* Frees the buffer; the stats stay. */
void remote_pages_done(struct remote_pages *rp);

/* Reads size bytes at addr, as the reader would (the same result, the
 * same errno): from the pages held, a page read whole when one is wanted
 * (the least recently used slot reused), a read of more than a page, or
 * within a page that cannot be read whole, passed to the reader as it is.
 * A remote_read_fn itself (userdata: the struct remote_pages). */
int remote_pages_read(void *rp, uint64_t addr, void *buf, size_t size);
