"""Which device attributes an expression can read, as the checked syntax tree proves it (``attribute_reads``).

The allocator reuses an answer across nodes whose devices differ only in attributes no selector reads; an expression
that could read any attribute must say so (None), or a GPU's UUID would stop keeping nodes apart where it matters.
"""

from __future__ import annotations

import pytest

from kubedra.allocator import Features
from kubedra.cel import CompileCache

D = "gpu.nvidia.com"


@pytest.mark.parametrize(("expression", "reads"), [
    (f"device.driver == '{D}' && device.attributes['{D}'].type == 'gpu'", {(D, "type")}),
    (f'device.attributes["{D}"]["productName"].startsWith("NVIDIA")', {(D, "productName")}),
    (f'has(device.attributes["{D}"].uuid)', {(D, "uuid")}),
    (f'device.attributes["{D}"].cudaComputeCapability.isGreaterThan(semver("8.0.0")) && '
     f'device.attributes["resource.kubernetes.io"].pcieRoot == "pci0"',
     {(D, "cudaComputeCapability"), ("resource.kubernetes.io", "pcieRoot")}),
    (f'device.capacity["{D}"].memory.compareTo(quantity("40Gi")) >= 0', set()),
    ("true", set()),
    (f'device.attributes["{D}"].size() > 3', None),  # the domain's map used whole
    (f'"uuid" in device.attributes["{D}"]', None),
    ('device.attributes.exists(d, d == "x")', None),  # the attributes map iterated
    (f'cel.bind(a, device.attributes["{D}"], a.model == "x")', None),  # the map passed on
    (f'device.attributes["{D}"][device.driver] == "x"', None),  # a key worked out at run time
    (f'[1].all(device, device > 0) && device.attributes["{D}"].x == 1', None),  # ``device`` shadowed
])
def test_attribute_reads(expression: str, reads: set[tuple[str, str]] | None) -> None:
    program = CompileCache(Features.for_release().cel_options()).compile(expression)
    assert program.reads == (None if reads is None else frozenset(reads))
