/* Whole-file reads, parser error messages, strict integers, growing arrays. */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int read_full_fileat(int dirfd, const char *path, char **ret) {
        _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, n = 0;

        if (fd < 0)
                return negative_errno();
        /* read(2), not stdio: a /proc file read through a FILE cost an
         * fstat and a buffer's malloc for each read, on every process a
         * build host starts (docs/performance.md) */
        for (;;) {
                ssize_t k;

                if (size - n < 4096) {
                        char *b = realloc(buf, size = size ? size * 2 : 8192);
                        if (!b)
                                return -ENOMEM;
                        buf = b;
                }
                k = read(fd, buf + n, size - n - 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return negative_errno();
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        buf[n] = '\0';
        *ret = TAKE_PTR(buf);
        return 0;
}

int read_full_file(const char *path, char **ret) {
        return read_full_fileat(AT_FDCWD, path, ret);
}

int unhex_char(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -EINVAL;
}

int format_error(char **ret_error, const char *fmt, ...) {
        va_list ap;
        char *s = NULL;

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        if (!s)
                return -ENOMEM;
        *ret_error = s;
        return -EINVAL;
}

int parse_uint_strict(const char *s, uint64_t max, uint64_t *ret) {
        uint64_t v = 0;

        /* not strtoull: it takes leading spaces, a sign and "0x", and "-3"
         * would come back as a huge positive number */
        if (!s || !*s)
                return -EINVAL;
        for (const char *p = s; *p; p++)
                if (*p < '0' || *p > '9')
                        return -EINVAL;
        for (const char *p = s; *p; p++)
                if (__builtin_mul_overflow(v, 10, &v) ||
                    __builtin_add_overflow(v, (uint64_t) (*p - '0'), &v))
                        return -ERANGE;
        if (v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int array_grow(void **array, size_t *allocated, size_t need, size_t elem_size) {
        size_t n;
        void *p;

        if (need <= *allocated)
                return 0;
        n = MAX(need, MAX(*allocated * 2, (size_t) 16));
        p = reallocarray(*array, n, elem_size);
        if (!p)
                return -ENOMEM;
        *array = p;
        *allocated = n;
        return 0;
}

int pwrite_all(int fd, const void *buf, size_t n, uint64_t off) {
        const char *p = buf;

        while (n > 0) {
                ssize_t k = pwrite(fd, p, n, (off_t) off);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        return -EIO;
                p += k;
                n -= (size_t) k;
                off += (uint64_t) k;
        }
        return 0;
}

int pread_all(int fd, void *buf, size_t n, uint64_t off) {
        char *p = buf;

        while (n > 0) {
                ssize_t k = pread(fd, p, n, (off_t) off);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        return -EIO;
                p += k;
                n -= (size_t) k;
                off += (uint64_t) k;
        }
        return 0;
}
