/* See curl-dl.h. */
#include "curl-dl.h"

#include <errno.h>
#include <pthread.h>

#include "log.h"
#include "macro.h"

DYNLIB_FUNCTION_DEFINE(curl_global_init);
DYNLIB_FUNCTION_DEFINE(curl_easy_init);
DYNLIB_FUNCTION_DEFINE(curl_easy_reset);
DYNLIB_FUNCTION_DEFINE(curl_easy_cleanup);
DYNLIB_FUNCTION_DEFINE(curl_easy_setopt);
DYNLIB_FUNCTION_DEFINE(curl_easy_getinfo);
DYNLIB_FUNCTION_DEFINE(curl_easy_perform);
DYNLIB_FUNCTION_DEFINE(curl_easy_strerror);
DYNLIB_FUNCTION_DEFINE(curl_easy_escape);
DYNLIB_FUNCTION_DEFINE(curl_free);
DYNLIB_FUNCTION_DEFINE(curl_slist_append);
DYNLIB_FUNCTION_DEFINE(curl_slist_free_all);

static int open_result;

static void open_once(void) {
        static const struct dynlib_symbol syms[] = {
                DYNLIB_SYMBOL(curl_global_init),   DYNLIB_SYMBOL(curl_easy_init),
                DYNLIB_SYMBOL(curl_easy_reset),    DYNLIB_SYMBOL(curl_easy_cleanup),
                DYNLIB_SYMBOL(curl_easy_setopt),   DYNLIB_SYMBOL(curl_easy_getinfo),
                DYNLIB_SYMBOL(curl_easy_perform),  DYNLIB_SYMBOL(curl_easy_strerror),
                DYNLIB_SYMBOL(curl_easy_escape),   DYNLIB_SYMBOL(curl_free),
                DYNLIB_SYMBOL(curl_slist_append),  DYNLIB_SYMBOL(curl_slist_free_all),
        };

        open_result = dynlib_open("libcurl.so.4", "libcurl4", syms, ELEMENTSOF(syms));
        if (open_result == 0 && sym_curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                log_warning("libcurl's global initialisation failed; exports may fail.");
}

int curl_dl_open(void) {
        static pthread_once_t once = PTHREAD_ONCE_INIT;

        (void) pthread_once(&once, open_once);
        return open_result;
}
