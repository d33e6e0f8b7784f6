"""Node sets as Python ints (bit i: the i-th node in the scheduler's order), shared by Filter and Score."""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


_NARROW = 2048  # below this many bits, masks from the low end are cheap; above, the set is halved first


def nth_bit(x: int, n: int) -> int:
    """Position of the ``n``-th (0-based) set bit of ``x``, counted from the lowest (past the last set bit: the
    last set bit's position, 0 for no bit).

    A wide set (a cluster of many thousand nodes) is first halved down to ``_NARROW`` bits, each step keeping the
    half that holds the bit, so each mask and count is over a shrinking int (work linear in the width, instead of
    a dozen full-width masks: that grew with the cluster); then a binary search over the narrow rest."""
    if n == 0 and x:
        return (x & -x).bit_length() - 1
    if n > 0:
        low = (2 << n) - 1
        if x & low == low:  # bits 0 to n all set (a run of feasible nodes from the walk's start): bit n
            return n
    base = 0
    width = x.bit_length()
    if width > _NARROW:  # the top bit stays in the half kept: past the last set bit, as the search below answers
        while width > _NARROW:
            half = width >> 1
            low = x & ((1 << half) - 1)
            count = low.bit_count()
            if count > n:
                x = low
                width = low.bit_length()
            else:
                n -= count
                x >>= half
                base += half
                width -= half
    lo, hi = 0, width - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if (x & ((2 << mid) - 1)).bit_count() > n:
            hi = mid
        else:
            lo = mid + 1
    return base + lo


def reclassify(classes: dict[K, int], class_of: list[K], i: int, key: K) -> None:
    """Move node ``i`` into the class ``key`` (``classes``: key -> bitset of its nodes; ``class_of``: each node's
    key); an emptied class is dropped, so the classes always partition the nodes."""
    old = class_of[i]
    if key == old:
        return
    bit = 1 << i
    rest = classes[old] ^ bit  # the bit is in its class's set: XOR clears it (no full-width ``~bit``)
    if rest:
        classes[old] = rest
    else:
        del classes[old]
    classes[key] = classes.get(key, 0) | bit
    class_of[i] = key


def first_bits(mask: int, start: int, wanted: int, width: int) -> tuple[int, int, int]:
    """The first ``wanted`` set bits of ``mask`` from bit ``start`` up, wrapping to bit 0 after bit ``width`` - 1:
    those bits, how many positions a walk from ``start`` visits to reach the last of them (``width`` when fewer are
    set), and how many there are.

    The bits from ``start`` are read a span at a time (twice ``wanted`` first, then four times wider), masked in
    place and shifted down, so the work grows with the span read, not with the width of a wide set: a shift or a
    count of every bit above ``start`` is a loop over all of them, a mask is a vectorised pass."""
    rest = width - start
    span = min(2 * wanted, rest)
    while True:
        chunk = (mask & (((1 << span) - 1) << start)) >> start
        found = chunk.bit_count()
        if found >= wanted:
            p = nth_bit(chunk, wanted - 1)
            return (chunk & ((2 << p) - 1)) << start, p + 1, wanted
        if span == rest:
            break
        span = min(4 * span, rest)
    lo = mask & ((1 << start) - 1)
    more = lo.bit_count()
    if more >= wanted - found:
        q = nth_bit(lo, wanted - found - 1)
        return (chunk << start) | (lo & ((2 << q) - 1)), rest + q + 1, wanted
    return mask, width, found + more


def positions(x: int) -> list[int]:
    """Set bit positions of ``x``, lowest first (through its binary text: one pass in C, not one shift per bit)."""
    text = bin(x)[:1:-1]
    out = []
    i = text.find("1")
    while i >= 0:
        out.append(i)
        i = text.find("1", i + 1)
    return out


def mask_of(indices: list[int]) -> int:
    """The bitset with exactly these positions set."""
    mask = 0
    for i in indices:
        mask |= 1 << i
    return mask


def bits(x: int) -> Iterator[int]:
    """Set bit positions, lowest first."""
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low
