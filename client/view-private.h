/* What profctl's view files (view-*.c) share and nothing else needs; their
 * public functions are in views.h. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "profile.h"
#include "views.h"

/* The name a view shows for a frame: "function (file:line)" when lines is
 * set and debug info placed it, else the name. *ret_owned is what to free
 * (NULL if the name is the frame's). Returns 0 or -ENOMEM. */
int view_frame_name(const struct profile_frame *f, bool lines, const char **ret, char **ret_owned);

/* The head both diff documents start from: the view's name, the kind and
 * unit, and each window's total and bounds. Returns a new object, or NULL
 * on out of memory. */
json_t *view_diff_doc_new(const char *view, const profile *baseline, const profile *current);
