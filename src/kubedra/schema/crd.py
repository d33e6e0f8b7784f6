"""Custom resources: checked against their CustomResourceDefinition's ``openAPIV3Schema`` when it is among the inputs.

The API server validates a custom resource against the structural schema of its CRD version, and with strict field
validation (kubectl's default) an unknown field is an error. The schema is OpenAPI v3 with Kubernetes extensions;
it becomes a JSON Schema here: a required field with a ``default`` may be missing (the API server defaults it
before it validates), ``nullable`` allows null, ``x-kubernetes-int-or-string`` an integer or a string,
an object without ``x-kubernetes-preserve-unknown-fields`` or ``additionalProperties`` allows only its properties;
``apiVersion``, ``kind`` and ``metadata`` are always allowed at the root.
"""

from __future__ import annotations

import re
from typing import Any

_GROUP = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+")
_VERSION = re.compile(r"v[0-9]+((alpha|beta)[0-9]+)?")
ROOT_FIELDS = ("apiVersion", "kind", "metadata")


def is_custom_group(api_version: str) -> bool:
    """A group only a CRD can serve: dotted (a CRD's group must be) and outside Kubernetes' own ``*.k8s.io``."""
    group, _, version = api_version.rpartition("/")
    if not (_GROUP.fullmatch(group) and len(group) <= 253 and _VERSION.fullmatch(version)):
        return False
    return not group.endswith(".k8s.io")


def _json_schema(node: Any) -> Any:
    if isinstance(node, list):
        return [_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _json_schema(v) for k, v in node.items() if not k.startswith("x-kubernetes-") and k != "nullable"}
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out = {"anyOf": [{"type": "integer"}, {"type": "string"}], **{k: v for k, v in out.items() if k != "anyOf"}}
    if (node.get("type") == "object" and "properties" in node and "additionalProperties" not in node
            and not node.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    properties = node.get("properties")
    if isinstance(node.get("required"), list) and isinstance(properties, dict):
        # The API server defaults a missing field that has a default before it validates: that one is no error.
        required = [n for n in node["required"]
                    if not (isinstance(properties.get(n), dict) and "default" in properties[n])]
        if required:
            out["required"] = required
        else:
            out.pop("required", None)
    if node.get("nullable") and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


def to_json_schema(openapi: dict[str, Any]) -> Any:
    """An ``openAPIV3Schema`` as JSON Schema, the fields every object has declared at its root."""
    schema = _json_schema(openapi)
    properties = schema.setdefault("properties", {})
    for name in ROOT_FIELDS:
        properties.setdefault(name, {})
    return schema


def openapi_schemas(crd: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> the ``openAPIV3Schema`` of each served version, as the CRD writes it."""
    spec: dict[str, Any] = crd["spec"] if isinstance(crd.get("spec"), dict) else {}
    names: dict[str, Any] = spec["names"] if isinstance(spec.get("names"), dict) else {}
    group, kind = spec.get("group"), names.get("kind")
    found: dict[tuple[str, str], Any] = {}
    if not isinstance(group, str) or not isinstance(kind, str):
        return found
    for version in spec.get("versions") or []:
        if not isinstance(version, dict) or not version.get("served", True):
            continue
        holder = version.get("schema")
        schema = holder.get("openAPIV3Schema") if isinstance(holder, dict) else None
        if not isinstance(schema, dict):
            continue
        found[(f"{group}/{version.get('name')}", kind)] = schema
    return found


def api_server_message(error: Any, path: str) -> str:
    """A JSON Schema error in the API server's words for a custom resource (``kube-openapi``'s validate errors)."""
    value, bound = error.instance, error.validator_value
    shown = f'"{value}"' if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
    if error.validator == "minimum":
        return f"Invalid value: {shown}: {path} in body should be greater than or equal to {bound}"
    if error.validator == "maximum":
        return f"Invalid value: {shown}: {path} in body should be less than or equal to {bound}"
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else ""
        return "Required value" if not missing else f"Required value: {_join(path, missing)} is required"
    if error.validator == "type":
        wanted = bound if isinstance(bound, str) else next((t for t in bound if t != "null"), "")
        return f'Invalid value: "{_type_name(value)}": {path} in body must be of type {wanted}: "{_type_name(value)}"'
    if error.validator == "enum":
        allowed = ", ".join(f'"{v}"' for v in bound)
        return f"Unsupported value: {shown}: supported values: {allowed}"
    return str(error.message)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "null" if value is None else "object"
