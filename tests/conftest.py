"""Suite-wide fixtures: the real control plane (tests marked ``controlplane``), started once per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.controlplane.fixture import ControlPlane, go_available, running_control_plane

NO_GO = "go is not on PATH: the test control plane (tests/controlplane) cannot be built"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Without go there is no control plane: its tests skip, with the reason in the summary."""
    if go_available():
        return
    skip = pytest.mark.skip(reason=NO_GO)
    for item in items:
        if item.get_closest_marker("controlplane") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd, kube-apiserver, kube-scheduler and kube-controller-manager, up for the whole session."""
    with running_control_plane(tmp_path_factory.mktemp("controlplane")) as plane:
        yield plane


@pytest.fixture
def namespace(control_plane: ControlPlane) -> str:
    """A fresh namespace per test (nothing deletes it: claims keep finalizers, and the session ends soon)."""
    return control_plane.create_namespace()
