"""Node sets as Python ints (bit i: the i-th node in the scheduler's order), shared by Filter and Score."""

from __future__ import annotations


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
