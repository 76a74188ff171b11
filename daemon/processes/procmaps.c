/* Strict parsers for /proc/PID/{maps,stat,status,cgroup} contents. */
#include "procmaps.h"
#include "hashmap.h"
#include "helpers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Parses a hexadecimal number ending at the character end; advances *p
 * past the number. strtoull would accept signs and whitespace we must not.
 * Every line of every new process's maps goes through here, several
 * times: a character compared, not a strchr per digit (that was 2% of
 * the daemon's CPU on a build host). */
static int parse_hex(const char **p, char end, uint64_t *ret) {
        const char *s = *p;
        uint64_t v = 0;
        size_t n = 0;

        for (; *s && *s != end; s++, n++) {
                int d = unhex_char(*s);
                if (d < 0)
                        return -EINVAL;
                if (v >> 60)
                        return -EINVAL; /* would overflow 64 bits */
                v = v << 4 | (uint64_t) d;
        }
        if (n == 0 || !*s)
                return -EINVAL;
        *p = s;
        *ret = v;
        return 0;
}

static int parse_dec(const char **p, uint64_t *ret) {
        const char *s = *p;
        uint64_t v = 0;

        if (*s < '0' || *s > '9')
                return -EINVAL;
        for (; *s >= '0' && *s <= '9'; s++) {
                if (v > (UINT64_MAX - 9) / 10)
                        return -EINVAL;
                v = v * 10 + (*s - '0');
        }
        *p = s;
        *ret = v;
        return 0;
}

/* procmap_parse_line, and with exec_only the path copied only for an
 * executable mapping (returns 1 for one, 0 for another). */
static int parse_line(const char *line, bool exec_only, struct procmap *ret) {
        struct procmap m = {};
        const char *p = line;
        uint64_t major, minor;
        size_t len;

        if (parse_hex(&p, '-', &m.start) < 0 || *p++ != '-')
                return -EINVAL;
        if (parse_hex(&p, ' ', &m.end) < 0 || *p++ != ' ' || m.end < m.start)
                return -EINVAL;
        if (strlen(p) < 5 || p[4] != ' ')
                return -EINVAL;
        if ((p[0] != 'r' && p[0] != '-') || (p[1] != 'w' && p[1] != '-') ||
            (p[2] != 'x' && p[2] != '-') || (p[3] != 'p' && p[3] != 's'))
                return -EINVAL;
        m.readable = p[0] == 'r';
        m.writable = p[1] == 'w';
        m.executable = p[2] == 'x';
        m.shared = p[3] == 's';
        p += 5;
        if (parse_hex(&p, ' ', &m.offset) < 0 || *p++ != ' ')
                return -EINVAL;
        if (parse_hex(&p, ':', &major) < 0 || *p++ != ':' || major > UINT32_MAX)
                return -EINVAL;
        if (parse_hex(&p, ' ', &minor) < 0 || *p++ != ' ' || minor > UINT32_MAX)
                return -EINVAL;
        m.dev_major = major;
        m.dev_minor = minor;
        if (parse_dec(&p, &m.inode) < 0)
                return -EINVAL;
        if (*p != '\0' && *p != '\n' && *p != ' ')
                return -EINVAL;
        while (*p == ' ')
                p++;
        len = strcspn(p, "\n");
        if (p[len] == '\n' && p[len + 1] != '\0')
                return -EINVAL; /* one line only */
        if (len > 0 && (!exec_only || m.executable)) {
                m.path = strndup(p, len);
                if (!m.path)
                        return -ENOMEM;
        }
        *ret = m;
        return exec_only ? m.executable : 0;
}

int procmap_parse_line(const char *line, struct procmap *ret) {
        return parse_line(line, false, ret);
}

int procmap_parse_exec_line(const char *line, struct procmap *ret) {
        return parse_line(line, true, ret);
}

void procmap_done(struct procmap *m) {
        free(m->path);
        m->path = NULL;
}

uint64_t procmap_signature_add(uint64_t sig, uint64_t start, uint64_t end) {
        return hash_u64(hash_u64(sig ^ start) ^ end);
}

int procstat_parse_starttime(const char *stat, uint64_t *ret_ticks) {
        const char *p = strrchr(stat, ')');
        uint64_t v;

        if (!p)
                return -EINVAL;
        p++;
        /* after "pid (comm)" come fields 3..; starttime is field 22 */
        for (int field = 3; field < 22; field++) {
                if (*p != ' ')
                        return -EINVAL;
                p++;
                p += strcspn(p, " ");
        }
        if (*p++ != ' ')
                return -EINVAL;
        if (parse_dec(&p, &v) < 0 || (*p != ' ' && *p != '\n' && *p != '\0'))
                return -EINVAL;
        *ret_ticks = v;
        return 0;
}

static const char *find_line(const char *text, const char *prefix) {
        size_t n = strlen(prefix);

        for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
                if (strncmp(l, prefix, n) == 0)
                        return l + n;
        return NULL;
}

int procstatus_parse_uid(const char *status, uint32_t *ret_uid) {
        const char *p = find_line(status, "Uid:");
        uint64_t v;

        if (!p)
                return -EINVAL;
        p += strspn(p, " \t");
        if (parse_dec(&p, &v) < 0 || v > UINT32_MAX || (*p != '\t' && *p != ' ' && *p != '\n'))
                return -EINVAL;
        *ret_uid = v;
        return 0;
}

int procstatus_parse_euid(const char *status, uint32_t *ret_uid) {
        const char *p = find_line(status, "Uid:");
        uint64_t v;

        if (!p)
                return -EINVAL;
        p += strspn(p, " \t");
        if (parse_dec(&p, &v) < 0 || (*p != '\t' && *p != ' '))
                return -EINVAL; /* the real uid, then a separator */
        p += strspn(p, " \t");
        if (parse_dec(&p, &v) < 0 || v > UINT32_MAX || (*p != '\t' && *p != ' ' && *p != '\n' && *p != '\0'))
                return -EINVAL;
        *ret_uid = v;
        return 0;
}

int proccgroup_parse_v2(const char *cgroup, char **ret_path) {
        const char *p = find_line(cgroup, "0::");
        char *path;

        if (!p)
                return -ENOENT;
        path = strndup(p, strcspn(p, "\n"));
        if (!path)
                return -ENOMEM;
        *ret_path = path;
        return 0;
}
