/* Short-lived processes grouped by what they ran: see process-groups.h. */
#include "process-groups.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "macro.h"

/* What a group stands for, as one text: NULLs and strings told apart */
#define GROUP_KEY(p) \
        "quote(" p ".comm) || ',' || quote(" p ".exe) || ',' || quote(" p ".uid) || ',' || quote(" p ".cgroup)"

int process_groups_prepare(const struct db *d) {
        return db_exec(d, "CREATE TEMP TABLE IF NOT EXISTS churn (process_id INTEGER PRIMARY KEY, key TEXT NOT NULL, "
                          "group_id INTEGER);"
                          "CREATE TEMP TABLE IF NOT EXISTS churn_groups (key TEXT PRIMARY KEY, id INTEGER NOT NULL) "
                          "WITHOUT ROWID;");
}

int drains_timed(const struct db *d, const char *drains_sql, bool *ret) {
        _cleanup_free_ char *timed = NULL;
        int64_t named;
        int k;

        if (asprintf(&timed, "SELECT EXISTS (SELECT 1 FROM timeline_blocks WHERE drain_id IN %s) OR "
                             "EXISTS (SELECT 1 FROM offcpu_timeline WHERE drain_id IN %s)",
                     drains_sql, drains_sql) < 0)
                return -ENOMEM;
        k = db_query_i64(d, timed, NULL, 0, 0, &named);
        *ret = named != 0;
        return k;
}

int64_t process_groups_assign(const struct db *d, const char *blocks_keys_sql, const char *drains_sql) {
        _cleanup_free_ char *pick = NULL;
        int64_t n;
        bool named;
        int k;

        k = db_exec(d, "DELETE FROM temp.churn; DELETE FROM temp.churn_groups;");
        if (k < 0)
                return k;
        /* a timeline of these drains names their processes by id */
        k = drains_timed(d, drains_sql, &named);
        if (k < 0 || named)
                return k;
        /* every block of the process is among those taken: its count of
         * blocks (process_refs) is no more than the blocks here */
        if (asprintf(&pick, "INSERT INTO temp.churn (process_id, key) "
                            "SELECT b.process_id, " GROUP_KEY("p") " FROM sample_blocks b "
                            "JOIN processes p ON p.id = b.process_id "
                            "WHERE b.drain_id IN %s AND p.pid > 0 GROUP BY b.process_id "
                            "HAVING count(*) >= coalesce((SELECT blocks FROM process_refs r "
                            "WHERE r.process_id = b.process_id), 0)",
                     blocks_keys_sql) < 0)
                return -ENOMEM;
        n = db_run(d, pick, NULL, 0);
        if (n <= 0)
                return n;
        /* the groups there are (a few hundred on a build host's fortnight:
         * read through UNIQUE (pid, start_ns)), then the ones missing, each
         * with a start_ns below every group row's */
        k = (int) db_run(d, "INSERT INTO temp.churn_groups SELECT " GROUP_KEY("p") ", min(p.id) FROM processes p "
                            "WHERE p.pid = -1 GROUP BY 1", NULL, 0);
        if (k >= 0)
                k = (int) db_run(d, "INSERT INTO processes (pid, start_ns, comm, exe, uid, cgroup, unit, container) "
                                    "SELECT -1, -(SELECT coalesce(max(id), 0) FROM processes) - row_number() OVER (), "
                                    "comm, exe, uid, cgroup, unit, container FROM ("
                                    "SELECT p.comm, p.exe, p.uid, p.cgroup, p.unit, p.container FROM temp.churn c "
                                    "JOIN processes p ON p.id = c.process_id "
                                    "WHERE c.key NOT IN (SELECT key FROM temp.churn_groups) GROUP BY c.key)",
                                 NULL, 0);
        if (k >= 0)
                k = (int) db_run(d, "INSERT OR IGNORE INTO temp.churn_groups SELECT " GROUP_KEY("p") ", p.id "
                                    "FROM processes p WHERE p.pid = -1", NULL, 0);
        if (k >= 0)
                k = (int) db_run(d, "UPDATE temp.churn SET group_id = "
                                    "(SELECT g.id FROM temp.churn_groups g WHERE g.key = churn.key)", NULL, 0);
        return k < 0 ? k : n;
}
