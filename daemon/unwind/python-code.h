/* Reads a CPython code object from another process's memory: qualified name, file, lines. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "python-layout.h"

/* Reads `size` bytes at `addr` of the process (in the daemon, /proc/PID/mem):
 * 0 when all were read, a negative errno otherwise. */
typedef int (*python_read_fn)(void *userdata, uint64_t addr, void *buf, size_t size);

/* Why a code object, or a line in it, could not be named: one counter each
 * in the quality report. */
enum python_code_reason {
        PYTHON_CODE_OK,
        PYTHON_CODE_READ_CODE,          /* the code object's memory could not be read */
        PYTHON_CODE_NOT_CODE,           /* its type is not PyCode_Type (freed, reused, garbage) */
        PYTHON_CODE_READ_STRING,        /* a name's memory could not be read */
        PYTHON_CODE_STRING_NOT_COMPACT, /* a name is a legacy (non-compact) string */
        PYTHON_CODE_STRING_TOO_LONG,    /* a name is longer than PYTHON_STRING_MAX */
        PYTHON_CODE_STRING_BAD,         /* a name's header or characters make no sense */
        PYTHON_CODE_READ_LINETABLE,     /* the line table's memory could not be read */
        PYTHON_CODE_LINETABLE_TOO_BIG,  /* the line table is larger than PYTHON_LINETABLE_MAX */
        PYTHON_CODE_LINETABLE_BAD,      /* the line table is malformed before the instruction */
        PYTHON_CODE_NO_LINE,            /* the instruction has no location (code 15) */
        PYTHON_CODE_OFFSET_PAST_TABLE,  /* the instruction is past the table's end */
        _PYTHON_CODE_REASON_MAX,
};

/* Code points of a name read: qualified names and file paths are far
 * shorter (PATH_MAX is 4096 bytes); longer is garbage, not a name. */
#define PYTHON_STRING_MAX 4096
/* Bytes of a line table read: a few per instruction, so 256 KiB serves a
 * module of tens of thousands of lines; larger is garbage. */
#define PYTHON_LINETABLE_MAX (256u * 1024u)

struct python_code {
        char *qualname;                /* UTF-8, NUL-terminated */
        char *filename;
        int32_t firstlineno;
        uint8_t *linetable;            /* NULL when it could not be read: */
        size_t linetable_size;
        enum python_code_reason linetable_reason;      /* why (PYTHON_CODE_OK when read) */
};

/* Reads the code object at `addr`. `code_type` is the process's address of
 * PyCode_Type (0: not checked). Returns 0 with *ret filled (the line table
 * may still be missing: see linetable_reason); -EIO when memory could not be
 * read, -EBADMSG when what was read is not a code object, with *ret_reason
 * saying which; -ENOMEM (*ret_reason PYTHON_CODE_OK: not the process's
 * doing). */
int python_code_read(const struct python_layout *layout, python_read_fn read, void *userdata,
                     uint64_t code_type, uint64_t addr, struct python_code *ret,
                     enum python_code_reason *ret_reason);

/* The line of the instruction at `offset` (code units). Returns 0 with
 * *ret_line; -ENOENT with *ret_reason otherwise. */
int python_code_line(const struct python_code *code, uint32_t offset, int32_t *ret_line,
                     enum python_code_reason *ret_reason);

void python_code_done(struct python_code *code);

/* "read-code", "not-code", ...: the names the quality report uses. */
const char *python_code_reason_name(enum python_code_reason reason);
