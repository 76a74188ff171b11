/* Another process's memory read through a few whole pages (remote-pages.h). */
#include "remote-pages.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void remote_pages_init(struct remote_pages *rp, remote_read_fn read, void *userdata) {
        *rp = (struct remote_pages) { .read = read, .userdata = userdata };
}

void remote_pages_begin(struct remote_pages *rp, remote_read_fn read, void *userdata) {
        rp->read = read;
        rp->userdata = userdata;
        memset(rp->used, 0, sizeof(rp->used));
}

void remote_pages_done(struct remote_pages *rp) {
        free(rp->data);
        rp->data = NULL;
        memset(rp->used, 0, sizeof(rp->used));
}

/* The slot holding page `page` (read now if none does), or -1 when the
 * page cannot be read whole or there is no buffer; *ret_r the reader's
 * error for a process gone (then no slot either). */
static int slot_of(struct remote_pages *rp, uint64_t page, int *ret_r) {
        unsigned victim = 0;
        int r;

        *ret_r = 0;
        for (unsigned i = 0; i < REMOTE_PAGES; i++) {
                if (rp->used[i] && rp->page[i] == page) {
                        rp->used[i] = ++rp->tick;
                        return (int) i;
                }
                if (rp->used[i] < rp->used[victim])
                        victim = i;
        }
        if (!rp->data) {
                rp->data = malloc((size_t) REMOTE_PAGES * REMOTE_PAGE_SIZE);
                if (!rp->data)
                        return -1;
        }
        rp->used[victim] = 0;
        r = rp->read(rp->userdata, page, rp->data + (size_t) victim * REMOTE_PAGE_SIZE, REMOTE_PAGE_SIZE);
        if (r < 0) {
                if (r == -ESRCH)
                        *ret_r = r;
                return -1;
        }
        rp->stats.fills++;
        rp->page[victim] = page;
        rp->used[victim] = ++rp->tick;
        return (int) victim;
}

int remote_pages_read(void *userdata, uint64_t addr, void *buf, size_t size) {
        struct remote_pages *rp = userdata;
        bool filled = false;
        uint8_t *out = buf;
        size_t done = 0;

        rp->stats.reads++;
        /* more than a page (it would span three), nothing, or past the
         * end of the address space: as it is */
        if (size == 0 || size > REMOTE_PAGE_SIZE || addr + size < addr)
                goto direct;
        while (done < size) {
                uint64_t at = addr + done, page = at & ~(uint64_t) (REMOTE_PAGE_SIZE - 1);
                size_t off = (size_t) (at - page), n = REMOTE_PAGE_SIZE - off;
                uint64_t fills = rp->stats.fills;
                int slot, r;

                if (n > size - done)
                        n = size - done;
                slot = slot_of(rp, page, &r);
                if (r < 0)
                        return r;
                if (slot < 0)
                        goto direct;
                filled |= rp->stats.fills != fills;
                memcpy(out + done, rp->data + (size_t) slot * REMOTE_PAGE_SIZE + off, n);
                done += n;
        }
        if (!filled)
                rp->stats.copies++;
        return 0;

direct:
        rp->stats.direct++;
        return rp->read(rp->userdata, addr, buf, size);
}
