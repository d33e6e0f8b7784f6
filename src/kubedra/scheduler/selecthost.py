"""kube-scheduler's selectHost: which of the best-scored nodes wins.

Ties are not drawn at random: without extenders every node's ``Randomizer`` is 0, and the winner is the root of the
max-heap that ``NewSortedScoredNodes`` builds (``container/heap.Init``) over the feasible list in the order Filter
found them — the first node of that list when all tie, not always the first tied node otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kubedra.scheduler.bitsets import positions


def heap_root(totals: Sequence[int]) -> int:
    """Index of the node ``NewSortedScoredNodes(...).Pop()`` returns: Go's ``heap.Init`` over the list with
    ``Less(i, j) = total[i] > total[j]`` (Randomizer 0 everywhere), then the root."""
    order = list(range(len(totals)))
    n = len(order)
    for start in range(n // 2 - 1, -1, -1):
        i = start
        while True:
            j = 2 * i + 1
            if j >= n:
                break
            if j + 1 < n and totals[order[j + 1]] > totals[order[j]]:
                j += 1
            if not totals[order[j]] > totals[order[i]]:
                break
            order[i], order[j] = order[j], order[i]
            i = j
    return order[0]


def heap_root_of(best: Iterable[int]) -> int:
    """``heap_root`` knowing only the positions of the highest total: ``heap.Init`` leaves an element at a node when it
    is not below its children's subtree maxima, else lifts the left child's subtree root unless the right's is strictly
    greater. So from the top: stop at a highest element, else step into the left subtree if it holds one, else the
    right."""
    mask = 0
    for p in best:
        mask |= 1 << p
    return heap_root_in(mask)


def heap_root_in(best: int) -> int:
    """``heap_root_of`` with the positions as a bitmask, in O(log n) steps.

    Number the heap's nodes from 1 (the root is 1, node j's children 2j and 2j + 1): the nodes of j's subtree are
    those whose binary numeral starts with j's, and the descent above (stop at a highest element, else left if that
    subtree holds one, else right) finds the highest element whose numeral comes first in dictionary order, a prefix
    before its extensions. Within one level of the heap that is the lowest position; so: the lowest set position,
    then, level by level below it, the lowest set position of that level that comes before the one found so far (the
    positions of a level from its start up to where the found one's numeral, extended to that level, would be)."""
    found = (best & -best).bit_length() - 1
    level = (found + 1).bit_length() - 1  # the level of 0-based position p: bit length of p + 1, less one
    n = best.bit_length()
    depth = level + 1
    # A level's first position comes before everything below it: nothing deeper can come first then.
    while found + 1 != 1 << level and (1 << depth) - 1 < n:
        first = (1 << depth) - 1
        end = ((found + 1) << (depth - level)) - 1  # where the found numeral, extended to this level, would be
        earlier = (best >> first) & ((1 << (end - first)) - 1)
        if earlier:
            found = first + (earlier & -earlier).bit_length() - 1
            level = depth
        depth += 1
    return found


FEW_TIED = 48  # up to this many tied nodes, their ranks are counted one by one rather than packed


def heap_root_rank(tied: int, walk: int) -> int:
    """``heap_root_in`` over Filter's list: the rank, among the set bits of ``walk`` (the list in order), of the
    heap's root when the bits of ``tied`` (a subset) hold the highest totals. The usual cases skip the packing:
    the first listed node tied, or every node tied (rank 0); a list with no gap (its bits are 0 up to its length),
    where ranks are positions; a few tied nodes ranked by counting the list below each."""
    if tied & walk & -walk:
        return 0
    if walk & (walk + 1) == 0:  # every node of the list's span listed (all feasible): ranks are positions already
        return heap_root_in(tied)
    if tied.bit_count() <= FEW_TIED:
        return heap_root_of([(walk & ((1 << p) - 1)).bit_count() for p in positions(tied)])
    return heap_root_in(compress(tied, walk))


_PICK = bytes.maketrans(b"23", b"01")


def compress(bits: int, selector: int) -> int:
    """The bits of ``bits`` at the positions set in ``selector``, packed from bit 0 up (a software ``pext``), all in
    C: each bit becomes a hexadecimal digit (binary text read as base 16), the selector's bit adds 2 to its digit,
    the digits below 2 (not selected) are deleted and the rest read back as binary. Linear in the selector's span."""
    spread = int(format(bits & selector, "b"), 16) + 2 * int(format(selector, "b"), 16)
    packed = format(spread, "x").encode().translate(_PICK, b"01")
    return int(packed, 2) if packed else 0
