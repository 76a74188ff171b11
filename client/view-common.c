/* What profctl's views share: the name a view shows for a frame, the
 * head of the two diff documents. */
#include "view-private.h"

#include <errno.h>

#include "util.h"

int view_frame_name(const struct profile_frame *f, bool lines, const char **ret, char **ret_owned) {
        int r;

        *ret_owned = NULL;
        *ret = f->name;
        if (!lines)
                return 0;
        r = frame_name_with_line(f->name, f->file, f->line, ret_owned);
        if (r < 0)
                return r;
        if (*ret_owned)
                *ret = *ret_owned;
        return 0;
}

static json_t *window_json(const profile *p) {
        return json_pack("{sI, sI, sI}", "total", (json_int_t) p->total, "from_ns", (json_int_t) p->from_ns,
                         "to_ns", (json_int_t) p->to_ns);
}

json_t *view_diff_doc_new(const char *view, const profile *baseline, const profile *current) {
        return json_pack("{ss, ss, ss, so, so}", "view", view, "kind", current->kind, "unit", current->unit,
                         "baseline", window_json(baseline), "current", window_json(current));
}
