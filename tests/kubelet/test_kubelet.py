"""``kubedra driver`` on a real node: kubelet v1.37.2, containerd v2.4.2 with runc, the real kube-scheduler and
kube-controller-manager (``tests/kubelet/lab.py``; one lab for the module, up in ~10 s).

What only a real kubelet and container runtime prove: the kubelet finds the driver through its plugin registration
socket and calls NodePrepareResources / NodeUnprepareResources on its DRA socket when the real scheduler has
allocated a claim; containerd applies the driver's CDI spec (the kubelet passes the CDI device IDs); the container
sees its GPU's UUID and device nodes and nothing of the other GPU; restarts of the driver and of the kubelet leave
running containers alone. The kubelet emulator (``tests/driver/kubelet.py``) stays for what a real kubelet cannot
be made to do on demand (a SIGKILL inside prepare, a refused registration, the v1beta1 service).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from tests.driver.helpers import inventory
from tests.kubelet.lab import DRIVER, PROBE_IMAGE, Lab, cgroup_v1, wait_for

pytestmark = pytest.mark.kubelet

UUIDS = [g["uuid"] for g in inventory(2)["gpus"]]
DEVICES_LIST = "/sys/fs/cgroup/devices/devices.list"  # inside the container (cgroup v1): its own device cgroup


# ---------------------------------------------------------------------------------------------------- helpers


def template(namespace: str, name: str = "one-gpu", count: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER,
                                                                                "count": count}}]}}},
    }


def probe_pod(namespace: str, name: str, *, template_name: str | None = None, claim: str | None = None) -> dict[str, Any]:
    """A hostNetwork pod running the probe (tests/kubelet/image) with one claim, from a template or by name."""
    source = {"resourceClaimTemplateName": template_name} if template_name else {"resourceClaimName": claim}
    files = DEVICES_LIST if cgroup_v1() else ""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "hostNetwork": True,
            "terminationGracePeriodSeconds": 5,
            "resourceClaims": [{"name": "gpu", **source}],
            "containers": [
                {
                    "name": "probe",
                    "image": PROBE_IMAGE,
                    "imagePullPolicy": "Never",
                    "env": [{"name": "PROBE_FILES", "value": files}],
                    "resources": {"claims": [{"name": "gpu"}]},
                }
            ],
        },
    }


@dataclass
class Probe:
    """What the probe printed: its environment, its /dev character devices, the result of opening each
    /dev/nvidia* node, and the lines of the files it was asked for."""

    env: dict[str, str] = field(default_factory=dict)
    devices: dict[str, str] = field(default_factory=dict)  # path -> "MAJ:MIN"
    opens: dict[str, str] = field(default_factory=dict)  # path -> ok | EPERM | ENXIO | ...
    files: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> Probe:
        probe = cls()
        for line in text.splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "ENV":
                key, _, value = rest.partition("=")
                probe.env[key] = value
            elif kind == "DEV":
                path, _c, numbers = rest.split(" ")
                probe.devices[path] = numbers
            elif kind == "OPEN":
                path, result = rest.split(" ", 1)
                probe.opens[path] = result
            elif kind == "FILE":
                path, _, content = rest.partition(" ")
                probe.files.setdefault(path, []).append(content)
        return probe


def running(lab: Lab, namespace: str, name: str, timeout: float = 60.0) -> dict[str, Any]:
    """The pod once Running with its container started; a pod that fails to start says why (its events)."""

    def started() -> dict[str, Any] | None:
        pod = lab.pod(namespace, name)
        statuses = (pod or {}).get("status", {}).get("containerStatuses", [])
        return pod if statuses and statuses[0].get("state", {}).get("running") else None

    try:
        return wait_for(started, timeout, f"pod {namespace}/{name} to run")
    except TimeoutError as exc:
        events = lab.api.get(f"/api/v1/namespaces/{namespace}/events")["items"]
        why = [f"{e['reason']}: {e['message']}" for e in events if e["involvedObject"].get("name") == name]
        raise AssertionError(f"{exc}; pod: {lab.pod(namespace, name)}; events: {why}") from exc


def probe_of(lab: Lab, namespace: str, name: str) -> Probe:
    """The probe's output through the API server's pod log endpoint, once it printed everything."""

    def printed() -> str | None:
        log = lab.logs(namespace, name)
        return log if "READY" in log.splitlines() else None

    return Probe.parse(wait_for(printed, 30, f"the probe in {namespace}/{name} to print READY"))


def claim_of(lab: Lab, namespace: str, pod: dict[str, Any]) -> dict[str, Any]:
    """The pod's one claim: named in its spec, or generated from its template (named in its status)."""
    [entry] = pod["spec"]["resourceClaims"]
    name = entry.get("resourceClaimName") or pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    return lab.api.get(f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}")


def container(pod: dict[str, Any]) -> tuple[str, int, str]:
    """(container ID, restart count, start time) of the pod's one container."""
    [status] = pod["status"]["containerStatuses"]
    return status["containerID"].removeprefix("containerd://"), status["restartCount"], status["state"]["running"][
        "startedAt"
    ]


def untouched(lab: Lab, namespace: str, name: str, before: tuple[str, int, str], pid: int) -> None:
    """The pod's container is the same one, never restarted, its process the same and still running."""
    pod = running(lab, namespace, name)
    assert container(pod) == before
    assert lab.tasks()[before[0]] == (pid, "RUNNING")
    assert "TERM" not in lab.logs(namespace, name).splitlines()


def gone(lab: Lab, namespace: str, name: str, uid: str, timeout: float = 30.0) -> None:
    """Delete the pod; the kubelet stops it and unprepares its claim: the CDI spec and the checkpoint entry go."""
    lab.api.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}")
    wait_for(lambda: lab.pod(namespace, name) is None, timeout, f"pod {namespace}/{name} to be gone")
    wait_for(lambda: uid not in lab.cdi_specs(), timeout, f"the CDI spec of claim {uid} to be removed")
    recorded = json.loads(lab.checkpoint.read_text())["data"]["preparedClaims"]
    assert uid not in recorded


def allocated_device(claim: dict[str, Any]) -> int:
    [result] = claim["status"]["allocation"]["devices"]["results"]
    assert (result["driver"], result["request"]) == (DRIVER, "gpu")
    return int(result["device"].removeprefix("gpu-"))


def assert_sees_only(lab: Lab, probe: Probe, uid: str, minors: list[int]) -> None:
    """The container has exactly the nodes of GPUs ``minors`` (plus the control nodes), their UUIDs, and its
    device cgroup lets it open them."""
    others = [m for m in range(len(UUIDS)) if m not in minors]
    assert probe.env["NVIDIA_VISIBLE_DEVICES"] == ",".join(UUIDS[m] for m in minors)
    for minor in minors:
        assert probe.devices[f"/dev/nvidia{minor}"] == f"195:{minor}"
        # the device cgroup allows it (EPERM otherwise); no NVIDIA driver is behind the fake node, hence ENXIO
        assert probe.opens[f"/dev/nvidia{minor}"] == "ENXIO"
    assert probe.devices["/dev/nvidiactl"] == "195:255"
    assert probe.devices["/dev/nvidia-uvm"] == "510:0"
    assert probe.devices["/dev/nvidia-uvm-tools"] == "510:1"
    for minor in others:
        assert f"/dev/nvidia{minor}" not in probe.devices
    if cgroup_v1():
        rules = probe.files[DEVICES_LIST]
        for minor in minors:
            assert f"c 195:{minor} rwm" in rules
        for minor in others:
            assert f"c 195:{minor} rwm" not in rules
    assert uid in lab.cdi_specs()


# ---------------------------------------------------------------------------------------------------- tests


def test_the_node_registers_and_goes_ready_with_the_drivers_slice(lab: Lab) -> None:
    node = lab.node_ready()
    assert node is not None
    info = node["status"]["nodeInfo"]
    assert (info["kubeletVersion"], info["containerRuntimeVersion"]) == ("v1.37.2", "containerd://2.4.2")
    assert {"type": "InternalIP", "address": lab.node_ip} in node["status"]["addresses"]
    assert "kubelet" in {m["manager"] for m in node["metadata"]["managedFields"]}  # its own node identity wrote it
    [published] = lab.slices()
    assert published["spec"]["pool"]["name"] == lab.node
    assert [(d["name"], d["attributes"]["uuid"]["string"]) for d in published["spec"]["devices"]] == [
        ("gpu-0", UUIDS[0]),
        ("gpu-1", UUIDS[1]),
    ]
    log = lab.kubelet_log()
    assert f'driverName="{DRIVER}"' in log
    assert f'endpoint="{lab.plugin_dir}/dra.sock"' in log


def test_a_template_claim_is_allocated_prepared_injected_and_unprepared(lab: Lab, namespace: str) -> None:
    lab.api.create(template(namespace))
    created = time.monotonic()
    lab.api.create(probe_pod(namespace, "gpu-a", template_name="one-gpu"))
    pod = running(lab, namespace, "gpu-a")
    lab.timings["pod running"] = time.monotonic() - created
    assert pod["spec"]["nodeName"] == lab.node  # bound by kube-scheduler
    claim = claim_of(lab, namespace, pod)
    uid = claim["metadata"]["uid"]
    minor = allocated_device(claim)
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["gpu-a"]

    # the driver's spec, written in NodePrepareResources, which only the kubelet calls
    spec = lab.cdi_specs()[uid]
    [device] = spec["devices"]
    assert device["name"] == f"{uid}-gpu-{minor}"
    assert device["containerEdits"]["env"] == [f"NVIDIA_VISIBLE_DEVICES={UUIDS[minor]}"]
    # the kubelet recorded the CDI device ID the driver returned, and handed it to containerd
    cdi_id = f"k8s.gpu.nvidia.com/claim={uid}-gpu-{minor}"
    assert cdi_id in (lab.kubelet_dir / "dra_manager_state").read_text()
    # containerd resolved it against the spec: the OCI spec runc got carries the device and the environment
    container_id = container(pod)[0]
    bundle = lab.root / "containerd" / "state" / "io.containerd.runtime.v2.task" / "k8s.io" / container_id
    oci = json.loads((bundle / "config.json").read_text())
    assert {(d["path"], d["major"], d["minor"]) for d in oci["linux"]["devices"]} >= {
        (f"/dev/nvidia{minor}", 195, minor),
        ("/dev/nvidiactl", 195, 255),
    }
    assert f"NVIDIA_VISIBLE_DEVICES={UUIDS[minor]}" in oci["process"]["env"]

    assert_sees_only(lab, probe_of(lab, namespace, "gpu-a"), uid, [minor])

    deleted = time.monotonic()
    gone(lab, namespace, "gpu-a", uid)
    lab.timings["delete to unprepared"] = time.monotonic() - deleted
    wait_for(
        lambda: claim["metadata"]["name"]
        not in {c["metadata"]["name"] for c in lab.api.get(f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims")["items"]},
        30,
        "kube-controller-manager to delete the generated claim",
    )


def test_more_pods_than_gpus_one_waits_with_the_schedulers_reason_then_runs(lab: Lab, namespace: str) -> None:
    lab.api.create(template(namespace))
    names = ["gpu-a", "gpu-b", "gpu-c"]
    for name in names:
        lab.api.create(probe_pod(namespace, name, template_name="one-gpu"))

    def two_running() -> list[str] | None:
        pods = [lab.pod(namespace, n) or {} for n in names]
        up = [p["metadata"]["name"] for p in pods if p.get("status", {}).get("phase") == "Running"]
        return up if len(up) == 2 else None

    runners = wait_for(two_running, 60, "two of the three pods to run")
    [waiting] = [n for n in names if n not in runners]
    pending = wait_for(
        lambda: (p := lab.pod(namespace, waiting))
        and [c for c in p["status"].get("conditions", []) if c["type"] == "PodScheduled"]
        and p,
        30,
        "the scheduler's verdict on the third pod",
    )
    [scheduled] = [c for c in pending["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert (pending["status"]["phase"], scheduled["status"], scheduled["reason"]) == ("Pending", "False", "Unschedulable")
    assert "cannot allocate all claims" in scheduled["message"]
    assert "nodeName" not in pending["spec"]

    minors = {}
    for name in runners:
        pod = running(lab, namespace, name)
        claim = claim_of(lab, namespace, pod)
        minors[name] = (allocated_device(claim), claim["metadata"]["uid"])
        assert_sees_only(lab, probe_of(lab, namespace, name), minors[name][1], [minors[name][0]])
    assert sorted(m for m, _ in minors.values()) == [0, 1]
    assert set(lab.cdi_specs()) == {uid for _, uid in minors.values()}

    # a GPU frees: the waiting pod is scheduled onto it, prepared and started
    first = runners[0]
    gone(lab, namespace, first, minors[first][1])
    pod = running(lab, namespace, waiting, timeout=90)
    claim = claim_of(lab, namespace, pod)
    assert allocated_device(claim) == minors[first][0]
    assert_sees_only(lab, probe_of(lab, namespace, waiting), claim["metadata"]["uid"], [minors[first][0]])


def test_a_resource_claim_for_both_gpus_gives_the_container_both(lab: Lab, namespace: str) -> None:
    both = template(namespace, "both", count=2)
    lab.api.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                    "metadata": {"name": "both", "namespace": namespace}, "spec": both["spec"]["spec"]})
    lab.api.create(probe_pod(namespace, "pair", claim="both"))
    pod = running(lab, namespace, "pair")
    claim = claim_of(lab, namespace, pod)
    assert sorted(r["device"] for r in claim["status"]["allocation"]["devices"]["results"]) == ["gpu-0", "gpu-1"]
    uid = claim["metadata"]["uid"]
    assert [d["name"] for d in lab.cdi_specs()[uid]["devices"]] == [f"{uid}-gpu-0", f"{uid}-gpu-1"]
    assert_sees_only(lab, probe_of(lab, namespace, "pair"), uid, [0, 1])
    gone(lab, namespace, "pair", uid)


def _one_running_pod(lab: Lab, namespace: str, name: str) -> tuple[str, tuple[str, int, str], int]:
    """A pod with one template claim, running: (claim UID, its container, the container's PID)."""
    if not lab.api.get(f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaimtemplates")["items"]:
        lab.api.create(template(namespace))
    lab.api.create(probe_pod(namespace, name, template_name="one-gpu"))
    pod = running(lab, namespace, name)
    probe_of(lab, namespace, name)
    before = container(pod)
    pid, status = lab.tasks()[before[0]]
    assert status == "RUNNING"
    return claim_of(lab, namespace, pod)["metadata"]["uid"], before, pid


def test_a_driver_restart_leaves_the_running_container_alone(lab: Lab, namespace: str) -> None:
    uid, before, pid = _one_running_pod(lab, namespace, "steady")
    spec = lab.cdi_specs()[uid]
    assert lab.stop_driver() == 0
    assert lab.cdi_specs()[uid] == spec  # a stopping driver unprepares nothing
    lab.start_driver()  # a new process: re-registered with the kubelet, the pool published again
    assert lab.cdi_specs()[uid] == spec
    untouched(lab, namespace, "steady", before, pid)
    gone(lab, namespace, "steady", uid)  # unprepared by the new process, from its checkpoint


def test_a_kubelet_restart_leaves_the_running_container_alone(lab: Lab, namespace: str) -> None:
    uid, before, pid = _one_running_pod(lab, namespace, "steady")
    [published] = lab.slices()
    lab.restart_kubelet()  # waits for Ready and for the kubelet to connect to the driver again
    untouched(lab, namespace, "steady", before, pid)
    assert uid in lab.cdi_specs()
    # a starting kubelet deletes every ResourceSlice of its node; the driver, watching, publishes the pool again
    # at once (before its fix: at the next 30 s resync, and the node's GPUs were unschedulable until then)
    wait_for(
        lambda: [s for s in lab.slices() if s["metadata"]["uid"] != published["metadata"]["uid"]],
        10,
        "the driver to publish the slice the restarted kubelet deleted",
    )
    # the restarted kubelet prepares new claims through the re-registered plugin, and unprepares both
    lab.api.create(probe_pod(namespace, "after", template_name="one-gpu"))
    after = running(lab, namespace, "after")
    after_uid = claim_of(lab, namespace, after)["metadata"]["uid"]
    assert_sees_only(lab, probe_of(lab, namespace, "after"), after_uid, [allocated_device(claim_of(lab, namespace, after))])
    gone(lab, namespace, "steady", uid)
    gone(lab, namespace, "after", after_uid)


def _truncated(raw: bytes) -> bytes:
    return raw[: len(raw) // 2]


def _flipped(raw: bytes) -> bytes:
    """Still JSON, one byte changed: only the checksum says it is not what the driver wrote."""
    assert b"PrepareCompleted" in raw
    return raw.replace(b"PrepareCompleted", b"PrepareCompletes", 1)


@pytest.mark.parametrize("corrupt", [_truncated, _flipped], ids=["truncated", "flipped-byte"])
def test_a_corrupt_checkpoint_stops_the_driver_and_destroys_nothing_then_recovery_adopts_the_claim(
    lab: Lab, namespace: str, corrupt: Any
) -> None:
    """Issue 24, finding 2, on the real node: a driver that cannot trust its checkpoint must not conclude that no
    claim is prepared and delete the CDI specs of running containers. It refuses to start (exit 2, naming the
    file) before it touches anything; the operator then restarts it with --recover-checkpoint (the runbook's
    step), which adopts the claim its CDI spec proves, and the kubelet's unprepare at the pod's deletion works."""
    uid, before, pid = _one_running_pod(lab, namespace, "steady")
    spec_file = next(lab.cdi_dir.glob(f"*{uid}.yaml"))
    spec = spec_file.read_bytes()
    assert lab.stop_driver() == 0
    lab.checkpoint.write_bytes(corrupt(lab.checkpoint.read_bytes()))

    status, output = lab.run_driver_to_exit()
    assert status == 2, output
    assert str(lab.checkpoint) in output  # the message names the file an operator must look at
    assert spec_file.read_bytes() == spec  # the running claim's CDI spec is still there, unchanged
    untouched(lab, namespace, "steady", before, pid)

    lab.start_driver("--recover-checkpoint")
    untouched(lab, namespace, "steady", before, pid)
    assert spec_file.read_bytes() == spec
    assert uid in json.loads(lab.checkpoint.read_text())["data"]["preparedClaims"]  # adopted from its spec
    gone(lab, namespace, "steady", uid)  # the kubelet's unprepare releases the adopted claim
    lab.stop_driver()  # the next test's driver starts without --recover-checkpoint
