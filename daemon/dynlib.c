/* See dynlib.h. */
#include "dynlib.h"

#include <dlfcn.h>
#include <errno.h>

#include "log.h"

int dynlib_open(const char *soname, const char *package, const struct dynlib_symbol *syms, size_t n) {
        void *addresses[n ? n : 1];
        void *dl;

        dl = dlopen(soname, RTLD_NOW);
        if (!dl)
                return log_error_errno(-ENOENT, "Cannot load %s (from the package %s): %s", soname, package,
                                       dlerror());
        for (size_t i = 0; i < n; i++) {
                (void) dlerror();
                addresses[i] = dlsym(dl, syms[i].name);
                if (!addresses[i]) {
                        const char *why = dlerror();

                        log_error("%s (from the package %s) lacks %s: %s", soname, package, syms[i].name,
                                  why ? why : "a null symbol");
                        dlclose(dl);
                        return -ENOSYS;
                }
        }
        for (size_t i = 0; i < n; i++)
                *syms[i].address = addresses[i];
        log_debug("Loaded %s.", soname);
        return 0;
}
