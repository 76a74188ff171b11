/* The ClickHouse credentials file that profd's exporter (clickhouse_credentials)
 * and profctl (--clickhouse-credentials) both read: "user = NAME" and
 * "password = SECRET" lines, '#' comments and blank lines ignored, spaces
 * around '=' and at the ends trimmed. Kept in a file so that a password is
 * never on a command line. Pure: unit-tested (tests/unit/test-credentials.c). */
#pragma once

/* Parses text (modified in place). On success *ret_user points into text
 * and *ret_password too ("" when the file has no password line). Returns 0,
 * or -EBADMSG with *ret_line the first line that is neither (0: no user
 * line at all). */
int credentials_parse(char *text, const char **ret_user, const char **ret_password, unsigned *ret_line);
