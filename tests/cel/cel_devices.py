"""Test helpers for the CEL tests: build devices and their views in one line."""

from __future__ import annotations

from typing import Any

from kubedra.cel import DeviceView
from kubedra.objects.model import Device, DeviceAttribute, DeviceCapacity

DRIVER = "dra.example.com"


def attribute(value: Any) -> DeviceAttribute:
    if isinstance(value, bool):
        return DeviceAttribute(bool=value)
    if isinstance(value, int):
        return DeviceAttribute(int=value)
    if isinstance(value, str) and value.startswith("v:"):
        return DeviceAttribute(version=value[2:])
    if isinstance(value, list):
        return DeviceAttribute(strings=value)
    return DeviceAttribute(string=value)


def make_view(
    attributes: dict[str, Any] | None = None,
    capacity: dict[str, str] | None = None,
    driver: str = DRIVER,
    allow_multiple: bool | None = None,
) -> DeviceView:
    device = Device(
        name="dev-0",
        attributes={k: attribute(v) for k, v in (attributes or {}).items()},
        capacity={k: DeviceCapacity(value=v) for k, v in (capacity or {}).items()},
        allow_multiple_allocations=allow_multiple,
    )
    return DeviceView(driver, device)
