"""Suite-wide fixtures: the real control plane (tests marked ``controlplane``), started once per session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings
from tests import depth
from tests.controlplane.fixture import ControlPlane, go_available, running_control_plane

# Hypothesis tests that set no count of their own draw Hypothesis' default 100 per run, 1,000 in deep mode; the fuzz
# and property tests set theirs from tests/depth.py.
settings.register_profile("per-run", settings.get_profile("default"))
settings.register_profile("deep", max_examples=1000)
settings.load_profile("deep" if depth.DEEP else "per-run")

# gRPC's fork handlers restart its event-engine poller in a forked child. A child that runs Python before exec
# (subprocess with preexec_fn, as the labs start their binaries) then closes that poller's epoll descriptor
# (close_fds) and gRPC aborts the child: exit -6 and "epoll_wait error: Bad file descriptor", about 1 fork in 300
# once this process has a gRPC server or channel. The suite never uses gRPC in a forked child, so it turns them off
# before the first gRPC object exists.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

NO_GO = "go is not on PATH: the test control plane (tests/controlplane) cannot be built"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Without go there is no control plane: its tests skip, with the reason in the summary. Tests marked ``deep``
    run only in deep mode (tests/depth.py)."""
    no_go = None if go_available() else pytest.mark.skip(reason=NO_GO)
    shallow = None if depth.DEEP else pytest.mark.skip(reason=depth.DEEP_REASON)
    for item in items:
        if no_go is not None and item.get_closest_marker("controlplane") is not None:
            item.add_marker(no_go)
        if shallow is not None and item.get_closest_marker("deep") is not None:
            item.add_marker(shallow)


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd, kube-apiserver, kube-scheduler and kube-controller-manager, up for the whole session."""
    with running_control_plane(tmp_path_factory.mktemp("controlplane")) as plane:
        yield plane


@pytest.fixture
def namespace(control_plane: ControlPlane) -> str:
    """A fresh namespace per test (nothing deletes it: claims keep finalizers, and the session ends soon)."""
    return control_plane.create_namespace()
