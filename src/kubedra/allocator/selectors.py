"""Selector evaluation with a memo per (device, class) and (device, request selectors), kept per Allocator.

CEL results depend only on the device and the expressions, so a verdict computed once is reused by every
request, claim and node that asks again. Errors are memoized too, as :class:`SelectorFailure` values, and raised
only when the search reaches the device (where upstream would evaluate it), with upstream's message:
``class X: selector #i on device D: CEL runtime error: ...`` or ``claim ns/name: selector #i ...`` (v0.36.6 says
neither the device nor the "no such key" hint).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from kubedra.allocator.devices import DeviceEntry
from kubedra.allocator.errors import AllocationError
from kubedra.cel import CelCompileError, CelRuntimeError


class Program(Protocol):
    reads: frozenset[tuple[str, str]] | None  # the (domain, id) attributes it can read; None: any

    @property
    def cost_guarded(self) -> bool: ...

    def evaluate(self, view: Any) -> bool: ...


class Compiler(Protocol):
    def compile(self, expression: str) -> Program: ...


class SelectorFailure:
    """A compile or runtime error of one selector on one device, raised when the search gets there."""

    __slots__ = ("detail", "device", "index", "owner", "runtime")

    def __init__(self, owner: str | None, index: int, device: str | None, detail: str, *, runtime: bool) -> None:
        self.owner = owner
        self.index = index
        self.device = device
        self.detail = detail
        self.runtime = runtime

    def error(self, claim: str) -> AllocationError:
        who = f"class {self.owner}" if self.owner is not None else f"claim {claim}"
        if self.runtime:
            where = f" on device {self.device}" if self.device is not None else ""
            return AllocationError(f"{who}: selector #{self.index}{where}: CEL runtime error: {self.detail}")
        return AllocationError(f"{who}: selector #{self.index}: CEL compile error: {self.detail}")


Verdict = bool | SelectorFailure

_NO_SUCH_KEY_HINT = (
    ". consider using CEL optional chaining (.? followed by orValue()) "
    "or guarding the check with has() for optional fields"
)


def enhance_runtime_error(text: str) -> str:
    """Upstream's ``cel.EnhanceRuntimeError``: a hint after "no such key" errors."""
    if "no such key:" in text and not text.endswith(_NO_SUCH_KEY_HINT):
        return text + _NO_SUCH_KEY_HINT
    return text


class SelectorMemo:
    """Compiles each expression once and remembers every verdict."""

    def __init__(self, compiler: Compiler, *, names_device: bool = True) -> None:
        self._compiler = compiler
        self._names_device = names_device
        self._programs: dict[str, Program | str] = {}
        self._by_class: dict[str, dict[int, Verdict]] = {}
        self._by_selectors: dict[tuple[str, ...], dict[int, Verdict]] = {}
        self._reads: dict[tuple[str, ...], frozenset[tuple[str, str]] | None] = {}
        # (expressions, what they can read of a device) -> verdict, for expressions whose reads the checker proves
        self._by_content: dict[tuple[tuple[str, ...], bytes], Verdict] = {}

    def program(self, expression: str) -> Program | str:
        """The compiled expression, or its compile error's text."""
        return self._program(expression)

    def _program(self, expression: str) -> Program | str:
        found = self._programs.get(expression)
        if found is None:
            try:
                found = self._compiler.compile(expression)
            except CelCompileError as exc:
                found = str(exc)
            self._programs[expression] = found
        return found

    def _run(self, entry: DeviceEntry, expressions: Sequence[str], owner: str | None) -> Verdict:
        """The verdict on one device; devices alike in everything the expressions read share one evaluation."""
        exprs = tuple(expressions)
        if exprs in self._reads:
            reads = self._reads[exprs]
        else:
            reads = self._reads[exprs] = self._reads_of(exprs)
        if reads is None:
            return self._evaluate(entry, exprs, owner)
        key = (exprs, entry.view().content_key(reads))
        found = self._by_content.get(key)
        if found is None:
            found = self._by_content[key] = self._evaluate(entry, exprs, owner)
        if isinstance(found, SelectorFailure) and (
                found.owner != owner or (found.device is not None and found.device != str(entry.id))):
            # shared by another device, or by another class (or a request) with the same expressions
            device = None if found.device is None else str(entry.id)
            return SelectorFailure(owner, found.index, device, found.detail, runtime=found.runtime)
        return found

    def _reads_of(self, expressions: tuple[str, ...]) -> frozenset[tuple[str, str]] | None:
        reads: set[tuple[str, str]] = set()
        for expression in expressions:
            program = self._program(expression)
            if isinstance(program, str) or program.reads is None or program.cost_guarded:
                return None
            reads |= program.reads
        return frozenset(reads)

    def _evaluate(self, entry: DeviceEntry, expressions: Sequence[str], owner: str | None) -> Verdict:
        for index, expression in enumerate(expressions):
            program = self._program(expression)
            if isinstance(program, str):
                return SelectorFailure(owner, index, str(entry.id), program, runtime=False)
            try:
                matched = program.evaluate(entry.view())
            except CelRuntimeError as exc:
                if not self._names_device:  # v0.36.6: neither the device nor the hint
                    return SelectorFailure(owner, index, None, str(exc), runtime=True)
                return SelectorFailure(owner, index, str(entry.id), enhance_runtime_error(str(exc)), runtime=True)
            if not matched:
                return False
        return True

    def verdict(
        self, entry: DeviceEntry, class_name: str | None, class_exprs: Sequence[str], request_exprs: tuple[str, ...]
    ) -> Verdict:
        """Class selectors first, then the request's; the first failure or mismatch decides."""
        if class_name is not None and class_exprs:
            memo = self._by_class.get(class_name)
            if memo is None:
                memo = self._by_class[class_name] = {}
            got = memo.get(entry.uid)
            if got is None:
                got = memo[entry.uid] = self._run(entry, class_exprs, class_name)
            if got is not True:
                return got
        if not request_exprs:
            return True
        rmemo = self._by_selectors.get(request_exprs)
        if rmemo is None:
            rmemo = self._by_selectors[request_exprs] = {}
        got = rmemo.get(entry.uid)
        if got is None:
            got = rmemo[entry.uid] = self._run(entry, request_exprs, None)
        return got
