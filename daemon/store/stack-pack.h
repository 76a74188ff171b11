/* A stack's frames as the store keeps them (stacks.frames, schema 15,
 * issue 43): the location ids, root first, each written as the zigzag
 * LEB128 varint (varint.h) of its difference from the one before it (the
 * first's from 0), then one byte STACK_PACK_MARK. New locations get
 * consecutive ids, so the frames a new stack brings take a byte each; an
 * id as a little-endian 64-bit integer took 8. Stacks written before
 * schema 15 keep that form: each id 8 bytes, so their last byte is always
 * 0 (ids stay far below 2^56), and the last byte tells the two forms
 * apart. Pure: unit-tested by test-stack-pack.c. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "varint.h"

/* The last byte of a blob in the packed form; never the last byte of one
 * in the form before schema 15, which is 0. */
#define STACK_PACK_MARK 0x01

/* Packs n location ids (each >= 1, as SQLite gives rowids) into o, after
 * what o holds (callers reset o->size to reuse it). Returns 0, -EINVAL for
 * an id below 1, or -ENOMEM. */
int stack_pack(const int64_t *ids, size_t n, struct varint_out *o);

/* Unpacks a blob of either form into *buf (grown with realloc as needed,
 * *cap its capacity in ids; the caller frees it); *ret_n ids. Returns 0,
 * -EBADMSG for a blob that is neither form (a truncated or overlong
 * varint, an id below 1, a length that is no form's), or -ENOMEM. */
int stack_unpack(const void *blob, size_t size, int64_t **buf, size_t *cap, size_t *ret_n);
