/* The HotSpot name decoder: a Method* in untrusted JVM memory to checked names and a line table. */
#include "hotspot-names.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

/* JVM_CONSTANT_Utf8, the tag of a pool slot holding a Symbol *: fixed by
 * the class file format (JVMS 4.4), not by the JVM's build. */
#define CONSTANT_UTF8 1

const char *hotspot_names_reason_name(enum hotspot_names_reason reason) {
        static const char *const names[_HOTSPOT_NAMES_REASON_MAX] = {
                [HOTSPOT_NAMES_OK] = "ok",
                [HOTSPOT_NAMES_NO_LAYOUT] = "no-layout",
                [HOTSPOT_NAMES_READ_METHOD] = "read-method",
                [HOTSPOT_NAMES_READ_POOL] = "read-pool",
                [HOTSPOT_NAMES_BAD_POOL] = "bad-pool",
                [HOTSPOT_NAMES_BAD_INDEX] = "bad-index",
                [HOTSPOT_NAMES_READ_CLASS] = "read-class",
                [HOTSPOT_NAMES_BAD_CLASS] = "bad-class",
                [HOTSPOT_NAMES_READ_SYMBOL] = "read-symbol",
                [HOTSPOT_NAMES_BAD_SYMBOL] = "bad-symbol",
                [HOTSPOT_NAMES_NO_LINES] = "no-lines",
                [HOTSPOT_NAMES_READ_LINES] = "read-lines",
                [HOTSPOT_NAMES_BAD_LINES] = "bad-lines",
        };

        return (unsigned) reason < _HOTSPOT_NAMES_REASON_MAX ? names[reason] : "unknown";
}

enum hotspot_lines_format hotspot_lines_format_of(int32_t major) {
        /* UNSIGNED5 without the 0 byte (utilities/unsigned5.hpp) is in
         * JDK 25 and not in 17, both checked on a JVM here
         * (test-hotspot-names-jvm); 21 as the first is from the sources'
         * history, not checked on a JVM. */
        return major >= 21 ? HOTSPOT_LINES_UNSIGNED5_NO_ZERO : HOTSPOT_LINES_UNSIGNED5;
}

int hotspot_unsigned5_read(const uint8_t *buf, size_t size, size_t *pos, enum hotspot_lines_format format,
                           uint32_t *ret) {
        const uint32_t excluded = format == HOTSPOT_LINES_UNSIGNED5_NO_ZERO ? 1 : 0;
        const uint32_t low_codes = 256 - 64 - excluded;
        uint32_t sum = 0;

        for (unsigned i = 0; i < 5; i++) {
                uint32_t b;

                if (*pos + i >= size)
                        return -ENODATA;
                b = buf[*pos + i];
                if (b < excluded)
                        return -EBADMSG;
                b -= excluded;
                sum += b << (6 * i);
                if (b < low_codes || i == 4) {
                        *pos += i + 1;
                        *ret = sum;
                        return 0;
                }
        }
        return -EBADMSG; /* not reached: the fifth byte ends it */
}

static int read_signed5(const uint8_t *buf, size_t size, size_t *pos, enum hotspot_lines_format format,
                        int32_t *ret) {
        uint32_t v;
        int r;

        r = hotspot_unsigned5_read(buf, size, pos, format, &v);
        if (r < 0)
                return r;
        /* The sign in the lowest bit, the magnitude above it. */
        *ret = (int32_t) ((v >> 1) ^ -(v & 1));
        return 0;
}

int hotspot_lines_decode(const uint8_t *buf, size_t size, enum hotspot_lines_format format, uint32_t code_size,
                         struct hotspot_line **ret, size_t *ret_n, size_t *ret_used) {
        _cleanup_free_ struct hotspot_line *lines = NULL;
        size_t n = 0, allocated = 0, pos = 0;
        int64_t bci = 0, line = 0;

        for (;;) {
                uint8_t b;
                int r;

                if (pos >= size)
                        return -ENODATA;
                b = buf[pos++];
                if (b == 0)
                        break;
                if (b == 0xff) {
                        int32_t dbci, dline;

                        r = read_signed5(buf, size, &pos, format, &dbci);
                        if (r >= 0)
                                r = read_signed5(buf, size, &pos, format, &dline);
                        if (r < 0)
                                return r;
                        bci += dbci;
                        line += dline;
                } else {
                        bci += b >> 3;
                        line += b & 7;
                }
                /* A class file's start_pc is inside the code, its line a u2. */
                if (bci < 0 || bci >= code_size || line < 0 || line > UINT16_MAX)
                        return -EBADMSG;
                if (n == HOTSPOT_LINES_MAX)
                        return -EBADMSG;
                if (n == allocated) {
                        size_t more = MAX(allocated * 2, (size_t) 16);
                        struct hotspot_line *p = realloc(lines, more * sizeof *lines);

                        if (!p)
                                return -ENOMEM;
                        lines = p;
                        allocated = more;
                }
                lines[n++] = (struct hotspot_line) { (uint32_t) bci, (uint32_t) line };
        }
        *ret = TAKE_PTR(lines);
        *ret_n = n;
        *ret_used = pos;
        return 0;
}

int hotspot_lines_lookup(const struct hotspot_line *lines, size_t n, uint32_t bci) {
        int best = -ENOENT;
        uint32_t best_bci = 0;

        /* Rows are in the class file's order, not sorted by bci, and one
         * bci may have several: the first exact one wins, else the last of
         * the greatest below. */
        for (size_t i = 0; i < n; i++) {
                if (lines[i].bci == bci)
                        return (int) lines[i].line;
                if (lines[i].bci < bci && (best < 0 || lines[i].bci >= best_bci)) {
                        best_bci = lines[i].bci;
                        best = (int) lines[i].line;
                }
        }
        return best;
}

/* Well-formed modified UTF-8 (1 to 3 byte sequences; the JVM writes
 * supplementary characters as two 3-byte surrogates, so a 4-byte lead is
 * garbage) with no ASCII control character. */
static bool utf8_clean(const unsigned char *s, size_t len) {
        for (size_t i = 0; i < len;) {
                unsigned char c = s[i];
                size_t more;

                if (c < 0x20 || c == 0x7f)
                        return false;
                if (c < 0x80)
                        more = 0;
                else if ((c & 0xe0) == 0xc0)
                        more = 1;
                else if ((c & 0xf0) == 0xe0)
                        more = 2;
                else
                        return false;
                if (more > len - i - 1)
                        return false;
                for (size_t k = 1; k <= more; k++)
                        if ((s[i + k] & 0xc0) != 0x80)
                                return false;
                i += more + 1;
        }
        return true;
}

static bool has_any(const char *s, size_t len, const char *set) {
        for (size_t i = 0; i < len; i++)
                if (strchr(set, s[i]))
                        return true;
        return false;
}

bool hotspot_symbol_valid(enum hotspot_symbol_kind kind, const char *s, size_t len) {
        size_t cap = kind == HOTSPOT_SYMBOL_SIGNATURE ? HOTSPOT_SIGNATURE_MAX : HOTSPOT_NAME_MAX;

        if (!s || len == 0 || len > cap || !utf8_clean((const unsigned char *) s, len))
                return false;
        switch (kind) {
        case HOTSPOT_SYMBOL_CLASS:
                /* Internal form (JVMS 4.2.1): packages split by '/', none
                 * empty. A holder of methods is never an array class. */
                if (has_any(s, len, ".;[") || s[0] == '/' || s[len - 1] == '/')
                        return false;
                for (size_t i = 1; i < len; i++)
                        if (s[i] == '/' && s[i - 1] == '/')
                                return false;
                return true;
        case HOTSPOT_SYMBOL_METHOD:
                /* JVMS 4.2.2: no . ; [ / in an unqualified name; < and >
                 * only in the two special methods. */
                if (has_any(s, len, ".;[/"))
                        return false;
                if (has_any(s, len, "<>"))
                        return (len == 6 && memcmp(s, "<init>", 6) == 0) ||
                                (len == 8 && memcmp(s, "<clinit>", 8) == 0);
                return true;
        case HOTSPOT_SYMBOL_SIGNATURE: {
                /* (parameters)return: one pair of parentheses, a return type. */
                const char *close = memchr(s, ')', len);

                return s[0] == '(' && close && close + 1 < s + len && !memchr(s + 1, '(', len - 1) &&
                        !memchr(close + 1, ')', (size_t) (s + len - close - 1));
        }
        case HOTSPOT_SYMBOL_SOURCE_FILE:
                return true;
        }
        return false;
}

/* Modified UTF-8 (JVMS 4.4.7) to UTF-8 in place, for the store, JSON and
 * pprof, which take UTF-8: a supplementary character, two 3-byte
 * surrogates in the JVM, becomes one 4-byte sequence. False on what UTF-8
 * has no form for: an encoded NUL or another overlong form, a lone
 * surrogate. Needs utf8_clean's structure. */
static bool mutf8_to_utf8(char *s, size_t *len) {
        unsigned char *u = (unsigned char *) s;
        size_t n = *len, o = 0;

        for (size_t i = 0; i < n;) {
                uint32_t cp, low;

                if (u[i] < 0x80) {
                        u[o++] = u[i++];
                        continue;
                }
                if ((u[i] & 0xe0) == 0xc0) {
                        cp = (uint32_t) (u[i] & 0x1f) << 6 | (u[i + 1] & 0x3f);
                        if (cp < 0x80)
                                return false;
                        u[o++] = u[i++];
                        u[o++] = u[i++];
                        continue;
                }
                cp = (uint32_t) (u[i] & 0x0f) << 12 | (uint32_t) (u[i + 1] & 0x3f) << 6 | (u[i + 2] & 0x3f);
                if (cp < 0x800 || (cp >= 0xdc00 && cp <= 0xdfff))
                        return false;
                if (cp < 0xd800 || cp > 0xdbff) {
                        memmove(u + o, u + i, 3);
                        o += 3;
                        i += 3;
                        continue;
                }
                /* A high surrogate: its low one must follow. */
                if (n - i < 6 || (u[i + 3] & 0xf0) != 0xe0)
                        return false;
                low = (uint32_t) (u[i + 3] & 0x0f) << 12 | (uint32_t) (u[i + 4] & 0x3f) << 6 | (u[i + 5] & 0x3f);
                if (low < 0xdc00 || low > 0xdfff)
                        return false;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                u[o++] = (unsigned char) (0xf0 | cp >> 18);
                u[o++] = (unsigned char) (0x80 | ((cp >> 12) & 0x3f));
                u[o++] = (unsigned char) (0x80 | ((cp >> 6) & 0x3f));
                u[o++] = (unsigned char) (0x80 | (cp & 0x3f));
                i += 6;
        }
        u[o] = '\0';
        *len = o;
        return true;
}

struct names_reader {
        const struct hotspot_vmstructs *vs;
        hotspot_read_fn read;
        void *userdata;
        enum hotspot_names_reason reason;
};

static int fail(struct names_reader *rd, int r, enum hotspot_names_reason reason) {
        rd->reason = reason;
        return r;
}

/* A little-endian unsigned of `size` bytes (1 to 8) at `addr`. */
static int read_uint(struct names_reader *rd, uint64_t addr, size_t size, uint64_t *ret) {
        uint8_t b[8];
        uint64_t v = 0;

        if (addr == 0 || size > sizeof b || addr + size < addr || rd->read(rd->userdata, addr, b, size) < 0)
                return -EIO;
        for (size_t i = size; i > 0; i--)
                v = (v << 8) | b[i - 1];
        *ret = v;
        return 0;
}

/* The Symbol at `addr`, checked as a name of `kind`, as a NUL-terminated
 * malloc'd copy. */
static int read_symbol(struct names_reader *rd, uint64_t addr, enum hotspot_symbol_kind kind, char **ret) {
        const struct hotspot_vmstructs *vs = rd->vs;
        size_t cap = kind == HOTSPOT_SYMBOL_SIGNATURE ? HOTSPOT_SIGNATURE_MAX : HOTSPOT_NAME_MAX;
        _cleanup_free_ char *s = NULL;
        uint64_t len;

        if (addr == 0)
                return fail(rd, -EBADMSG, HOTSPOT_NAMES_BAD_SYMBOL);
        if (vs->symbol_length_and_refcount != HOTSPOT_NO_FIELD) {
                if (read_uint(rd, addr + vs->symbol_length_and_refcount, 4, &len) < 0)
                        return fail(rd, -EIO, HOTSPOT_NAMES_READ_SYMBOL);
                len >>= 16;
        } else if (read_uint(rd, addr + vs->symbol_length, 2, &len) < 0)
                return fail(rd, -EIO, HOTSPOT_NAMES_READ_SYMBOL);
        /* The cap first: a garbage length reads nothing more. */
        if (len == 0 || len > cap)
                return fail(rd, -EBADMSG, HOTSPOT_NAMES_BAD_SYMBOL);
        s = malloc(len + 1);
        if (!s)
                return fail(rd, -ENOMEM, HOTSPOT_NAMES_OK);
        if (rd->read(rd->userdata, addr + vs->symbol_body, s, len) < 0)
                return fail(rd, -EIO, HOTSPOT_NAMES_READ_SYMBOL);
        s[len] = '\0';
        if (!hotspot_symbol_valid(kind, s, len) || !mutf8_to_utf8(s, &len))
                return fail(rd, -EBADMSG, HOTSPOT_NAMES_BAD_SYMBOL);
        *ret = TAKE_PTR(s);
        return 0;
}

/* The pool as read once: where it is, how long, its tags. */
struct pool {
        uint64_t addr;
        uint64_t length;
        uint64_t tags;         /* 0: the tables do not describe them, not checked */
};

/* The Symbol * in slot `index` of the pool, after checking the index is
 * inside it and its tag says Utf8. */
static int pool_symbol(struct names_reader *rd, const struct pool *pool, uint64_t index, uint64_t *ret) {
        const struct hotspot_vmstructs *vs = rd->vs;
        uint64_t tag;

        /* Slot 0 is unused by the class file format. */
        if (index == 0 || index >= pool->length)
                return fail(rd, -EBADMSG, HOTSPOT_NAMES_BAD_INDEX);
        if (pool->tags) {
                if (read_uint(rd, pool->tags + vs->array_u1_data + index, 1, &tag) < 0)
                        return fail(rd, -EIO, HOTSPOT_NAMES_READ_POOL);
                if (tag != CONSTANT_UTF8)
                        return fail(rd, -EBADMSG, HOTSPOT_NAMES_BAD_INDEX);
        }
        if (read_uint(rd, pool->addr + vs->constant_pool_size + 8 * index, 8, ret) < 0)
                return fail(rd, -EIO, HOTSPOT_NAMES_READ_POOL);
        return 0;
}

static int read_pool(struct names_reader *rd, uint64_t addr, struct pool *ret) {
        const struct hotspot_vmstructs *vs = rd->vs;
        uint64_t length, tags = 0, tags_length;

        if (addr == 0)
                return fail(rd, -EBADMSG, HOTSPOT_NAMES_BAD_POOL);
        if (read_uint(rd, addr + vs->constant_pool_length, 4, &length) < 0)
                return fail(rd, -EIO, HOTSPOT_NAMES_READ_POOL);
        /* constant_pool_count is a u2 in the class file. */
        if (length < 2 || length > UINT16_MAX)
                return fail(rd, -EBADMSG, HOTSPOT_NAMES_BAD_POOL);
        if (vs->constant_pool_tags != HOTSPOT_NO_FIELD && vs->array_length != HOTSPOT_NO_FIELD &&
            vs->array_u1_data != HOTSPOT_NO_FIELD) {
                if (read_uint(rd, addr + vs->constant_pool_tags, 8, &tags) < 0 ||
                    read_uint(rd, tags + vs->array_length, 4, &tags_length) < 0)
                        return fail(rd, -EIO, HOTSPOT_NAMES_READ_POOL);
                /* One tag per slot: a pool whose tags say otherwise is not one. */
                if (tags_length != length)
                        return fail(rd, -EBADMSG, HOTSPOT_NAMES_BAD_POOL);
        }
        *ret = (struct pool) { addr, length, tags };
        return 0;
}

/* The line table after the bytecodes, read in pieces until it ends:
 * a method's table is a few bytes, a garbage one stops at the cap. Sets
 * m->lines_reason; fails only on -ENOMEM. */
static int read_lines(struct names_reader *rd, uint64_t const_method, struct hotspot_method *m) {
        const struct hotspot_vmstructs *vs = rd->vs;
        enum hotspot_lines_format format = hotspot_lines_format_of(vs->version_major);
        _cleanup_free_ uint8_t *buf = NULL;
        uint64_t flags, start;
        size_t have = 0;
        int32_t bit = vs->const_method_has_linenumber_table;

        if (vs->const_method_flags == HOTSPOT_NO_FIELD || bit == HOTSPOT_NO_SLOT || bit <= 0 ||
            (bit & (bit - 1)) != 0) {
                m->lines_reason = HOTSPOT_NAMES_NO_LINES;
                return 0;
        }
        /* JDK 17's _flags is a u2, JDK 21's a u4: 4 bytes only for a bit
         * a u2 cannot hold, so a u2 at the end of its object reads. */
        if (read_uint(rd, const_method + vs->const_method_flags, bit <= UINT16_MAX ? 2 : 4, &flags) < 0) {
                m->lines_reason = HOTSPOT_NAMES_READ_LINES;
                return 0;
        }
        if (!(flags & (uint64_t) bit)) {
                m->lines_reason = HOTSPOT_NAMES_NO_LINES;
                return 0;
        }
        start = const_method + vs->const_method_size + m->code_size;
        buf = malloc(HOTSPOT_LINES_BYTES_MAX);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                uint64_t a = start + have;
                /* Most tables are a few dozen bytes: a small first read,
                 * then to the end of each page. */
                size_t piece = MIN(HOTSPOT_LINES_BYTES_MAX - have,
                                   MIN(have ? (size_t) 4096 : (size_t) 256, 4096 - (size_t) (a & 4095)));
                size_t used;
                int r;

                if (a < start || rd->read(rd->userdata, a, buf + have, piece) < 0) {
                        m->lines_reason = HOTSPOT_NAMES_READ_LINES;
                        return 0;
                }
                have += piece;
                r = hotspot_lines_decode(buf, have, format, m->code_size, &m->lines, &m->n_lines, &used);
                if (r == -ENOMEM)
                        return r;
                if (r == -ENODATA && have < HOTSPOT_LINES_BYTES_MAX)
                        continue;
                if (r < 0) {
                        m->lines_reason = HOTSPOT_NAMES_BAD_LINES;
                        return 0;
                }
                m->lines_reason = HOTSPOT_NAMES_OK;
                return 0;
        }
}

void hotspot_method_done(struct hotspot_method *m) {
        free(m->class_name);
        free(m->method_name);
        free(m->signature);
        free(m->source_file);
        free(m->function);
        free(m->lines);
        *m = (struct hotspot_method) {};
}

/* Whether `vs` has every offset the names need (the checks' offsets are
 * used when present). */
static bool layout_complete(const struct hotspot_vmstructs *vs) {
        const uint32_t needed[] = {
                vs->method_const_method, vs->const_method_size, vs->const_method_constants,
                vs->const_method_code_size, vs->const_method_name_index, vs->const_method_signature_index,
                vs->constant_pool_size, vs->constant_pool_length, vs->constant_pool_holder,
                vs->klass_name, vs->symbol_body,
        };

        for (size_t i = 0; i < ELEMENTSOF(needed); i++)
                if (needed[i] == HOTSPOT_NO_FIELD)
                        return false;
        return vs->symbol_length != HOTSPOT_NO_FIELD || vs->symbol_length_and_refcount != HOTSPOT_NO_FIELD;
}

/* The Method's ConstMethod, pool (read and checked) and key. */
static int key_read(struct names_reader *rd, uint64_t method, struct pool *pool, struct hotspot_method_key *key) {
        const struct hotspot_vmstructs *vs = rd->vs;
        uint64_t const_method, pool_addr, code_size, name_index, signature_index;
        int r;

        if (!layout_complete(vs))
                return fail(rd, -EPROTONOSUPPORT, HOTSPOT_NAMES_NO_LAYOUT);
        if (method == 0 || read_uint(rd, method + vs->method_const_method, 8, &const_method) < 0 ||
            const_method == 0 || read_uint(rd, const_method + vs->const_method_constants, 8, &pool_addr) < 0 ||
            read_uint(rd, const_method + vs->const_method_code_size, 2, &code_size) < 0 ||
            read_uint(rd, const_method + vs->const_method_name_index, 2, &name_index) < 0 ||
            read_uint(rd, const_method + vs->const_method_signature_index, 2, &signature_index) < 0)
                return fail(rd, -EIO, HOTSPOT_NAMES_READ_METHOD);
        r = read_pool(rd, pool_addr, pool);
        if (r < 0)
                return r;
        *key = (struct hotspot_method_key) {
                .const_method = const_method,
                .pool = pool_addr,
                .name_index = (uint32_t) name_index,
                .signature_index = (uint32_t) signature_index,
                .code_size = (uint32_t) code_size,
        };
        r = pool_symbol(rd, pool, name_index, &key->name_symbol);
        if (r >= 0)
                r = pool_symbol(rd, pool, signature_index, &key->signature_symbol);
        return r;
}

static int method_read(struct names_reader *rd, uint64_t method, struct hotspot_method *m) {
        const struct hotspot_vmstructs *vs = rd->vs;
        uint64_t const_method, back, holder, index, sym;
        struct pool pool, class_pool;
        size_t n_class;
        int r;

        r = key_read(rd, method, &pool, &m->key);
        if (r < 0)
                return r;
        const_method = m->key.const_method;
        m->code_size = m->key.code_size;
        /* without InstanceKlass _constants: taken as the holder's own */
        back = pool.addr;
        class_pool = pool;
        /* The holder's pool must be this one (or name it back, below): a
         * freed or reused Method leads elsewhere. */
        if (read_uint(rd, pool.addr + vs->constant_pool_holder, 8, &holder) < 0 || holder == 0)
                return fail(rd, -EIO, HOTSPOT_NAMES_READ_CLASS);
        if (vs->instance_klass_constants != HOTSPOT_NO_FIELD) {
                uint64_t back_holder;

                if (read_uint(rd, holder + vs->instance_klass_constants, 8, &back) < 0)
                        return fail(rd, -EIO, HOTSPOT_NAMES_READ_CLASS);
                /* A method handle intrinsic (MethodHandle.linkToStatic and
                 * the like, a native wrapper's method) has a small pool of
                 * its own naming its holder: then the holder's pool must
                 * name the holder back. */
                if (back != pool.addr &&
                    (back == 0 || read_uint(rd, back + vs->constant_pool_holder, 8, &back_holder) < 0))
                        return fail(rd, -EIO, HOTSPOT_NAMES_READ_CLASS);
                if (back != pool.addr && back_holder != holder)
                        return fail(rd, -EBADMSG, HOTSPOT_NAMES_BAD_CLASS);
        }
        if (read_uint(rd, holder + vs->klass_name, 8, &sym) < 0)
                return fail(rd, -EIO, HOTSPOT_NAMES_READ_CLASS);
        r = read_symbol(rd, sym, HOTSPOT_SYMBOL_CLASS, &m->class_name);
        if (r < 0)
                return r;

        r = read_symbol(rd, m->key.name_symbol, HOTSPOT_SYMBOL_METHOD, &m->method_name);
        if (r >= 0)
                r = read_symbol(rd, m->key.signature_symbol, HOTSPOT_SYMBOL_SIGNATURE, &m->signature);
        if (r < 0)
                return r;
        /* Index 0: compiled without a SourceFile attribute. The class's
         * own pool holds it: an intrinsic's pool has the index copied from
         * its holder's. */
        if (vs->constant_pool_source_file_name_index != HOTSPOT_NO_FIELD) {
                if (back != pool.addr) {
                        r = read_pool(rd, back, &class_pool);
                        if (r < 0)
                                return r;
                }
                if (read_uint(rd, class_pool.addr + vs->constant_pool_source_file_name_index, 2, &index) < 0)
                        return fail(rd, -EIO, HOTSPOT_NAMES_READ_POOL);
                if (index != 0) {
                        r = pool_symbol(rd, &class_pool, index, &sym);
                        if (r >= 0)
                                r = read_symbol(rd, sym, HOTSPOT_SYMBOL_SOURCE_FILE, &m->source_file);
                        if (r < 0)
                                return r;
                }
        }

        /* java/lang/String → java.lang.String; '$' of inner classes kept. */
        n_class = strlen(m->class_name);
        for (size_t i = 0; i < n_class; i++)
                if (m->class_name[i] == '/')
                        m->class_name[i] = '.';
        m->function = malloc(n_class + 1 + strlen(m->method_name) + 1);
        if (!m->function)
                return fail(rd, -ENOMEM, HOTSPOT_NAMES_OK);
        strcpy(stpcpy(stpcpy(m->function, m->class_name), "."), m->method_name);

        r = read_lines(rd, const_method, m);
        if (r < 0)
                return fail(rd, r, HOTSPOT_NAMES_OK);
        return 0;
}

int hotspot_method_read(const struct hotspot_vmstructs *vs, hotspot_read_fn read, void *userdata, uint64_t method,
                        struct hotspot_method *ret, enum hotspot_names_reason *ret_reason) {
        struct names_reader rd = { .vs = vs, .read = read, .userdata = userdata };
        struct hotspot_method m = {};
        int r;

        r = method_read(&rd, method, &m);
        *ret_reason = rd.reason;
        if (r < 0) {
                hotspot_method_done(&m);
                return r;
        }
        *ret = m;
        return 0;
}

int hotspot_method_key_read(const struct hotspot_vmstructs *vs, hotspot_read_fn read, void *userdata,
                            uint64_t method, struct hotspot_method_key *ret, enum hotspot_names_reason *ret_reason) {
        struct names_reader rd = { .vs = vs, .read = read, .userdata = userdata };
        struct hotspot_method_key key = {};
        struct pool pool;
        int r;

        r = key_read(&rd, method, &pool, &key);
        *ret_reason = rd.reason;
        if (r < 0)
                return r;
        *ret = key;
        return 0;
}

bool hotspot_method_key_equal(const struct hotspot_method_key *a, const struct hotspot_method_key *b) {
        return a->const_method == b->const_method && a->pool == b->pool && a->name_symbol == b->name_symbol &&
                a->signature_symbol == b->signature_symbol && a->name_index == b->name_index &&
                a->signature_index == b->signature_index && a->code_size == b->code_size;
}
