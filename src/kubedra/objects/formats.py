"""Kubernetes name and value formats, with apimachinery's own error wording.

Each check returns the messages (``Invalid value: "x": …``, ``Too long: …``) for one value; an empty tuple
means valid. Results are cached: names and versions repeat across devices. Quantities and semantic
versions are checked by :mod:`kubedra.objects.quantity` and
:mod:`kubedra.objects.semver` (looked up at call time, so this module has no import-order coupling).
"""

from __future__ import annotations

import functools
import importlib
import json
import re
from typing import Any

from kubedra.objects import limits

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
_QUANTITY = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$")

LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
C_IDENTIFIER_MSG = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric "
    "characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is "
    "'[A-Za-z_][A-Za-z0-9_]*')"
)
SEMVER_MSG = "must be a string compatible with semver.org spec 2.0.0"


def show(value: Any) -> str:
    """A value as Kubernetes quotes it in ``Invalid value: …``."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str | int | float | bool) else str(value)


def invalid(value: Any, detail: str) -> str:
    return f"Invalid value: {show(value)}: {detail}"


def too_long(max_length: int) -> str:
    return f"Too long: may not be more than {max_length} bytes"


def too_many(count: int, max_items: int) -> str:
    return f"Too many: {count}: must have at most {max_items} items"


def required(detail: str = "") -> str:
    return f"Required value: {detail}" if detail else "Required value"


def unsupported(value: Any, supported: tuple[str, ...]) -> str:
    options = ", ".join(f'"{s}"' for s in supported)
    return f"Unsupported value: {show(value)}: supported values: {options}"


@functools.lru_cache(maxsize=16384)
def dns_label(value: str) -> tuple[str, ...]:
    out = []
    if len(value) > limits.DNS1123LabelMaxLength:
        out.append(invalid(value, f"must be no more than {limits.DNS1123LabelMaxLength} characters"))
    if not _LABEL.match(value):
        # apimachinery's IsDNS1123Label: a valid subdomain within the length can only be failing for its dots
        out.append(invalid(value, "must not contain dots" if _SUBDOMAIN.match(value) else LABEL_MSG))
    return tuple(out)


@functools.lru_cache(maxsize=16384)
def dns_subdomain(value: str, max_length: int = limits.DNS1123SubdomainMaxLength) -> tuple[str, ...]:
    out = []
    if len(value) > max_length:
        out.append(invalid(value, f"must be no more than {max_length} characters"))
    if not _SUBDOMAIN.match(value):
        out.append(invalid(value, SUBDOMAIN_MSG))
    return tuple(out)


def is_dns_subdomain(value: str) -> bool:
    return _SUBDOMAIN.match(value) is not None


@functools.lru_cache(maxsize=16384)
def driver_name(value: str) -> tuple[str, ...]:
    """``validateDriverName``: a DNS subdomain of at most 63 characters."""
    if not value:
        return (required(),)
    out = []
    if len(value) > limits.DriverNameMaxLength:
        out.append(too_long(limits.DriverNameMaxLength))
    out += [m for m in dns_subdomain(value) if "no more than" not in m]
    return tuple(out)


@functools.lru_cache(maxsize=16384)
def c_identifier(value: str) -> tuple[str, ...]:
    out = []
    if len(value) > limits.DeviceMaxIDLength:
        out.append(too_long(limits.DeviceMaxIDLength))
    if not _C_IDENTIFIER.match(value):
        out.append(invalid(value, C_IDENTIFIER_MSG))
    return tuple(out)


@functools.lru_cache(maxsize=16384)
def qualified_device_name(value: str, *, fully_qualified: bool = False) -> tuple[str, ...]:
    """An attribute or capacity name: ``<id>`` or ``<domain>/<id>`` (``validateQualifiedName``)."""
    parts = value.split("/")
    if len(parts) == 1:
        if fully_qualified:
            return (required("a fully qualified name must be the domain and the name separated by a slash"),)
        return c_identifier(value)
    if len(parts) != 2:
        return (invalid(value, "must be either <domain>/<name> or <name>"),)
    domain, ident = parts
    out = []
    if not domain:
        out.append(required("the domain must not be empty"))
    else:
        if len(domain) > limits.DeviceMaxDomainLength:
            out.append(too_long(limits.DeviceMaxDomainLength))
        out += [m for m in dns_subdomain(domain) if "no more than" not in m]
    out += c_identifier(ident) if ident else [required("the name must not be empty")]
    return tuple(out)


@functools.lru_cache(maxsize=16384)
def label_key(value: str) -> tuple[str, ...]:
    """A Kubernetes qualified name (label key / taint key): ``[prefix/]name``."""
    prefix, _, name = value.rpartition("/")
    out: list[str] = []
    if prefix:
        out += dns_subdomain(prefix)
    if not name:
        return (*out, invalid(value, "name part must be non-empty"))
    if len(name) > limits.QualifiedNameMaxLength:
        out.append(invalid(value, f"name part must be no more than {limits.QualifiedNameMaxLength} characters"))
    if not _QUALIFIED_NAME.match(name):
        out.append(
            invalid(
                value,
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
                "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            )
        )
    return tuple(out)


@functools.lru_cache(maxsize=16384)
def quantity(value: str) -> tuple[str, ...]:
    """A resource.Quantity, checked by :class:`kubedra.objects.quantity.Quantity` when it exists."""
    try:
        module: Any = importlib.import_module("kubedra.objects.quantity")
    except ImportError:
        module = None
    if module is not None and hasattr(module, "Quantity"):
        try:
            module.Quantity.parse(value)
        except (ValueError, ArithmeticError, getattr(module, "QuantityError", ValueError)):
            return (invalid(value, "must be a quantity (e.g. 40Gi, 500m, 1e3)"),)
        return ()
    if not _QUANTITY.match(value):
        return (invalid(value, "must be a quantity (e.g. 40Gi, 500m, 1e3)"),)
    return ()


# core/v1 resources counted in whole units (``helper.integerResources``); extended resources are too.
INTEGER_RESOURCES = frozenset(
    {
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)


@functools.lru_cache(maxsize=4096)
def is_extended_resource_name(name: str) -> bool:
    """``helper.IsExtendedResourceName``: qualified, outside ``kubernetes.io/``, not a quota ``requests.`` name."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not label_key("requests." + name)


def is_overcommit_allowed(name: str) -> bool:
    """``helper.IsOvercommitAllowed``: native resources other than hugepages (extended ones must equal limits)."""
    native = "/" not in name or "kubernetes.io/" in name
    return native and not name.startswith("hugepages-")


@functools.lru_cache(maxsize=16384)
def resource_quantity(name: str, value: str) -> tuple[str, ...]:
    """``ValidateResourceQuantityValue``: a quantity, not negative, whole for pods and extended resources."""
    from kubedra.objects.quantity import Quantity, QuantityError

    try:
        parsed = Quantity.parse(value)
    except (QuantityError, ValueError, ArithmeticError):
        return quantity(value)
    out = []
    if parsed.sign() < 0:
        out.append(invalid(str(parsed), "must be greater than or equal to 0"))
    # Go's test, to the letter: ``MilliValue() % 1000 != 0``. MilliValue overflows past int64 (to 0 for
    # ``1e30``, to other low bits for ``100000000000000000000``), so some huge whole numbers pass and others do not.
    if (name in INTEGER_RESOURCES or is_extended_resource_name(name)) and abs(parsed.milli_value()) % 1000:
        out.append(invalid(value, "must be an integer"))
    return tuple(out)


UNREADABLE_COUNT = (
    "must be a count kube-scheduler can read as an int64 (Go's Quantity.AsInt64): the API server accepts it, but the "
    "container would get no device"
)


@functools.lru_cache(maxsize=4096)
def device_count(name: str, value: str) -> tuple[str, ...]:
    """kubedra's refusal, not the API server's: a whole extended-resource amount that ``AsInt64`` cannot read
    (``1e30``, ``"1e19"``, ``"9223372036854775808"``). kube-scheduler's KEP-5004 claim skips such a container and
    NodeResourcesFit reads ``Value()`` (0, or a wrapped int64), so the pod would run with no device at all."""
    from kubedra.objects.quantity import Quantity, QuantityError

    if not is_extended_resource_name(name):
        return ()
    try:
        parsed = Quantity.parse(value)
    except (QuantityError, ValueError, ArithmeticError):
        return ()  # resource_quantity's finding
    if parsed.sign() <= 0 or abs(parsed.milli_value()) % 1000:
        return ()
    # kube-scheduler reads the object as the API server stored it: the canonical form ("1.0" is stored as "1").
    if Quantity.parse(str(parsed)).k8s_as_int64() is not None:
        return ()
    return (invalid(value, UNREADABLE_COUNT),)


@functools.lru_cache(maxsize=16384)
def version(value: str) -> tuple[str, ...]:
    """A version attribute: semver 2.0.0, checked by :mod:`kubedra.objects.semver` when it exists."""
    out = []
    if len(value) > limits.DeviceAttributeMaxValueLength:
        out.append(too_long(limits.DeviceAttributeMaxValueLength))
    try:
        module: Any = importlib.import_module("kubedra.objects.semver")
    except ImportError:
        module = None
    check = getattr(module, "validate_version_attribute", None)
    if check is not None:
        error = check(value)
        if error:
            out.append(invalid(value, str(error)))
    elif not _SEMVER.match(value):
        out.append(invalid(value, SEMVER_MSG))
    return tuple(out)
