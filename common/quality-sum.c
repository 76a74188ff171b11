/* Classifying answered stacks for the quality report. */
#include "quality-sum.h"

#include <stdbool.h>
#include <string.h>

#include "../bpf/profd.h"
#include "macro.h"

int quality_end_class(int user_end) {
        switch (user_end) {
        case PROFD_END_COMPLETE:
                return -1;
        case PROFD_END_NO_PROCESS:
        case PROFD_END_PENDING:
                return QUALITY_TRUNC_NO_TABLE;
        case PROFD_END_NO_MAPPING:
                return QUALITY_TRUNC_NO_MAPPING;
        case PROFD_END_UNSUPPORTED:
                return QUALITY_TRUNC_UNSUPPORTED;
        case PROFD_END_READ_FAULT:
                return QUALITY_TRUNC_READ_FAULT;
        case PROFD_END_DEPTH:
                return QUALITY_TRUNC_DEPTH;
        case PROFD_END_FP_END:
                return QUALITY_TRUNC_FP_END;
        case PROFD_END_CFA_STUCK:
                return QUALITY_TRUNC_CFA_STUCK;
        case STORE_END_LOST:
                return QUALITY_TRUNC_STACK_LOST;
        default:
                /* NULL (stored before schema 6), or an end a newer BPF side
                 * knows and this profd does not: not claimed as complete */
                return -2;
        }
}

static int unresolved_class(const struct store_frame_out *f) {
        switch (f->unresolved) {
        case STORE_UNRESOLVED_NO_SYMBOLS:
                return QUALITY_UNRES_NO_SYMBOLS;
        case STORE_UNRESOLVED_NO_FILE:
                return QUALITY_UNRES_NO_FILE;
        case STORE_UNRESOLVED_JIT_WITHOUT_MAP:
                return QUALITY_UNRES_JIT_WITHOUT_MAP;
        case STORE_UNRESOLVED_UNKNOWN_MAPPING:
                return QUALITY_UNRES_UNKNOWN_MAPPING;
        case STORE_UNRESOLVED_PYTHON_NO_RUNTIME:
                return QUALITY_UNRES_PYTHON_NO_RUNTIME;
        case STORE_UNRESOLVED_PYTHON_EXITED:
                return QUALITY_UNRES_PYTHON_EXITED;
        case STORE_UNRESOLVED_PYTHON_READ_CODE:
                return QUALITY_UNRES_PYTHON_READ_CODE;
        case STORE_UNRESOLVED_PYTHON_NOT_CODE:
                return QUALITY_UNRES_PYTHON_NOT_CODE;
        case STORE_UNRESOLVED_PYTHON_READ_STRING:
                return QUALITY_UNRES_PYTHON_READ_STRING;
        case STORE_UNRESOLVED_PYTHON_BAD_STRING:
                return QUALITY_UNRES_PYTHON_BAD_STRING;
        case STORE_UNRESOLVED_HOTSPOT_NO_RUNTIME:
                return QUALITY_UNRES_HOTSPOT_NO_RUNTIME;
        case STORE_UNRESOLVED_HOTSPOT_EXITED:
                return QUALITY_UNRES_HOTSPOT_EXITED;
        case STORE_UNRESOLVED_HOTSPOT_READ:
                return QUALITY_UNRES_HOTSPOT_READ;
        case STORE_UNRESOLVED_HOTSPOT_BAD:
                return QUALITY_UNRES_HOTSPOT_BAD;
        case STORE_UNRESOLVED_HOTSPOT_NO_SCOPE:
                return QUALITY_UNRES_HOTSPOT_NO_SCOPE;
        default:
                return QUALITY_UNRES_UNKNOWN;
        }
}

unsigned quality_unresolved_mask(const struct store_stack_out *stack) {
        unsigned mask = 0;

        for (size_t i = 0; i < stack->n_frames; i++) {
                const struct store_frame_out *f = &stack->frames[i];

                /* user frames only; [lost] has no address to resolve, and is
                 * counted as a lost stack (by its end) */
                if (f->kernel || !f->has_address)
                        continue;
                /* a named frame counts for its missing inlined calls only */
                if (f->resolved) {
                        if (f->unresolved == STORE_UNRESOLVED_HOTSPOT_NO_SCOPE)
                                mask |= 1u << QUALITY_UNRES_HOTSPOT_NO_SCOPE;
                        continue;
                }
                mask |= 1u << unresolved_class(f);
        }
        return mask;
}

void quality_add_class(struct quality *q, uint64_t value, int user_end, unsigned unresolved_mask) {
        int c = quality_end_class(user_end);

        q->total += value;
        if (c == -1)
                q->complete += value;
        else if (c == -2)
                q->unknown += value;
        else
                q->truncated[c] += value;
        /* a stack with a frame without a name */
        if (unresolved_mask & ~(1u << QUALITY_UNRES_HOTSPOT_NO_SCOPE))
                q->unresolved += value;
        for (size_t i = 0; i < _QUALITY_UNRES_MAX; i++)
                if (unresolved_mask & (1u << i))
                        q->unresolved_by[i] += value;
}

void quality_add_stack(struct quality *q, const struct store_stack_out *stack) {
        quality_add_class(q, stack->value, stack->user_end, quality_unresolved_mask(stack));
}

void quality_add_drop(struct quality *q, const char *reason, uint64_t count) {
        for (size_t i = 0; i < _QUALITY_LOST_MAX; i++)
                if (streq(reason, quality_lost_names[i].key)) {
                        q->lost[i] += count;
                        return;
                }
}
