"""Reads profd's blocks of samples in Python, as daemon/store/sample-pack.h
packs them (schema/0008, 0009, 0010): per block, fixed-width little-endian
fields one entry after another, widths in bits (bit 49 of `widths` set,
7 bits a field) or, in blocks written before schema 10, in bytes (4 bits a
field)."""

FIELDS = 7          # stack, tid, state, peer, cgroup, value, span offset
WIDTHS_BITS = 1 << 49


def widths_in_bits(widths):
    """The seven fields' widths in bits, whichever form `widths` has."""
    if widths & WIDTHS_BITS:
        return [(widths >> (7 * f)) & 127 for f in range(FIELDS)]
    return [8 * ((widths >> (4 * f)) & 15) for f in range(FIELDS)]


def field(blob, bit, width):
    """The width-bit field at bit `bit` of blob."""
    if width == 0:
        return 0
    first, last = bit >> 3, (bit + width + 7) >> 3
    return (int.from_bytes(blob[first:last], "little") >> (bit & 7)) & ((1 << width) - 1)


def entries(n, widths, bases, blob, fields=range(FIELDS)):
    """Each entry of a block as a list of the asked fields' values; bases
    are the six columns' (the span offset's base is 0)."""
    w = widths_in_bits(widths)
    size, blob = sum(w), blob or b""
    offset = [sum(w[:f]) for f in range(FIELDS)]
    base = list(bases) + [0]
    for i in range(n):
        yield [base[f] + field(blob, i * size + offset[f], w[f]) for f in fields]
