/* Finding a file's separate debug file: build-id path, .gnu_debuglink (CRC checked), in the process's root and on the host, then debuginfod. */
#pragma once

#include <elfutils/debuginfod.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "elf-symbols.h"
#include "hashmap.h"

/* Where and how debug files are looked for; owned by the symbolizer. */
struct debug_search {
        char **dirs; /* NULL-terminated */
        debuginfod_client *debuginfod; /* NULL: not configured */
        hashmap *debuginfod_missed; /* build-id hex (owned) -> itself: asked, not found */
};

/* Sets the default directories ({"/usr/lib/debug"}), no debuginfod.
 * Returns 0 or -ENOMEM (ds then needs debug_search_done all the same). */
int debug_search_init(struct debug_search *ds);
/* Frees what ds holds; a zeroed or half-initialized ds is fine. */
void debug_search_done(struct debug_search *ds);
/* Replaces the directory list (NULL: none). Returns 0 or -ENOMEM (the old
 * list then stays). */
int debug_search_set_dirs(struct debug_search *ds, const char *const *dirs);
/* Starts a debuginfod client (see symbolizer_enable_debuginfod). Returns 0
 * (also when already started), -ENOMEM, or the error of loading
 * libdebuginfod (debuginfod_dl_open). */
int debug_search_enable_debuginfod(struct debug_search *ds);

/* What the debug file of one file must match. */
struct debug_query {
        const char *build_id; /* hex, or NULL */
        const char *link_name; /* .gnu_debuglink name, or NULL */
        uint32_t link_crc;
        struct stat st; /* the file itself, which is never its own debug file */
        bool want_symtab; /* the file has no .symtab of its own */
};

/* A debug file accepted for a file: the DWARF (if any) stays open through
 * fd; the full symbol table (if any, and if wanted) was read. */
struct debug_file {
        int fd;
        char *path;
        bool has_dwarf;
        struct func_table funcs;
};

/* Closes and frees what d holds and resets it to { .fd = -1 }. */
void debug_file_done(struct debug_file *d);

/* Searches the separate debug file of a file whose path the process sees as
 * display_path (root_prefix: the process's root as profd reaches it, or
 * NULL), in the order symbolizer_load_file_at documents: build-id paths
 * under each debug dir, the debuglink name next to the file, in its .debug/
 * and under each debug dir, then debuginfod. A candidate that is missing,
 * unreadable or fails its check is passed over. Returns 1 and fills *ret,
 * 0 when there is none, -ENOMEM. */
int debug_file_find(struct debug_search *ds, const struct debug_query *q, const char *root_prefix,
                    const char *display_path, struct debug_file *ret);
