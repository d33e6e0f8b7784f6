"""The shipped examples do what their headers say, and upstream's allocator agrees with ours on each."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from conformance.cases import normalize
from conformance.oracle import go_available, run_oracle
from kubedra.cli import main

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples" / "allocate").glob("*.yaml"))
EXPECTED = {"a100-pcie-aligned.yaml": 0, "h100-mig.yaml": 1, "l4-shares.yaml": 0}


def _node(path: Path) -> str:
    match = re.search(r"--node (\S+)", path.read_text().splitlines()[0])
    assert match, f"{path.name}: the first line must show the command"
    return match.group(1)


def _allocate(path: Path) -> tuple[int, dict[str, object]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["allocate", "-f", str(path), "--node", _node(path), "-o", "json"])
    return code, json.loads(out.getvalue())


def test_every_example_is_listed() -> None:
    assert sorted(p.name for p in EXAMPLES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_outcome(path: Path) -> None:
    code, body = _allocate(path)
    assert code == EXPECTED[path.name]
    assert body["node"] == _node(path)


def test_pcie_aligned_example_backtracks_past_the_busy_gpu() -> None:
    _, body = _allocate(EXAMPLES[0])
    allocations = body["allocations"]
    assert isinstance(allocations, dict)
    results = allocations["ml/trainer"]["devices"]["results"]
    assert [r["device"] for r in results] == ["gpu-2", "gpu-3"]


@pytest.mark.oracle
@pytest.mark.skipif(not go_available(), reason="go is not on PATH: the upstream oracle cannot be built")
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_matches_upstream(path: Path) -> None:
    _, ours = _allocate(path)
    assert normalize(ours) == normalize(run_oracle(path, node=_node(path)))
