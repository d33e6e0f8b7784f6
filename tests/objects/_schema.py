"""kubernetes-validate as a test-only oracle: cached strict v1.37 JSON-schema validators per kind/version."""

from __future__ import annotations

import functools
import json
import os
from typing import Any

import jsonschema
import kubernetes_validate
from referencing import Registry, Resource

BASE = os.path.join(os.path.dirname(kubernetes_validate.__file__), "kubernetes-json-schema", "v1.37.0-local-strict")


@functools.cache
def _definitions() -> Resource[Any]:
    with open(os.path.join(BASE, "_definitions.json")) as handle:
        return Resource.from_contents(json.load(handle))


@functools.cache
def validator(kind: str, api_version: str) -> jsonschema.Draft202012Validator:
    group, _, version = api_version.rpartition("/")
    name = f"{kind.lower()}-{group.split('.')[0]}-{version}.json" if group else f"{kind.lower()}-{version}.json"
    path = os.path.join(BASE, name)
    if not os.path.exists(path):  # the oracle's SchemaNotFoundError: a failure, never a pass
        raise AssertionError(f"no schema for {api_version} {kind} ({name})")
    with open(path) as handle:
        schema = json.load(handle)
    registry: Registry[Any] = _definitions() @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)


def schema_errors(document: dict[str, Any]) -> list[str]:
    """Every schema error of a Kubernetes document, as 'path: message'."""
    v = validator(document["kind"], document["apiVersion"])
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(document)]
