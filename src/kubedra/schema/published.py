"""The published CustomResourceDefinitions of the custom kinds kubedra reads, vendored under ``kubedra/data/crds``.

JobSet, LeaderWorkerSet, RayCluster, RayJob, the GPU Operator's ClusterPolicy and GPUCluster: each file is the CRD
as its project publishes it (only the versions kubedra reads, without ``description`` fields), written by
``scripts/vendor-crds`` with its provenance (``source``: repository, version, commit, path, licence). A custom
resource of these kinds is checked against its published schema unless a CRD for its group and kind is among the
inputs (that one is what the cluster serves). Their ``x-kubernetes-validations`` (CEL rules) are evaluated as
kube-apiserver evaluates them on create (``schema.cel_rules``), after the schema's own checks.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any


@dataclass(frozen=True)
class Published:
    """Where a vendored CRD comes from."""

    file: str
    group: str
    kind: str
    versions: tuple[str, ...]
    repository: str
    version: str
    commit: str | None
    path: str
    license: str
    celRules: int  # noqa: N815 (the manifest's key): how many x-kubernetes-validations lists

    def __str__(self) -> str:
        at = f", {self.commit[:7]}" if self.commit else ""
        return f"{self.repository} {self.version}{at}"


def _folder() -> Any:
    return resources.files("kubedra.data").joinpath("crds")


@cache
def manifest() -> dict[tuple[str, str], Published]:
    """(apiVersion, kind) -> the vendored CRD serving it."""
    found: dict[tuple[str, str], Published] = {}
    for entry in json.loads(_folder().joinpath("manifest.json").read_text()):
        source = Published(**{**entry, "versions": tuple(entry["versions"])})
        for version in source.versions:
            found[(f"{source.group}/{version}", source.kind)] = source
    return found


def read(source: Published) -> dict[str, Any]:
    """The whole vendored file: ``{"source": provenance, "crd": the CustomResourceDefinition}``."""
    body: dict[str, Any] = json.loads(gzip.decompress(_folder().joinpath(source.file).read_bytes()))
    return body


@dataclass(frozen=True)
class CustomValidator:
    """One served version of a CRD: its structural schema (as JSON Schema) and its CEL rules."""

    schema: Any  # a jsonschema validator
    rules: Any  # schema.cel_rules.CelRules

    def iter_errors(self, document: Any) -> Any:
        return self.schema.iter_errors(document)


def validators(crd: dict[str, Any]) -> dict[tuple[str, str], CustomValidator]:
    """(apiVersion, kind) -> the validator of each served version of ``crd``."""
    import jsonschema

    from kubedra.schema.cel_rules import CelRules
    from kubedra.schema.crd import openapi_schemas, to_json_schema

    return {key: CustomValidator(jsonschema.Draft202012Validator(to_json_schema(schema)), CelRules(schema))
            for key, schema in openapi_schemas(crd).items()}


@cache
def _validator(api_version: str, kind: str) -> CustomValidator:
    return validators(read(manifest()[(api_version, kind)])["crd"])[(api_version, kind)]


class CustomSchemas:
    """Validators for custom resources: the CRDs among the inputs (``add_crd``) first, then the vendored ones."""

    def __init__(self) -> None:
        self._given: dict[tuple[str, str], CustomValidator] = {}
        self._kinds: set[tuple[str, str]] = set()  # (group, kind) some input CRD defines

    def add_crd(self, crd: dict[str, Any]) -> None:
        """Serve the custom resources an ``apiextensions.k8s.io/v1`` CustomResourceDefinition defines."""
        spec: dict[str, Any] = crd["spec"] if isinstance(crd.get("spec"), dict) else {}
        names: dict[str, Any] = spec["names"] if isinstance(spec.get("names"), dict) else {}
        if isinstance(spec.get("group"), str) and isinstance(names.get("kind"), str):
            self._kinds.add((spec["group"], names["kind"]))
        self._given.update(validators(crd))

    def published(self, api_version: str, kind: str) -> Published | None:
        """The vendored CRD that checks this kind, unless an input CRD defines its group and kind."""
        if (api_version.rpartition("/")[0], kind) in self._kinds:
            return None
        return manifest().get((api_version, kind))

    def validator(self, api_version: str, kind: str) -> Any:
        """The validator for ``kind`` in ``api_version``, or None when no CRD (given or vendored) serves it."""
        if (api_version.rpartition("/")[0], kind) in self._kinds:
            return self._given.get((api_version, kind))
        return _validator(api_version, kind) if (api_version, kind) in manifest() else None
