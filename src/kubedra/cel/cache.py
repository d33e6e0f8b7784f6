"""Compiled programs, cached per expression (upstream ``cel/cache.go`` keeps an LRU the same way)."""

from __future__ import annotations

from collections import OrderedDict

from kubedra.cel.environment import CelOptions, Environment
from kubedra.cel.program import SelectorProgram


class CompileCache:
    """An LRU of successful compiles for one set of options; failures are recompiled (and re-raised) each time."""

    def __init__(self, options: CelOptions | None = None, max_size: int = 1024) -> None:
        if max_size < 1:
            raise ValueError("max_size must be at least 1")
        self.options = options = options or CelOptions()
        self.max_size = max_size
        self.environment = Environment(options)
        self._programs: OrderedDict[str, SelectorProgram] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def compile(self, expression: str) -> SelectorProgram:
        """The program for ``expression``; raises ``CelCompileError``."""
        program = self._programs.get(expression)
        if program is not None:
            self._programs.move_to_end(expression)
            self.hits += 1
            return program
        self.misses += 1
        program = self.environment.compile(expression)
        self._programs[expression] = program
        if len(self._programs) > self.max_size:
            self._programs.popitem(last=False)
        return program

    def __len__(self) -> int:
        return len(self._programs)
