/* JDK 17's offsets of what naming a Method reads (Method, ConstMethod,
 * ConstantPool, Klass, Symbol, Array<u1>), as test-hotspot-jvm reads them
 * from Debian's JVM on x86-64: designated initializers of a struct
 * hotspot_vmstructs, for the unit tests and fuzzers of the name decoder
 * that build methods of their own in memory. */
#pragma once

#define HOTSPOT_JDK17_NAME_FIELDS                               \
        .method_const_method = 8,                               \
        .const_method_size = 48,                                \
        .const_method_constants = 8,                            \
        .const_method_flags = 28,                               \
        .const_method_code_size = 32,                           \
        .const_method_name_index = 34,                          \
        .const_method_signature_index = 36,                     \
        .const_method_has_linenumber_table = 1,                 \
        .constant_pool_size = 72,                               \
        .constant_pool_holder = 24,                             \
        .constant_pool_source_file_name_index = 54,             \
        .constant_pool_length = 60,                             \
        .constant_pool_tags = 8,                                \
        .array_length = 0,                                      \
        .array_u1_data = 4,                                     \
        .instance_klass_constants = 232,                        \
        .klass_name = 24,                                       \
        .symbol_length = 4,                                     \
        .symbol_length_and_refcount = HOTSPOT_NO_FIELD,         \
        .symbol_body = 6
