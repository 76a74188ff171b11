/* profile -> perftools.profiles.Profile (protobuf-c) -> gzip. The messages
 * are built in growable arrays first and pointed at only once every array
 * has its final place, then packed in one buffer and deflated to the file. */
#include "pprof.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "hashmap.h"
#include "profile.pb-c.h"
#include "protocol.h"

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__ValueType pb_value_type;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Label pb_label;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Function pb_function;

/* A key made of a few integers (interned string pointers, frame indexes),
 * with the id it was given: functions and locations are interned by it. */
struct tuple {
        uint64_t id;
        size_t n;
        uint64_t v[];
};

static uint64_t tuple_hash(const void *k) {
        const struct tuple *t = k;

        return hash_bytes(t->v, t->n * sizeof(t->v[0]));
}

static bool tuple_eq(const void *a, const void *b) {
        const struct tuple *x = a, *y = b;

        return x->n == y->n && memcmp(x->v, y->v, x->n * sizeof(x->v[0])) == 0;
}

/* Grows *array (of *allocated elements of size bytes) to hold need. */
static int grow(void *array, size_t *allocated, size_t need, size_t size) {
        void **a = array;
        size_t n;
        void *p;

        if (need <= *allocated)
                return 0;
        n = MAX(need, MAX(*allocated * 2, (size_t) 16));
        p = reallocarray(*a, n, size);
        if (!p)
                return -ENOMEM;
        *a = p;
        *allocated = n;
        return 0;
}

struct pprof_builder {
        const profile *p;

        hashmap *string_ids;   /* const char* (text) -> index + 1 */
        const char **strings;
        size_t n_strings, strings_allocated;

        hashmap *mapping_ids;  /* module path -> mapping index + 1 */
        pb_mapping *mappings;
        size_t n_mappings, mappings_allocated;

        hashmap *functions;    /* struct tuple (name, raw name, file) */
        pb_function *functions_pb;
        size_t n_functions, functions_allocated;

        hashmap *locations;    /* struct tuple (frame indexes, outermost first) */
        pb_location *locations_pb;
        size_t n_locations, locations_allocated;
        pb_line *lines;        /* every location's lines, innermost first */
        size_t n_lines, lines_allocated;
        size_t *location_first_line; /* index into lines of each location's first */
        size_t location_first_line_allocated;

        pb_sample *samples;
        size_t n_samples, samples_allocated;
        uint64_t *sample_locations; /* every sample's location ids, leaf first */
        size_t n_sample_locations, sample_locations_allocated;
        size_t *sample_first_location;
        size_t sample_first_location_allocated;
        int64_t *values;       /* n_value_types per sample */
        size_t n_values, values_allocated;
        pb_label *labels;      /* one per sample, used when its group is set */
        size_t n_value_types;
        bool has_groups;
};

static void pprof_builder_done(struct pprof_builder *b) {
        hashmap_free(b->string_ids);
        free(b->strings);
        hashmap_free(b->mapping_ids);
        free(b->mappings);
        hashmap_free_with_keys(b->functions);
        free(b->functions_pb);
        hashmap_free_with_keys(b->locations);
        free(b->locations_pb);
        free(b->lines);
        free(b->location_first_line);
        free(b->samples);
        free(b->sample_locations);
        free(b->sample_first_location);
        free(b->values);
        free(b->labels);
}

/* The string table index of s; the texts must outlive the builder (they
 * are the profile's or literals). Returns -ENOMEM or the index. */
static int64_t string_id(struct pprof_builder *b, const char *s) {
        void *v;

        if (hashmap_get(b->string_ids, s, &v) >= 0)
                return (int64_t) KEY_TO_UINT64(v) - 1;
        if (grow(&b->strings, &b->strings_allocated, b->n_strings + 1, sizeof(*b->strings)) < 0 ||
            hashmap_put(b->string_ids, s, (void *) UINT64_TO_KEY(b->n_strings + 1)) < 0)
                return -ENOMEM;
        b->strings[b->n_strings] = s;
        return (int64_t) b->n_strings++;
}

/* A runtime's frames (Python's, Java's): no place in a file pprof could
 * find. */
#define PROFILE_FRAME_RUNTIME (PROFILE_FRAME_PYTHON | PROFILE_FRAME_JAVA)

/* Kernel frames all belong to one mapping, whatever profd named it; so do
 * a runtime's frames: their module is a .py or .java file (the function's
 * filename says it) and their build_id names one function, not a file
 * pprof could find. */
static const char *frame_module(const struct profile_frame *f) {
        if ((f->flags & PROFILE_FRAME_KERNEL) && !*f->module)
                return "[kernel.kallsyms]";
        if (f->flags & PROFILE_FRAME_PYTHON)
                return STORE_PYTHON_MODULE;
        if (f->flags & PROFILE_FRAME_JAVA)
                return STORE_HOTSPOT_MODULE;
        return f->module;
}

/* The address pprof gets for a frame: a runtime frame's is its line
 * (named) or a code object's, Method*'s or blob's address in one process
 * (unnamed), no place in a file; its line is in the location's Line. */
static uint64_t frame_address(const struct profile_frame *f) {
        return (f->flags & PROFILE_FRAME_RUNTIME) ? 0 : f->address;
}

/* The mapping id of frame f's module (0: none), widening its range to f's
 * address. Returns 0 or -ENOMEM. */
static int mapping_id(struct pprof_builder *b, const struct profile_frame *f, uint64_t *ret) {
        const char *module = frame_module(f);
        pb_mapping *m;
        int64_t name, build_id;
        void *v;

        if (!*module) {
                *ret = 0;
                return 0;
        }
        if (hashmap_get(b->mapping_ids, module, &v) >= 0)
                m = &b->mappings[KEY_TO_UINT64(v) - 1];
        else {
                name = string_id(b, module);
                if (name < 0)
                        return -ENOMEM;
                if (grow(&b->mappings, &b->mappings_allocated, b->n_mappings + 1, sizeof(*b->mappings)) < 0 ||
                    hashmap_put(b->mapping_ids, module, (void *) UINT64_TO_KEY(b->n_mappings + 1)) < 0)
                        return -ENOMEM;
                m = &b->mappings[b->n_mappings++];
                perftools__profiles__mapping__init(m);
                m->id = b->n_mappings;
                m->filename = name;
                m->memory_start = UINT64_MAX;
                /* names come with every frame, even unresolved ones ("mod+0x1a"):
                 * nothing is left for pprof to symbolize */
                m->has_functions = true;
        }
        if (!m->build_id && *f->build_id && !(f->flags & PROFILE_FRAME_RUNTIME)) {
                build_id = string_id(b, f->build_id);
                if (build_id < 0)
                        return -ENOMEM;
                m->build_id = build_id;
        }
        if (*f->file)
                m->has_filenames = true;
        if (f->line)
                m->has_line_numbers = true;
        if (f->flags & PROFILE_FRAME_INLINED)
                m->has_inline_frames = true;
        if (frame_address(f)) {
                m->memory_start = MIN(m->memory_start, f->address);
                m->memory_limit = MAX(m->memory_limit, f->address == UINT64_MAX ? f->address : f->address + 1);
        }
        *ret = m->id;
        return 0;
}

/* Looks the tuple up in map, or adds it with id *next + 1. *ret_new says
 * which. Returns the id or 0 for -ENOMEM. */
static uint64_t tuple_intern(hashmap *map, const uint64_t *v, size_t n, size_t next, bool *ret_new) {
        struct tuple *t = malloc(sizeof(*t) + n * sizeof(v[0]));
        void *found;

        if (!t)
                return 0;
        t->n = n;
        memcpy(t->v, v, n * sizeof(v[0]));
        if (hashmap_get(map, t, &found) >= 0) {
                free(t);
                *ret_new = false;
                return ((struct tuple *) found)->id;
        }
        t->id = next + 1;
        if (hashmap_put(map, t, t) < 0) {
                free(t);
                return 0;
        }
        *ret_new = true;
        return t->id;
}

static int function_id(struct pprof_builder *b, const struct profile_frame *f, uint64_t *ret) {
        uint64_t key[] = { (uintptr_t) f->name, (uintptr_t) f->raw_name, (uintptr_t) f->file };
        pb_function *fn;
        bool is_new;
        uint64_t id;
        int64_t name, system_name, file;

        id = tuple_intern(b->functions, key, ELEMENTSOF(key), b->n_functions, &is_new);
        if (id == 0)
                return -ENOMEM;
        if (is_new) {
                name = string_id(b, f->name);
                system_name = string_id(b, f->raw_name);
                file = string_id(b, f->file);
                if (name < 0 || system_name < 0 || file < 0 ||
                    grow(&b->functions_pb, &b->functions_allocated, b->n_functions + 1, sizeof(*fn)) < 0)
                        return -ENOMEM;
                fn = &b->functions_pb[b->n_functions++];
                perftools__profiles__function__init(fn);
                fn->id = id;
                fn->name = name;
                fn->system_name = system_name;
                fn->filename = file;
        }
        *ret = id;
        return 0;
}

/* A stack without frames still has its weight; profctl's table shows it as
 * "[unknown]", and so does pprof. */
static const struct profile_frame unknown_frame = {
        .name = "[unknown]", .raw_name = "[unknown]", .module = "", .build_id = "", .file = "",
};
static const uint32_t unknown_index = 0;

/* The location of a physical frame and the frames inlined into it:
 * frames[0] is the physical one, the others each inlined into the one
 * before (profd's order). Returns 0 or -ENOMEM. */
static int location_id(struct pprof_builder *b, const struct profile_frame *frames, const uint32_t *indexes,
                       size_t n, uint64_t *ret) {
        _cleanup_free_ uint64_t *key = malloc(MAX(n, (size_t) 1) * sizeof(*key));
        pb_location *l;
        size_t first;
        bool is_new;
        uint64_t id;
        int r;

        if (!key)
                return -ENOMEM;
        /* the stand-in frame of an empty stack is no frame of the profile:
         * keep its key apart from frame 0's */
        for (size_t i = 0; i < n; i++)
                key[i] = frames == &unknown_frame ? UINT64_MAX : indexes[i];
        id = tuple_intern(b->locations, key, n, b->n_locations, &is_new);
        if (id == 0)
                return -ENOMEM;
        if (!is_new) {
                *ret = id;
                return 0;
        }

        if (grow(&b->locations_pb, &b->locations_allocated, b->n_locations + 1, sizeof(*l)) < 0 ||
            grow(&b->location_first_line, &b->location_first_line_allocated, b->n_locations + 1,
                 sizeof(size_t)) < 0 ||
            grow(&b->lines, &b->lines_allocated, b->n_lines + n, sizeof(*b->lines)) < 0)
                return -ENOMEM;
        first = b->n_lines;
        /* pprof wants the innermost (the leaf-most inlined) function first */
        for (size_t i = n; i-- > 0;) {
                const struct profile_frame *f = &frames[indexes[i]];
                pb_line *line = &b->lines[b->n_lines++];
                uint64_t fid, ignored;

                perftools__profiles__line__init(line);
                r = function_id(b, f, &fid);
                if (r < 0)
                        return r;
                /* every frame of the chain marks its module's capabilities */
                r = mapping_id(b, f, &ignored);
                if (r < 0)
                        return r;
                line->function_id = fid;
                line->line = f->line;
        }
        l = &b->locations_pb[b->n_locations];
        perftools__profiles__location__init(l);
        l->id = id;
        r = mapping_id(b, &frames[indexes[0]], &l->mapping_id);
        if (r < 0)
                return r;
        l->address = frame_address(&frames[indexes[0]]);
        l->n_line = n;
        b->location_first_line[b->n_locations++] = first;
        *ret = id;
        return 0;
}

static int add_stack(struct pprof_builder *b, const struct profile_stack *s) {
        const struct profile_frame *frames = s->n_frames > 0 ? b->p->frames : &unknown_frame;
        const uint32_t *indexes = s->n_frames > 0 ? s->frames : &unknown_index;
        size_t n = MAX(s->n_frames, (size_t) 1), first = b->n_sample_locations;
        pb_sample *sample;
        int r;

        /* locations leaf first: walk the stack from the leaf, a location
         * ending at each frame that was not inlined into the one before */
        for (size_t end = n; end > 0;) {
                size_t start = end - 1;
                uint64_t id;

                while (start > 0 && (frames[indexes[start]].flags & PROFILE_FRAME_INLINED))
                        start--;
                r = location_id(b, frames, indexes + start, end - start, &id);
                if (r < 0)
                        return r;
                if (grow(&b->sample_locations, &b->sample_locations_allocated, b->n_sample_locations + 1,
                         sizeof(uint64_t)) < 0)
                        return -ENOMEM;
                b->sample_locations[b->n_sample_locations++] = id;
                end = start;
        }

        if (s->value > INT64_MAX || (b->p->period_ns && s->value > (uint64_t) INT64_MAX / b->p->period_ns))
                return -EOVERFLOW;
        if (grow(&b->samples, &b->samples_allocated, b->n_samples + 1, sizeof(*sample)) < 0 ||
            grow(&b->sample_first_location, &b->sample_first_location_allocated, b->n_samples + 1,
                 sizeof(size_t)) < 0 ||
            grow(&b->values, &b->values_allocated, b->n_values + b->n_value_types, sizeof(int64_t)) < 0)
                return -ENOMEM;
        b->values[b->n_values++] = (int64_t) s->value;
        if (b->n_value_types == 2)
                b->values[b->n_values++] = (int64_t) (s->value * b->p->period_ns);
        sample = &b->samples[b->n_samples];
        perftools__profiles__sample__init(sample);
        sample->n_location_id = b->n_sample_locations - first;
        sample->n_value = b->n_value_types;
        b->sample_first_location[b->n_samples++] = first;
        if (*s->group)
                b->has_groups = true;
        return 0;
}

/* Deflates buf into f as one gzip member. */
static int gzip_write(FILE *f, const uint8_t *buf, size_t size) {
        z_stream z = {};
        uint8_t out[64 * 1024];
        int r, zr;

        /* 15 + 16: the largest window, with a gzip header and trailer */
        if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
                return -ENOMEM;
        z.next_in = (uint8_t *) buf;
        r = 0;
        do {
                /* avail_in is 32-bit: feed a huge buffer in slices */
                if (z.avail_in == 0 && size > 0) {
                        size_t chunk = MIN(size, (size_t) UINT32_MAX);

                        z.avail_in = (uInt) chunk;
                        size -= chunk;
                }
                z.next_out = out;
                z.avail_out = sizeof(out);
                zr = deflate(&z, size == 0 ? Z_FINISH : Z_NO_FLUSH);
                if (zr == Z_STREAM_ERROR) {
                        r = -EIO;
                        break;
                }
                if (fwrite(out, 1, sizeof(out) - z.avail_out, f) != sizeof(out) - z.avail_out) {
                        r = -EIO;
                        break;
                }
        } while (zr != Z_STREAM_END);
        deflateEnd(&z);
        if (r == 0 && fflush(f) != 0)
                r = -EIO;
        return r;
}

/* What the packed message points through: arrays of pointers into the
 * builder's arrays, and the strings and values the message borrows. All
 * must live until the message is packed. */
struct pprof_links {
        pb_value_type *types;
        pb_value_type **type_ptrs;
        pb_value_type period_type;
        pb_sample **sample_ptrs;
        pb_label **label_ptrs;
        pb_mapping **mapping_ptrs;
        pb_location **location_ptrs;
        pb_line **line_ptrs;
        pb_function **function_ptrs;
        const char *type_names[2], *type_units[2];
        int64_t comments[2];
        /* the comments' strings: the string table borrows them until packed */
        char *full_report, *summary;
};

static void pprof_links_done(struct pprof_links *l) {
        free(l->types);
        free(l->type_ptrs);
        free(l->sample_ptrs);
        free(l->label_ptrs);
        free(l->mapping_ptrs);
        free(l->location_ptrs);
        free(l->line_ptrs);
        free(l->function_ptrs);
        free(l->full_report);
        free(l->summary);
}

/* The sample types of p's kind: a count and, with the period known, a time
 * for cpu; the blocked time for the others. Sets b->n_value_types, which
 * add_stack() needs. */
static void pprof_choose_types(struct pprof_builder *b, const profile *p, struct pprof_links *l) {
        if (streq(p->kind, "cpu")) {
                l->type_names[0] = "samples";
                l->type_units[0] = "count";
                l->type_names[1] = "cpu";
                l->type_units[1] = "nanoseconds";
                /* without the period a time would be a guess: leave it out */
                b->n_value_types = p->period_ns ? 2 : 1;
        } else {
                /* "off_cpu" and "wakeup": blocked time by the blocking or the waking stack */
                l->type_names[0] = streq(p->kind, "offcpu") ? "off_cpu" : p->kind;
                l->type_units[0] = "nanoseconds";
                b->n_value_types = 1;
        }
}

/* Every stack of p into the builder. Returns 0, -EOVERFLOW or -ENOMEM. */
static int pprof_add_stacks(struct pprof_builder *b, const profile *p) {
        int r;

        /* pprof names the profile after its first mapping ("File: ..."):
         * number user modules first, in the order stacks reach them from
         * their roots, so that is the program rather than the kernel */
        for (size_t i = 0; i < p->n_stacks; i++)
                for (size_t j = 0; j < p->stacks[i].n_frames; j++) {
                        const struct profile_frame *fr = &p->frames[p->stacks[i].frames[j]];
                        uint64_t ignored;

                        if (fr->flags & PROFILE_FRAME_KERNEL)
                                break;
                        r = mapping_id(b, fr, &ignored);
                        if (r < 0)
                                return r;
                }
        for (size_t i = 0; i < p->n_stacks; i++) {
                r = add_stack(b, &p->stacks[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The sample types and the period. Returns 0 or -ENOMEM. */
static int pprof_link_types(struct pprof_builder *b, const profile *p, struct pprof_links *l, pb_profile *pb) {
        l->types = calloc(b->n_value_types, sizeof(*l->types));
        l->type_ptrs = calloc(b->n_value_types, sizeof(*l->type_ptrs));
        if (!l->types || !l->type_ptrs)
                return -ENOMEM;
        for (size_t i = 0; i < b->n_value_types; i++) {
                int64_t t = string_id(b, l->type_names[i]), u = string_id(b, l->type_units[i]);

                if (t < 0 || u < 0)
                        return -ENOMEM;
                perftools__profiles__value_type__init(&l->types[i]);
                l->types[i].type = t;
                l->types[i].unit = u;
                l->type_ptrs[i] = &l->types[i];
        }
        pb->n_sample_type = b->n_value_types;
        pb->sample_type = l->type_ptrs;
        /* the period is one sample's worth of the last (the default) type */
        l->period_type = l->types[b->n_value_types - 1];
        pb->period_type = &l->period_type;
        pb->period = streq(p->kind, "cpu") ? (int64_t) (p->period_ns ? p->period_ns : 1) : 1;
        return 0;
}

/* The samples, each with its locations, values and its group as a label.
 * Returns 0 or -ENOMEM. */
static int pprof_link_samples(struct pprof_builder *b, const profile *p, struct pprof_links *l, pb_profile *pb) {
        int64_t group_key = 0;

        if (b->has_groups) {
                group_key = string_id(b, "group");
                if (group_key < 0)
                        return -ENOMEM;
                b->labels = calloc(b->n_samples, sizeof(*b->labels));
                l->label_ptrs = calloc(b->n_samples, sizeof(*l->label_ptrs));
                if (!b->labels || !l->label_ptrs)
                        return -ENOMEM;
        }
        l->sample_ptrs = calloc(MAX(b->n_samples, (size_t) 1), sizeof(*l->sample_ptrs));
        if (!l->sample_ptrs)
                return -ENOMEM;
        for (size_t i = 0; i < b->n_samples; i++) {
                pb_sample *s = &b->samples[i];
                const char *group = p->stacks[i].group;

                s->location_id = b->sample_locations + b->sample_first_location[i];
                s->value = b->values + i * b->n_value_types;
                if (*group) {
                        int64_t str = string_id(b, group);

                        if (str < 0)
                                return -ENOMEM;
                        perftools__profiles__label__init(&b->labels[i]);
                        b->labels[i].key = group_key;
                        b->labels[i].str = str;
                        l->label_ptrs[i] = &b->labels[i];
                        s->n_label = 1;
                        s->label = &l->label_ptrs[i];
                }
                l->sample_ptrs[i] = s;
        }
        pb->n_sample = b->n_samples;
        pb->sample = l->sample_ptrs;
        return 0;
}

/* The mappings, locations with their lines, and functions. Returns 0 or
 * -ENOMEM. */
static int pprof_link_tables(struct pprof_builder *b, struct pprof_links *l, pb_profile *pb) {
        l->mapping_ptrs = calloc(MAX(b->n_mappings, (size_t) 1), sizeof(*l->mapping_ptrs));
        if (!l->mapping_ptrs)
                return -ENOMEM;
        for (size_t i = 0; i < b->n_mappings; i++) {
                pb_mapping *m = &b->mappings[i];

                /* a module seen only without addresses: an empty range at 0 */
                if (m->memory_start == UINT64_MAX)
                        m->memory_start = 0;
                /* user addresses are file offsets (docs/protocol.md): with the
                 * offset equal to the start, address - start + offset is the
                 * file offset a symbolizer wants */
                m->file_offset = m->memory_start;
                l->mapping_ptrs[i] = m;
        }
        pb->n_mapping = b->n_mappings;
        pb->mapping = l->mapping_ptrs;

        l->location_ptrs = calloc(MAX(b->n_locations, (size_t) 1), sizeof(*l->location_ptrs));
        l->line_ptrs = calloc(MAX(b->n_lines, (size_t) 1), sizeof(*l->line_ptrs));
        if (!l->location_ptrs || !l->line_ptrs)
                return -ENOMEM;
        for (size_t i = 0; i < b->n_lines; i++)
                l->line_ptrs[i] = &b->lines[i];
        for (size_t i = 0; i < b->n_locations; i++) {
                b->locations_pb[i].line = l->line_ptrs + b->location_first_line[i];
                l->location_ptrs[i] = &b->locations_pb[i];
        }
        pb->n_location = b->n_locations;
        pb->location = l->location_ptrs;

        l->function_ptrs = calloc(MAX(b->n_functions, (size_t) 1), sizeof(*l->function_ptrs));
        if (!l->function_ptrs)
                return -ENOMEM;
        for (size_t i = 0; i < b->n_functions; i++)
                l->function_ptrs[i] = &b->functions_pb[i];
        pb->n_function = b->n_functions;
        pb->function = l->function_ptrs;
        return 0;
}

/* The quality report as comments (`go tool pprof -comments`): the summary
 * profctl prints, then the whole report as JSON. Returns 0 or -ENOMEM. */
static int pprof_link_comments(struct pprof_builder *b, const profile *p, struct pprof_links *l,
                               pb_profile *pb) {
        _cleanup_free_ char *report = NULL;
        json_t *o;

        if (!p->have_quality)
                return 0;
        o = quality_to_json(&p->quality);
        l->summary = quality_summary(&p->quality);
        report = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(o);
        if (!l->summary || !report || asprintf(&l->full_report, "quality report: %s", report) < 0) {
                l->full_report = NULL;
                return -ENOMEM;
        }
        l->comments[0] = string_id(b, l->summary);
        l->comments[1] = string_id(b, l->full_report);
        if (l->comments[0] < 0 || l->comments[1] < 0)
                return -ENOMEM;
        pb->n_comment = 2;
        pb->comment = l->comments;
        return 0;
}

int pprof_write(FILE *f, const profile *p) {
        _cleanup_(pprof_builder_done) struct pprof_builder b = { .p = p };
        _cleanup_(pprof_links_done) struct pprof_links l = {};
        _cleanup_free_ uint8_t *buf = NULL;
        pb_profile pb = PERFTOOLS__PROFILES__PROFILE__INIT;
        size_t size;
        int r;

        b.string_ids = hashmap_new_string();
        b.mapping_ids = hashmap_new_string();
        b.functions = hashmap_new(tuple_hash, tuple_eq);
        b.locations = hashmap_new(tuple_hash, tuple_eq);
        if (!b.string_ids || !b.mapping_ids || !b.functions || !b.locations)
                return -ENOMEM;
        /* the format wants "" at index 0 */
        if (string_id(&b, "") < 0)
                return -ENOMEM;

        pprof_choose_types(&b, p, &l);
        r = pprof_add_stacks(&b, p);
        if (r < 0)
                return r;

        /* every array has its final size now: point the messages at each
         * other (in this order: it is the order strings enter the table) */
        if ((r = pprof_link_types(&b, p, &l, &pb)) < 0 ||
            (r = pprof_link_samples(&b, p, &l, &pb)) < 0 ||
            (r = pprof_link_tables(&b, &l, &pb)) < 0 ||
            (r = pprof_link_comments(&b, p, &l, &pb)) < 0)
                return r;

        /* protobuf-c's string table is char **; it only reads them */
        pb.n_string_table = b.n_strings;
        pb.string_table = (char **) b.strings;

        if (p->from_ns > INT64_MAX || p->to_ns > INT64_MAX)
                return -EOVERFLOW;
        pb.time_nanos = (int64_t) p->from_ns;
        pb.duration_nanos = p->to_ns > p->from_ns ? (int64_t) (p->to_ns - p->from_ns) : 0;

        size = perftools__profiles__profile__get_packed_size(&pb);
        buf = malloc(MAX(size, (size_t) 1));
        if (!buf)
                return -ENOMEM;
        if (perftools__profiles__profile__pack(&pb, buf) != size)
                return -EIO;
        return gzip_write(f, buf, size);
}
