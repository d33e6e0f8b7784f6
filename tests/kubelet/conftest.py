"""The ``lab`` fixture: one real node (containerd, control plane, kubelet, kubedra driver) per test module."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from tests.kubelet.lab import Lab, missing, running_lab


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    """Skips, with the reason, where the lab cannot run (not root, binaries or runc missing), except in CI: CI
    builds the binaries and installs runc, so there a missing piece fails rather than skipping silently."""
    problems = missing()
    if problems:
        reason = "the real-kubelet lab cannot run: " + "; ".join(problems)
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI=true: the real-kubelet tests must run in CI)")
        pytest.skip(reason)
    with running_lab() as started:
        yield started
        print("kubelet lab timings (s):", {k: round(v, 2) for k, v in started.timings.items()})


@pytest.fixture
def namespace(lab: Lab) -> Iterator[str]:
    """A fresh namespace on a node whose kubelet and driver run; its pods are deleted (and so unprepared by the
    kubelet) after the test, so every test starts with both GPUs free."""
    if not lab.running("kubelet"):
        lab.start_kubelet()
    if not lab.running("driver"):
        lab.start_driver()
    name = lab.namespace()
    yield name
    if not lab.running("kubelet"):
        lab.start_kubelet()
    if not lab.running("driver"):  # a test that failed with the driver down: it must unprepare the claims
        lab.start_driver()
    lab.delete_pods(name)
