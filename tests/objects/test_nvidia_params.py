"""NVIDIA's opaque parameters, checked as NVIDIA's DRA driver checks them (:mod:`kubedra.objects.nvidia_params`).

The rules and the cases come from kubernetes-sigs/dra-driver-nvidia-gpu (formerly NVIDIA/k8s-dra-driver-gpu) at
commit 95932046683719c43b6a0dd9613c2e5aad5d6703:

* ``api/nvidia.com/resource/v1beta1/validate.go`` (strategies, intervals, thread percentage),
  ``sharing.go`` (GetTimeSlicingConfig/GetMpsConfig, the pinned-memory ``Megabyte()`` floor),
  ``sharing_test.go`` (TestMpsPerDevicePinnedMemoryLimitNormalize: 1M is too low; 10Mi, 10M, 1G, 2Gi are fine;
  a device key that is neither an index nor a UUID is refused), ``iommu.go``, ``computedomainconfig.go``,
  ``api.go`` (the strict decoder and its registered kinds);
* ``demo/specs/quickstart/v1/*.yaml``: the valid parameters below are those of gpu-test5.yaml (TimeSlicing Long,
  MPS 50% with 10Gi), gpu-test-mps.yaml and gpu-test-vfio-config.yaml; when the mirror of that repository is on
  this machine, the demo files themselves are loaded too.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests import depth

from kubedra.allocator import Features
from kubedra.cli import main
from kubedra.objects.errors import InvalidInputError
from kubedra.objects.gpuconfig import GpuConfigError, parse_gpu_config
from kubedra.objects.load import load_text
from kubedra.objects.nvidia_params import SOURCE_COMMIT, check_opaque
from kubedra.sim.validation import validate_inputs

API = "resource.nvidia.com/v1beta1"
GPU = "gpu.nvidia.com"
CD = "compute-domain.nvidia.com"
MIRROR = Path("/work/.mirror/kubernetes-sigs+dra-driver-nvidia-gpu/repo")

# From demo/specs/quickstart/v1 (gpu-test5.yaml, gpu-test-mps.yaml, gpu-test-vfio-config.yaml).
TIME_SLICING = {"apiVersion": API, "kind": "GpuConfig",
                "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}}
MPS = {"apiVersion": API, "kind": "GpuConfig",
       "sharing": {"strategy": "MPS",
                   "mpsConfig": {"defaultActiveThreadPercentage": 50, "defaultPinnedDeviceMemoryLimit": "10Gi"}}}
VFIO = {"apiVersion": API, "kind": "VfioDeviceConfig", "iommu": {"backendPolicy": "LegacyOnly", "enableAPIDevice": True}}


def _problems(parameters: Any, driver: str = GPU) -> list[tuple[str, str]]:
    return check_opaque(driver, parameters).problems


def _with(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    *parents, last = path.split(".")
    node = out
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
    return out


def test_the_source_commit_is_recorded() -> None:
    assert SOURCE_COMMIT.startswith("95932046") and "95932046" in (__doc__ or "")


@pytest.mark.parametrize("parameters", [
    TIME_SLICING, MPS, VFIO,
    {"apiVersion": API, "kind": "GpuConfig"},
    {"apiVersion": API, "kind": "GpuConfig", "sharing": {"strategy": "TimeSlicing"}},  # Normalize: Default
    {"apiVersion": API, "kind": "GpuConfig", "sharing": {"strategy": "MPS"}},  # Normalize: empty MpsConfig
    {"apiVersion": API, "kind": "MigDeviceConfig", "sharing": {"strategy": "TimeSlicing"}},
    {"apiVersion": API, "kind": "MigDeviceConfig", "sharing": {"strategy": "MPS", "mpsConfig": {"multiUser": True}}},
    {"apiVersion": API, "kind": "VfioDeviceConfig"},
    {"apiVersion": API, "kind": "VfioDeviceConfig", "iommu": {"backendPolicy": "PreferIommuFD"}},
    {"apiVersion": API, "kind": "VfioDeviceConfig", "iommu": {"enableAPIDevice": False}},  # Normalize: LegacyOnly
])
def test_valid_gpu_parameters(parameters: dict[str, Any]) -> None:
    assert _problems(parameters) == []


@pytest.mark.parametrize(("limit", "valid"), [
    ("1M", False), ("10Mi", True), ("10M", True), ("1G", True), ("2Gi", True), ("1Mi", True), ("1048575", False),
    (1048576, True), ("0", False), ("ten", False), (True, False),
])
def test_pinned_memory_limits_follow_the_drivers_megabyte_floor(limit: Any, valid: bool) -> None:
    """sharing_test.go: "default is too low" (1M) and "override is too low" are ErrInvalidLimit."""
    for path in ("sharing.mpsConfig.defaultPinnedDeviceMemoryLimit",
                 "sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit"):
        value = limit if path.endswith("MemoryLimit") and "PerDevice" not in path else {"0": limit}
        assert (_problems(_with(MPS, path, value)) == []) is valid, (path, limit)


@pytest.mark.parametrize(("key", "valid"), [
    ("0", True), ("3", True), ("GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c", True), ("MIG-0a1b", True),
    ("-1", False), ("UUID1", False), ("first", False),
])
def test_per_device_keys_are_an_index_or_a_uuid(key: str, valid: bool) -> None:
    parameters = _with(MPS, "sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit", {key: "1Gi"})
    problems = _problems(parameters)
    assert (problems == []) is valid
    if not valid:
        assert problems[0][0] == f"parameters.sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit[{key}]"
        assert problems[0][1].startswith("invalid device")


@pytest.mark.parametrize(("path", "value", "where", "message"), [
    ("sharing.strategy", "Sometimes", "sharing.strategy",
     "unknown GPU sharing strategy: Sometimes, supported GPU sharing strategies: TimeSlicing, MPS"),
    ("sharing.strategy", "timeslicing", "sharing.strategy", "unknown GPU sharing strategy: timeslicing"),
    ("sharing.timeSlicingConfig.interval", "5ms", "sharing.timeSlicingConfig.interval",
     "unknown time-slice interval: 5ms, supported time-slice intervals: Default, Short, Medium, Long"),
    ("sharing.timeSlicingConfig", {}, "sharing.timeSlicingConfig.interval", "required"),
    ("sharing.timeSlicingConfig.period", "Long", "sharing.timeSlicingConfig.period", 'unknown field "period"'),
    ("sharing.mpsConfig", {}, "sharing.mpsConfig", "cannot use MpsConfig with the 'TimeSlicing' strategy"),
    ("sharing.Strategy", "MPS", "sharing.Strategy", 'unknown field "Strategy"'),  # strict and case-sensitive
    ("metadata", {"name": "x"}, "metadata", 'unknown field "metadata"'),
    ("sharing", "TimeSlicing", "sharing", "must be an object, not a string"),
    ("sharing.timeSlicingConfig.interval", 2, "sharing.timeSlicingConfig.interval", "must be a string"),
])
def test_time_slicing_refusals(path: str, value: Any, where: str, message: str) -> None:
    problems = _problems(_with(TIME_SLICING, path, value))
    assert any(p == f"parameters.{where}" and message in m for p, m in problems), problems


@pytest.mark.parametrize(("value", "message"), [
    (-1, "active thread percentage must not be negative"),
    (101, "active thread percentage must not be greater than 100"),
    (50.5, "must be an integer"),
    ("50", "must be an integer"),
    (True, "must be an integer"),
])
def test_active_thread_percentage(value: Any, message: str) -> None:
    path = "sharing.mpsConfig.defaultActiveThreadPercentage"
    problems = _problems(_with(MPS, path, value))
    assert [p for p, _ in problems] == [f"parameters.{path}"] and problems[0][1].startswith(message)


@pytest.mark.parametrize("percentage", [0, 100])
def test_active_thread_percentage_bounds_are_valid(percentage: int) -> None:
    assert _problems(_with(MPS, "sharing.mpsConfig.defaultActiveThreadPercentage", percentage)) == []


def test_mps_refusals() -> None:
    assert _problems(_with(MPS, "sharing.timeSlicingConfig", {"interval": "Long"})) == [
        ("parameters.sharing.timeSlicingConfig", "cannot use TimeSlicingConfig with the 'MPS' strategy")
    ]
    problems = _problems(_with(MPS, "sharing.mpsConfig.defaultActiveThreadPercentag", 50))
    assert problems[0][0] == "parameters.sharing.mpsConfig.defaultActiveThreadPercentag"
    assert _problems(_with(MPS, "sharing.mpsConfig.multiUser", "yes"))[0][1].startswith("must be true or false")


def test_mig_device_config_has_no_time_slicing_config() -> None:
    """migconfig.go: MigDeviceSharing has only strategy and mpsConfig; strict decoding refuses the rest."""
    mig = _with(TIME_SLICING, "kind", "MigDeviceConfig")
    assert _problems(mig) == [("parameters.sharing.timeSlicingConfig",
                               'unknown field "timeSlicingConfig": NVIDIA\'s driver decodes its parameters strictly')]
    mps = _with(MPS, "kind", "MigDeviceConfig")
    assert _problems(mps) == []
    assert _problems(_with(mps, "sharing.mpsConfig.defaultActiveThreadPercentage", 101))


@pytest.mark.parametrize(("parameters", "where", "message"), [
    ({"kind": "GpuConfig"}, "apiVersion", "required"),
    ({"apiVersion": "resource.nvidia.com/v1", "kind": "GpuConfig"}, "apiVersion", 'no kind "GpuConfig"'),
    ({"apiVersion": API}, "kind", "Object 'Kind' is missing"),
    ({"apiVersion": API, "kind": "ComputeDomainChannelConfig", "domainID": "x"}, "kind", "unsupported kind"),
    ({"apiVersion": API, "kind": "ComputeDomain"}, "kind", "decodes, but the driver does not apply it"),
    ({"apiVersion": API, "kind": "TimeSlicingConfig"}, "kind", "is not registered"),
    ({"apiVersion": API, "kind": "VfioDeviceConfig", "iommu": {"backendPolicy": "IommuFDOnly"}},
     "iommu.backendPolicy", "unknown IOMMU backend policy: IommuFDOnly"),
    ({"apiVersion": API, "kind": "VfioDeviceConfig", "iommu": {"enableAPIDevice": "true"}},
     "iommu.enableAPIDevice", "must be true or false"),
    ({"apiVersion": API, "kind": "VfioDeviceConfig", "sharing": {}}, "sharing", "unknown field"),
    ([], "", "must be an object"),
])
def test_gpu_driver_refusals(parameters: Any, where: str, message: str) -> None:
    problems = _problems(parameters)
    path = f"parameters.{where}" if where else "parameters"
    assert any(p == path and message in m for p, m in problems), problems


def test_compute_domain_driver() -> None:
    channel = {"apiVersion": API, "kind": "ComputeDomainChannelConfig", "domainID": "d-1", "allocationMode": "All"}
    daemon = {"apiVersion": API, "kind": "ComputeDomainDaemonConfig", "domainID": "d-1"}
    assert _problems(channel, CD) == [] and _problems(daemon, CD) == []
    assert _problems({**daemon, "domainID": ""}, CD) == [("parameters.domainID", "domainID cannot be empty")]
    assert _problems({**daemon, "allocationMode": "All"}, CD)[0][0] == "parameters.allocationMode"  # channel only
    assert _problems(TIME_SLICING, CD)[0][0] == "parameters.kind"
    odd = check_opaque(CD, {**channel, "allocationMode": "Many"})
    assert odd.problems == [] and odd.notes[0][0] == "parameters.allocationMode"


def test_other_drivers_are_not_read() -> None:
    assert check_opaque("example.com", {"anything": [1]}) == check_opaque("gpu.nvidia.com.example", None)
    assert _problems({"anything": 1}, "example.com") == []


def test_feature_gates_are_notes_not_problems() -> None:
    for parameters, gate in ((TIME_SLICING, "TimeSlicingSettings"), (MPS, "MPSSupport")):
        checked = check_opaque(GPU, parameters)
        assert checked.problems == []
        assert [(p, gate in m) for p, m in checked.notes] == [("parameters.sharing.strategy", True)]
    assert "PassthroughSupport" in check_opaque(GPU, VFIO).notes[0][1]


CLAIM = """apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: shared, namespace: ns}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]
      config:
      - requests: [gpu]
        opaque:
          driver: gpu.nvidia.com
          parameters: %s
"""


def test_the_loader_reports_them_with_the_field() -> None:
    bad = _with(MPS, "sharing.mpsConfig.defaultActiveThreadPercentage", 150)
    with pytest.raises(InvalidInputError) as caught:
        load_text(CLAIM % json.dumps(bad), source="in.yaml")
    assert [str(p) for p in caught.value.problems] == [
        "in.yaml[0]: ResourceClaimTemplate/shared: spec.spec.devices.config[0].opaque.parameters.sharing.mpsConfig"
        ".defaultActiveThreadPercentage: active thread percentage must not be greater than 100"
    ]


def test_validate_reports_findings_and_notes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "ok.yaml").write_text(CLAIM % json.dumps(MPS))
    assert main(["validate", "-f", str(tmp_path / "ok.yaml"), "-o", "table"]) == 0
    out = capsys.readouterr().out
    assert "note: " in out and "feature gate MPSSupport" in out and "valid" in out
    assert main(["validate", "-q", "-f", str(tmp_path / "ok.yaml"), "-o", "table"]) == 0
    assert "note: " not in capsys.readouterr().out
    (tmp_path / "bad.yaml").write_text(CLAIM % json.dumps(_with(MPS, "sharing.mpsConfig.pinned", "1Gi")))
    assert main(["validate", "-f", str(tmp_path / "bad.yaml"), "-o", "json"]) == 1
    body = json.loads(capsys.readouterr().out)
    assert [(f["object"], f["field"]) for f in body["findings"]] == [
        ("ResourceClaimTemplate/shared", "spec.spec.devices.config[0].opaque.parameters.sharing.mpsConfig.pinned")
    ]
    assert any("MPSSupport" in note for note in body["notes"])


def test_validation_notes_carry_the_location() -> None:
    loaded = load_text(CLAIM % json.dumps(TIME_SLICING), source="in.yaml")
    result = validate_inputs(loaded, Features())
    assert result.findings == []
    assert [str(n.location) for n in result.notes] == [
        "in.yaml[0]: ResourceClaimTemplate/shared: spec.spec.devices.config[0].opaque.parameters.sharing.strategy"
    ]


DEMO = ["gpu-test-mps.yaml", "gpu-test-vfio-config.yaml", "gpu-test5.yaml", "gpu-test6.yaml", "gpu-test1.yaml",
        "imex-test1.yaml"]


@pytest.mark.skipif(not MIRROR.is_dir(), reason=f"no mirror of dra-driver-nvidia-gpu at {MIRROR}")
@pytest.mark.parametrize("name", DEMO)
def test_nvidias_demo_specs_load_without_findings(name: str) -> None:
    try:
        text = subprocess.run(["git", "-C", str(MIRROR), "show", f"{SOURCE_COMMIT}:demo/specs/quickstart/v1/{name}"],
                              check=True, capture_output=True, text=True).stdout
    except subprocess.CalledProcessError as error:
        pytest.skip(f"the mirror lacks {name} at {SOURCE_COMMIT[:8]}: {error.stderr.strip()}")
    loaded = load_text(text, source=name)  # raises on any finding
    assert validate_inputs(loaded, Features()).findings == []


# ------------------------------------------------------------------------------------------------------------
# Random mutations of a valid GpuConfig: always problems or valid, and kubedra's driver agrees with validate.

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False) | st.text(max_size=12)
    | st.sampled_from(["Default", "Short", "Long", "MPS", "TimeSlicing", "10Gi", "1M", "0", "GPU-1", "-1"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
_KEYS = st.sampled_from(["apiVersion", "kind", "sharing", "strategy", "timeSlicingConfig", "mpsConfig", "interval",
                         "defaultActiveThreadPercentage", "defaultPinnedDeviceMemoryLimit",
                         "defaultPerDevicePinnedMemoryLimit", "multiUser", "iommu", "domainID", "extra"])


@st.composite
def _mutated(draw: st.DrawFn) -> dict[str, Any]:
    config: dict[str, Any] = copy.deepcopy(draw(st.sampled_from([TIME_SLICING, MPS, VFIO])))
    for _ in range(draw(st.integers(1, 4))):
        node: Any = config
        while isinstance(node, dict) and node and draw(st.booleans()):
            child = node[draw(st.sampled_from(sorted(node)))]
            if not isinstance(child, dict):
                break
            node = child
        if not isinstance(node, dict):
            continue
        action = draw(st.sampled_from(["set", "delete", "add"]))
        if action == "delete" and node:
            del node[draw(st.sampled_from(sorted(node)))]
        elif action == "set" and node:
            node[draw(st.sampled_from(sorted(node)))] = draw(_JSON)
        else:
            node[draw(_KEYS)] = draw(_JSON)
    return config


@settings(max_examples=depth.examples(300, 3000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutated())
def test_mutations_never_crash_and_the_driver_agrees(parameters: dict[str, Any]) -> None:
    checked = check_opaque(GPU, parameters)
    assert all(isinstance(p, str) and isinstance(m, str) and m for p, m in [*checked.problems, *checked.notes])
    try:
        sharing = parse_gpu_config(parameters)
    except GpuConfigError:
        assert checked.problems or parameters.get("kind") != "GpuConfig"
        return
    assert checked.problems == [] and parameters.get("kind") == "GpuConfig"
    assert 0 <= sharing.time_slice_level <= 3
    percentage = sharing.mps_active_thread_percentage
    assert percentage is None or 0 <= percentage <= 100
