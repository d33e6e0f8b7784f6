"""Node sets as Python ints (bit i: the i-th node in the scheduler's order), shared by Filter and Score."""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def nth_bit(x: int, n: int) -> int:
    """Position of the ``n``-th (0-based) set bit of ``x``, counted from the lowest."""
    if n == 0 and x:
        return (x & -x).bit_length() - 1
    lo, hi = 0, x.bit_length() - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if (x & ((2 << mid) - 1)).bit_count() > n:
            hi = mid
        else:
            lo = mid + 1
    return lo


def reclassify(classes: dict[K, int], class_of: list[K], i: int, key: K) -> None:
    """Move node ``i`` into the class ``key`` (``classes``: key -> bitset of its nodes; ``class_of``: each node's
    key); an emptied class is dropped, so the classes always partition the nodes."""
    old = class_of[i]
    if key == old:
        return
    bit = 1 << i
    rest = classes[old] & ~bit
    if rest:
        classes[old] = rest
    else:
        del classes[old]
    classes[key] = classes.get(key, 0) | bit
    class_of[i] = key


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
