/* The store's schema migrations, embedded at build time from schema/NNNN-name.sql.
 * schema_migrations[i] moves a store from user_version i to i + 1. */
#pragma once

extern const char *const schema_migrations[];
extern const unsigned schema_version;
