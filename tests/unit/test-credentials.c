/* The ClickHouse credentials file: keys, comments, spaces, and every line
 * that is neither refused with its number. */
#include <errno.h>
#include <string.h>

#include "credentials.h"
#include "tests.h"

static void test_user_and_password_with_comments_and_spaces(void) {
        char text[] = "# for profd\n\n  user =  profd \npassword=s3cr=t \r\n";
        const char *user, *password;
        unsigned line = 99;

        CHECK_INT_EQ(credentials_parse(text, &user, &password, &line), 0);
        CHECK_STR_EQ(user, "profd");
        /* '=' in the secret is part of it */
        CHECK_STR_EQ(password, "s3cr=t");
}

static void test_no_password_is_the_empty_one(void) {
        char text[] = "user = reader";
        const char *user, *password;
        unsigned line;

        CHECK_INT_EQ(credentials_parse(text, &user, &password, &line), 0);
        CHECK_STR_EQ(user, "reader");
        CHECK_STR_EQ(password, "");
}

static void test_bad_lines_are_named(void) {
        char a[] = "user = x\nprofd\n", b[] = "# only a comment\n", c[] = "user = x\npasswd = y\n";
        const char *user, *password;
        unsigned line;

        CHECK_INT_EQ(credentials_parse(a, &user, &password, &line), -EBADMSG);
        CHECK_INT_EQ(line, 2);
        CHECK_INT_EQ(credentials_parse(b, &user, &password, &line), -EBADMSG);
        CHECK_INT_EQ(line, 0);
        CHECK_INT_EQ(credentials_parse(c, &user, &password, &line), -EBADMSG);
        CHECK_INT_EQ(line, 2);
}

int main(void) {
        test_user_and_password_with_comments_and_spaces();
        test_no_password_is_the_empty_one();
        test_bad_lines_are_named();
        return tests_failed ? 1 : 0;
}
