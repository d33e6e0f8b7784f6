"""What a selector sees of one device, built once and reused by every selector that looks at it."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import msgspec

from kubedra.cel.cost import Bounds
from kubedra.cel.errors import CelRuntimeError
from kubedra.cel.protos import protos
from kubedra.cel.values import quantity_fields, semver_key
from kubedra.objects.model import Device, DeviceAttribute
from kubedra.objects.quantity import Quantity
from kubedra.objects.semver import Semver

if TYPE_CHECKING:
    from kubedra.cel.environment import Environment


_KEY_ENCODER = msgspec.json.Encoder(order="deterministic")


def split_qualified_name(name: str, driver: str) -> tuple[str, str]:
    """``domain/id`` → (domain, id); a bare id lands in the driver's domain (upstream parseQualifiedName)."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


_KEPT: dict[tuple[str, frozenset[tuple[str, str]], tuple[str, ...]], tuple[str, ...]] = {}
_KEPT_MAX = 4096


def kept_attributes(attributes: dict[str, Any], driver: str, reads: frozenset[tuple[str, str]]) -> dict[str, Any]:
    """The entries of ``attributes`` (in their order) whose qualified names are among ``reads``.

    Which names are kept depends only on the names, the driver and ``reads``: it is decided once per set of names
    (a fleet's devices share theirs), so a device costs one lookup instead of a split per attribute."""
    names = tuple(attributes)
    key = (driver, reads, names)
    kept = _KEPT.get(key)
    if kept is None:
        if len(_KEPT) >= _KEPT_MAX:
            _KEPT.clear()
        kept = _KEPT[key] = tuple([name for name in names if split_qualified_name(name, driver) in reads])
    return {name: attributes[name] for name in kept}


class DeviceView:
    """The ``device`` variable's value for one device; the activation is built lazily, once per environment."""

    def __init__(self, driver: str, device: Device) -> None:
        self.driver = driver
        self.device = device
        # Made on first use: a fleet's alike devices are mostly judged by content key, never evaluated themselves.
        self._data: dict[bool, dict[str, Any] | CelRuntimeError] | None = None
        self._activations: dict[int, tuple[Environment, Any]] | None = None
        self._bounds: Bounds | None = None
        # ``content_key``'s: the first reads' in two slots (a device is mostly read by one class), others in a dict
        self._first_reads: frozenset[tuple[str, str]] | None = None
        self._first_key = b""
        self._keys: dict[frozenset[tuple[str, str]], bytes] | None = None

    def activation(self, environment: Environment) -> Any:
        """The cel activation for ``environment``; raises ``CelRuntimeError`` when a value cannot be read."""
        if self._activations is None:
            self._activations = {}
        cached = self._activations.get(id(environment))
        if cached is not None and cached[0] is environment:
            return cached[1]
        options = environment.options
        data = self.data(lists=options.list_values)
        if not options.consumable_capacity:
            data = {k: v for k, v in data.items() if k != "device.allowMultipleAllocations"}
        activation = environment.env.Activation(data)
        self._activations[id(environment)] = (environment, activation)
        return activation

    def data(self, *, lists: bool) -> dict[str, Any]:
        """The variables as plain values and messages (raises ``CelRuntimeError`` for a bad value)."""
        if self._data is None:
            self._data = {}
        built = self._data.get(lists)
        if built is None:
            try:
                built = self._build(lists)
            except CelRuntimeError as exc:
                built = exc
            self._data[lists] = built
        if isinstance(built, CelRuntimeError):
            raise built
        return built

    def content_key(self, reads: frozenset[tuple[str, str]], kept: dict[bytes, bytes] | None = None) -> bytes:
        """Everything an expression that reads only the attributes ``reads`` (and not the cost guard) sees of this
        device: the driver, those attributes, all capacity and ``allowMultipleAllocations``, and the attributes it
        does not read whose values may fail the activation (a list without DRAListTypeAttributes, a bad version:
        upstream converts every attribute before evaluating). Devices with equal keys get equal verdicts from such
        an expression, so a fleet of alike GPUs is evaluated once. ``kept``: the caller's keys, so that alike
        devices hold one copy of theirs."""
        if reads == self._first_reads:
            return self._first_key
        found = self._keys.get(reads) if self._keys is not None else None
        if found is None:
            driver, device = self.driver, self.device
            read = kept_attributes(device.attributes, driver, reads)
            # (a scalar always converts: ``_always_converts``'s first test, written out for a fleet's every device)
            risky = {name: value for name, value in device.attributes.items()
                     if name not in read and value.string is None and value.int is None and value.bool is None
                     and not _always_converts(value)}
            found = _KEY_ENCODER.encode((driver, read, device.capacity, bool(device.allow_multiple_allocations), risky))
            if kept is not None:
                found = kept.setdefault(found, found)
            if self._first_reads is None:
                self._first_reads, self._first_key = reads, found
            else:
                if self._keys is None:
                    self._keys = {}
                self._keys[reads] = found
        return found

    def bounds(self) -> Bounds:
        """This device's actual sizes, for the cost guard."""
        if self._bounds is None:
            attributes = self._group(self.device.attributes)
            capacity = self._group(self.device.capacity)
            strings = [len(a.string) for a in self.device.attributes.values() if a.string is not None]
            strings += [len(s) for a in self.device.attributes.values() for s in (a.strings or [])]
            lists = [len(_list_value(a) or []) for a in self.device.attributes.values()]
            self._bounds = Bounds(
                domains=max(len(attributes), len(capacity)),
                keys=max([len(v) for v in (*attributes.values(), *capacity.values())], default=0),
                value_length=max(strings, default=0),
                list_length=max(lists, default=0),
            )
        return self._bounds

    def _group(self, named: dict[str, Any]) -> dict[str, dict[str, Any]]:
        grouped: dict[str, dict[str, Any]] = {}
        for name, value in named.items():
            domain, ident = split_qualified_name(name, self.driver)
            grouped.setdefault(domain, {})[ident] = value
        return grouped

    def _build(self, lists: bool) -> dict[str, Any]:
        attributes: dict[str, dict[str, Any]] = {}
        for name, attribute in self.device.attributes.items():
            domain, ident = split_qualified_name(name, self.driver)
            attributes.setdefault(domain, {})[ident] = _attribute_value(name, attribute, lists)
        capacity: dict[str, dict[str, Any]] = {}
        for name, cap in self.device.capacity.items():
            domain, ident = split_qualified_name(name, self.driver)
            capacity.setdefault(domain, {})[ident] = _quantity(name, cap.value)
        return {
            "device.driver": self.driver,
            "device.attributes": attributes,
            "device.capacity": capacity,
            "device.allowMultipleAllocations": bool(self.device.allow_multiple_allocations),
        }


def _always_converts(attribute: DeviceAttribute) -> bool:
    """Whether the attribute's value reaches CEL whatever the environment (a scalar, or a version that parses)."""
    if attribute.int is not None or attribute.bool is not None or attribute.string is not None:
        return True
    return attribute.version is not None and not isinstance(_semver_message(attribute.version), str)


def _list_value(attribute: DeviceAttribute) -> list[Any] | None:
    for values in (attribute.ints, attribute.bools, attribute.strings, attribute.versions):
        if values is not None:
            return list(values)
    return None


# A fleet's devices repeat the same few driver versions, compute capabilities and memory sizes: each text is parsed
# into its message once (parsing each again was a third of building a device's view). Messages are never modified.
@functools.lru_cache(maxsize=4096)
def _semver_message(text: str) -> Any:
    """The message, or the parse error's text."""
    try:
        return protos().semver(value=semver_key(Semver.parse(text)))
    except ValueError as exc:
        return str(exc)


@functools.lru_cache(maxsize=4096)
def _quantity_message(text: str) -> Any:
    try:
        return protos().quantity(**quantity_fields(Quantity.parse(text)))
    except ValueError as exc:
        return str(exc)


def _semver(name: str, text: str) -> Any:
    found = _semver_message(text)
    if isinstance(found, str):
        raise CelRuntimeError(f"attribute {name}: parse semantic version: {found}")
    return found


def _quantity(name: str, text: str) -> Any:
    found = _quantity_message(text)
    if isinstance(found, str):
        raise CelRuntimeError(f"capacity {name}: {found}")
    return found


def _attribute_value(name: str, attribute: DeviceAttribute, lists: bool) -> Any:
    """The one value an attribute holds (upstream getAttributeValue); lists only with list-type attributes."""
    if attribute.int is not None:
        return attribute.int
    if attribute.bool is not None:
        return attribute.bool
    if attribute.string is not None:
        return attribute.string
    if attribute.version is not None:
        return _semver(name, attribute.version)
    if lists:
        if attribute.versions is not None:
            return [_semver(name, v) for v in attribute.versions]
        values = _list_value(attribute)
        if values is not None:
            return values
    raise CelRuntimeError(f"attribute {name}: unsupported attribute value")
