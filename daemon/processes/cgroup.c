/* Unit and container id from a cgroup v2 path. schema/0002-query.sql does the
 * same in SQL for processes stored before these columns existed; the unit
 * test checks that both agree. */
#include "cgroup.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool has_suffix(const char *s, size_t n, const char *suffix) {
        size_t l = strlen(suffix);
        return n >= l && memcmp(s + n - l, suffix, l) == 0;
}

static bool has_prefix(const char *s, size_t n, const char *prefix) {
        size_t l = strlen(prefix);
        return n >= l && memcmp(s, prefix, l) == 0;
}

static bool is_lower_hex(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

/* Calls match() on each component of path, deepest first; returns the first
 * match as a malloc'd string. */
static int deepest_component(const char *path, bool (*match)(const char *c, size_t n, size_t *ret_off, size_t *ret_len),
                             char **ret) {
        const char *end;

        if (!path)
                return -ENOENT;
        end = path + strlen(path);
        while (end > path) {
                const char *start = end;
                size_t off, len;

                while (start > path && start[-1] != '/')
                        start--;
                if (end > start && match(start, end - start, &off, &len)) {
                        char *s = strndup(start + off, len);
                        if (!s)
                                return -ENOMEM;
                        *ret = s;
                        return 0;
                }
                end = start > path ? start - 1 : path;
        }
        return -ENOENT;
}

static bool match_unit(const char *c, size_t n, size_t *ret_off, size_t *ret_len) {
        /* a bare ".service" is not a unit name */
        if ((has_suffix(c, n, ".service") && n > strlen(".service")) ||
            (has_suffix(c, n, ".scope") && n > strlen(".scope"))) {
                *ret_off = 0;
                *ret_len = n;
                return true;
        }
        return false;
}

static bool match_container(const char *c, size_t n, size_t *ret_off, size_t *ret_len) {
        /* the prefixes container runtimes put before the id in a
         * component's name, under the systemd cgroup driver */
        static const char *const prefixes[] = { "docker-", "cri-containerd-", "crio-", "libpod-" };
        size_t off = 0;

        if (has_suffix(c, n, ".scope"))
                n -= strlen(".scope");
        for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
                if (has_prefix(c, n, prefixes[i])) {
                        off = strlen(prefixes[i]);
                        break;
                }
        if (n - off != CGROUP_CONTAINER_ID_LEN || !is_lower_hex(c + off, n - off))
                return false;
        *ret_off = off;
        *ret_len = n - off;
        return true;
}

int cgroup_unit(const char *path, char **ret_unit) {
        return deepest_component(path, match_unit, ret_unit);
}

int cgroup_container_id(const char *path, char **ret_id) {
        return deepest_component(path, match_container, ret_id);
}

/* Field i (0-based) of a mountinfo line, space separated: *ret_len bytes at
 * the returned pointer; NULL when the line has fewer fields. */
static const char *mountinfo_field(const char *line, size_t line_len, unsigned i, size_t *ret_len) {
        const char *p = line, *end = line + line_len;

        for (;;) {
                const char *sp = memchr(p, ' ', (size_t) (end - p));

                if (i == 0) {
                        *ret_len = (size_t) ((sp ? sp : end) - p);
                        return p;
                }
                if (!sp)
                        return NULL;
                p = sp + 1;
                i--;
        }
}

int cgroup2_mount_point(const char *mountinfo, char **ret) {
        for (const char *line = mountinfo; line && *line;) {
                const char *nl = strchr(line, '\n'), *f, *sep;
                size_t n = nl ? (size_t) (nl - line) : strlen(line), len;

                /* after the optional fields comes " - ": then the type */
                sep = memmem(line, n, " - ", 3);
                if (sep && (f = mountinfo_field(sep + 3, n - (size_t) (sep + 3 - line), 0, &len)) &&
                    len == strlen("cgroup2") && memcmp(f, "cgroup2", len) == 0 &&
                    (f = mountinfo_field(line, (size_t) (sep - line), 4, &len)) && len > 0) {
                        char *path = malloc(len + 1), *o = path;

                        if (!path)
                                return -ENOMEM;
                        for (size_t i = 0; i < len; i++) {
                                if (f[i] == '\\' && i + 3 < len && f[i + 1] >= '0' && f[i + 1] <= '3' &&
                                    f[i + 2] >= '0' && f[i + 2] <= '7' && f[i + 3] >= '0' && f[i + 3] <= '7') {
                                        *o++ = (char) ((f[i + 1] - '0') * 64 + (f[i + 2] - '0') * 8 + (f[i + 3] - '0'));
                                        i += 3;
                                } else
                                        *o++ = f[i];
                        }
                        *o = '\0';
                        *ret = path;
                        return 0;
                }
                line = nl ? nl + 1 : NULL;
        }
        return -ENOENT;
}
