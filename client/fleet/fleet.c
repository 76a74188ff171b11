/* The connection to a fleet's ClickHouse (see fleet.h): HTTP through
 * libcurl, ClickHouse's errors, the schema's version check and init. The
 * answers are fleet-answer.c's. */
#include "fleet-private.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../bpf/profd.h"
#include "clickhouse-schema.h"
#include "credentials.h"
#include "fleet-schema.h"
#include "fleet-sql.h"
#include "hashmap.h"
#include "protocol.h"
#include "quality-sum.h"
#include "quality.h"
#include "request.h"
#include "series.h"
#include "util.h"

/* A person waits for the answer: ClickHouse on loopback or in the same
 * network accepts in milliseconds, so 10 s means it is not there. */
#define FLEET_CONNECT_TIMEOUT_S 10
/* A day of a large fleet is summed in seconds; ten minutes without an
 * answer means something is wrong, and a script must not hang forever. */
#define FLEET_QUERY_TIMEOUT_S 600
/* ClickHouse's own default max_query_size; queries with long id lists
 * raise it for themselves (the setting is per query). */
#define FLEET_QUERY_SIZE_DEFAULT (256 * 1024)

struct body {
        char *data;
        size_t len, cap;
};

static size_t body_write(char *ptr, size_t size, size_t nmemb, void *userdata) {
        struct body *b = userdata;
        size_t n = size * nmemb;

        if (b->len + n + 1 > b->cap) {
                size_t cap = MAX(b->cap * 2, b->len + n + 1 + 4096);
                char *d = realloc(b->data, cap);

                if (!d)
                        return 0; /* curl fails the transfer */
                b->data = d;
                b->cap = cap;
        }
        memcpy(b->data + b->len, ptr, n);
        b->len += n;
        b->data[b->len] = '\0';
        return n;
}

fleet *fleet_free(fleet *f) {
        if (!f)
                return NULL;
        if (f->curl)
                curl_easy_cleanup(f->curl);
        free(f->url);
        free(f->user);
        if (f->password) {
                explicit_bzero(f->password, strlen(f->password));
                free(f->password);
        }
        free(f);
        return NULL;
}

/* The credentials file profd's exporter reads too (common/credentials.h). */
static int read_credentials(fleet *f, const char *path) {
        _cleanup_free_ char *text = NULL;
        const char *user, *password;
        unsigned line;
        int r;

        r = read_full_file(path, &text);
        if (r < 0)
                return cli_error(r, "cannot read the ClickHouse credentials file %s: %m", path);
        r = credentials_parse(text, &user, &password, &line);
        if (r < 0 && line == 0)
                return cli_error(-EINVAL, "the credentials file %s has no \"user = NAME\" line", path);
        if (r < 0)
                return cli_error(-EINVAL, "the credentials file %s, line %u: expected \"user = NAME\" or "
                                 "\"password = SECRET\"", path, line);
        f->user = strdup(user);
        f->password = strdup(password);
        explicit_bzero(text, strlen(text));
        if (!f->user || !f->password)
                return cli_error(-ENOMEM, "%m");
        return 0;
}

bool fleet_url_valid(const char *url) {
        return (strncmp(url, "http://", 7) == 0 && url[7]) || (strncmp(url, "https://", 8) == 0 && url[8]);
}

int fleet_open(const char *url, const char *credentials, fleet **ret) {
        _cleanup_fleet_ fleet *f = NULL;
        int r;

        if (!fleet_url_valid(url))
                return cli_error(-EINVAL, "'%s' is not an http:// or https:// URL", url);
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
                return cli_error(-EIO, "cannot initialize libcurl");
        f = calloc(1, sizeof(*f));
        if (!f)
                return cli_error(-ENOMEM, "%m");
        f->url = strdup(url);
        f->curl = curl_easy_init();
        if (!f->url || !f->curl)
                return cli_error(-ENOMEM, "%m");
        if (credentials) {
                r = read_credentials(f, credentials);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(f);
        return 0;
}

/* ClickHouse's error text: "Code: 60, e.displayText() = DB::Exception:
 * Table x doesn't exist., e.what() = DB::Exception\n". The code, and the
 * message without its decoration. */
static int clickhouse_error(char *body, char **ret_message) {
        char *m = body ? body : (char *) "";
        int code = 0;
        char *e;

        if (sscanf(m, "Code: %d", &code) != 1)
                code = 0;
        e = strstr(m, "DB::Exception: ");
        if (e)
                m = e + strlen("DB::Exception: ");
        e = strstr(m, ", e.what()");
        if (e)
                *e = '\0';
        m[strcspn(m, "\n")] = '\0';
        *ret_message = m;
        return code;
}

/* ClickHouse's error codes profctl tells apart. */
enum {
        CH_UNKNOWN_TABLE = 60,
        CH_UNKNOWN_DATABASE = 81,
        CH_UNKNOWN_USER = 192,
        CH_WRONG_PASSWORD = 193,
        CH_REQUIRED_PASSWORD = 194,
        CH_IP_ADDRESS_NOT_ALLOWED = 195,
        CH_AUTHENTICATION_FAILED = 516,
};

static void curl_mimep(curl_mime **m) {
        curl_mime_free(*m);
}

/* Runs one statement; with ids (ids_len bytes of TabSeparated UInt64s),
 * they go along as the external table FLEET_SQL_IDS_TABLE. Returns 0 with
 * the body (NUL-terminated, owned by the caller), or a negative errno
 * after saying what failed: -ECONNREFUSED, -ETIMEDOUT, -EACCES
 * (credentials), -ENOENT (no such table or database: not printed when
 * quiet_missing), -EREMOTEIO (ClickHouse refused it). */
int fleet_http_ids(fleet *f, const char *sql, const char *structure, const char *ids, size_t ids_len,
                          bool quiet_missing, char **ret_body, size_t *ret_len) {
        _cleanup_free_ char *url = NULL;
        _cleanup_(curl_mimep) curl_mime *mime = NULL;
        struct body b = {};
        size_t sql_len = strlen(sql);
        long status = 0;
        CURLcode rc;
        int r = 0;

        curl_easy_reset(f->curl);
        if (ids) {
                /* the body is the table: the statement goes in the URL */
                char *q = curl_easy_escape(f->curl, sql, (int) sql_len);
                char *st = curl_easy_escape(f->curl, structure, 0);
                curl_mimepart *part;

                if (!q || !st || asprintf(&url, "%s%c%s_structure=%s&query=%s", f->url,
                                          strchr(f->url, '?') ? '&' : '?', FLEET_SQL_IDS_TABLE, st, q) < 0) {
                        curl_free(q);
                        curl_free(st);
                        return cli_error(-ENOMEM, "%m");
                }
                curl_free(q);
                curl_free(st);
                mime = curl_mime_init(f->curl);
                part = mime ? curl_mime_addpart(mime) : NULL;
                if (!part || curl_mime_name(part, FLEET_SQL_IDS_TABLE) != CURLE_OK ||
                    curl_mime_filename(part, FLEET_SQL_IDS_TABLE) != CURLE_OK ||
                    curl_mime_data(part, ids, ids_len) != CURLE_OK)
                        return cli_error(-ENOMEM, "%m");
                curl_easy_setopt(f->curl, CURLOPT_MIMEPOST, mime);
        } else {
                /* settings go in the URL; a query longer than ClickHouse's
                 * default limit raises the limit for itself */
                if (asprintf(&url, "%s%cmax_query_size=%zu", f->url, strchr(f->url, '?') ? '&' : '?',
                             MAX(sql_len + 1, (size_t) FLEET_QUERY_SIZE_DEFAULT)) < 0)
                        return cli_error(-ENOMEM, "%m");
                curl_easy_setopt(f->curl, CURLOPT_POSTFIELDS, sql);
                curl_easy_setopt(f->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) sql_len);
        }
        curl_easy_setopt(f->curl, CURLOPT_URL, url);
        curl_easy_setopt(f->curl, CURLOPT_WRITEFUNCTION, body_write);
        curl_easy_setopt(f->curl, CURLOPT_WRITEDATA, &b);
        curl_easy_setopt(f->curl, CURLOPT_CONNECTTIMEOUT, (long) FLEET_CONNECT_TIMEOUT_S);
        curl_easy_setopt(f->curl, CURLOPT_TIMEOUT, (long) FLEET_QUERY_TIMEOUT_S);
        curl_easy_setopt(f->curl, CURLOPT_NOSIGNAL, 1L);
        if (f->user) {
                curl_easy_setopt(f->curl, CURLOPT_USERNAME, f->user);
                curl_easy_setopt(f->curl, CURLOPT_PASSWORD, f->password ? f->password : "");
        }
        rc = curl_easy_perform(f->curl);
        if (rc == CURLE_OK)
                curl_easy_getinfo(f->curl, CURLINFO_RESPONSE_CODE, &status);

        if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
                r = cli_error(-ECONNREFUSED, "cannot connect to ClickHouse at %s: %s (is clickhouse-server "
                              "running, and is this its HTTP port?)", f->url, curl_easy_strerror(rc));
        else if (rc == CURLE_OPERATION_TIMEDOUT)
                r = cli_error(-ETIMEDOUT, "ClickHouse at %s did not answer within %d s", f->url,
                              FLEET_QUERY_TIMEOUT_S);
        else if (rc != CURLE_OK)
                r = cli_error(-EIO, "cannot query ClickHouse at %s: %s", f->url, curl_easy_strerror(rc));
        else if (status != 200) {
                char *msg;
                int code = clickhouse_error(b.data, &msg);

                if (code == CH_UNKNOWN_USER || code == CH_WRONG_PASSWORD || code == CH_REQUIRED_PASSWORD ||
                    code == CH_IP_ADDRESS_NOT_ALLOWED || code == CH_AUTHENTICATION_FAILED || status == 401 ||
                    status == 403)
                        r = cli_error(-EACCES, "ClickHouse at %s refused the credentials%s: %s", f->url,
                                      f->user ? "" : " (none given: see --clickhouse-credentials)", msg);
                else if (code == CH_UNKNOWN_TABLE || code == CH_UNKNOWN_DATABASE) {
                        r = -ENOENT;
                        if (!quiet_missing)
                                cli_error(r, "ClickHouse at %s has no profd schema (%s); create it with "
                                          "'profctl --clickhouse URL init'", f->url, msg);
                } else if (!b.data || status == 404)
                        r = cli_error(-EREMOTEIO, "%s answered HTTP %ld: is it ClickHouse's HTTP interface?",
                                      f->url, status);
                else
                        r = cli_error(-EREMOTEIO, "ClickHouse at %s refused a query: %s", f->url, msg);
        }
        if (r < 0) {
                free(b.data);
                return r;
        }
        *ret_body = b.data ? b.data : strdup("");
        if (!*ret_body)
                return cli_error(-ENOMEM, "%m");
        if (ret_len)
                *ret_len = b.len;
        return 0;
}

int fleet_http(fleet *f, const char *sql, bool quiet_missing, char **ret_body, size_t *ret_len) {
        return fleet_http_ids(f, sql, NULL, NULL, 0, quiet_missing, ret_body, ret_len);
}

/* Closes the memstream m that wrote *sql and runs the statement. */
int fleet_http_memstream(fleet *f, FILE *m, char **sql, char **ret_body, size_t *ret_len) {
        if (fclose(m) != 0)
                return cli_error(-ENOMEM, "%m");
        return fleet_http(f, *sql, false, ret_body, ret_len);
}

int fleet_check_schema(fleet *f) {
        _cleanup_free_ char *body = NULL;
        uint64_t version;
        int r;

        r = fleet_http(f, "SELECT max(version) FROM " FS_TABLE_VERSION " FORMAT TabSeparated", true, &body, NULL);
        if (r == -ENOENT)
                return cli_error(r, "ClickHouse at %s has no profd schema; create it with 'profctl --clickhouse "
                                 "URL init'", f->url);
        if (r < 0)
                return r;
        body[strcspn(body, "\n")] = '\0';
        if (fleet_tsv_u64(body, &version) < 0)
                return cli_error(-EPROTO, "ClickHouse at %s answered '%s' for the profd schema version", f->url,
                                 body);
        if (version != clickhouse_schema_version)
                return cli_error(-EPROTO, "ClickHouse at %s holds profd schema version %" PRIu64 ", this profctl "
                                 "reads version %u%s", f->url, version, clickhouse_schema_version,
                                 version > clickhouse_schema_version ? " (use a newer profctl)" :
                                 " (a profctl of that version reads it)");
        return 0;
}

/* Runs one statement, its answer dropped. */
static int fleet_exec(fleet *f, const char *sql) {
        _cleanup_free_ char *body = NULL;

        return fleet_http(f, sql, false, &body, NULL);
}

/* cluster.sql's statement for this server: {cluster} replaced by the
 * cluster's name; without a cluster (one server) the Distributed engine is
 * left out, so the table is of its local table's engine: the server holds
 * the data itself. */
static char *cluster_statement(const char *statement, const char *cluster) {
        const char *engine = strstr(statement, "ENGINE = Distributed(");
        char *text = NULL;
        size_t size = 0;
        FILE *m;

        if (!cluster)
                return engine ? strndup(statement, (size_t) (engine - statement)) : strdup(statement);
        m = open_memstream(&text, &size);
        if (!m)
                return NULL;
        for (const char *p = statement;;) {
                const char *c = strstr(p, "{cluster}");

                if (!c) {
                        fputs(p, m);
                        break;
                }
                fwrite(p, 1, (size_t) (c - p), m);
                fleet_sql_quote(m, cluster);
                p = c + strlen("{cluster}");
        }
        if (fclose(m) != 0) {
                free(text);
                return NULL;
        }
        return text;
}

/* The version row: inserted last, once every table is there. */
static bool version_statement(const char *statement) {
        static const char prefix[] = "INSERT INTO " FS_TABLE_VERSION " ";

        return strncmp(statement, prefix, sizeof(prefix) - 1) == 0;
}

/* Runs an upgrade.sql statement, "ALTER TABLE profd.TABLE ADD COLUMN NAME
 * ...", unless the table has that column already. */
static int fleet_upgrade(fleet *f, const char *statement) {
        _cleanup_free_ char *sql = NULL, *answer = NULL;
        char table[64], column[64];
        size_t size = 0;
        FILE *m;
        int r;

        if (sscanf(statement, "ALTER TABLE profd.%63s ADD COLUMN %63s ", table, column) != 2)
                return cli_error(-EINVAL, "upgrade.sql has a statement profctl cannot check: %s", statement);
        m = open_memstream(&sql, &size);
        if (!m)
                return cli_error(-ENOMEM, "%m");
        fputs("SELECT count() FROM system.columns WHERE database = 'profd' AND table = ", m);
        fleet_sql_quote(m, table);
        fputs(" AND name = ", m);
        fleet_sql_quote(m, column);
        fputs(" FORMAT TabSeparated", m);
        r = fleet_http_memstream(f, m, &sql, &answer, NULL);
        if (r < 0)
                return r;
        return streq(answer, "0\n") ? fleet_exec(f, statement) : 0;
}

int fleet_init(fleet *f, const char *cluster) {
        _cleanup_free_ char *body = NULL;
        int r;

        /* a newer schema is not touched; an older one is upgraded in place
         * (version 1: upgrade.sql) */
        r = fleet_http(f, "SELECT max(version) FROM " FS_TABLE_VERSION " FORMAT TabSeparated", true, &body, NULL);
        if (r >= 0) {
                uint64_t version;

                body[strcspn(body, "\n")] = '\0';
                if (fleet_tsv_u64(body, &version) >= 0 && version > clickhouse_schema_version)
                        return cli_error(-EPROTO, "ClickHouse at %s already holds profd schema version %" PRIu64
                                         "; this profctl creates version %u and leaves it as it is", f->url,
                                         version, clickhouse_schema_version);
        } else if (r != -ENOENT)
                return r;
        if (cluster) {
                _cleanup_free_ char *sql = NULL, *answer = NULL;
                size_t size = 0;
                FILE *m = open_memstream(&sql, &size);

                if (!m)
                        return cli_error(-ENOMEM, "%m");
                fputs("SELECT count() FROM system.clusters WHERE cluster = ", m);
                fleet_sql_quote(m, cluster);
                fputs(" FORMAT TabSeparated", m);
                r = fleet_http_memstream(f, m, &sql, &answer, NULL);
                if (r < 0)
                        return r;
                if (streq(answer, "0\n"))
                        return cli_error(-ENOENT, "ClickHouse at %s has no cluster '%s' (remote_servers in its "
                                         "configuration; SELECT DISTINCT cluster FROM system.clusters lists "
                                         "them)", f->url, cluster);
        }
        for (size_t i = 0; clickhouse_schema_shard[i]; i++) {
                if (version_statement(clickhouse_schema_shard[i]))
                        continue;
                r = fleet_exec(f, clickhouse_schema_shard[i]);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; clickhouse_schema_cluster[i]; i++) {
                _cleanup_free_ char *st = cluster_statement(clickhouse_schema_cluster[i], cluster);

                if (!st)
                        return cli_error(-ENOMEM, "%m");
                r = fleet_exec(f, st);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; clickhouse_schema_upgrade[i]; i++) {
                r = fleet_upgrade(f, clickhouse_schema_upgrade[i]);
                if (r < 0)
                        return r;
        }
        /* a failure above leaves the version as it was: init runs again */
        for (size_t i = 0; clickhouse_schema_shard[i]; i++)
                if (version_statement(clickhouse_schema_shard[i]) && (r = fleet_exec(f, clickhouse_schema_shard[i])) < 0)
                        return r;
        return 0;
}
