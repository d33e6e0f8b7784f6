"""The allocator's failures, in upstream's three-way contract: fatal input, this node only, out of budget."""

from __future__ import annotations

from kubedra.objects.errors import KubedraError


class AllocationError(KubedraError):
    """Fatal, invalid input (CEL, unknown class, unsupported mode, ...): no node can do better."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class NodeAllocationFailed(AllocationError):  # noqa: N818 - the name upstream documents
    """A failure that only concerns this node (upstream wraps these in ``ErrFailedAllocationOnNode``)."""


class SearchBudgetExceeded(AllocationError):  # noqa: N818
    """The search ran out of steps (or time) before it found an answer; the node is neither fit nor unfit."""

    def __init__(self, message: str, steps: int) -> None:
        super().__init__(message)
        self.steps = steps


INVALID_POOLS = "invalid resource pools were encountered"
