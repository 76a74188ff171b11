/* The in-memory answer of a query: frames interned, strings owned, stacks
 * as arrays of frame indexes. */
#include "profile.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "protocol.h"
#include "util.h"

/* The key of the frame map: a frame whose strings are already interned, so
 * two equal frames have pointer-equal strings and comparing them is cheap.
 * Allocated on its own: the frames array moves when it grows. */
struct frame_key {
        struct profile_frame frame;
        uint32_t index;
};

struct profile_priv {
        hashmap *strings;       /* char* -> the same char* (owned keys) */
        hashmap *frames;        /* struct frame_key* -> the same (owned) */
        size_t frames_allocated;
        size_t stacks_allocated;
        /* the stack count an "end" line is checked against; stacks of a
         * profile built from several answers are not */
        uint64_t lines_added;
};

static uint64_t frame_key_hash(const void *k) {
        const struct profile_frame *f = &((const struct frame_key *) k)->frame;
        uint64_t v[] = {
                (uintptr_t) f->name, (uintptr_t) f->raw_name, (uintptr_t) f->module,
                (uintptr_t) f->build_id, (uintptr_t) f->file, f->line, f->address, f->flags,
        };

        return hash_bytes(v, sizeof(v));
}

static bool frame_key_eq(const void *a, const void *b) {
        const struct profile_frame *x = &((const struct frame_key *) a)->frame,
                                   *y = &((const struct frame_key *) b)->frame;

        /* strings are interned: equal text is the same pointer */
        return x->name == y->name && x->raw_name == y->raw_name && x->module == y->module &&
               x->build_id == y->build_id && x->file == y->file && x->line == y->line &&
               x->address == y->address && x->flags == y->flags;
}

static int profile_set_string(char **field, const char *value) {
        char *s = strdup(value);

        if (!s)
                return -ENOMEM;
        free(*field);
        *field = s;
        return 0;
}

profile *profile_new(void) {
        profile *p = calloc(1, sizeof(*p));
        struct profile_priv *priv;

        if (!p)
                return NULL;
        priv = calloc(1, sizeof(*priv));
        p->priv = priv;
        if (!priv)
                return profile_free(p);
        priv->strings = hashmap_new_string();
        priv->frames = hashmap_new(frame_key_hash, frame_key_eq);
        if (!priv->strings || !priv->frames)
                return profile_free(p);
        /* never NULL, like the frames' strings: what a query answers by default */
        if (profile_set_string(&p->kind, "cpu") < 0 || profile_set_string(&p->unit, "samples") < 0)
                return profile_free(p);
        return p;
}

profile *profile_free(profile *p) {
        struct profile_priv *priv;

        if (!p)
                return NULL;
        priv = p->priv;
        for (size_t i = 0; i < p->n_stacks; i++)
                free((uint32_t *) p->stacks[i].frames);
        free(p->stacks);
        free(p->frames);
        if (priv) {
                hashmap_free_with_keys(priv->frames);
                hashmap_free_with_keys(priv->strings);
                free(priv);
        }
        free(p->kind);
        free(p->unit);
        json_decref(p->quality_by_host);
        free(p);
        return NULL;
}

/* The profile's copy of s ("" for NULL), made once per distinct text. */
static const char *profile_intern(profile *p, const char *s) {
        struct profile_priv *priv = p->priv;
        void *v;
        char *copy;

        if (!s)
                s = "";
        if (hashmap_get(priv->strings, s, &v) >= 0)
                return v;
        copy = strdup(s);
        if (!copy)
                return NULL;
        if (hashmap_put(priv->strings, copy, copy) < 0) {
                free(copy);
                return NULL;
        }
        return copy;
}

/* The index of frame f (its strings not yet interned) in p->frames, adding
 * it when new. Returns 0 or -ENOMEM. */
static int profile_frame_index(profile *p, const struct profile_frame *f, uint32_t *ret) {
        struct profile_priv *priv = p->priv;
        struct frame_key key = {
                .frame = {
                        .name = profile_intern(p, f->name),
                        .raw_name = profile_intern(p, f->raw_name && *f->raw_name ? f->raw_name : f->name),
                        .module = profile_intern(p, f->module),
                        .build_id = profile_intern(p, f->build_id),
                        .file = profile_intern(p, f->file),
                        .line = f->line,
                        .address = f->address,
                        .flags = f->flags,
                },
        };
        struct frame_key *k;
        void *v;
        int r;

        if (!key.frame.name || !key.frame.raw_name || !key.frame.module || !key.frame.build_id ||
            !key.frame.file)
                return -ENOMEM;
        if (hashmap_get(priv->frames, &key, &v) >= 0) {
                *ret = ((struct frame_key *) v)->index;
                return 0;
        }
        if (p->n_frames >= UINT32_MAX)
                return -ENOMEM;
        if (p->n_frames == priv->frames_allocated) {
                size_t a = MAX(priv->frames_allocated * 2, (size_t) 64);
                struct profile_frame *frames = reallocarray(p->frames, a, sizeof(*frames));

                if (!frames)
                        return -ENOMEM;
                p->frames = frames;
                priv->frames_allocated = a;
        }
        k = malloc(sizeof(*k));
        if (!k)
                return -ENOMEM;
        *k = key;
        k->index = (uint32_t) p->n_frames;
        r = hashmap_put(priv->frames, k, k);
        if (r < 0) {
                free(k);
                return r;
        }
        p->frames[p->n_frames] = k->frame;
        *ret = (uint32_t) p->n_frames++;
        return 0;
}

int profile_add_stack(profile *p, const struct profile_frame *frames, size_t n, uint64_t value,
                      const char *group) {
        struct profile_priv *priv = p->priv;
        _cleanup_free_ uint32_t *indexes = NULL;
        const char *g;
        int r;

        if (value > UINT64_MAX - p->total)
                return -EOVERFLOW;
        if (n > 0) {
                indexes = malloc(n * sizeof(*indexes));
                if (!indexes)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                r = profile_frame_index(p, &frames[i], &indexes[i]);
                if (r < 0)
                        return r;
        }
        g = profile_intern(p, group);
        if (!g)
                return -ENOMEM;
        if (p->n_stacks == priv->stacks_allocated) {
                size_t a = MAX(priv->stacks_allocated * 2, (size_t) 64);
                struct profile_stack *stacks = reallocarray(p->stacks, a, sizeof(*stacks));

                if (!stacks)
                        return -ENOMEM;
                p->stacks = stacks;
                priv->stacks_allocated = a;
        }
        p->stacks[p->n_stacks++] = (struct profile_stack) {
                .value = value,
                .group = g,
                .n_frames = n,
                .frames = TAKE_PTR(indexes),
        };
        p->total += value;
        return 0;
}

/* Optional frame field `key`: absent (or null) leaves *ret as it is. A
 * present field of the wrong type is profd's fault. */
static int frame_get_string(const json_t *frame, size_t i, const char *key, const char **ret) {
        json_t *v = json_object_get(frame, key);

        if (!v || json_is_null(v))
                return 0;
        if (!json_is_string(v))
                return cli_error(-EBADMSG, "profd sent a 'stack' line whose frame %zu has a \"%s\" "
                                 "that is not a string", i, key);
        *ret = json_string_value(v);
        return 0;
}

static int frame_get_u64(const json_t *frame, size_t i, const char *key, uint64_t max, uint64_t *ret) {
        json_t *v = json_object_get(frame, key);

        if (!v || json_is_null(v))
                return 0;
        if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t) json_integer_value(v) > max)
                return cli_error(-EBADMSG, "profd sent a 'stack' line whose frame %zu has a \"%s\" "
                                 "that is not an integer in [0, %ju]", i, key, (uintmax_t) max);
        *ret = (uint64_t) json_integer_value(v);
        return 0;
}

/* An address: JSON integers are signed 64-bit in jansson (and in most
 * parsers), so a kernel address, top bit set, arrives as a negative integer
 * whose two's complement is the address; a "0x..." string is taken too. */
static int frame_get_address(const json_t *frame, size_t i, uint64_t *ret) {
        json_t *v = json_object_get(frame, PROTO_KEY_ADDRESS);

        if (!v || json_is_null(v))
                return 0;
        if (json_is_integer(v)) {
                *ret = (uint64_t) json_integer_value(v);
                return 0;
        }
        if (json_is_string(v)) {
                const char *s = json_string_value(v);
                char *end;

                errno = 0;
                if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && isxdigit((unsigned char) s[2])) {
                        unsigned long long a = strtoull(s + 2, &end, 16);

                        if (errno == 0 && *end == '\0') {
                                *ret = a;
                                return 0;
                        }
                }
        }
        return cli_error(-EBADMSG, "profd sent a 'stack' line whose frame %zu has an \"address\" "
                         "that is neither an integer nor a \"0x...\" string", i);
}

static int frame_get_flag(const json_t *frame, size_t i, const char *key, bool required, unsigned flag,
                          unsigned *flags) {
        json_t *v = json_object_get(frame, key);

        if (!v && !required)
                return 0;
        if (!json_is_boolean(v))
                return cli_error(-EBADMSG, "profd sent a 'stack' line whose frame %zu has %s \"%s\" "
                                 "(expected a boolean)", i, v ? "an invalid" : "no", key);
        if (json_is_true(v))
                *flags |= flag;
        return 0;
}

int profile_frame_decode(const json_t *frame, size_t i, struct profile_frame *ret) {
        struct profile_frame f = { .name = "", .raw_name = "", .module = "", .build_id = "", .file = "" };
        bool resolved_true = true;
        uint64_t u;
        int r;

        if (!json_is_object(frame))
                return cli_error(-EBADMSG, "profd sent a 'stack' line whose frame %zu is not an object", i);
        if (!json_is_string(json_object_get(frame, PROTO_KEY_NAME)))
                return cli_error(-EBADMSG, "profd sent a 'stack' line whose frame %zu has no \"name\" "
                                 "string", i);
        f.name = json_string_value(json_object_get(frame, PROTO_KEY_NAME));
        if ((r = frame_get_string(frame, i, PROTO_KEY_RAW_NAME, &f.raw_name)) < 0 ||
            (r = frame_get_string(frame, i, PROTO_KEY_MODULE, &f.module)) < 0 ||
            (r = frame_get_string(frame, i, PROTO_KEY_BUILD_ID, &f.build_id)) < 0 ||
            (r = frame_get_string(frame, i, PROTO_KEY_FILE, &f.file)) < 0)
                return r;
        u = 0;
        if ((r = frame_get_u64(frame, i, PROTO_KEY_LINE, UINT32_MAX, &u)) < 0)
                return r;
        f.line = (uint32_t) u;
        if ((r = frame_get_address(frame, i, &f.address)) < 0)
                return r;
        if ((r = frame_get_flag(frame, i, PROTO_KEY_KERNEL, true, PROFILE_FRAME_KERNEL, &f.flags)) < 0 ||
            (r = frame_get_flag(frame, i, PROTO_KEY_INLINED, false, PROFILE_FRAME_INLINED, &f.flags)) < 0 ||
            (r = frame_get_flag(frame, i, PROTO_KEY_JIT, false, PROFILE_FRAME_JIT, &f.flags)) < 0)
                return r;
        /* "resolved" is the positive form; absent means resolved (older profd) */
        if (json_object_get(frame, PROTO_KEY_RESOLVED)) {
                unsigned resolved = 0;

                if ((r = frame_get_flag(frame, i, PROTO_KEY_RESOLVED, true, 1, &resolved)) < 0)
                        return r;
                resolved_true = resolved;
        }
        if (!resolved_true)
                f.flags |= PROFILE_FRAME_UNRESOLVED;
        /* profd's stand-in for a stack it could not walk (docs/protocol.md) */
        if (streq(f.name, "[lost]") && (!*f.module || streq(f.module, "[lost]")))
                f.flags |= PROFILE_FRAME_LOST;
        /* a CPython or a Java frame: by its build_id or module (common/protocol.h),
         * so a fleet answer is told apart as a local one */
        if (!(f.flags & PROFILE_FRAME_KERNEL) && store_frame_is_python(f.build_id, f.module))
                f.flags |= PROFILE_FRAME_PYTHON;
        else if (!(f.flags & PROFILE_FRAME_KERNEL) && store_frame_is_hotspot(f.build_id, f.module))
                f.flags |= PROFILE_FRAME_JAVA;
        *ret = f;
        return 0;
}

int profile_stack_line_decode(const json_t *line, struct profile_stack_line *ret) {
        json_t *frames, *group;
        uint64_t value;
        int r;

        r = response_get_u64(line, PROTO_TYPE_STACK, PROTO_KEY_VALUE, &value);
        if (r < 0)
                return r;
        frames = json_object_get(line, PROTO_KEY_FRAMES);
        if (!json_is_array(frames))
                return cli_error(-EBADMSG, "profd sent a 'stack' line without a valid \"frames\" "
                                 "(expected an array)");
        group = json_object_get(line, PROTO_KEY_GROUP);
        if (group && !json_is_string(group))
                return cli_error(-EBADMSG, "profd sent a 'stack' line whose \"group\" is not a string");
        *ret = (struct profile_stack_line) {
                .value = value,
                .group = json_string_value(group),
                .frames = frames,
                .n_frames = json_array_size(frames),
        };
        return 0;
}

int profile_add_stack_line(profile *p, const json_t *line) {
        struct profile_priv *priv = p->priv;
        _cleanup_free_ struct profile_frame *frames = NULL;
        struct profile_stack_line l;
        int r;

        r = profile_stack_line_decode(line, &l);
        if (r < 0)
                return r;
        if (l.n_frames > 0) {
                frames = calloc(l.n_frames, sizeof(*frames));
                if (!frames)
                        return cli_error(-ENOMEM, "%m");
        }
        for (size_t i = 0; i < l.n_frames; i++) {
                r = profile_frame_decode(json_array_get(l.frames, i), i, &frames[i]);
                if (r < 0)
                        return r;
        }
        r = profile_add_stack(p, frames, l.n_frames, l.value, l.group);
        if (r == -EOVERFLOW)
                return cli_error(-EBADMSG, "profd sent stacks whose values add up to more than 2^64");
        if (r < 0)
                return cli_error(r, "%m");
        priv->lines_added++;
        return 0;
}

void profile_set_frequency(profile *p, uint64_t frequency_hz) {
        p->period_ns = frequency_hz > 0 ? NSEC_PER_SEC / frequency_hz : 0;
}

int profile_set_kind(profile *p, const char *kind, const char *unit) {
        if (profile_set_string(&p->kind, kind) < 0 || profile_set_string(&p->unit, unit) < 0)
                return -ENOMEM;
        return 0;
}

int profile_set_end(profile *p, const json_t *end) {
        struct profile_priv *priv = p->priv;
        const char *kind, *unit;
        uint64_t total, stacks, from_ns, to_ns;
        json_t *freq;
        int r;

        if ((r = response_get_string(end, "end", "kind", &kind)) < 0 ||
            (r = response_get_string(end, "end", "unit", &unit)) < 0 ||
            (r = response_get_u64(end, "end", "total", &total)) < 0 ||
            (r = response_get_u64(end, "end", "stacks", &stacks)) < 0 ||
            (r = response_get_u64(end, "end", "from_ns", &from_ns)) < 0 ||
            (r = response_get_u64(end, "end", "to_ns", &to_ns)) < 0)
                return r;
        if (total != p->total || stacks != priv->lines_added)
                return cli_error(-EBADMSG, "profd's 'end' line says %ju stacks with %ju in all, "
                                 "but it sent %ju stacks with %ju", (uintmax_t) stacks,
                                 (uintmax_t) total, (uintmax_t) priv->lines_added, (uintmax_t) p->total);
        freq = json_object_get(end, "frequency_hz");
        if (freq && !json_is_null(freq)) {
                if (!json_is_integer(freq) || json_integer_value(freq) < 0)
                        return cli_error(-EBADMSG, "profd sent an 'end' line without a valid "
                                         "\"frequency_hz\" (expected a non-negative integer)");
                if (json_integer_value(freq) > 0)
                        profile_set_frequency(p, (uint64_t) json_integer_value(freq));
        }
        if (json_object_get(end, "quality")) {
                if (quality_from_json(json_object_get(end, "quality"), &p->quality) < 0)
                        return cli_error(-EBADMSG, "profd sent an 'end' line whose \"quality\" is not a "
                                         "report of unsigned integers");
                p->have_quality = true;
        }
        if (json_object_get(end, "quality_by_host")) {
                if (quality_by_host_check(json_object_get(end, "quality_by_host")) < 0)
                        return cli_error(-EBADMSG, "the fleet's 'end' line has a \"quality_by_host\" that is not "
                                         "an object of reports");
                json_decref(p->quality_by_host);
                p->quality_by_host = json_incref(json_object_get(end, "quality_by_host"));
        }
        if (profile_set_kind(p, kind, unit) < 0)
                return cli_error(-ENOMEM, "%m");
        p->from_ns = from_ns;
        p->to_ns = to_ns;
        return 0;
}
