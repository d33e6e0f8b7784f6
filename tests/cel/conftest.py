"""One compile cache per test module."""

from __future__ import annotations

import pytest

from kubedra.cel import CompileCache


@pytest.fixture(scope="module")
def cache() -> CompileCache:
    return CompileCache()
