"""Device taints and tolerations, including taints added by DeviceTaintRule objects.

Only ``NoSchedule`` and ``NoExecute`` keep a device from being allocated; ``None`` and unknown effects are
ignored. Toleration matching is ``resourceclaim.ToleratesTaint``: an empty effect or key matches any, the
operator defaults to ``Equal``.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubedra.objects.model import DeviceTaint, DeviceTaintRule, DeviceToleration

BLOCKING_EFFECTS = frozenset(("NoSchedule", "NoExecute"))

Taint = tuple[str, str, str]
"""``(key, value, effect)`` of one blocking taint."""


def tolerates(toleration: DeviceToleration, taint: Taint) -> bool:
    """Whether one toleration tolerates one taint."""
    key, value, effect = taint
    if toleration.effect and toleration.effect != effect:
        return False
    if toleration.key and toleration.key != key:
        return False
    if toleration.operator in ("", "Equal"):
        return toleration.value == value
    return toleration.operator == "Exists"


def untolerated(taints: Sequence[Taint], tolerations: Sequence[DeviceToleration]) -> Taint | None:
    """The first blocking taint no toleration tolerates, or ``None``."""
    for taint in taints:
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def rule_applies(rule: DeviceTaintRule, driver: str, pool: str, device: str) -> bool:
    """A rule's selector by driver, pool and device name (absent fields match everything).

    Only these three fields select devices in the released API; the older beta ``deviceClassName`` and
    ``selectors`` fields are not applied (the DeviceTaintRule tracker ignores them since 1.35).
    """
    selector = rule.spec.device_selector
    if selector is None:
        return True
    if selector.driver is not None and selector.driver != driver:
        return False
    if selector.pool is not None and selector.pool != pool:
        return False
    return selector.device is None or selector.device == device


def blocking_taints(
    own: Sequence[DeviceTaint], rules: Sequence[DeviceTaintRule], driver: str, pool: str, device: str
) -> tuple[Taint, ...]:
    """The device's own blocking taints, then those of the rules that select it (in rule order)."""
    taints: list[Taint] = [(t.key, t.value, t.effect) for t in own if t.effect in BLOCKING_EFFECTS]
    for rule in rules:
        taint = rule.spec.taint
        if taint.effect in BLOCKING_EFFECTS and rule_applies(rule, driver, pool, device):
            taints.append((taint.key, taint.value, taint.effect))
    return tuple(taints)
