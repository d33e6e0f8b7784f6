"""SIGKILL at any point of prepare or unprepare, then a restart: no leaked CDI spec, no device prepared twice."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.driver.conftest import Dirs, make_driver
from tests.driver.helpers import StaticClaims, claim

from kubedra.driver import cdi, checkpoint
from kubedra.driver.types import ClaimRef

ROOT = Path(__file__).resolve().parents[2]


def _claims() -> list[dict]:
    long = {
        "source": "FromClaim",
        "requests": [],
        "opaque": {
            "driver": "gpu.nvidia.com",
            "parameters": {
                "apiVersion": "resource.nvidia.com/v1beta1",
                "kind": "GpuConfig",
                "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}},
            },
        },
    }
    return [
        claim("a", ["gpu-0", "gpu-1"], config=[long]),
        claim("b", ["gpu-1"]),  # conflicts with a: whichever comes first wins
        claim("c", ["gpu-2"], config=[long]),
        claim("d", ["gpu-3"], share_ids={"gpu-3": "s1"}),
        claim("e", ["gpu-3"], share_ids={"gpu-3": "s2"}),
    ]


def _check_invariants(dirs: Dirs) -> checkpoint.Checkpoint:
    state = checkpoint.decode((dirs.plugin / "checkpoint.json").read_bytes())
    assert all(r.state == checkpoint.PREPARE_COMPLETED for r in state.claims.values())
    specs = {cdi.claim_of_spec_file(p.name) for p in dirs.cdi.iterdir()}
    assert specs == set(state.claims), "a CDI spec without a prepared claim, or a prepared claim without one"
    holders: dict[str, list[str]] = {}
    for uid, record in state.claims.items():
        for d in record.devices:
            if d.share_id is None:
                holders.setdefault(d.device, []).append(uid)
    assert all(len(h) == 1 for h in holders.values()), holders
    assert not [p for p in [*dirs.cdi.iterdir(), *dirs.plugin.iterdir()] if p.name.startswith(".kubedra-tmp-")]
    return state


@pytest.mark.slow
def test_sigkill_during_prepare_and_restart(dirs: Dirs) -> None:
    documents = _claims()
    (dirs.root / "claims.json").write_text(json.dumps(documents))
    rng = random.Random(7)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rolled_back = kept = 0
    for _ in range(12):
        (dirs.root / "started").unlink(missing_ok=True)
        child = subprocess.Popen([sys.executable, "-m", "tests.driver.crash_child", str(dirs.root)], cwd=ROOT, env=env)
        deadline = time.monotonic() + 30
        while not (dirs.root / "started").exists():
            assert child.poll() is None, "the child died"
            assert time.monotonic() < deadline
            time.sleep(0.01)
        time.sleep(rng.uniform(0.01, 0.3))
        child.send_signal(signal.SIGKILL)
        child.wait()
        claims = StaticClaims()
        refs = [ClaimRef(*claims.add(doc)) for doc in documents]
        driver = make_driver(dirs, claims, count=4)  # the restart recovers
        state = _check_invariants(dirs)
        # the kubelet retries: every claim prepares (or is refused for a held device) and unprepares cleanly
        results = driver.prepare(refs)
        errors = {r.name: results[r.uid].error for r in refs}
        assert not errors["c"] and not errors["d"] and not errors["e"], errors
        assert (errors["a"] == "") != (errors["b"] == ""), errors  # a and b both want gpu-1
        _check_invariants(dirs)
        rolled_back += len(driver.startup.rolled_back)
        kept += len(state.claims)
        driver.unprepare(refs)
        assert list(dirs.cdi.iterdir()) == []
    assert rolled_back > 0, "no kill landed inside a prepare: the test proves nothing"
    assert kept > 0
