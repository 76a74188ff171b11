/* A JVM child of a unit test, read through /proc/PID/mem: its memory,
 * libjvm.so's symbols and the test's own trusted way through the VM
 * structs to a class (shared by test-hotspot-names-jvm and
 * test-hotspot-code-jvm). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hotspot-vmstructs.h"

struct target {
        pid_t pid;
        int mem_fd;
        unsigned missing;       /* vm_field lookups not in the tables */
};

/* The child's memory (a hotspot_read_fn, userdata a struct target): 0 or
 * -EIO; mem_u64 gives 0 for what it cannot read, mem_string an empty or
 * cut string. */
int mem_read(void *userdata, uint64_t addr, void *buf, size_t size);
uint64_t mem_u64(struct target *t, uint64_t addr);
void mem_string(struct target *t, uint64_t addr, char *buf, size_t size);
bool endswith(const char *s, const char *suffix);
/* libjvm.so's gHotSpotVM* symbols in the child, load bias added. */
int find_libjvm(struct target *t, uint64_t symbols[]);
/* A field's offset (or a static's address) from gHotSpotVMStructs, by
 * name; 0 and t->missing counted (the test checks it) when absent. */
uint64_t vm_field(struct target *t, const uint64_t *sym, const char *type, const char *field);
/* The Klass named `name` (internal form), through every class loader's list. */
uint64_t find_class(struct target *t, const uint64_t *sym, const struct hotspot_vmstructs *vs, const char *name);
