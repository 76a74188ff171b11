/* libcurl for the exporter, loaded when an export is configured (see
 * dynlib.h): the functions exporter.c calls, as sym_ pointers. */
#pragma once

#include <curl/curl.h>

#include "dynlib.h"

DYNLIB_FUNCTION(curl_global_init);
DYNLIB_FUNCTION(curl_easy_init);
DYNLIB_FUNCTION(curl_easy_reset);
DYNLIB_FUNCTION(curl_easy_cleanup);
DYNLIB_FUNCTION(curl_easy_setopt);
DYNLIB_FUNCTION(curl_easy_getinfo);
DYNLIB_FUNCTION(curl_easy_perform);
DYNLIB_FUNCTION(curl_easy_strerror);
DYNLIB_FUNCTION(curl_easy_escape);
DYNLIB_FUNCTION(curl_free);
DYNLIB_FUNCTION(curl_slist_append);
DYNLIB_FUNCTION(curl_slist_free_all);

/* Loads libcurl and runs its global initialisation, once per process;
 * later calls return the first one's result. Call it before starting any
 * thread that uses libcurl (curl_global_init is not thread-safe). Returns
 * 0 or a negative errno, logged. */
int curl_dl_open(void);
