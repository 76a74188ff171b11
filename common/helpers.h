/* Small helpers both profd and profctl need: whole-file reads, positioned
 * reads and writes of a whole buffer, error messages for strict parsers,
 * strict unsigned integers, growing arrays. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* Reads a (small) file whole, NUL-terminated. Returns 0 or a negative errno
 * (-ENOMEM, or what opening or reading failed with). */
int read_full_file(const char *path, char **ret);

/* read_full_file of path relative to dirfd (openat(2): AT_FDCWD, or a
 * directory's fd such as /proc/PID's). */
int read_full_fileat(int dirfd, const char *path, char **ret);

/* Writes all n bytes of buf at offset off of fd (retrying short writes
 * and EINTR). Returns 0, -EIO if the file takes no more, or -errno. */
int pwrite_all(int fd, const void *buf, size_t n, uint64_t off);

/* Reads exactly n bytes at offset off of fd. Returns 0, -EIO on a short
 * read (end of file), or -errno. */
int pread_all(int fd, void *buf, size_t n, uint64_t off);

/* Formats a message into *ret_error (malloc'd) for a parser's caller and
 * returns -EINVAL; -ENOMEM if the message could not be allocated. */
int format_error(char **ret_error, const char *fmt, ...) _printf_(2, 3);

/* The value of one hexadecimal digit (either case), or -EINVAL. */
int unhex_char(char c);

/* Parses a decimal integer made of digits only (no sign, no spaces, no
 * "0x"), at most max. Returns 0, -EINVAL (not digits only) or -ERANGE. */
int parse_uint_strict(const char *s, uint64_t max, uint64_t *ret);

/* Makes *array (of elem_size elements, *allocated of them) hold at least
 * need, at least doubling it so appends cost amortized O(1). Returns 0 or
 * -ENOMEM (the array is then unchanged). */
int array_grow(void **array, size_t *allocated, size_t need, size_t elem_size);
