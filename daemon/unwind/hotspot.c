/* HotSpot, a runtime walker: discovery in libjvm.so and the BPF walker's
 * slot of a JVM process (hotspot.h). */
#include "hotspot.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"

int hotspot_discover(Elf *elf, const struct file_key *key, struct unwind_runtime_found *ret) {
        struct hotspot_found_names names = {};
        int r;

        _Static_assert(sizeof(names) <= UNWIND_RUNTIME_NAMES_MAX, "hotspot_found_names fits");
        (void) key;
        r = hotspot_symbols_elf(elf, names.symbols, NULL);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r == -EBADMSG ? 0 : r; /* an unreadable .dynsym: not one profd can tell */
        *ret = (struct unwind_runtime_found) {
                .id = UNWIND_RUNTIME_HOTSPOT,
                .anonymous_code = true,
                .bpf = { .id = UNWIND_RUNTIME_HOTSPOT },
        };
        memcpy(ret->names, &names, sizeof(names));
        return 1;
}

/* An offset the walker reads within the blob's head it reads: the field
 * (size bytes) must end within PROFD_HOTSPOT_BLOB_READ, and the BPF side
 * masks the offset to 127. */
static bool blob_field(uint32_t off, unsigned size) {
        return off != HOTSPOT_NO_FIELD && off <= 127 && off + size <= PROFD_HOTSPOT_BLOB_READ;
}

/* An interpreter frame slot, in words from its frame pointer. */
static int8_t slot8(int32_t v) {
        return v == HOTSPOT_NO_SLOT || v < -64 || v > 64 ? PROFD_HOTSPOT_NO_SLOT : (int8_t) v;
}

int hotspot_runtime_make(const struct hotspot_vmstructs *vs, struct profd_runtime *ret, uint64_t *ret_lo,
                         uint64_t *ret_hi) {
        struct profd_hotspot *hs;
        bool offsets = vs->blob_code_begin == HOTSPOT_NO_FIELD;
        uint32_t code_begin = offsets ? vs->blob_code_offset : vs->blob_code_begin;
        uint32_t code_end = offsets ? vs->blob_data_offset : vs->blob_code_end;

        if (vs->n_heaps == 0 || vs->n_heaps > PROFD_HOTSPOT_HEAPS || vs->log2_segment_size > 31 ||
            vs->heap_block_size > UINT16_MAX)
                return -EPROTONOSUPPORT;
        if (!blob_field(vs->blob_name, 8) || !blob_field(vs->blob_frame_size, 4) ||
            !blob_field(code_begin, offsets ? 4 : 8) || !blob_field(vs->blob_frame_complete_offset, 4))
                return -EPROTONOSUPPORT;
        if (vs->method_const_method > UINT16_MAX || vs->const_method_size > UINT16_MAX)
                return -EPROTONOSUPPORT;

        *ret = (struct profd_runtime) { .id = UNWIND_RUNTIME_HOTSPOT, .version = (uint32_t) vs->version_major };
        hs = &ret->hotspot;
        for (uint32_t i = 0; i < vs->n_heaps; i++)
                hs->heaps[i] = (struct profd_hotspot_heap) {
                        .low = vs->heaps[i].low, .high = vs->heaps[i].high, .segmap = vs->heaps[i].segmap_low,
                };
        hs->n_heaps = vs->n_heaps;
        hs->call_stub_return = vs->call_stub_return_address;
        hs->log2_segment = (uint8_t) vs->log2_segment_size;
        hs->code_offsets = offsets;
        hs->heap_block = (uint16_t) vs->heap_block_size;
        hs->blob_name = (uint16_t) vs->blob_name;
        hs->blob_frame_size = (uint16_t) vs->blob_frame_size;
        hs->blob_frame_complete = (uint16_t) vs->blob_frame_complete_offset;
        hs->blob_code_begin = (uint16_t) code_begin;
        /* without it, the walker finds every blob through the segment map */
        hs->blob_code_end = blob_field(code_end, offsets ? 4 : 8) ? (uint16_t) code_end : PROFD_HOTSPOT_NO_FIELD;
        hs->method_const_method = (uint16_t) vs->method_const_method;
        hs->const_method_size = (uint16_t) vs->const_method_size;
        hs->interp_sender_sp = slot8(vs->interp_sender_sp);
        /* JDK 9+ on x86_64 exports only sender_sp (-1) and last_sp (-2);
         * the slots below last_sp are, in order: method, mirror, mdp,
         * cache, locals, bcp (frame_x86.hpp) */
        hs->interp_method = slot8(vs->interp_method != HOTSPOT_NO_SLOT ? vs->interp_method
                                  : vs->interp_last_sp != HOTSPOT_NO_SLOT ? vs->interp_last_sp - 1 : HOTSPOT_NO_SLOT);
        hs->interp_bcp = slot8(vs->interp_bcp != HOTSPOT_NO_SLOT ? vs->interp_bcp
                               : vs->interp_last_sp != HOTSPOT_NO_SLOT ? vs->interp_last_sp - 6 : HOTSPOT_NO_SLOT);
        *ret_lo = vs->code_low;
        *ret_hi = vs->code_high;
        return 0;
}

bool hotspot_vmstructs_pending(int r, enum hotspot_vmstructs_reason reason, const char *what,
                               const struct hotspot_vmstructs *vs) {
        uint64_t covered = 0;

        /* Anything unread or not sane may be a JVM still starting: the
         * layout variables are set by libjvm's static initialisers, which
         * run after ld.so has mapped it (a stride of 0 then), and the code
         * cache's statics during the VM's start. Tables that lack a field
         * (-EPROTONOSUPPORT) stay so. The reads again are bounded. */
        if (r < 0)
                return r != -EPROTONOSUPPORT && r != -ENOMEM;
        if (!vs)
                return false;
        /* the heaps split the code cache's reservation between them */
        for (uint32_t i = 0; i < vs->n_heaps && i < HOTSPOT_CODE_HEAPS_MAX; i++)
                covered += vs->heaps[i].high - vs->heaps[i].low;
        return covered != vs->code_high - vs->code_low;
}

static int mem_read(void *userdata, uint64_t addr, void *buf, size_t size) {
        int fd = *(int *) userdata;
        ssize_t n;

        if (addr > INT64_MAX)
                return -EIO;
        n = pread(fd, buf, size, (off_t) addr);
        if (n < 0)
                return -errno;
        return (size_t) n == size ? 0 : -EIO;
}

int hotspot_process_vmstructs(const char *proc_root, uint32_t pid, const struct unwind_runtime_found *found,
                              uint64_t bias, struct hotspot_vmstructs *ret, enum hotspot_vmstructs_reason *ret_reason,
                              const char **ret_what) {
        struct hotspot_found_names names;
        uint64_t symbols[_HOTSPOT_SYM_MAX];
        _cleanup_close_ int fd = -EBADF;
        char path[PATH_MAX];

        memcpy(&names, found->names, sizeof(names)); /* names[] is bytes: no alignment promised */
        for (unsigned i = 0; i < _HOTSPOT_SYM_MAX; i++)
                symbols[i] = names.symbols[i] + bias;
        snprintf(path, sizeof(path), "%s/%" PRIu32 "/mem", proc_root, pid);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                *ret_reason = HOTSPOT_VMSTRUCTS_READ_LAYOUT;
                if (ret_what)
                        *ret_what = NULL;
                return -errno;
        }
        return hotspot_vmstructs_read(symbols, mem_read, &fd, ret, ret_reason, ret_what);
}

int hotspot_segmap_find(const uint8_t *segmap, uint64_t n, uint64_t seg, unsigned max_steps, uint64_t *ret_seg) {
        uint8_t tag = 0xff;

        /* as hs_find_blob: a tag read per hop, a hop back by it */
        for (unsigned k = 0; k < max_steps; k++) {
                if (seg >= n)
                        return -EBADMSG;
                tag = segmap[seg];
                if (tag == 0 || tag == 0xff || tag > seg)
                        break;
                seg -= tag;
        }
        if (tag == 0xff)
                return -ENOENT;
        if (tag != 0)
                return -EBADMSG;
        *ret_seg = seg;
        return 0;
}
