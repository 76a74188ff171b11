/* Parser for the perf map files (/tmp/perf-PID.map) that JITs write so that
 * profilers can name their generated code. Pure: it takes one line, so it is
 * unit-tested and fuzzed without a JIT. */
#pragma once

#include <stdint.h>

struct perfmap_entry {
        uint64_t start; /* address of the code */
        uint64_t size;  /* its length in bytes; never 0 */
        char *name;     /* malloc'd; free with perfmap_entry_done() */
};

/* Parses one line "START SIZE NAME", START and SIZE in hexadecimal either
 * bare (node --perf-basic-prof: "7f3a1c0040a0 8c LazyCompile:~hot /app/x.js:3")
 * or with a 0x prefix (perf-map-agent: "0x7f3a1c0040a0 0x8c Interpreter").
 * Fields are separated by exactly one space; NAME is the rest of the line,
 * spaces included, without the trailing newline. Refused with -EINVAL: a
 * missing or empty name, a name starting with whitespace, anything but hex
 * digits in START or SIZE, a number over 64 bits, SIZE 0 (JITs never emit
 * it, and an empty range could never contain an address), a range whose end
 * (START + SIZE) does not fit in 64 bits, and more than one line. Returns 0
 * (then *ret owns the name), -EINVAL, or -ENOMEM; *ret is untouched on
 * failure. */
int perfmap_parse_line(const char *line, struct perfmap_entry *ret);
void perfmap_entry_done(struct perfmap_entry *e);
