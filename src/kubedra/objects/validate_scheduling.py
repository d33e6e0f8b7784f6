"""A pod's placement rules checked as kube-apiserver v1.37 checks them: ``affinity`` (``validateAffinity``) and
``topologySpreadConstraints`` (``validateTopologySpreadConstraints``), with apimachinery's label-selector and
label-name rules, field path and wording alike (proven by server-side dry runs in
tests/objects/test_affinity_validation_controlplane.py).

Kept apart from :mod:`kubedra.objects.validate` because the rules are the API server's generic ones for node
selectors and label selectors, not DRA's. ``add(path, messages)`` receives each problem, as ``_Errors.add`` does.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from kubedra.objects import formats as f
from kubedra.objects import model as m

Add = Callable[[str, "str | Iterable[str]"], None]

_NAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_RE = re.compile(f"^{_NAME}$")
_VALUE_RE = re.compile(f"^({_NAME})?$")
_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
             f"character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{_NAME}')")
_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
              "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
              f"for validation is '({_NAME})?')")
_SUBDOMAIN_MSG = f.SUBDOMAIN_MSG
MAX_NAME = 63
IN_NOT_IN = "must be specified when `operator` is 'In' or 'NotIn'"
EXISTS = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
RANGE = "must be in the range 1-100"


@functools.lru_cache(maxsize=4096)
def label_name(value: str) -> tuple[str, ...]:
    """apimachinery's ``IsLabelKey`` (``ValidateLabelName``): ``[prefix/]name``, each message about one part."""
    parts = value.split("/")
    out: list[str] = []
    if len(parts) > 2:
        return (f.invalid(value, f"a valid label key {_NAME_MSG} with an optional DNS subdomain prefix and '/' "
                                 "(e.g. 'example.com/MyName')"),)
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            out.append(f.invalid(value, "prefix part must be non-empty"))
        else:
            if len(prefix) > 253:
                out.append(f.invalid(value, "prefix part must be no more than 253 bytes"))
            if not f.is_dns_subdomain(prefix):
                out.append(f.invalid(value, f"prefix part {_SUBDOMAIN_MSG}"))
    if not name:
        out.append(f.invalid(value, "name part must be non-empty"))
    elif len(name) > MAX_NAME:
        out.append(f.invalid(value, f"name part must be no more than {MAX_NAME} bytes"))
    if not _NAME_RE.match(name):
        out.append(f.invalid(value, f"name part {_NAME_MSG}"))
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def label_value(value: str) -> tuple[str, ...]:
    """apimachinery's ``IsLabelValue``."""
    out = []
    if len(value) > MAX_NAME:
        out.append(f.invalid(value, f"must be no more than {MAX_NAME} bytes"))
    if not _VALUE_RE.match(value):
        out.append(f.invalid(value, _VALUE_MSG))
    return tuple(out)


def label_selector(add: Add, path: str, selector: m.LabelSelector | None) -> None:
    """``ValidateLabelSelector`` (matchLabels in key order: Go's map order is random, the set of messages is not)."""
    if selector is None:
        return
    for key in sorted(selector.match_labels):
        add(f"{path}.matchLabels", label_name(key))
        add(f"{path}.matchLabels", label_value(selector.match_labels[key]))
    for i, requirement in enumerate(selector.match_expressions):
        where = f"{path}.matchExpressions[{i}]"
        if requirement.operator in ("In", "NotIn"):
            if not requirement.values:
                add(f"{where}.values", f.required(IN_NOT_IN))
        elif requirement.operator in ("Exists", "DoesNotExist"):
            if requirement.values:
                add(f"{where}.values", f"Forbidden: {EXISTS}")
        else:
            add(f"{where}.operator", f.invalid(requirement.operator, "not a valid selector operator"))
        add(f"{where}.key", label_name(requirement.key))
        for j, value in enumerate(requirement.values):
            add(f"{where}.values[{j}]", label_value(value))


def _node_requirement(add: Add, path: str, requirement: m.NodeSelectorRequirement, check_values: bool) -> None:
    operator, values = requirement.operator, requirement.values
    if operator in ("In", "NotIn"):
        if not values:
            add(f"{path}.values", f.required(IN_NOT_IN))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            add(f"{path}.values", f"Forbidden: {EXISTS}")
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            add(f"{path}.values", f.required("must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        add(f"{path}.operator", f.invalid(operator, "not a valid selector operator"))
    add(f"{path}.key", label_name(requirement.key))
    if check_values:
        for j, value in enumerate(values):
            add(f"{path}.values[{j}]", label_value(value))


def _field_requirement(add: Add, path: str, requirement: m.NodeSelectorRequirement) -> None:
    if requirement.operator in ("In", "NotIn"):
        if len(requirement.values) != 1:
            add(f"{path}.values",
                f.required("must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
    else:
        add(f"{path}.operator", f.invalid(requirement.operator, "not a valid selector operator"))
    if requirement.key != "metadata.name":
        add(f"{path}.key", f.invalid(requirement.key, "not a valid field selector key"))
    else:
        for j, value in enumerate(requirement.values):
            add(f"{path}.values[{j}]", f.dns_subdomain(value))


def node_selector_term(add: Add, path: str, term: m.NodeSelectorTerm, check_values: bool) -> None:
    for j, requirement in enumerate(term.match_expressions):
        _node_requirement(add, f"{path}.matchExpressions[{j}]", requirement, check_values)
    for j, requirement in enumerate(term.match_fields):
        _field_requirement(add, f"{path}.matchFields[{j}]", requirement)


def _node_affinity(add: Add, path: str, affinity: m.NodeAffinity) -> None:
    required = affinity.required_during_scheduling_ignored_during_execution
    if required is not None:
        where = f"{path}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        if not required.node_selector_terms:
            add(where, f.required("must have at least one node selector term"))
        for i, term in enumerate(required.node_selector_terms):
            node_selector_term(add, f"{where}[{i}]", term, check_values=True)
    for i, preferred in enumerate(affinity.preferred_during_scheduling_ignored_during_execution):
        where = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        if not 0 < preferred.weight <= 100:
            add(f"{where}.weight", f.invalid(preferred.weight, RANGE))
        # preferred terms may name label values no node has: the API server lets them through
        node_selector_term(add, f"{where}.preference", preferred.preference, check_values=False)


def label_keys(add: Add, path: str, keys: tuple[list[str], list[str]], selector: m.LabelSelector | None,
               labels: Mapping[str, str] | None) -> None:
    """``ValidateMatchLabelKeysAndMismatchLabelKeys`` at ``path`` (a term or a constraint) for its matchLabelKeys and
    mismatchLabelKeys: each key a label name, given only beside a labelSelector; no matchLabelKeys key the selector
    already names; none in both lists."""
    match, mismatch = keys
    for field, named in (("matchLabelKeys", match), ("mismatchLabelKeys", mismatch)):
        if named and selector is None:
            add(f"{path}.{field}", "Forbidden: must not be specified when labelSelector is not set")
            continue
        for i, key in enumerate(named):
            add(f"{path}.{field}[{i}]", label_name(key))
    # The API server first merges each key the pod has a label for into the selector (``In`` for matchLabelKeys,
    # ``NotIn`` for mismatchLabelKeys, after the user's own requirements), then refuses a matchLabelKeys key the
    # selector had already named by then (at ``path[i]``, upstream's path). With the pod's labels unknown
    # (``labels`` None) this check is left out rather than guessed.
    if selector is not None and labels is not None:
        seen = set(selector.match_labels)
        index = {key: i for i, key in enumerate(match)}
        merged = [r.key for r in selector.match_expressions] + [k for k in (*match, *mismatch) if k in labels]
        for key in merged:
            if key in index and key in seen:
                add(f"{path}[{index[key]}]", f.invalid(key, "exists in both matchLabelKeys and labelSelector"))
            seen.add(key)
    both = set(mismatch)
    for i, key in enumerate(match):
        if key in both:
            add(f"{path}.matchLabelKeys[{i}]", f.invalid(key, "exists in both matchLabelKeys and mismatchLabelKeys"))


def pod_affinity_term(add: Add, path: str, term: m.PodAffinityTerm, labels: Mapping[str, str] | None) -> None:
    label_selector(add, f"{path}.labelSelector", term.label_selector)
    label_selector(add, f"{path}.namespaceSelector", term.namespace_selector)
    for name in term.namespaces:
        add(f"{path}.namespace", f.dns_label(name))
    label_keys(add, path, (term.match_label_keys, term.mismatch_label_keys), term.label_selector, labels)
    if not term.topology_key:
        add(f"{path}.topologyKey", f.required("can not be empty"))
    add(f"{path}.topologyKey", label_name(term.topology_key))


def _pod_affinity(add: Add, path: str, affinity: m.PodAffinity, labels: Mapping[str, str] | None) -> None:
    for i, term in enumerate(affinity.required_during_scheduling_ignored_during_execution):
        pod_affinity_term(add, f"{path}.requiredDuringSchedulingIgnoredDuringExecution[{i}]", term, labels)
    for i, weighted in enumerate(affinity.preferred_during_scheduling_ignored_during_execution):
        where = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        if not 0 < weighted.weight <= 100:
            add(f"{where}.weight", f.invalid(weighted.weight, RANGE))
        pod_affinity_term(add, f"{where}.podAffinityTerm", weighted.pod_affinity_term, labels)


def affinity(add: Add, path: str, value: m.Affinity | None, labels: Mapping[str, str] | None = None) -> None:
    """``validateAffinity`` at ``path`` (``spec.affinity`` or a template's); ``labels``: the pod's, where known."""
    if value is None:
        return
    if value.node_affinity is not None:
        _node_affinity(add, f"{path}.nodeAffinity", value.node_affinity)
    if value.pod_affinity is not None:
        _pod_affinity(add, f"{path}.podAffinity", value.pod_affinity, labels)
    if value.pod_anti_affinity is not None:
        _pod_affinity(add, f"{path}.podAntiAffinity", value.pod_anti_affinity, labels)


SPREAD_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")
NODE_INCLUSION_POLICIES = ("Honor", "Ignore")
NOT_POSITIVE = "must be greater than zero"


def spread_constraints(add: Add, path: str, constraints: Sequence[m.TopologySpreadConstraint],
                       labels: Mapping[str, str] | None = None) -> None:
    """``validateTopologySpreadConstraints`` with v1.37's default gates (matchLabelKeys merged into the selector):
    maxSkew and minDomains positive, minDomains only with DoNotSchedule, a topology key (any text: only its presence
    is checked), the enums, each {topologyKey, whenUnsatisfiable} once (said at the first of two), the label
    selector."""
    for i, c in enumerate(constraints):
        where = f"{path}[{i}]"
        if c.max_skew <= 0:
            add(f"{where}.maxSkew", f.invalid(c.max_skew, NOT_POSITIVE))
        if not c.topology_key:
            add(f"{where}.topologyKey", f.required("can not be empty"))
        if c.when_unsatisfiable not in SPREAD_ACTIONS:
            add(f"{where}.whenUnsatisfiable", f.unsupported(c.when_unsatisfiable, SPREAD_ACTIONS))
        if any(c.topology_key == o.topology_key and c.when_unsatisfiable == o.when_unsatisfiable
               for o in constraints[i + 1:]):
            add(f"{where}.{{topologyKey, whenUnsatisfiable}}",
                f"Duplicate value: {f.show(f'{{{c.topology_key}, {c.when_unsatisfiable}}}')}")
        if c.min_domains is not None:
            if c.min_domains <= 0:
                add(f"{where}.minDomains", f.invalid(c.min_domains, NOT_POSITIVE))
            if c.when_unsatisfiable != "DoNotSchedule":
                detail = f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {c.when_unsatisfiable}"
                add(f"{where}.minDomains", f.invalid(c.min_domains, detail))
        policies = (("nodeAffinityPolicy", c.node_affinity_policy), ("nodeTaintsPolicy", c.node_taints_policy))
        for name, policy in policies:
            if policy is not None and policy not in NODE_INCLUSION_POLICIES:
                add(f"{where}.{name}", f.unsupported(policy, NODE_INCLUSION_POLICIES))
        label_keys(add, where, (c.match_label_keys, []), c.label_selector, labels)
        label_selector(add, f"{where}.labelSelector", c.label_selector)
