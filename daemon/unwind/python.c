/* CPython, a runtime walker: discovery (here) and naming. */
#include "python.h"

#include <errno.h>
#include <string.h>

#include "python-discover.h"

static uint16_t field16(uint32_t v) {
        return v == PYTHON_NO_FIELD || v > 0xfffe ? 0xffff : (uint16_t) v;
}

int python_found_make(const struct python_binary *bin, const struct python_layout *layout,
                      struct unwind_runtime_found *ret) {
        struct python_names names = { .layout = *layout, .code_type = bin->code_type };
        struct profd_python *py;

        _Static_assert(sizeof(names) <= UNWIND_RUNTIME_NAMES_MAX, "python_names fits");
        if (layout->runtime_tss_key == PYTHON_NO_FIELD || layout->runtime_tss_key + 4 > bin->runtime_size)
                return -EPROTONOSUPPORT;
        /* every offset the walker reads must fit its 16 bits */
        if (field16(layout->current_frame) == 0xffff || field16(layout->frame_code) == 0xffff ||
            field16(layout->frame_previous) == 0xffff || field16(layout->frame_instr) == 0xffff ||
            field16(layout->frame_owner) == 0xffff || field16(layout->code_adaptive) == 0xffff)
                return -EPROTONOSUPPORT;
        *ret = (struct unwind_runtime_found) {
                .id = UNWIND_RUNTIME_PYTHON,
                .lo = bin->eval_start,
                .hi = bin->eval_end,
                .cold_lo = bin->cold_start,
                .cold_hi = bin->cold_end,
                .bpf = { .id = UNWIND_RUNTIME_PYTHON, .version = bin->version },
        };
        py = &ret->bpf.python;
        py->tss_key = bin->runtime + layout->runtime_tss_key;
        py->tstate_cframe = field16(layout->tstate_cframe);
        py->current_frame = field16(layout->current_frame);
        py->frame_code = field16(layout->frame_code);
        py->frame_previous = field16(layout->frame_previous);
        py->frame_instr = field16(layout->frame_instr);
        py->frame_owner = field16(layout->frame_owner);
        py->frame_is_entry = field16(layout->frame_is_entry);
        py->code_adaptive = field16(layout->code_adaptive);
        py->owner_cstack = layout->owner_cstack;
        py->glibc_specific = PYTHON_GLIBC_SPECIFIC;
        memcpy(ret->names, &names, sizeof(names));
        return 0;
}

static int python_discover(Elf *elf, const struct file_key *key, struct unwind_runtime_found *ret) {
        struct python_binary bin;
        struct python_layout layout;
        int r;

        (void) key;
        r = python_discover_elf(elf, &bin);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        r = python_layout_get(bin.version, bin.runtime_head, bin.runtime_head_size, &layout);
        if (r < 0)
                return r;
        r = python_found_make(&bin, &layout, ret);
        return r < 0 ? r : 1;
}

const struct unwind_runtime python_runtime = {
        .name = "python",
        .id = UNWIND_RUNTIME_PYTHON,
        .discover = python_discover,
};
