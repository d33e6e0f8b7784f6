"""What the API server would reject in a set of inputs, and what ``kubedra simulate`` could not expand.

``kubedra validate`` reports every finding at once instead of stopping at the first refusal:

* each modelled object against resource.k8s.io/v1's and core/v1's validation (:func:`kubedra.objects.validate`),
  with every CEL selector compiled as the API server compiles a new expression — the same environment the
  allocator uses, with the release's gates — checked to return bool and to stay within the cost limit;
* NodePools through the expansion ``simulate`` runs (counts, known GPU models, MIG, sharing), and node names
  unique across Nodes and NodePools;
* workloads through the expansion ``simulate`` runs (replicas, counts, selectors, restart policies, timing), and
  each pod template as the API server validates a pod (a container's ``resources.claims[].name`` must name an entry
  of ``spec.resourceClaims``, claim sources, quantities);
* references across objects and fields the release has gated off (:mod:`kubedra.sim.references`);
* NVIDIA's opaque parameters as NVIDIA's driver decodes them (:mod:`kubedra.objects.nvidia_params`), with notes on
  what its deployment decides (the feature gates that allow TimeSlicing and MPS sharing);
* an input with no objects at all.

Pure: loaded objects in, findings out. Reading the files, and telling unreadable input apart, is the loader's job.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from kubedra.allocator import Features
from kubedra.cel import CelCompileError, CelOptions, CompileCache
from kubedra.cluster.deviceclasses import default_device_classes, merge_device_classes
from kubedra.cluster.nodepool import expand_nodepools, is_nodepool
from kubedra.objects import formats
from kubedra.objects.builder import Loaded, RawObject
from kubedra.objects.errors import InvalidInputError, Location, Problem
from kubedra.objects.model import DeviceClass, DeviceTaintRule, Node, Pod, ResourceClaim, ResourceClaimTemplate
from kubedra.objects.validate import SelectorCheck, validate, validate_with_notes
from kubedra.sim.published import unpublished_requests, workload_pods
from kubedra.sim.references import Known, reference_problems
from kubedra.sim.scenario import duplicate_nodes, in_input_order
from kubedra.sim.unmodelled import unmodelled_fields
from kubedra.sim.workloads import expand_workloads, is_workload

_WITH_SELECTORS = (DeviceClass, ResourceClaim, ResourceClaimTemplate, DeviceTaintRule)
TOO_COMPLEX = "Forbidden: too complex, exceeds cost limit"
NO_OBJECTS = "no objects: the input holds no Kubernetes documents"


@dataclass
class Validation:
    """The findings (empty: valid), the warnings (references the inputs do not resolve), how many documents were
    checked, and those of kinds nothing checks."""

    findings: list[Problem] = field(default_factory=list)
    checked: int = 0
    unchecked: list[RawObject] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    # What only the deployment decides (NVIDIA's driver refuses TimeSlicing and MPS unless its feature gates are on)
    notes: list[Problem] = field(default_factory=list)


def selector_check(features: Features) -> SelectorCheck:
    """Compile selectors as the API server compiles new ones: the allocator's CEL environment, with the
    consumable-capacity and list-attribute gates of ``features``; must return bool, within the cost limit."""
    cache = CompileCache(
        CelOptions(consumable_capacity=features.consumable_capacity, list_type_attributes=features.list_type_attributes)
    )

    def check(expression: str) -> Iterable[str]:
        try:
            program = cache.compile(expression)
        except CelCompileError as exc:
            return [formats.invalid(expression, str(exc))]
        return [TOO_COMPLEX] if program.cost_guarded else []

    return check


def selector_problems(loaded: Loaded, features: Features) -> list[Problem]:
    """The CEL findings alone: every selector of the DeviceClasses, claims, claim templates and DeviceTaintRules
    compiled as the API server compiles a new one (``simulate`` refuses these; the rest of the API's rules the
    loader has checked already)."""
    check = selector_check(features)
    problems: list[Problem] = []
    for obj in loaded.objects:
        if not isinstance(obj, _WITH_SELECTORS):
            continue
        where = loaded.location_of(obj)
        problems.extend(Problem(replace(where, field=path), message) for path, message in validate(obj, cel=check)
                        if path.endswith(".cel.expression"))
    return problems


def validate_inputs(loaded: Loaded, features: Features, sources: Sequence[str] = (), *,
                    cluster: Loaded | None = None) -> Validation:
    """Every finding in ``loaded``, in input order per document (see the module docstring); ``sources`` (the
    paths read) name the input when it holds no objects. ``cluster``: a live cluster's objects (``validate
    --kubeconfig``), which resolve references and whose nodes and classes count for what pods can use."""
    check = selector_check(features)
    problems: list[Problem] = []
    notes: list[Problem] = []
    for obj in loaded.objects:
        where = loaded.location_of(obj)
        found, noted = validate_with_notes(obj, cel=check)
        problems.extend(Problem(replace(where, field=path), message) for path, message in found)
        notes.extend(Problem(replace(where, field=path), message) for path, message in noted)
    # The expansions simulate runs; a refusal lists every problem, which become findings.
    pool_nodes: list[Node] = []
    try:
        pool_nodes, _ = expand_nodepools([r for r in loaded.raw if is_nodepool(r.data)])
        problems.extend(duplicate_nodes(loaded, [*loaded.of_kind(Node), *pool_nodes]))
    except InvalidInputError as error:
        problems.extend(error.problems)
    # The expansion validates each pod template as the API server validates the pods made from it.
    workloads = [r for r in loaded.raw if is_workload(r.data)]
    try:
        expanded = expand_workloads(
            workloads, loaded.of_kind(Pod), locate=loaded.location_of, nodes=[*loaded.of_kind(Node), *pool_nodes]
        )
    except InvalidInputError as error:
        problems.extend(error.problems)
    else:  # warnings as simulate's notes: the API server takes these pods, kube-scheduler never places them
        live = cluster.objects if cluster is not None else []
        classes = merge_device_classes(default_device_classes(),
                                       [*[o for o in live if isinstance(o, DeviceClass)], *loaded.of_kind(DeviceClass)])
        nodes = [*[o for o in live if isinstance(o, Node)], *loaded.of_kind(Node), *pool_nodes] if not problems else []
        problems.extend(Problem(Location(", ".join(sources)), text, unresolved=True)
                        for text in [*unpublished_requests(nodes, classes, workload_pods(expanded)),
                                     *unmodelled_fields(workload_pods(expanded))])
    problems.extend(reference_problems(loaded, features, None if cluster is None else known_in(cluster)))
    unchecked = [r for r in loaded.raw if not is_nodepool(r.data) and not is_workload(r.data)]
    if not loaded.objects and not loaded.raw:
        problems.append(Problem(Location(", ".join(sources)), NO_OBJECTS))
    ordered = in_input_order(loaded, problems)
    return Validation([p for p in ordered if not p.unresolved], len(loaded.objects) + len(loaded.raw) - len(unchecked),
                      unchecked, [p for p in ordered if p.unresolved], notes)


def known_in(cluster: Loaded) -> Known:
    """The names a live cluster's objects resolve: DeviceClasses, claims and claim templates (with namespaces)."""
    claims: dict[str, set[str]] = {}
    templates: dict[str, set[str]] = {}
    for claim in cluster.of_kind(ResourceClaim):
        claims.setdefault(claim.metadata.name, set()).add(claim.metadata.namespace or "default")
    for template in cluster.of_kind(ResourceClaimTemplate):
        templates.setdefault(template.metadata.name, set()).add(template.metadata.namespace or "default")
    return Known(frozenset(c.metadata.name for c in cluster.of_kind(DeviceClass)),
                 {k: frozenset(v) for k, v in claims.items()}, {k: frozenset(v) for k, v in templates.items()})
