"""What a migration produced: output documents per input, and the report (changes, decisions, steps)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from kubedra.objects.errors import Location, Problem


class Mode(enum.StrEnum):
    claims = "claims"
    extended_resource = "extended-resource"


@dataclass(frozen=True)
class Options:
    """Requirements the device plugin could not express, added to every converted request (claims mode only)."""

    mode: Mode = Mode.claims
    min_memory: str | None = None
    model: str | None = None
    min_compute_capability: str | None = None
    same_pcie_root: bool = False
    gpu_memory: str | None = None  # memory of one GPU, for MPS's pinned-memory limit (memory / replicas)
    dra_install: str = "helm"  # a ClusterPolicy's DRA side: the standalone chart's values, or a GPUCluster

    def requirements(self) -> list[str]:
        """The options given, as their flags (for messages)."""
        given = [("--min-memory", self.min_memory), ("--model", self.model),
                 ("--min-compute-capability", self.min_compute_capability)]
        flags = [flag for flag, value in given if value is not None]
        return [*flags, "--same-pcie-root"] if self.same_pcie_root else flags


@dataclass(frozen=True)
class Change:
    """One thing done to one object: ``action`` is converted, added, rewritten or unchanged."""

    location: Location
    action: str
    detail: str


@dataclass(frozen=True)
class Decision:
    """Something kubedra could not decide for the user (or a behaviour that changes), with what to do."""

    location: Location
    message: str


@dataclass
class OutputFile:
    """The documents that replace one input, in order (round-trip data, comments kept)."""

    source: str
    documents: list[Any] = field(default_factory=list)


@dataclass
class Migration:
    files: list[OutputFile] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)
    driver_values: list[dict[str, Any]] = field(default_factory=list)  # chart values per node pool
    dra_values: dict[str, Any] | None = None  # NVIDIA's DRA driver chart's values, from a ClusterPolicy


class MigrationError(Exception):
    """The input cannot be migrated; every problem is listed and nothing is written."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems
