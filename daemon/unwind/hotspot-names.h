/* Names a HotSpot Method* from the JVM's memory: package.Class.method, signature, source file, lines by bytecode index. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hotspot-vmstructs.h"

/* Bytes of a Symbol read, at most. Symbol lengths are u2 (65,535), but a
 * class, method or source file name over 1 KiB is not one a profile shows
 * (the JDK's longest are generated lambda and proxy names, under 200);
 * signatures get more room: a method with many object parameters. */
#define HOTSPOT_NAME_MAX 1024u
#define HOTSPOT_SIGNATURE_MAX 4096u
/* Bytes of a compressed line number table read, at most: a method has at
 * most 65,535 bytes of bytecode and its table rarely 1 byte a line over a
 * few thousand lines; 64 KiB leaves room and bounds a walk over garbage. */
#define HOTSPOT_LINES_BYTES_MAX (64u * 1024u)
/* Pairs decoded, at most: the class file's line_number_table_length is u2. */
#define HOTSPOT_LINES_MAX 65535u

/* Why a method could not be named, or why its lines are absent: one
 * counter each in the quality report. */
enum hotspot_names_reason {
        HOTSPOT_NAMES_OK,
        HOTSPOT_NAMES_NO_LAYOUT,       /* the tables lack an offset the decoder needs */
        HOTSPOT_NAMES_READ_METHOD,     /* the Method or its ConstMethod could not be read, or is NULL */
        HOTSPOT_NAMES_READ_POOL,       /* the ConstantPool or its tags could not be read */
        HOTSPOT_NAMES_BAD_POOL,        /* a pool length out of range, tags of another length */
        HOTSPOT_NAMES_BAD_INDEX,       /* a name, signature or source file index outside the pool or not a Utf8 entry */
        HOTSPOT_NAMES_READ_CLASS,      /* the pool's holder could not be read */
        HOTSPOT_NAMES_BAD_CLASS,       /* the holder's pool is not the method's */
        HOTSPOT_NAMES_READ_SYMBOL,     /* a Symbol could not be read */
        HOTSPOT_NAMES_BAD_SYMBOL,      /* a Symbol too long, empty, or not a name of its kind */
        HOTSPOT_NAMES_NO_LINES,        /* the method has no line table (or the tables do not say how to tell) */
        HOTSPOT_NAMES_READ_LINES,      /* the line table could not be read */
        HOTSPOT_NAMES_BAD_LINES,       /* the line table does not decode: no end, a bci outside the code, too long */
        _HOTSPOT_NAMES_REASON_MAX,
};

/* "no-layout", "read-method", ...: the names the quality report uses. */
const char *hotspot_names_reason_name(enum hotspot_names_reason reason);

/* How the line table's escaped pairs encode their numbers: HotSpot's
 * UNSIGNED5. JDK 8 to 20 use every byte value; later JDKs (utilities/
 * unsigned5.hpp) never write a 0 byte, so each byte is one more. */
enum hotspot_lines_format {
        HOTSPOT_LINES_UNSIGNED5,
        HOTSPOT_LINES_UNSIGNED5_NO_ZERO,
};

/* The format of the JVM of major version `major`. */
enum hotspot_lines_format hotspot_lines_format_of(int32_t major);

/* One UNSIGNED5 number at buf[*pos] (CompressedReadStream::read_int: the
 * line tables' escaped pairs and compiled code's debug info, both in the
 * JVM's format): a byte below the low/high split ends it, each byte before
 * it adds 6 more bits, the fifth ends it whatever it is; the sum wraps at
 * 32 bits as HotSpot's does. Returns 0 with *pos past it; -ENODATA when
 * `size` ends first; -EBADMSG on a 0 byte where the format never writes
 * one. */
int hotspot_unsigned5_read(const uint8_t *buf, size_t size, size_t *pos, enum hotspot_lines_format format,
                           uint32_t *ret);

/* One row of a method's line table: from bytecode index `bci`, source line `line`. */
struct hotspot_line {
        uint32_t bci;
        uint32_t line;
};

/* Decodes a compressed line number table (CompressedLineNumberReadStream's
 * format: a 0 byte ends it; 0xff escapes a pair of signed deltas; any other
 * byte is a bci delta of its top 5 bits and a line delta of its low 3) of a
 * method of `code_size` bytes of bytecode, from the first `size` bytes of
 * `buf`. Returns 0 with *ret (malloc'd, NULL when empty) and *ret_n in
 * table order, *ret_used the bytes the table takes, end marker included;
 * -ENODATA when `buf` ends before the table does (read more and call
 * again); -EBADMSG when a bci leaves [0, code_size), a line leaves
 * [0, 65535] or more than HOTSPOT_LINES_MAX pairs come; -ENOMEM. */
int hotspot_lines_decode(const uint8_t *buf, size_t size, enum hotspot_lines_format format, uint32_t code_size,
                         struct hotspot_line **ret, size_t *ret_n, size_t *ret_used);

/* The line of bytecode index `bci`, as HotSpot's Method::line_number_from_bci
 * finds it: the row at `bci`, else the row with the largest bci below it
 * (the later of equals). -ENOENT when no row is at or below `bci`. */
int hotspot_lines_lookup(const struct hotspot_line *lines, size_t n, uint32_t bci);

/* Kinds of Symbol, each with its own rules of what a name may hold. */
enum hotspot_symbol_kind {
        HOTSPOT_SYMBOL_CLASS,          /* java/lang/String, Outer$Inner, a hidden class's Foo$$Lambda$1+0x... */
        HOTSPOT_SYMBOL_METHOD,         /* charAt, <init>, <clinit>, lambda$main$0 */
        HOTSPOT_SYMBOL_SIGNATURE,      /* (ILjava/lang/String;)V */
        HOTSPOT_SYMBOL_SOURCE_FILE,    /* String.java */
};

/* Whether the `len` bytes at `s` are a name of `kind`: not empty, under its
 * cap, well-formed (modified) UTF-8 without control characters, and the
 * JVM's rules for the kind (no '.', ';' or '[' in a class name, no empty
 * package; no '/' either and '<' only in <init> and <clinit> for a method;
 * a signature opens with '(' and closes its parameters). */
bool hotspot_symbol_valid(enum hotspot_symbol_kind kind, const char *s, size_t len);

/* What a Method* leads to besides its names: a method freed with its class
 * and its memory reused by another leads elsewhere. A cache of names by
 * Method* reads this again (a few small reads) and compares it whole
 * before it trusts a name. */
struct hotspot_method_key {
        uint64_t const_method, pool;
        uint64_t name_symbol, signature_symbol;        /* the pool's Symbol * at the two indexes */
        uint32_t name_index, signature_index, code_size;
};

/* Reads the key of the Method at `method`: 0, or -EIO when memory could not
 * be read, -EBADMSG when an index is outside the pool (*ret_reason says
 * which), -EPROTONOSUPPORT when `vs` lacks an offset. Checks less than
 * hotspot_method_read: only what tells one method from another. */
int hotspot_method_key_read(const struct hotspot_vmstructs *vs, hotspot_read_fn read, void *userdata,
                            uint64_t method, struct hotspot_method_key *ret, enum hotspot_names_reason *ret_reason);

/* Whether two keys are of the same method. */
bool hotspot_method_key_equal(const struct hotspot_method_key *a, const struct hotspot_method_key *b);

/* A method, named, in UTF-8 (the JVM's modified UTF-8 converted). */
struct hotspot_method {
        struct hotspot_method_key key; /* as read with the names */
        char *class_name;      /* external form: "java.lang.String", "Outer$Inner" */
        char *method_name;     /* "charAt" */
        char *signature;       /* "(I)C" */
        char *source_file;     /* "String.java"; NULL when the class has none or the tables do not say */
        char *function;        /* "java.lang.String.charAt": what a profile shows */
        uint32_t code_size;    /* bytes of bytecode */
        struct hotspot_line *lines;    /* NULL when lines_reason is not OK */
        size_t n_lines;
        enum hotspot_names_reason lines_reason;        /* why lines are absent; the names stand either way */
};

/* Frees what `m` holds and zeroes it. */
void hotspot_method_done(struct hotspot_method *m);

/* Reads the Method at `method` of the process `read` reads (userdata passed
 * through), with the offsets of `vs`: Method → ConstMethod → ConstantPool →
 * the Symbols of its name, signature and source file, the pool's holder →
 * its name; the line table after the bytecodes when ConstMethod's flags say
 * there is one. Everything read is checked: indexes against the pool's
 * length and its tags, the holder's pool against the method's, every Symbol
 * against its kind. Returns 0 with *ret filled (its lines may still be
 * absent, for ret->lines_reason); -EIO when memory could not be read,
 * -EBADMSG when what was read is not a method, -EPROTONOSUPPORT when `vs`
 * lacks an offset; *ret_reason says which. -ENOMEM is not the process's
 * doing (*ret_reason HOTSPOT_NAMES_OK). */
int hotspot_method_read(const struct hotspot_vmstructs *vs, hotspot_read_fn read, void *userdata, uint64_t method,
                        struct hotspot_method *ret, enum hotspot_names_reason *ret_reason);
