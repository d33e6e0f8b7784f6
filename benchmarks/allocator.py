"""Allocator speed: one node with 8 GPUs (4 of them MIG-partitionable through counter sets).

Prints, per scenario, decisions per second and microseconds per node decision, twice:

* ``search``: an Allocator that does not reuse answers (``reuse_answers=False``), so every ``allocate`` call runs the
  search — the per-device data and selector verdicts are warm, as in a scheduler's Filter loop; this is the figure
  to compare with upstream's ``Allocate``.
* ``reused``: the default Allocator, whose second and later calls on a node in the same state replay the stored
  answer (what a node alike to one already decided costs).

Targets (issue 3): <= 100 us for the 1-GPU and the 4-GPU matchAttribute claims, <= 1 ms for the count-9 claim.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec

from kubedra.allocator import AllocatedState, Allocator, Features
from kubedra.cel import CelOptions, CompileCache
from kubedra.objects.model import DeviceClass, Node, ObjectMeta, ResourceClaim, ResourceSlice

DRIVER = "gpu.nvidia.com"


def _slices() -> list[ResourceSlice]:
    devices: list[dict[str, object]] = []
    counter_sets = []
    for i in range(8):
        gpu: dict[str, object] = {
            "name": f"gpu-{i}",
            "attributes": {"type": {"string": "gpu"}, "resource.kubernetes.io/pcieRoot": {"string": f"pci-{i // 4}"}},
            "capacity": {"memory": {"value": "80Gi"}},
        }
        if i < 4:
            counter_sets.append(
                {"name": f"gpu-{i}-cs", "counters": {"memory": {"value": "80Gi"}, "slices": {"value": "7"}}}
            )
            gpu["consumesCounters"] = [
                {"counterSet": f"gpu-{i}-cs", "counters": {"memory": {"value": "80Gi"}, "slices": {"value": "7"}}}
            ]
        devices.append(gpu)
        if i < 4:
            for j in range(7):
                devices.append(
                    {
                        "name": f"gpu-{i}-mig-1g-{j}",
                        "attributes": {
                            "type": {"string": "mig"},
                            "resource.kubernetes.io/pcieRoot": {"string": f"pci-{i // 4}"},
                        },
                        "consumesCounters": [
                            {
                                "counterSet": f"gpu-{i}-cs",
                                "counters": {"memory": {"value": "10Gi"}, "slices": {"value": "1"}},
                            }
                        ],
                    }
                )
    pool = {"name": "node-1", "generation": 1, "resourceSliceCount": 2}
    return [
        msgspec.convert(
            {
                "metadata": {"name": "node-1-counters"},
                "spec": {"driver": DRIVER, "pool": pool, "nodeName": "node-1", "sharedCounters": counter_sets},
            },
            ResourceSlice,
        ),
        msgspec.convert(
            {
                "metadata": {"name": "node-1-devices"},
                "spec": {"driver": DRIVER, "pool": pool, "nodeName": "node-1", "devices": devices},
            },
            ResourceSlice,
        ),
    ]


def _claim(count: int, *, match: bool) -> ResourceClaim:
    devices: dict[str, object] = {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu", "count": count}}]}
    if match:
        devices["constraints"] = [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    return msgspec.convert(
        {"metadata": {"name": f"claim-{count}", "namespace": "ml"}, "spec": {"devices": devices}}, ResourceClaim
    )


def _gpu_class() -> DeviceClass:
    return msgspec.convert(
        {
            "metadata": {"name": "gpu"},
            "spec": {
                "selectors": [
                    {
                        "cel": {
                            "expression": f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].type == "gpu"'
                        }
                    }
                ]
            },
        },
        DeviceClass,
    )


SCENARIOS = (  # (key, title, count, matchAttribute, fits)
    ("one-gpu", "1-GPU claim", 1, False, True),
    ("four-gpu-match", "4-GPU claim, matchAttribute pcieRoot", 4, True, True),
    ("unsatisfiable", "unsatisfiable (count 9)", 9, False, False),
)


def measure(seconds: float = 1.0) -> list[dict[str, Any]]:
    """Each scenario in each mode (``search``, then ``reused``): decisions per second over ``seconds`` of calls."""
    features = Features.for_release("1.37")
    node = Node(metadata=ObjectMeta(name="node-1"))
    gpu_class = _gpu_class()
    measured = []
    for reuse in (False, True):
        allocator = Allocator(features, AllocatedState(), {"gpu": gpu_class}, _slices(), CompileCache(CelOptions()),
                              reuse_answers=reuse)
        for key, title, count, match, fits in SCENARIOS:
            claim = _claim(count, match=match)
            got = allocator.allocate(node, [claim])
            assert (got is not None) == fits, title
            rounds = 0
            start = time.perf_counter()
            while time.perf_counter() - start < seconds:
                allocator.allocate(node, [claim])
                rounds += 1
            elapsed = time.perf_counter() - start
            measured.append({"mode": "reused" if reuse else "search", "key": key, "title": title,
                             "per_s": rounds / elapsed, "us": elapsed / rounds * 1e6,
                             "steps": allocator.last_steps})
    return measured


def main() -> None:
    for m in measure():
        print(f"{m['mode']:6s} {m['title']:38s} {m['per_s']:10.0f} decisions/s {m['us']:9.1f} us/decision  "
              f"({m['steps']} allocateOne calls)")


if __name__ == "__main__":
    main()
