/* Captures' decisions (see capture-util.h). */
#include "capture-util.h"

#include <errno.h>
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
