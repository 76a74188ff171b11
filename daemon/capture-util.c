/* Captures' decisions (see capture-util.h). */
#include "capture-util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

/* "avg10=12.34": the value in hundredths; at most 100.00. */
static int parse_avg(const char **p, const char *end, const char *key, uint32_t *ret) {
        size_t k = strlen(key);
        uint32_t whole = 0, frac = 0;
        unsigned digits = 0, decimals = 0;
        const char *s = *p;

        if ((size_t) (end - s) < k + 1 || memcmp(s, key, k) != 0 || s[k] != '=')
                return -EBADMSG;
        for (s += k + 1; s < end && *s >= '0' && *s <= '9'; s++, digits++)
                if ((whole = whole * 10 + (uint32_t) (*s - '0')) > 100)
                        return -EBADMSG;
        if (!digits || s >= end || *s != '.')
                return -EBADMSG;
        for (s++; s < end && *s >= '0' && *s <= '9' && decimals < 2; s++, decimals++)
                frac = frac * 10 + (uint32_t) (*s - '0');
        if (decimals != 2 || whole * 100 + frac > 10000)
                return -EBADMSG;
        *ret = whole * 100 + frac;
        *p = s;
        return 0;
}

static int parse_total(const char **p, const char *end, uint64_t *ret) {
        const char *s = *p;
        uint64_t v = 0;
        unsigned digits = 0;

        if (end - s < 6 || memcmp(s, "total=", 6) != 0)
                return -EBADMSG;
        for (s += 6; s < end && *s >= '0' && *s <= '9'; s++, digits++) {
                if (v > (UINT64_MAX - 9) / 10)
                        return -EBADMSG;
                v = v * 10 + (uint64_t) (*s - '0');
        }
        if (!digits)
                return -EBADMSG;
        *ret = v;
        *p = s;
        return 0;
}

int psi_parse(const char *text, size_t n, struct psi_reading *ret) {
        static const char *const keys[] = { "avg10", "avg60", "avg300" };
        struct psi_reading r = {};
        const char *p = text, *end = text + n;

        while (p < end) {
                const char *eol = memchr(p, '\n', (size_t) (end - p));
                const char *le = eol ? eol : end;
                int line;

                if ((size_t) (le - p) >= 5 && memcmp(p, "some ", 5) == 0)
                        line = CAPTURE_PSI_SOME;
                else if ((size_t) (le - p) >= 5 && memcmp(p, "full ", 5) == 0)
                        line = CAPTURE_PSI_FULL;
                else
                        return -EBADMSG;
                if (r.has[line])
                        return -EBADMSG;
                p += 5;
                for (size_t k = 0; k < ELEMENTSOF(keys); k++) {
                        if (parse_avg(&p, le, keys[k], &r.avg_centi[line][k]) < 0)
                                return -EBADMSG;
                        if (p >= le || *p != ' ')
                                return -EBADMSG;
                        p++;
                }
                if (parse_total(&p, le, &r.total_us[line]) < 0 || p != le)
                        return -EBADMSG;
                r.has[line] = true;
                p = eol ? eol + 1 : end;
        }
        if (!r.has[CAPTURE_PSI_SOME])
                return -EBADMSG;
        *ret = r;
        return 0;
}

int psi_value(const struct psi_reading *r, const struct capture_cond *c, uint32_t *ret_centi) {
        if (c->kind != CAPTURE_PSI || (unsigned) c->line > CAPTURE_PSI_FULL ||
            (unsigned) c->window > CAPTURE_PSI_AVG300)
                return -EINVAL;
        if (!r->has[c->line])
                return -ENODATA;
        *ret_centi = r->avg_centi[c->line][c->window];
        return 0;
}

uint32_t capture_cpu_centi(uint64_t cpu_before_ns, uint64_t cpu_after_ns, uint64_t wall_ns) {
        uint64_t used, centi;

        if (cpu_after_ns <= cpu_before_ns || wall_ns == 0)
                return 0;
        used = cpu_after_ns - cpu_before_ns;
        /* used / wall * 10,000 without overflow for any used below 2^64 / 10^4 */
        if (used > UINT64_MAX / 10000)
                return UINT32_MAX;
        centi = used * 10000 / wall_ns;
        return centi > UINT32_MAX ? UINT32_MAX : (uint32_t) centi;
}

bool capture_edge(bool *above, uint32_t value_centi, uint32_t threshold_centi) {
        bool now = value_centi > threshold_centi, rose = now && !*above;

        *above = now;
        return rose;
}

enum capture_verdict capture_gate_ask(struct capture_gate *g, uint64_t now_ns, uint64_t bytes_estimate) {
        enum capture_verdict v = CAPTURE_GRANTED;

        if (g->any && (now_ns < g->last_ns || now_ns - g->last_ns < g->cooldown_ns))
                v = CAPTURE_COOLING;
        else if (bytes_estimate > g->budget_bytes || g->pinned_bytes > g->budget_bytes - bytes_estimate)
                v = CAPTURE_OVER_BUDGET;
        if (v != CAPTURE_GRANTED) {
                g->refused[v]++;
                return v;
        }
        g->pinned_bytes += bytes_estimate;
        g->last_ns = now_ns;
        g->any = true;
        return v;
}

void capture_gate_unpin(struct capture_gate *g, uint64_t bytes) {
        g->pinned_bytes -= MIN(bytes, g->pinned_bytes);
}

const char *capture_verdict_name(enum capture_verdict v) {
        static const char *const names[_CAPTURE_VERDICT_MAX] = {
                [CAPTURE_GRANTED] = "granted",
                [CAPTURE_COOLING] = "cooling_down",
                [CAPTURE_OVER_BUDGET] = "over_budget",
        };

        return (unsigned) v < _CAPTURE_VERDICT_MAX ? names[v] : "unknown";
}

/* A decimal field ending at a space or the end; strict. */
static int parse_u64_field(const char **p, const char *end, uint64_t *ret) {
        const char *s = *p;
        uint64_t v = 0;

        if (s >= end || *s < '0' || *s > '9')
                return -EBADMSG;
        for (; s < end && *s >= '0' && *s <= '9'; s++) {
                if (v > (UINT64_MAX - 9) / 10)
                        return -EBADMSG;
                v = v * 10 + (uint64_t) (*s - '0');
        }
        if (s < end && *s != ' ' && *s != '\n')
                return -EBADMSG;
        *ret = v;
        *p = s;
        return 0;
}

/* Skips one field (anything up to a space). */
static int skip_field(const char **p, const char *end) {
        const char *s = *p;

        if (s >= end || *s == ' ')
                return -EBADMSG;
        while (s < end && *s != ' ')
                s++;
        *p = s;
        return 0;
}

int capture_parse_stat(const char *text, size_t n, uint64_t ticks_per_s, uint64_t *ret_cpu_ns,
                       uint64_t *ret_start_ticks) {
        const char *end = text + n, *p = NULL;
        uint64_t utime = 0, stime = 0, start = 0;

        if (ticks_per_s == 0)
                return -EINVAL;
        /* "PID (COMM) S ...": the comm is whatever lies up to the last ')' */
        for (const char *q = text; q < end; q++)
                if (*q == ')')
                        p = q;
        if (!p || p + 1 >= end || p[1] != ' ')
                return -EBADMSG;
        p += 2;
        /* fields 3 (state) to 22 (starttime); utime and stime are 14, 15 */
        for (unsigned field = 3; field <= 22; field++) {
                int r;

                if (field == 14)
                        r = parse_u64_field(&p, end, &utime);
                else if (field == 15)
                        r = parse_u64_field(&p, end, &stime);
                else if (field == 22)
                        r = parse_u64_field(&p, end, &start);
                else
                        r = skip_field(&p, end);
                if (r < 0)
                        return r;
                if (field < 22) {
                        if (p >= end || *p != ' ')
                                return -EBADMSG;
                        p++;
                }
        }
        if (utime > UINT64_MAX - stime || (utime + stime) > UINT64_MAX / NSEC_PER_SEC)
                return -EBADMSG;
        *ret_cpu_ns = (utime + stime) * NSEC_PER_SEC / ticks_per_s;
        *ret_start_ticks = start;
        return 0;
}

int capture_parse_cpu_stat(const char *text, size_t n, uint64_t *ret_cpu_ns) {
        const char *p = text, *end = text + n;

        while (p < end) {
                const char *eol = memchr(p, '\n', (size_t) (end - p)), *le = eol ? eol : end;

                if ((size_t) (le - p) > 11 && memcmp(p, "usage_usec ", 11) == 0) {
                        const char *v = p + 11;
                        uint64_t us;

                        if (parse_u64_field(&v, le, &us) < 0 || v != le || us > UINT64_MAX / 1000)
                                return -EBADMSG;
                        *ret_cpu_ns = us * 1000;
                        return 0;
                }
                p = eol ? eol + 1 : end;
        }
        return -EBADMSG;
}

int capture_may_start(const struct capture_cond *c, bool privileged, uint32_t uid, uint32_t owner_uid,
                      const char **ret_error) {
        *ret_error = NULL;
        if (privileged)
                return 0;
        if (c->kind != CAPTURE_CPU_PID) {
                *ret_error = "only root and members of the admin group may start this capture: it pins the whole "
                             "machine's data; others may watch their own processes, cpu:pid=PID>PERCENT";
                return -EPERM;
        }
        if (owner_uid == UINT32_MAX || owner_uid != uid) {
                *ret_error = "cpu:pid= names a process that is not yours (or is gone): unprivileged users may "
                             "capture only their own processes";
                return -EPERM;
        }
        return 0;
}

void capture_range(uint64_t trigger_ns, uint64_t before_ns, uint64_t duration_ns, uint64_t *ret_from_ns,
                   uint64_t *ret_to_ns) {
        *ret_from_ns = trigger_ns > before_ns ? trigger_ns - before_ns : 0;
        *ret_to_ns = trigger_ns > UINT64_MAX - duration_ns ? UINT64_MAX : trigger_ns + duration_ns;
}

void capture_raise_plan(unsigned base_hz, unsigned raised_hz, uint64_t interval_ns, uint64_t min_interval_ns,
                        struct capture_raise *ret) {
        unsigned __int128 budget = (unsigned __int128) base_hz * interval_ns; /* samples x ns per CPU and drain */

        *ret = (struct capture_raise) { .hz = base_hz, .interval_ns = interval_ns };
        if (base_hz == 0 || raised_hz <= base_hz)
                return;
        /* rounded down: raised_hz x interval never passes the budget */
        ret->hz = raised_hz;
        ret->interval_ns = (uint64_t) (budget / raised_hz);
        if (ret->interval_ns >= min_interval_ns)
                return;
        ret->interval_ns = min_interval_ns;
        ret->hz = (unsigned) MAX(budget / min_interval_ns, (unsigned __int128) base_hz);
}

uint64_t capture_estimate_bytes(uint64_t seen_bytes, uint64_t seen_ns, uint64_t before_ns, uint64_t duration_ns) {
        uint64_t span = before_ns > UINT64_MAX - duration_ns ? UINT64_MAX : before_ns + duration_ns;
        long double v;

        if (seen_ns == 0 || seen_bytes == 0)
                return 0;
        v = (long double) seen_bytes * (long double) span / (long double) seen_ns;
        return v >= (long double) UINT64_MAX ? UINT64_MAX : (uint64_t) v;
}

int capture_cgroup2_mount(const char *text, size_t n, char **ret) {
        const char *p = text, *end = text + n;

        while (p < end) {
                const char *eol = memchr(p, '\n', (size_t) (end - p)), *le = eol ? eol : end;
                const char *f[3];
                size_t len[3], k = 0;

                /* "DEVICE PATH TYPE OPTIONS ..." */
                for (const char *q = p; q < le && k < 3; k++) {
                        const char *sp = memchr(q, ' ', (size_t) (le - q));

                        f[k] = q;
                        len[k] = (size_t) ((sp ? sp : le) - q);
                        q = sp ? sp + 1 : le;
                }
                if (k == 3 && len[2] == 7 && memcmp(f[2], "cgroup2", 7) == 0 && len[1] > 0 && f[1][0] == '/') {
                        char *path = malloc(len[1] + 1), *o = path;

                        if (!path)
                                return -ENOMEM;
                        for (size_t i = 0; i < len[1]; i++) {
                                if (f[1][i] == '\\' && i + 3 < len[1] && f[1][i + 1] >= '0' && f[1][i + 1] <= '3' &&
                                    f[1][i + 2] >= '0' && f[1][i + 2] <= '7' && f[1][i + 3] >= '0' && f[1][i + 3] <= '7') {
                                        *o++ = (char) ((f[1][i + 1] - '0') * 64 + (f[1][i + 2] - '0') * 8 + (f[1][i + 3] - '0'));
                                        i += 3;
                                } else
                                        *o++ = f[1][i];
                        }
                        *o = '\0';
                        *ret = path;
                        return 0;
                }
                p = eol ? eol + 1 : end;
        }
        return -ENOENT;
}
