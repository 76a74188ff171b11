/* Optional libraries loaded when first needed, not linked: libcurl for the
 * ClickHouse export and libdebuginfod for debuginfod servers. Linked, the
 * two (with the TLS, Kerberos and LDAP libraries they pull in) cost every
 * profd about 5 MiB of resident memory (RssFile 11.5 MiB at defaults
 * before, 6.7 after), also on the hosts that use neither (issue 14);
 * loaded, only the hosts that configure them.
 *
 * A user declares a pointer per function it calls, typed after the
 * library's own prototype (`DYNLIB_FUNCTION(curl_easy_init)` declares
 * `sym_curl_easy_init`), and resolves them all at once with dynlib_open. */
#pragma once

#include <stddef.h>

#define DYNLIB_FUNCTION(f) extern __typeof__(f) *sym_##f
#define DYNLIB_FUNCTION_DEFINE(f) __typeof__(f) *sym_##f = NULL

/* One function to resolve: its name in the library and where its address
 * goes. */
struct dynlib_symbol {
        const char *name;
        void **address;
};
#define DYNLIB_SYMBOL(f) { #f, (void **) &sym_##f }

/* Opens soname and resolves every symbol of syms; all or nothing: on
 * failure no pointer is set and the library is closed again. The library
 * stays loaded for the life of the process (callers keep the pointers).
 * Returns 0; -ENOENT if the library cannot be loaded, -ENOSYS if it lacks
 * a symbol (both logged with dlerror's words and what installs it,
 * `package`). Not thread-safe: callers open once (pthread_once), before
 * any use. */
int dynlib_open(const char *soname, const char *package, const struct dynlib_symbol *syms, size_t n);
