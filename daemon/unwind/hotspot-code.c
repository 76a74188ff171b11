/* HotSpot's naming hooks (runtime.h): Method* and CodeBlob* read from a JVM, checked, cached by the naming layer. */
#include "hotspot-code.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bytecursor.h"
#include "hashmap.h"
#include "hotspot.h"
#include "macro.h"

const char *hotspot_code_reason_name(enum hotspot_code_reason reason) {
        static const char *const names[_HOTSPOT_CODE_REASON_MAX] = {
                [HOTSPOT_CODE_OK] = "ok",
                [HOTSPOT_CODE_NO_TABLES] = "no-tables",
                [HOTSPOT_CODE_READ_METHOD] = "read-method",
                [HOTSPOT_CODE_BAD_METHOD] = "bad-method",
                [HOTSPOT_CODE_READ_BLOB] = "read-blob",
                [HOTSPOT_CODE_BAD_BLOB] = "bad-blob",
                [HOTSPOT_CODE_NO_LINE] = "no-line",
                [HOTSPOT_CODE_NO_SCOPE] = "no-scope",
                [HOTSPOT_CODE_BAD_SCOPE] = "bad-scope",
                [HOTSPOT_CODE_FAR_OFFSET] = "far-offset",
        };

        return (unsigned) reason < _HOTSPOT_CODE_REASON_MAX ? names[reason] : "unknown";
}

static const char *reason_name_hook(unsigned reason) {
        return hotspot_code_reason_name((enum hotspot_code_reason) reason);
}

/* FNV-1a, continued from h over n bytes. */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
        const uint8_t *b = p;

        for (size_t i = 0; i < n; i++)
                h = (h ^ b[i]) * 0x100000001b3ULL;
        return h;
}

#define FNV_BASIS 0xcbf29ce484222325ULL

uint64_t hotspot_method_identity(const char *class_name, const char *method_name, const char *signature) {
        /* over class NUL method NUL signature NUL, then hash_u64's mix:
         * stored in build_ids, so it never changes (test-hotspot-code
         * pins a value) */
        uint64_t h = FNV_BASIS;

        h = fnv(h, class_name, strlen(class_name) + 1);
        h = fnv(h, method_name, strlen(method_name) + 1);
        h = fnv(h, signature, strlen(signature) + 1);
        return hash_u64(h);
}

/* --- the VM-structs tables, once per libjvm build ---------------------- */

/* Builds cached: a host runs a few JVM versions at most. */
#define TABLES_SLOTS 8
/* A build whose tables did not read is tried again after this long, not
 * at every code object (a read is thousands of small reads). */
#define TABLES_RETRY_NS (10ULL * 1000000000ULL)

struct tables_slot {
        bool used;
        uint64_t symbols[_HOTSPOT_SYM_MAX];    /* file addresses: the build's key */
        int r;                                 /* 0: vs is read; else how it failed, at failed_ns */
        uint64_t failed_ns, used_ns;
        struct hotspot_vmstructs vs;
};

/* The hooks run on the writer's thread and on the event loop. */
static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tables_slot tables[TABLES_SLOTS];

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

void hotspot_code_forget_tables(void) {
        pthread_mutex_lock(&tables_lock);
        memset(tables, 0, sizeof(tables));
        pthread_mutex_unlock(&tables_lock);
}

void hotspot_code_put_tables(const uint64_t symbols[_HOTSPOT_SYM_MAX], const struct hotspot_vmstructs *vs) {
        pthread_mutex_lock(&tables_lock);
        tables[0] = (struct tables_slot) { .used = true, .vs = *vs, .used_ns = now_ns() };
        memcpy(tables[0].symbols, symbols, sizeof(tables[0].symbols));
        pthread_mutex_unlock(&tables_lock);
}

static struct hotspot_found_names names_of(const struct unwind_runtime_found *found) {
        struct hotspot_found_names n;

        _Static_assert(sizeof(n) <= UNWIND_RUNTIME_NAMES_MAX, "hotspot_found_names fits");
        memcpy(&n, found->names, sizeof(n));  /* names[] is bytes: no alignment promised */
        return n;
}

static struct tables_slot *tables_find(const uint64_t *symbols) {
        for (size_t i = 0; i < TABLES_SLOTS; i++)
                if (tables[i].used && memcmp(tables[i].symbols, symbols, sizeof(tables[i].symbols)) == 0)
                        return &tables[i];
        return NULL;
}

/* The tables of found's libjvm build, read through the process (`read`,
 * its symbols at + bias) the first time. The offsets are the build's;
 * what is the process's own (code heaps, bounds) is not used here.
 * Returns 0 with *ret; -ENOMEM; or how reading failed. */
static int tables_get(const struct unwind_runtime_found *found, uint64_t bias, unwind_runtime_read_fn read,
                      void *userdata, struct hotspot_vmstructs *ret) {
        struct hotspot_found_names names = names_of(found);
        uint64_t symbols[_HOTSPOT_SYM_MAX];
        enum hotspot_vmstructs_reason reason;
        struct hotspot_vmstructs vs;
        struct tables_slot *t;
        uint64_t now = now_ns();
        int r;

        pthread_mutex_lock(&tables_lock);
        t = tables_find(names.symbols);
        if (t && (t->r == 0 || now - t->failed_ns < TABLES_RETRY_NS)) {
                r = t->r;
                if (r == 0)
                        *ret = t->vs;
                t->used_ns = now;
                pthread_mutex_unlock(&tables_lock);
                return r;
        }
        pthread_mutex_unlock(&tables_lock);

        /* read without the lock: the other thread's names wait for no JVM */
        for (size_t s = 0; s < _HOTSPOT_SYM_MAX; s++)
                symbols[s] = names.symbols[s] + bias;
        r = hotspot_vmstructs_read(symbols, read, userdata, &vs, &reason, NULL);
        if (r == -ENOMEM)
                return r;

        pthread_mutex_lock(&tables_lock);
        t = tables_find(names.symbols);
        if (!t) {
                /* an empty slot, else the least recently used */
                t = &tables[0];
                for (size_t i = 0; i < TABLES_SLOTS; i++) {
                        if (!tables[i].used) {
                                t = &tables[i];
                                break;
                        }
                        if (tables[i].used_ns < t->used_ns)
                                t = &tables[i];
                }
                *t = (struct tables_slot) { .used = true };
                memcpy(t->symbols, names.symbols, sizeof(t->symbols));
        }
        /* a read that worked is kept over a failure, not the reverse */
        if (r == 0 || t->r != 0) {
                t->r = r;
                t->failed_ns = now;
                if (r == 0)
                        t->vs = vs;
        }
        t->used_ns = now;
        if (t->r == 0)
                *ret = t->vs;
        r = t->r;
        pthread_mutex_unlock(&tables_lock);
        return r;
}

/* --- methods ------------------------------------------------------------ */

struct hc_method {
        uint64_t addr;
        bool named;                    /* m is filled */
        struct hotspot_method m;
        uint64_t identity;
        enum hotspot_code_reason reason;       /* !named: why */
};

static enum hotspot_code_reason method_reason(int r, enum hotspot_names_reason reason) {
        if (reason == HOTSPOT_NAMES_NO_LAYOUT)
                return HOTSPOT_CODE_NO_TABLES;
        return r == -EIO ? HOTSPOT_CODE_READ_METHOD : HOTSPOT_CODE_BAD_METHOD;
}

/* Names the Method at `addr` into *m. Returns 0 (m->named or m->reason
 * says how it went) or -ENOMEM. */
static int method_name(const struct hotspot_vmstructs *vs, unwind_runtime_read_fn read, void *userdata,
                       uint64_t addr, struct hc_method *m) {
        enum hotspot_names_reason reason = HOTSPOT_NAMES_OK;
        int r;

        *m = (struct hc_method) { .addr = addr };
        r = hotspot_method_read(vs, read, userdata, addr, &m->m, &reason);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                m->reason = method_reason(r, reason);
                return 0;
        }
        m->named = true;
        m->identity = hotspot_method_identity(m->m.class_name, m->m.method_name, m->m.signature);
        return 0;
}

static size_t method_bytes(const struct hc_method *m) {
        size_t n = sizeof(*m);

        if (!m->named)
                return n;
        n += strlen(m->m.class_name) + strlen(m->m.method_name) + strlen(m->m.signature) +
             strlen(m->m.function) + 4 + m->m.n_lines * sizeof(*m->m.lines);
        if (m->m.source_file)
                n += strlen(m->m.source_file) + 1;
        return n;
}

/* Where a frame of the method is stored: its source file, or for a class
 * compiled without one, "[java]". */
#define HOTSPOT_MODULE_NO_FILE "[java]"
#define HOTSPOT_MODULE_STUB "[jvm]"

/* The line at bytecode index `bci` (HOTSPOT_BCI_ENTRY: the method's
 * first). 0 with *reason NO_LINE when there is none. */
static uint32_t method_line(const struct hc_method *m, int32_t bci, enum hotspot_code_reason *reason) {
        int line;

        if (bci < 0)
                bci = 0;
        if (m->m.lines_reason != HOTSPOT_NAMES_OK || (uint32_t) bci >= m->m.code_size ||
            (line = hotspot_lines_lookup(m->m.lines, m->m.n_lines, (uint32_t) bci)) <= 0) {
                *reason = HOTSPOT_CODE_NO_LINE;
                return 0;
        }
        return (uint32_t) line;
}

/* --- the code objects the naming cache keeps ---------------------------- */

/* A blob's head: what tells the same blob from another put at its address. */
struct blob_head {
        uint64_t name;                 /* const char * */
        uint64_t code_begin;           /* from the blob */
        uint64_t method;               /* nmethods: Method * */
        int32_t compile_id;
        uint32_t metadata, scopes_pcs, dependencies;
        uint64_t scopes_data;          /* from the blob */
};

struct hotspot_code {
        bool blob;                     /* hotspot_code_runtime's: a CodeBlob, else a Method */
        struct hc_method method;       /* a Method; an nmethod's own method */
        /* a blob */
        struct blob_head head;
        bool nmethod;
        bool native;                   /* a "native nmethod": the method alone, as its own frame */
        char *stub_name;               /* "[jvm] " and the blob's name; NULL for an nmethod */
        uint64_t stub_identity;
        /* an nmethod's debug info (NULL: not read, scopes_reason says why) */
        uint8_t *debug;                /* pcs, then metadata, then scopes data */
        struct hotspot_scopes scopes;
        enum hotspot_code_reason scopes_reason;
        struct hc_method *inlined;     /* the methods its scopes name, but its own */
        size_t n_inlined;
};

static void code_free(struct hotspot_code *c) {
        if (!c)
                return;
        hotspot_method_done(&c->method.m);
        for (size_t i = 0; i < c->n_inlined; i++)
                hotspot_method_done(&c->inlined[i].m);
        free(c->inlined);
        free(c->debug);
        free(c->stub_name);
        free(c);
}

static void code_free_hook(unwind_runtime_code *code) {
        code_free((struct hotspot_code *) code);
}

/* --- id HOTSPOT: a Method* ---------------------------------------------- */

static int method_read_hook(const struct unwind_runtime_found *found, uint64_t bias, unwind_runtime_read_fn read,
                            void *userdata, uint64_t addr, unwind_runtime_code **ret, size_t *ret_bytes,
                            unsigned *ret_reason) {
        struct hotspot_vmstructs vs;
        struct hotspot_code *c;
        int r;

        r = tables_get(found, bias, read, userdata, &vs);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                *ret_reason = HOTSPOT_CODE_NO_TABLES;
                return r;
        }
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        r = method_name(&vs, read, userdata, addr, &c->method);
        if (r < 0 || !c->method.named) {
                enum hotspot_code_reason reason = r < 0 ? HOTSPOT_CODE_OK : c->method.reason;

                code_free(c);
                *ret_reason = reason;
                return r < 0 ? r : reason == HOTSPOT_CODE_READ_METHOD ? -EIO : -EBADMSG;
        }
        *ret_bytes = sizeof(*c) + method_bytes(&c->method) - sizeof(c->method);
        *ret_reason = HOTSPOT_CODE_OK;
        *ret = (unwind_runtime_code *) c;
        return 0;
}

static int method_same_hook(const struct unwind_runtime_found *found, uint64_t bias, unwind_runtime_read_fn read,
                            void *userdata, uint64_t addr, const unwind_runtime_code *code) {
        const struct hotspot_code *c = (const struct hotspot_code *) code;
        enum hotspot_names_reason reason;
        struct hotspot_method_key key;
        struct hotspot_vmstructs vs;
        int r;

        r = tables_get(found, bias, read, userdata, &vs);
        if (r < 0)
                return r == -ENOMEM ? r : -EIO;
        r = hotspot_method_key_read(&vs, read, userdata, addr, &key, &reason);
        if (r == -EIO || r == -ENOMEM)
                return r;
        return r == 0 && hotspot_method_key_equal(&key, &c->method.m.key);
}

/* The method's own frame: its name, file, the line at bci. */
static void name_method(const struct hc_method *m, int32_t bci, struct unwind_runtime_name *ret,
                        unsigned *ret_reason) {
        enum hotspot_code_reason reason = HOTSPOT_CODE_OK;

        *ret = (struct unwind_runtime_name) {
                .function = m->m.function,
                .file = m->m.source_file,
                .module = m->m.source_file ?: HOTSPOT_MODULE_NO_FILE,
                .identity = m->identity,
        };
        ret->line = method_line(m, bci, &reason);
        *ret_reason = reason;
}

static void method_name_hook(const unwind_runtime_code *code, uint32_t offset, struct unwind_runtime_name *ret,
                             unsigned *ret_reason) {
        const struct hotspot_code *c = (const struct hotspot_code *) code;

        /* a bci saturated at the encoding's most is past where it was:
         * method_line finds no line past the code */
        name_method(&c->method, (int32_t) offset, ret, ret_reason);
}

/* --- id HOTSPOT_CODE: a CodeBlob* --------------------------------------- */

static uint64_t le(const uint8_t *p, size_t n) {
        struct bytecursor c = bytecursor_make(p, n);

        return bytecursor_fixed_le(&c, n);
}

/* The field at `off` (HOTSPOT_NO_FIELD: absent, 0) of `n` bytes, from a
 * head of `size` bytes read. */
static uint64_t field(const uint8_t *head, size_t size, uint32_t off, size_t n) {
        if (off == HOTSPOT_NO_FIELD || off > size || size - off < n)
                return 0;
        return le(head + off, n);
}

/* Bytes of a blob's head read, at most: JDK 17's nmethod is 264 bytes. */
#define BLOB_HEAD_MAX 1024u

static int head_read(const struct hotspot_vmstructs *vs, unwind_runtime_read_fn read, void *userdata, uint64_t addr,
                     uint8_t *buf, size_t *ret_size) {
        size_t want = vs->blob_size;
        int r;

        if (vs->nmethod_size != HOTSPOT_NO_FIELD)
                want = MAX(want, (size_t) vs->nmethod_size);
        if (want == 0 || want > BLOB_HEAD_MAX || addr == 0)
                return -EBADMSG;
        /* an nmethod's head; a small stub at the end of the heap's
         * committed memory may have fewer bytes than that after it */
        r = read(userdata, addr, buf, want);
        if (r < 0 && want > vs->blob_size) {
                want = vs->blob_size;
                r = read(userdata, addr, buf, want);
        }
        if (r < 0)
                return r;
        *ret_size = want;
        return 0;
}

/* The head fields of any blob (an nmethod's: head_parse_nmethod); a
 * field past the `size` bytes read is 0. */
static void head_parse(const struct hotspot_vmstructs *vs, const uint8_t *buf, size_t size, uint64_t addr,
                       struct blob_head *ret) {
        *ret = (struct blob_head) { .name = field(buf, size, vs->blob_name, 8) };
        if (vs->blob_code_begin != HOTSPOT_NO_FIELD)
                ret->code_begin = field(buf, size, vs->blob_code_begin, 8) - addr;
        else
                ret->code_begin = (uint32_t) field(buf, size, vs->blob_code_offset, 4);
}

static void head_parse_nmethod(const struct hotspot_vmstructs *vs, const uint8_t *buf, size_t size, uint64_t addr,
                               struct blob_head *h) {
        h->method = field(buf, size, vs->nmethod_method, 8);
        h->compile_id = (int32_t) field(buf, size, vs->nmethod_compile_id, 4);
        h->metadata = (uint32_t) field(buf, size, vs->nmethod_metadata_offset, 4);
        h->scopes_pcs = (uint32_t) field(buf, size, vs->nmethod_scopes_pcs_offset, 4);
        h->dependencies = (uint32_t) field(buf, size, vs->nmethod_dependencies_offset, 4);
        if (vs->nmethod_scopes_data_begin != HOTSPOT_NO_FIELD)
                h->scopes_data = field(buf, size, vs->nmethod_scopes_data_begin, 8) - addr;
}

/* The NUL-terminated name at `addr`, read a piece at a time that never
 * crosses a page, checked printable. */
static int name_read(unwind_runtime_read_fn read, void *userdata, uint64_t addr, char *buf) {
        size_t n = 0;

        if (addr == 0)
                return -EBADMSG;
        while (n < HOTSPOT_BLOB_NAME_MAX) {
                uint64_t a = addr + n;
                size_t piece = MIN(HOTSPOT_BLOB_NAME_MAX - n, 4096 - (size_t) (a & 4095));
                char *nul;

                if (a < addr || read(userdata, a, buf + n, piece) < 0)
                        return -EIO;
                nul = memchr(buf + n, '\0', piece);
                if (nul) {
                        if (nul == buf)
                                return -EBADMSG;
                        for (const char *p = buf; p < nul; p++)
                                if (*p < 0x20 || *p > 0x7e)
                                        return -EBADMSG;
                        return 0;
                }
                n += piece;
        }
        return -EBADMSG;
}

static bool is_nmethod_name(const char *name) {
        /* CompiledMethod's name for every nmethod; "native nmethod" is a
         * JNI method's wrapper, an nmethod too */
        return streq(name, "nmethod") || streq(name, "native nmethod");
}

/* Reads the nmethod's debug info into c->debug and c->scopes, checked
 * against the blob's layout. Returns 0 (c->scopes_reason says whether it
 * was read), -ENOMEM. */
static int debug_read(const struct hotspot_vmstructs *vs, unwind_runtime_read_fn read, void *userdata, uint64_t addr,
                      struct hotspot_code *c) {
        const struct blob_head *h = &c->head;
        uint64_t n_pcs, n_meta, n_data;

        c->scopes_reason = HOTSPOT_CODE_BAD_SCOPE;
        if (vs->nmethod_metadata_offset == HOTSPOT_NO_FIELD || vs->nmethod_scopes_pcs_offset == HOTSPOT_NO_FIELD ||
            vs->nmethod_dependencies_offset == HOTSPOT_NO_FIELD || vs->nmethod_scopes_data_begin == HOTSPOT_NO_FIELD ||
            vs->pc_desc_size == HOTSPOT_NO_FIELD || vs->pc_desc_pc_offset == HOTSPOT_NO_FIELD ||
            vs->pc_desc_scope_decode_offset == HOTSPOT_NO_FIELD)
                return 0;
        /* JDK 17's order after the code: metadata, scopes data, PcDescs,
         * dependencies (nmethod.hpp); metadata is Metadata * words */
        if (h->metadata < vs->nmethod_size || h->metadata > h->scopes_data || h->scopes_data > h->scopes_pcs ||
            h->scopes_pcs > h->dependencies || (h->scopes_data - h->metadata) % 8 != 0)
                return 0;
        n_meta = h->scopes_data - h->metadata;
        n_data = h->scopes_pcs - h->scopes_data;
        n_pcs = h->dependencies - h->scopes_pcs;
        if (n_pcs == 0 || n_meta + n_data + n_pcs > HOTSPOT_DEBUG_INFO_MAX)
                return 0;
        c->debug = malloc(n_meta + n_data + n_pcs);
        if (!c->debug)
                return -ENOMEM;
        /* three reads of one range: metadata, scopes data, PcDescs are adjacent */
        if (read(userdata, addr + h->metadata, c->debug, n_meta + n_data + n_pcs) < 0) {
                free(c->debug);
                c->debug = NULL;
                return 0;
        }
        c->scopes = (struct hotspot_scopes) {
                .metadata = c->debug,
                .metadata_size = n_meta,
                .data = c->debug + n_meta,
                .data_size = n_data,
                .pcs = c->debug + n_meta + n_data,
                .pcs_size = n_pcs,
                .pc_desc_size = vs->pc_desc_size,
                .pc_desc_pc_offset = vs->pc_desc_pc_offset,
                .pc_desc_scope_decode_offset = vs->pc_desc_scope_decode_offset,
                .format = hotspot_lines_format_of(vs->version_major),
        };
        /* a layout the decoder takes, a whole number of PcDescs */
        if (hotspot_scopes_pc_desc(&c->scopes, 0, &(int32_t) { 0 }, &(uint32_t) { 0 }) < 0) {
                free(c->debug);
                c->debug = NULL;
                return 0;
        }
        c->scopes_reason = HOTSPOT_CODE_OK;
        return 0;
}

static struct hc_method *inlined_find(const struct hotspot_code *c, uint64_t method) {
        for (size_t i = 0; i < c->n_inlined; i++)
                if (c->inlined[i].addr == method)
                        return &c->inlined[i];
        return NULL;
}

/* Names every method the nmethod's scopes name (but its own), now, while
 * the process lives: naming a pc later reads nothing. A method that does
 * not read is kept unnamed (a chain through it is not given). Returns 0 or
 * -ENOMEM. */
static int inlined_read(const struct hotspot_vmstructs *vs, unwind_runtime_read_fn read, void *userdata,
                        struct hotspot_code *c) {
        const struct hotspot_scopes *s = &c->scopes;
        struct hotspot_scope chain[HOTSPOT_SCOPES_DEPTH_MAX];
        size_t allocated = 0;
        int32_t pc;
        uint32_t decode, last = 0;

        /* each PcDesc's chain: at most HOTSPOT_DEBUG_INFO_MAX / 8 of them,
         * each at most HOTSPOT_SCOPES_DEPTH_MAX deep */
        for (size_t k = 0; hotspot_scopes_pc_desc(s, k, &pc, &decode) == 0; k++) {
                enum hotspot_scopes_reason reason;
                size_t n, depth;

                /* neighbours often share a scope */
                if (decode == last)
                        continue;
                last = decode;
                if (hotspot_scopes_chain(s, decode, c->method.addr, chain, HOTSPOT_SCOPES_DEPTH_MAX, &n, &depth,
                                         &reason) < 0)
                        continue;
                for (size_t i = 0; i + 1 < n; i++) {
                        int r;

                        if (chain[i].method == c->method.addr || inlined_find(c, chain[i].method))
                                continue;
                        if (c->n_inlined == HOTSPOT_CODE_METHODS_MAX)
                                return 0;
                        if (c->n_inlined == allocated) {
                                size_t more = MAX(allocated * 2, (size_t) 8);
                                struct hc_method *p = realloc(c->inlined, more * sizeof(*p));

                                if (!p)
                                        return -ENOMEM;
                                c->inlined = p;
                                allocated = more;
                        }
                        r = method_name(vs, read, userdata, chain[i].method, &c->inlined[c->n_inlined]);
                        if (r < 0)
                                return r;
                        c->n_inlined++;
                }
        }
        return 0;
}

static int blob_read_hook(const struct unwind_runtime_found *found, uint64_t bias, unwind_runtime_read_fn read,
                          void *userdata, uint64_t addr, unwind_runtime_code **ret, size_t *ret_bytes,
                          unsigned *ret_reason) {
        struct hotspot_vmstructs vs;
        uint8_t head[BLOB_HEAD_MAX];
        char name[HOTSPOT_BLOB_NAME_MAX];
        struct hotspot_code *c;
        size_t size, bytes;
        int r;

        r = tables_get(found, bias, read, userdata, &vs);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                *ret_reason = HOTSPOT_CODE_NO_TABLES;
                return r;
        }
        r = head_read(&vs, read, userdata, addr, head, &size);
        if (r < 0) {
                *ret_reason = r == -EBADMSG ? HOTSPOT_CODE_BAD_BLOB : HOTSPOT_CODE_READ_BLOB;
                return r;
        }
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->blob = true;
        head_parse(&vs, head, size, addr, &c->head);
        r = name_read(read, userdata, c->head.name, name);
        /* the code starts after the blob's header, within its first 64 KiB */
        if (r == 0 && (c->head.code_begin < vs.blob_size || c->head.code_begin >= PROFD_RT_FRAME_OFFSET_MAX))
                r = -EBADMSG;
        if (r < 0) {
                *ret_reason = r == -EIO ? HOTSPOT_CODE_READ_BLOB : HOTSPOT_CODE_BAD_BLOB;
                code_free(c);
                return r;
        }
        bytes = sizeof(*c);
        if (is_nmethod_name(name) && size < vs.nmethod_size) {
                /* an nmethod whose head did not read whole */
                *ret_reason = HOTSPOT_CODE_READ_BLOB;
                code_free(c);
                return -EIO;
        }
        if (!is_nmethod_name(name)) {
                size_t n = strlen(name);

                c->stub_name = malloc(sizeof(HOTSPOT_MODULE_STUB) + 1 + n);
                if (!c->stub_name) {
                        code_free(c);
                        return -ENOMEM;
                }
                strcpy(stpcpy(c->stub_name, HOTSPOT_MODULE_STUB " "), name);
                c->stub_identity = hash_u64(fnv(FNV_BASIS, c->stub_name, strlen(c->stub_name) + 1));
                *ret_bytes = bytes + strlen(c->stub_name) + 1;
                *ret_reason = HOTSPOT_CODE_OK;
                *ret = (unwind_runtime_code *) c;
                return 0;
        }

        c->nmethod = true;
        /* a native method's wrapper (and a method handle intrinsic) runs
         * no bytecode and inlines nothing: it records no scope */
        c->native = streq(name, "native nmethod");
        head_parse_nmethod(&vs, head, size, addr, &c->head);
        r = method_name(&vs, read, userdata, c->head.method, &c->method);
        if (r >= 0 && !c->method.named) {
                *ret_reason = c->method.reason;
                r = c->method.reason == HOTSPOT_CODE_READ_METHOD ? -EIO : -EBADMSG;
        }
        if (r >= 0 && !c->native)
                r = debug_read(&vs, read, userdata, addr, c);
        if (r >= 0 && c->scopes_reason == HOTSPOT_CODE_OK)
                r = inlined_read(&vs, read, userdata, c);
        if (r < 0) {
                if (r == -ENOMEM)
                        *ret_reason = HOTSPOT_CODE_OK;
                code_free(c);
                return r;
        }
        bytes += method_bytes(&c->method) - sizeof(c->method);
        if (c->debug)
                bytes += c->scopes.metadata_size + c->scopes.data_size + c->scopes.pcs_size;
        for (size_t i = 0; i < c->n_inlined; i++)
                bytes += method_bytes(&c->inlined[i]);
        *ret_bytes = bytes;
        *ret_reason = HOTSPOT_CODE_OK;
        *ret = (unwind_runtime_code *) c;
        return 0;
}

static int blob_same_hook(const struct unwind_runtime_found *found, uint64_t bias, unwind_runtime_read_fn read,
                          void *userdata, uint64_t addr, const unwind_runtime_code *code) {
        const struct hotspot_code *c = (const struct hotspot_code *) code;
        struct hotspot_vmstructs vs;
        uint8_t head[BLOB_HEAD_MAX];
        struct blob_head now;
        size_t size;
        int r;

        r = tables_get(found, bias, read, userdata, &vs);
        if (r < 0)
                return r == -ENOMEM ? r : -EIO;
        r = head_read(&vs, read, userdata, addr, head, &size);
        if (r == -EBADMSG)
                return 0;
        if (r < 0)
                return r;
        head_parse(&vs, head, size, addr, &now);
        if (c->nmethod) {
                if (size < vs.nmethod_size)
                        return 0;
                head_parse_nmethod(&vs, head, size, addr, &now);
        }
        /* a recompiled method's new nmethod at a freed one's address has
         * another compile id; a stub another name or code start */
        return memcmp(&now, &c->head, sizeof(now)) == 0;
}

/* The nmethod's own method alone, without a line: its inlined calls are
 * not known. Another location than the method's frames at a line. */
static void name_alone(const struct hotspot_code *c, enum hotspot_code_reason reason, struct unwind_runtime_name *ret,
                       unsigned *ret_reason) {
        unsigned ignored;

        name_method(&c->method, HOTSPOT_BCI_ENTRY, ret, &ignored);
        ret->line = 0;
        ret->identity = hash_u64(c->method.identity ^ 0x6e6f2d73636f7065ULL /* "no-scope" */);
        *ret_reason = reason;
}

static void blob_name_hook(const unwind_runtime_code *code, uint32_t offset, struct unwind_runtime_name *ret,
                           unsigned *ret_reason) {
        const struct hotspot_code *c = (const struct hotspot_code *) code;
        struct hotspot_scope chain[UNWIND_RUNTIME_INLINE_MAX];
        enum hotspot_scopes_reason sreason;
        enum hotspot_code_reason line_reason = HOTSPOT_CODE_OK;
        uint64_t h = FNV_BASIS;
        size_t n, depth;
        int r;

        if (!c->nmethod) {
                *ret = (struct unwind_runtime_name) {
                        .function = c->stub_name,
                        .module = HOTSPOT_MODULE_STUB,
                        .identity = c->stub_identity,
                };
                *ret_reason = HOTSPOT_CODE_OK;
                return;
        }
        /* the native method's frame: its location, its reason for no line */
        if (c->native)
                return name_method(&c->method, HOTSPOT_BCI_ENTRY, ret, ret_reason);
        if (offset >= PROFD_RT_FRAME_OFFSET_MAX)
                return name_alone(c, HOTSPOT_CODE_FAR_OFFSET, ret, ret_reason);
        if (c->scopes_reason != HOTSPOT_CODE_OK)
                return name_alone(c, c->scopes_reason, ret, ret_reason);
        r = hotspot_scopes_at(&c->scopes, (int64_t) offset - (int64_t) c->head.code_begin, c->method.addr, chain,
                              UNWIND_RUNTIME_INLINE_MAX, &n, &depth, &sreason);
        if (r == -ENOENT)
                return name_alone(c, HOTSPOT_CODE_NO_SCOPE, ret, ret_reason);
        if (r < 0)
                return name_alone(c, HOTSPOT_CODE_BAD_SCOPE, ret, ret_reason);

        *ret = (struct unwind_runtime_name) { .n_lines = n };
        for (size_t i = 0; i < n; i++) {
                /* the outermost is the nmethod's own (hotspot_scopes_at
                 * checks); it may inline itself (recursion) too */
                const struct hc_method *m = i + 1 == n || chain[i].method == c->method.addr
                                                    ? &c->method
                                                    : inlined_find(c, chain[i].method);
                enum hotspot_code_reason reason = HOTSPOT_CODE_OK;
                struct unwind_runtime_line *l = &ret->lines[i];

                if (!m || !m->named)
                        return name_alone(c, HOTSPOT_CODE_BAD_SCOPE, ret, ret_reason);
                *l = (struct unwind_runtime_line) {
                        .function = m->m.function,
                        .file = m->m.source_file,
                        .line = method_line(m, chain[i].bci, &reason),
                };
                if (i + 1 == n)
                        line_reason = reason;
                h = fnv(h, &m->identity, sizeof(m->identity));
                h = fnv(h, &l->line, sizeof(l->line));
        }
        ret->function = c->method.m.function;
        ret->file = c->method.m.source_file;
        ret->module = c->method.m.source_file ?: HOTSPOT_MODULE_NO_FILE;
        ret->line = ret->lines[n - 1].line;
        /* one level: the method's own location at that line, as its
         * interpreted frames; a chain is a location of its own */
        ret->identity = n == 1 ? c->method.identity : hash_u64(h);
        if (n == 1)
                ret->n_lines = 0;
        *ret_reason = line_reason;
}

/* A Method in a file mapping is one of a CDS archive's (classes.jsa):
 * metaspace is anonymous memory. The JVM maps the archive privately and
 * may relocate it, but never frees its classes, and the method's names
 * (its ConstMethod, pool, holder and Symbols) are in the archive too, at
 * the same offsets in every JVM that maps that file. */
const struct unwind_runtime hotspot_runtime = {
        .name = "hotspot",
        .id = UNWIND_RUNTIME_HOTSPOT,
        .discover = hotspot_discover,
        .code_read = method_read_hook,
        .code_same = method_same_hook,
        .code_name = method_name_hook,
        .code_free = code_free_hook,
        .code_in_files_shared = true,
        .reason_name = reason_name_hook,
        .reasons_max = _HOTSPOT_CODE_REASON_MAX,
};

/* "hotspot" too: its frames are stored as the interpreter's are
 * ("hotspot-" build_ids), so a method's frame at a line is one location
 * whether it ran interpreted or compiled. */
const struct unwind_runtime hotspot_code_runtime = {
        .name = "hotspot",
        .id = UNWIND_RUNTIME_HOTSPOT_CODE,
        .found_id = UNWIND_RUNTIME_HOTSPOT,
        .code_read = blob_read_hook,
        .code_same = blob_same_hook,
        .code_name = blob_name_hook,
        .code_free = code_free_hook,
        .reason_name = reason_name_hook,
        .reasons_max = _HOTSPOT_CODE_REASON_MAX,
};
