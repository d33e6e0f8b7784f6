"""The compile cache: hits, LRU eviction, failures never cached."""

from __future__ import annotations

import pytest

from kubedra.cel import CelCompileError, CompileCache


def test_hit_returns_the_same_program() -> None:
    cache = CompileCache()
    first = cache.compile("true")
    assert cache.compile("true") is first
    assert (cache.hits, cache.misses) == (1, 1)


def test_failures_are_not_cached() -> None:
    cache = CompileCache()
    for _ in range(2):
        with pytest.raises(CelCompileError):
            cache.compile("noSuchVar")
    assert len(cache) == 0
    assert cache.misses == 2


def test_least_recently_used_is_evicted() -> None:
    cache = CompileCache(max_size=2)
    a = cache.compile("1 == 1")
    cache.compile("2 == 2")
    assert cache.compile("1 == 1") is a  # refresh a
    cache.compile("3 == 3")  # evicts "2 == 2"
    assert len(cache) == 2
    assert cache.compile("1 == 1") is a
    misses = cache.misses
    cache.compile("2 == 2")
    assert cache.misses == misses + 1
