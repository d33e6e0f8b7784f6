"""Allocation results as upstream builds them: device results, configs (class first, then claim), node selector.

Results are never modified once built, so their parts are shared where they are equal: a node's
``metadata.name In [node]`` selector by every allocation on that node (``NodeSelectors``), and an answer replayed on a
node alike (``replay``) takes the first node's results with only the pool and device names changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from kubedra.allocator.errors import AllocationError
from kubedra.allocator.requests import RequestData
from kubedra.allocator.search import Result
from kubedra.objects.model import (
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ResourceClaim,
)


def _chosen(slots: Sequence[Sequence[RequestData]]) -> list[RequestData]:
    return [alternatives[alternatives[0].selected] for alternatives in slots]


def _configs(
    claim: ResourceClaim, chosen: list[RequestData], *, per_request: bool
) -> list[DeviceAllocationConfiguration]:
    """Class configs, then claim configs. v0.37.2 adds a claim config once and clears ``requests`` when it covers
    every request; v0.36.6 (``per_request``) adds it once per request it names and never clears."""
    configs: list[DeviceAllocationConfiguration] = []
    by_class: dict[str, tuple[int, int]] = {}
    for rd in chosen:
        class_name = rd.class_obj.metadata.name
        span = by_class.get(class_name)
        if span is not None:
            for i in range(*span):
                configs[i].requests.append(rd.full_name)
            continue
        start = len(configs)
        for class_config in rd.class_obj.spec.config:
            configs.append(
                DeviceAllocationConfiguration(source="FromClass", requests=[rd.full_name], opaque=class_config.opaque)
            )
        by_class[class_name] = (start, len(configs))
    picked = {rd.base: rd.full_name for rd in chosen if rd.parent is not None}
    for claim_config in claim.spec.devices.config:
        wanted = claim_config.requests
        if not wanted:
            configs.append(DeviceAllocationConfiguration(source="FromClaim", requests=[], opaque=claim_config.opaque))
            continue
        for request in claim.spec.devices.requests:
            sub = picked.get(request.name)
            if request.name in wanted or (sub is not None and sub in wanted):
                configs.append(
                    DeviceAllocationConfiguration(source="FromClaim", requests=list(wanted), opaque=claim_config.opaque)
                )
                if not per_request:
                    break
    if per_request:
        return configs
    for config in configs:
        if config.requests and all(
            r.name in config.requests or picked.get(r.name, "") in config.requests for r in claim.spec.devices.requests
        ):
            config.requests = []
    return configs


MAX_NODE_SELECTORS = 1 << 20


class NodeSelectors:
    """One ``metadata.name In [node]`` selector per node, shared by the allocations made there (bounded)."""

    def __init__(self) -> None:
        self._by_node: dict[str, NodeSelector] = {}

    def naming(self, node_name: str) -> NodeSelector:
        found = self._by_node.get(node_name)
        if found is None:
            if len(self._by_node) >= MAX_NODE_SELECTORS:
                self._by_node.clear()
            found = self._by_node[node_name] = NodeSelector(
                node_selector_terms=[
                    NodeSelectorTerm(
                        match_fields=[NodeSelectorRequirement(key="metadata.name", operator="In", values=[node_name])]
                    )
                ]
            )
        return found


def _node_selector(
    results: list[Result], node_name: str, claim: ResourceClaim, selectors: NodeSelectors
) -> NodeSelector | None:
    fields: list[NodeSelectorRequirement] = []
    expressions: list[NodeSelectorRequirement] = []
    for _, entry, _, _ in results:
        spec = entry.slice.spec
        if spec.per_device_node_selection:
            node, selector = entry.device.node_name, entry.device.node_selector
        else:
            node, selector = spec.node_name, spec.node_selector
        if node is not None or entry.device.binds_to_node:
            return selectors.naming(node_name)
        if selector is None or not selector.node_selector_terms:
            continue
        if len(selector.node_selector_terms) > 1:
            raise AllocationError(
                f"create NodeSelector for claim {claim.metadata.name}: "
                f"unsupported ResourceSlice.NodeSelector with {len(selector.node_selector_terms)} terms"
            )
        term = selector.node_selector_terms[0]
        _merge(term.match_fields, fields)
        _merge(term.match_expressions, expressions)
    if fields or expressions:
        return NodeSelector(node_selector_terms=[NodeSelectorTerm(match_expressions=expressions, match_fields=fields)])
    return None


def _merge(source: list[NodeSelectorRequirement], into: list[NodeSelectorRequirement]) -> None:
    for req in source:
        values = set(req.values)
        if not any(r.key == req.key and r.operator == req.operator and set(r.values) == values for r in into):
            into.append(msgspec.structs.replace(req, values=list(req.values)))


def build_result(
    claim: ResourceClaim,
    slots: Sequence[Sequence[RequestData]],
    results: list[Result],
    node_name: str,
    *,
    binding_conditions: bool,
    config_per_request: bool = False,
    selectors: NodeSelectors | None = None,
) -> AllocationResult:
    """The ``AllocationResult`` of one claim (``selectors``: the node selectors to share, where the caller keeps
    them)."""
    devices: list[DeviceRequestAllocationResult] = []
    for rd, entry, share_id, consumed in results:
        device = entry.device
        devices.append(
            DeviceRequestAllocationResult(
                request=rd.full_name,
                driver=entry.id.driver,
                pool=entry.id.pool,
                device=entry.id.device,
                admin_access=True if rd.admin else None,
                tolerations=list(rd.tolerations),
                binding_conditions=list(device.binding_conditions) if binding_conditions else [],
                binding_failure_conditions=list(device.binding_failure_conditions) if binding_conditions else [],
                share_id=share_id,
                consumed_capacity={k: str(v) for k, v in consumed.items()} if consumed else {},
            )
        )
    return AllocationResult(
        devices=DeviceAllocationResult(
            results=devices, config=_configs(claim, _chosen(slots), per_request=config_per_request)
        ),
        node_selector=_node_selector(results, node_name, claim, NodeSelectors() if selectors is None else selectors),
    )


def replay(
    first: AllocationResult, results: list[Result], node_name: str, claim: ResourceClaim, selectors: NodeSelectors
) -> AllocationResult:
    """``build_result`` of an answer replayed on a node alike, from the result ``first`` built for that answer on
    another node: the same requests, driver, flags and configs; this node's pool and device names and node selector.
    (A replayed answer draws no share ID and consumes no capacity: those are searched afresh.)"""
    devices = [
        msgspec.structs.replace(done, pool=entry.id.pool, device=entry.id.device)
        for done, (_, entry, _, _) in zip(first.devices.results, results, strict=True)
    ]
    return AllocationResult(
        devices=DeviceAllocationResult(results=devices, config=first.devices.config),
        node_selector=_node_selector(results, node_name, claim, selectors),
    )


def allocation_to_dict(result: AllocationResult) -> dict[str, Any]:
    """Kubernetes JSON of a result; toleration operators are spelled out as the API server would."""
    body = msgspec.to_builtins(result)
    assert isinstance(body, dict)
    for item in body.get("devices", {}).get("results", []):
        for toleration in item.get("tolerations", []):
            toleration.setdefault("operator", "Equal")
    return body


def result_label(result: DeviceRequestAllocationResult) -> str:
    """``driver/pool/device``, marked ``(share N)`` for a consumable-capacity share and ``(admin)`` for admin access."""
    label = f"{result.driver}/{result.pool}/{result.device}"
    if result.share_id:
        shares = result.consumed_capacity.get("shares")
        label += f" (share{' ' + shares if shares else ''})"
    if result.admin_access:
        label += " (admin)"
    return label
