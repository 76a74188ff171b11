/* The ClickHouse credentials file's lines (see credentials.h). */
#include "credentials.h"

#include <errno.h>
#include <string.h>

#include "macro.h"

int credentials_parse(char *text, const char **ret_user, const char **ret_password, unsigned *ret_line) {
        const char *user = NULL, *password = NULL;
        unsigned lineno = 0;
        char *next;

        for (char *line = text; line; line = next) {
                char *eq, *key, *value;

                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                lineno++;
                line += strspn(line, " \t");
                if (line[0] == '\0' || line[0] == '#' || streq(line, "\r"))
                        continue;
                eq = strchr(line, '=');
                if (!eq) {
                        *ret_line = lineno;
                        return -EBADMSG;
                }
                *eq = '\0';
                key = line;
                value = eq + 1 + strspn(eq + 1, " \t");
                for (char *k = eq; k > key && (k[-1] == ' ' || k[-1] == '\t'); k--)
                        k[-1] = '\0';
                for (size_t n = strlen(value); n > 0 && strchr(" \t\r", value[n - 1]);)
                        value[--n] = '\0';
                if (streq(key, "user"))
                        user = value;
                else if (streq(key, "password"))
                        password = value;
                else {
                        *ret_line = lineno;
                        return -EBADMSG;
                }
        }
        if (!user) {
                *ret_line = 0;
                return -EBADMSG;
        }
        *ret_user = user;
        *ret_password = password ? password : "";
        return 0;
}
