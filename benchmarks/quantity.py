"""Throughput of Quantity parsing, comparison, arithmetic and printing (run: python benchmarks/quantity.py)."""

from __future__ import annotations

import sys
import timeit
from collections.abc import Callable

from kubedra.objects import quantity
from kubedra.objects.quantity import Quantity
from kubedra.objects.semver import Semver

TEXTS = ["1Gi", "80Gi", "100m", "1.5Gi", "250m", "4", "10Gi", "1536Mi", "0.5", "1e3", "40G", "7.123456M"]


def ops_per_s(func: Callable[[], object], ops_per_call: int, repeat: int = 4) -> float:
    """Operations per second: the best of ``repeat`` timeit rounds of at least 0.2 s each."""
    timer = timeit.Timer(func)
    calls, seconds = timer.autorange()
    best = min([seconds, *timer.repeat(repeat=repeat, number=calls)])
    return calls * ops_per_call / best


def rate(name: str, func: Callable[[], object], ops_per_call: int) -> None:
    ops = ops_per_s(func, ops_per_call)
    sys.stdout.write(f"{name:<34} {ops:>14,.0f} ops/s  {1e9 / ops:>8.1f} ns/op\n")


def main() -> None:
    parsed = [Quantity.parse(t) for t in TEXTS]
    a, b = Quantity.parse("80Gi"), Quantity.parse("81920Mi")
    v1, v2 = Semver.parse("550.54.15"), Semver.parse("535.104.5")
    n = len(TEXTS)

    def parse_uncached() -> None:
        for t in TEXTS:
            quantity._parse(t)

    def parse_cached() -> None:
        for t in TEXTS:
            Quantity.parse(t)

    def str_fresh() -> None:
        for q in parsed:
            q.canonical()

    rate("parse, uncached", parse_uncached, n)
    rate("parse, cached", parse_cached, n)
    rate("a < b", lambda: a < b, 1)
    rate("a == b", lambda: a == b, 1)
    rate("a.cmp(b)", lambda: a.cmp(b), 1)
    rate("hash(a)", lambda: hash(a), 1)
    rate("a + b", lambda: a + b, 1)
    rate("a - b", lambda: a - b, 1)
    rate("str(q) (cached)", lambda: str(a), 1)
    rate("q.canonical() (computed)", str_fresh, n)
    rate("Semver.parse", lambda: Semver.parse("550.54.15-rc.1+build.7"), 1)
    rate("semver a < b", lambda: v1 < v2, 1)


if __name__ == "__main__":
    main()
