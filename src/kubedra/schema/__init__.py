"""Schema validation against a Kubernetes release's OpenAPI schemas, strictly (unknown fields are errors).

An adapter: the schemas are the JSON files kubernetes-validate ships (1.25-1.37, ``-local-strict``), read from its
package on first use and compiled once per (release, kind, apiVersion). A kind no schema of that release knows is
an error, except kubedra's own ``kubedra.io`` kinds (NodePool), which kubedra checks itself, and custom resources
(a group only a CRD serves): those are checked against their CRD's schema when the CRD is added (``add_crd``), else
against the published CRD kubedra vendors for the kinds it reads (``schema.published``), and otherwise passed
through (``custom_unchecked`` lists them, for a note).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

from kubedra.schema.published import CustomSchemas, Published
from kubedra.schema.rule_paths import printed

KUBEDRA_GROUP = "kubedra.io"
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]{0,62}")
_API_VERSION = re.compile(r"(?:[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?/)?v[0-9]+(?:(?:alpha|beta)[0-9]+)?")


@dataclass(frozen=True)
class SchemaProblem:
    """One schema violation: the field path (``spec.devices.requests[0].exactly``) and the message."""

    path: str
    message: str
    parts: tuple[Any, ...] = ()  # the path as keys and indexes, to find the line


def _root() -> Any:
    return resources.files("kubernetes_validate").joinpath("kubernetes-json-schema")


def releases() -> list[str]:
    """The releases whose schemas are installed, as ``1.37``."""
    names = [p.name for p in _root().iterdir() if p.name.endswith("-local-strict")]
    found = {re.sub(r"^v(\d+\.\d+).*$", r"\1", n) for n in names}
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")))


def _path(parts: Any) -> str:
    return printed(parts)


class SchemaChecker:
    """Validators for one release, built on first use of each kind."""

    def __init__(self, release: str) -> None:
        available = {r: r for r in releases()}
        if release not in available:
            raise ValueError(f"no schemas for Kubernetes {release} (installed: {', '.join(available)})")
        self.directory = _root().joinpath(f"v{release}.0-local-strict")
        self.release = release
        self._definitions: Any = None
        self._validators: dict[tuple[str, str], Any] = {}
        self._custom = CustomSchemas()
        self.custom_unchecked: list[str] = []  # "Kind (group/version)" of custom resources without a CRD

    def add_crd(self, crd: dict[str, Any]) -> None:
        """Serve the custom resources a CustomResourceDefinition (``apiextensions.k8s.io/v1``) defines; it takes
        precedence over the vendored CRD of its group and kind."""
        self._custom.add_crd(crd)

    def published(self, document: dict[str, Any]) -> Published | None:
        """The vendored CRD ``check`` uses for ``document`` (None: not a vendored kind, or an input CRD serves it)."""
        return self._custom.published(str(document.get("apiVersion", "")), str(document.get("kind", "")))

    def _validator(self, kind: str, api_version: str) -> Any:
        key = (kind, api_version)
        if key not in self._validators:
            import jsonschema
            from referencing import Registry, Resource

            group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
            schema_file = self.directory.joinpath(f"{kind.lower()}-{group_version}.json")
            # Only names a schema file could have are looked up (a fuzzed apiVersion is no path to stat).
            if not (_KIND.fullmatch(kind) and _API_VERSION.fullmatch(api_version)) or not schema_file.is_file():
                self._validators[key] = None
            else:
                if self._definitions is None:
                    self._definitions = json.loads(self.directory.joinpath("_definitions.json").read_text())
                schema = json.loads(schema_file.read_text())
                registry = Resource.from_contents(self._definitions) @ (Resource.from_contents(schema) @ Registry())
                self._validators[key] = jsonschema.Draft202012Validator(schema, registry=registry)
        return self._validators[key]

    def check(self, document: dict[str, Any]) -> list[SchemaProblem]:
        """Every violation in ``document``; an unknown kind is one problem at ``kind``."""
        kind, api_version = str(document.get("kind", "")), str(document.get("apiVersion", ""))
        if api_version.split("/", 1)[0] == KUBEDRA_GROUP:
            return []
        from kubedra.schema.crd import is_custom_group

        if is_custom_group(api_version):
            validator = self._custom.validator(api_version, kind)
            if validator is None:
                self.custom_unchecked.append(f"{kind} ({api_version})")
                return []
            return problems_of(validator, document, custom=True)
        validator = self._validator(kind, api_version)
        if validator is None:
            return [SchemaProblem("kind", f'Unsupported value: "{kind}": no kind "{kind}" in {api_version} in '
                                          f"Kubernetes {self.release}", ("kind",))]
        return problems_of(validator, document)


def problems_of(validator: Any, document: dict[str, Any], *, custom: bool = False) -> list[SchemaProblem]:
    """Every violation ``validator`` finds in ``document``, an unknown field named one by one as the API server's
    strict field validation names it; ``custom``: in the API server's words for a custom resource."""
    from kubedra.schema.crd import api_server_message

    problems = []
    unknown = blocking = False
    for error in sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path))):
        blocking = blocking or error.validator in _BLOCKING
        parts = tuple(error.absolute_path)
        unexpected = re.findall(r"'([^']+)'", error.message.split("(", 1)[-1]) if error.validator == (
            "additionalProperties") else []
        unknown = unknown or bool(unexpected)
        for name in unexpected:  # the API server's strict field validation names each field
            path = _path((*parts, name))
            problems.append(SchemaProblem(path, f'unknown field "{path}"', (*parts, name)))
        missing = error.message.split("'")[1] if custom and error.validator == "required" else ""
        if missing:  # the API server names the missing field: "spec.x: Required value"
            problems.append(SchemaProblem(_path((*parts, missing)), "Required value", (*parts, missing)))
        elif not unexpected:
            message = api_server_message(error, _path(parts)) if custom else error.message
            problems.append(SchemaProblem(_path(parts), message, parts))
    rules = getattr(validator, "rules", None) if custom else None
    if rules is None or unknown:
        return problems  # an unknown field fails strict decoding: nothing is validated further
    if blocking:
        return [*problems, SchemaProblem("<nil>", f"Invalid value: null: {RULES_UNCHECKED}", ())]
    return problems + [SchemaProblem(_path(parts) or "<nil>", message, parts)
                       for parts, message in rules.problems(document)]


# The schema errors after which kube-apiserver leaves a custom resource's CEL rules unchecked (``hasBlockingErr``):
# NotSupported, Required, TooLong, TooMany and TypeInvalid.
_BLOCKING = frozenset({"enum", "required", "maxLength", "maxItems", "maxProperties", "type"})


RULES_UNCHECKED = ("some validation rules were not checked because the object was invalid; correct the existing "
                   "errors to complete validation")
