"""From loaded manifests to a runnable scenario: inventory (Nodes, slices, NodePools), classes, claims, workloads.

The defaults a cluster with NVIDIA's DRA driver has are filled in: the chart's DeviceClasses (user classes of the
same name replace them). Documents of kinds a simulation cannot use are reported as warnings, not dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import msgspec

from kubedra.cluster.deviceclasses import default_device_classes, merge_device_classes
from kubedra.cluster.nodepool import RawLike, expand_nodepools, is_nodepool
from kubedra.objects.errors import InvalidInputError, Location, Problem
from kubedra.objects.load import Loaded
from kubedra.objects.model import (
    DeviceClass,
    DeviceTaintRule,
    Node,
    Pod,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from kubedra.sim.workloads import Workloads, expand_workloads, is_checked_only, is_workload


@dataclass
class Scenario:
    nodes: list[Node]
    slices: list[ResourceSlice]
    classes: list[DeviceClass]
    taint_rules: list[DeviceTaintRule]
    claims: list[ResourceClaim]
    templates: list[ResourceClaimTemplate]
    workloads: Workloads
    notes: list[str] = field(default_factory=list)


def _with_namespace(claims: list[ResourceClaim]) -> list[ResourceClaim]:
    return [
        c if c.metadata.namespace else msgspec.structs.replace(
            c, metadata=msgspec.structs.replace(c.metadata, namespace="default")
        )
        for c in claims
    ]


def _describe(data: dict[str, object]) -> str:
    if "kind" in data:
        return f"{data.get('apiVersion', '')} {data['kind']}".strip()
    return "a document that is not a Kubernetes object"


def _in_input_order(loaded: Loaded, problems: list[Problem]) -> list[Problem]:
    """Problems sorted as the input was read (files, then documents), whichever stage found them."""
    rank: dict[str, int] = {}
    for where in [r.location for r in loaded.raw] + [loaded.location_of(o) for o in loaded.objects]:
        rank.setdefault(where.file, len(rank))
    return sorted(problems, key=lambda p: (rank.get(p.location.file, len(rank)), p.location.document or 0))


def build_scenario(loaded: Loaded, *, seed: int = 0) -> Scenario:
    """Raises InvalidInputError listing every problem (duplicate nodes, bad NodePools or workloads)."""
    pool_docs: list[RawLike] = [r for r in loaded.raw if is_nodepool(r.data)]
    workload_docs = [r for r in loaded.raw if is_workload(r.data) or is_checked_only(r.data)]
    notes = [
        f"{r.location}: {_describe(r.data)} is not simulated; ignored"
        for r in loaded.raw
        if not is_nodepool(r.data) and not is_workload(r.data)
    ]  # a CronJob among them: its pod template is checked all the same
    problems: list[Problem] = []
    try:
        pool_nodes, pool_slices = expand_nodepools(pool_docs)
    except InvalidInputError as error:  # report the workloads' problems too, in one go
        problems.extend(error.problems)
        pool_nodes, pool_slices = [], []
    nodes = [*loaded.of_kind(Node), *pool_nodes]
    made_by = {p.data["metadata"]["name"]: p.location for p in pool_docs}  # expand_nodepools checked the shape
    seen: dict[str, Location] = {}
    loaded_nodes = {id(o) for o in loaded.objects}
    for node in nodes:
        name = node.metadata.name
        if id(node) in loaded_nodes:
            where = loaded.location_of(node)
        else:  # a NodePool's node, <pool>-<index>
            where = made_by.get(name.rpartition("-")[0], Location(object=f"Node/{name}"))
        first = seen.get(name)
        if first is None:
            seen[name] = where
        else:
            problems.append(
                Problem(
                    replace(where, field="metadata.name"),
                    f'Duplicate value: "{name}": Node {name} is also defined at {first}',
                )
            )
    try:
        workloads = expand_workloads(workload_docs, loaded.of_kind(Pod), seed=seed, locate=loaded.location_of)
    except InvalidInputError as error:
        problems.extend(error.problems)
    if problems:
        raise InvalidInputError(_in_input_order(loaded, problems))
    return Scenario(
        nodes=nodes,
        slices=[*loaded.of_kind(ResourceSlice), *pool_slices],
        classes=merge_device_classes(default_device_classes(), loaded.of_kind(DeviceClass)),
        taint_rules=loaded.of_kind(DeviceTaintRule),
        claims=_with_namespace(loaded.of_kind(ResourceClaim)),
        templates=loaded.of_kind(ResourceClaimTemplate),
        workloads=workloads,
        notes=notes,
    )
