"""The core stays pure: no adapter is imported from objects, cel, allocator, cluster, scheduler or sim."""

from __future__ import annotations

import ast
import types
from pathlib import Path

import pytest

import kubedra

SRC = Path(kubedra.__file__).parent
CORE = ["objects", "cel", "allocator", "cluster", "scheduler", "sim", "migrate"]
FORBIDDEN = [
    "grpc",
    "prometheus_client",
    "pynvml",
    "typer",
    "rich",
    "click",
    "httpx",
    "lightkube.core",
    "lightkube.config",
    "kubedra.cli",
    "kubedra.kube",
    "kubedra.driver",
    "kubedra.metrics",
    "kubedra.report",
    "plotly",
]


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _is_forbidden(module: str) -> bool:
    if module == "lightkube" or (module.startswith("lightkube.") and not module.startswith(
        ("lightkube.models", "lightkube.resources", "lightkube.codecs")
    )):
        return True
    return any(module == f or module.startswith(f + ".") for f in FORBIDDEN)


@pytest.mark.parametrize("room", CORE)
def test_core_imports_no_adapter(room: str) -> None:
    offenders = [
        f"{path.relative_to(SRC)} imports {module}"
        for path in sorted((SRC / room).rglob("*.py"))
        for module in _imports(path)
        if _is_forbidden(module)
    ]
    assert offenders == []


def test_the_check_catches_an_adapter_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import grpc\nfrom rich.console import Console\nfrom lightkube import Client\n")
    assert [m for m in _imports(bad) if _is_forbidden(m)] == ["grpc", "rich.console", "lightkube"]


def test_public_api_is_what_all_lists() -> None:
    """Subpackages aside (importing one binds its name), the package exposes exactly ``__all__``."""
    public = {
        name
        for name in dir(kubedra)
        if not name.startswith("_") and not isinstance(getattr(kubedra, name), types.ModuleType)
    }
    assert public == set(kubedra.__all__) - {"__version__"}


def _talks_to_an_api_server(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in ("lightkube", "httpx", "httpx2"))


def test_only_the_kube_room_talks_to_an_api_server() -> None:
    """kube/ is the adapter for Kubernetes API servers; everything else (the CLI too) goes through it."""
    offenders = [
        f"{path.relative_to(SRC)} imports {module}"
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).parts[0] != "kube"
        for module in _imports(path)
        if _talks_to_an_api_server(module) and not module.startswith(("lightkube.models", "lightkube.resources"))
    ]
    assert offenders == []
    assert any(_talks_to_an_api_server(m) for p in (SRC / "kube").rglob("*.py") for m in _imports(p))


# The node driver is an adapter room (gRPC, files, NVML, the API through kube/); its pure parts do no I/O.
DRIVER_PURE = ["claims", "cdi", "checkpoint", "devices", "inventory", "types"]
DRIVER_PURE_FORBIDDEN = ("grpc", "pynvml", "lightkube", "httpx", "httpx2", "subprocess", "kubedra.kube", "kubedra.cli")


def test_driver_is_an_adapter_room_named_in_the_core_check() -> None:
    assert "kubedra.driver" in FORBIDDEN
    assert (SRC / "driver").is_dir()


@pytest.mark.parametrize("module", DRIVER_PURE)
def test_the_drivers_pure_parts_do_no_io(module: str) -> None:
    imported = _imports(SRC / "driver" / f"{module}.py")
    offenders = [m for m in imported if any(m == f or m.startswith(f + ".") for f in DRIVER_PURE_FORBIDDEN)]
    offenders += [m for m in imported if m.startswith("kubedra.driver.") and m.rsplit(".", 1)[1] not in DRIVER_PURE]
    assert offenders == []


# The core's layers, lowest first: a room imports only rooms below it (the cluster state owns what the scheduler
# reads, never the other way round).
LAYERS = {
    "objects": set(),
    "cel": {"objects"},
    "allocator": {"objects", "cel"},
    "cluster": {"objects", "cel", "allocator"},
    "scheduler": {"objects", "cel", "allocator", "cluster"},
}


@pytest.mark.parametrize("room", sorted(LAYERS))
def test_core_rooms_import_only_lower_layers(room: str) -> None:
    allowed = LAYERS[room] | {room}
    offenders = [
        f"{path.relative_to(SRC)} imports {module}"
        for path in sorted((SRC / room).rglob("*.py"))
        for module in _imports(path)
        if module.startswith("kubedra.") and module.split(".")[1] in set(LAYERS) - allowed
    ]
    assert offenders == []


def test_the_layer_check_catches_cluster_importing_scheduler(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from kubedra.scheduler.nodefit import NodeUsage\nfrom kubedra.objects.model import Pod\n")
    assert [m for m in _imports(bad) if m.split(".")[1] in set(LAYERS) - LAYERS["cluster"] - {"cluster"}] == [
        "kubedra.scheduler.nodefit"
    ]
