"""Which kubeconfig a command uses, found and merged as kubectl finds and merges it (client-go's clientcmd v0.37).

kubectl reads ``--kubeconfig FILE`` alone when given (it must exist); otherwise every file of ``$KUBECONFIG`` (split
on ``:``, repeats dropped, missing files skipped), or ``~/.kube/config`` when the variable is unset; only when no
file gives a cluster does it fall back to the pod's service account. Files are merged entry by entry: the first file
naming a cluster, user or context wins, and so does the first ``current-context``. Relative file references
(``certificate-authority``, ``client-certificate``, ``client-key``, ``tokenFile``, an exec ``command`` with a ``/``)
are resolved against the directory of the file they came from, as ``ResolveLocalPaths`` does. lightkube, which
kubedra connects with, reads one file and tries the service account first; this module gives it kubectl's answer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kubedra.objects.errors import KubedraError

HOME_FILE = "~/.kube/config"
_SECTIONS = (("clusters", "cluster"), ("users", "user"), ("contexts", "context"))
_CLUSTER_FILES = ("certificate-authority",)
_USER_FILES = ("client-certificate", "client-key", "tokenFile")


class KubeError(KubedraError):
    """The cluster cannot be read: a bad kubeconfig, an unreachable server, a refused request."""


KUBECONFIG_SHAPE = "a kubeconfig is a mapping with apiVersion: v1, kind: Config, clusters, contexts and users"


def read_kubeconfig(path: str) -> dict[str, Any]:
    """The kubeconfig at ``path`` as a mapping, or KubeError saying what the file is instead (empty, binary, YAML
    that does not parse, some other document): lightkube itself fails on those with an AttributeError."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError as exc:
        raise KubeError(f"kubeconfig {path}: not found") from exc
    except OSError as exc:
        raise KubeError(f"kubeconfig {path}: {exc.strerror or exc}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise KubeError(f"kubeconfig {path}: not a kubeconfig: not UTF-8 text (byte 0x{data[exc.start]:02x} at "
                        f"offset {exc.start}); {KUBECONFIG_SHAPE}") from exc
    try:
        body = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None)
        why = f" ({problem})" if problem else ""
        raise KubeError(f"kubeconfig {path}: not a kubeconfig: invalid YAML{at}{why}; {KUBECONFIG_SHAPE}") from exc
    if body is None:
        raise KubeError(f"kubeconfig {path}: the file is empty: no configuration has been provided; "
                        f"{KUBECONFIG_SHAPE}")
    if not isinstance(body, dict):
        raise KubeError(f"kubeconfig {path}: not a kubeconfig: a {type(body).__name__}, not a mapping; "
                        f"{KUBECONFIG_SHAPE}")
    if body.get("kind") not in (None, "Config") or not any(key in body for key in ("clusters", "contexts", "users")):
        found = f"kind {body['kind']}" if "kind" in body else "no clusters, contexts or users"
        raise KubeError(f"kubeconfig {path}: not a kubeconfig ({found}); {KUBECONFIG_SHAPE}")
    for key in ("clusters", "contexts", "users"):
        if body.get(key) is None:
            body[key] = []  # kubectl reads a missing list as empty; lightkube needs the key
        elif not isinstance(body[key], list):
            raise KubeError(f"kubeconfig {path}: not a valid kubeconfig: {key} must be a list")
    return body




@dataclass
class Found:
    """The merged kubeconfig (None: no file gave one, the service account is the fallback) and the files read."""

    config: dict[str, Any] | None
    files: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def candidates(explicit: str | None, environ: Mapping[str, str]) -> list[str]:
    """The files kubectl would read, in precedence order."""
    if explicit:
        return [explicit]
    listed = environ.get("KUBECONFIG", "")
    if listed:
        return list(dict.fromkeys(p for p in listed.split(os.pathsep) if p))
    return [str(Path(HOME_FILE).expanduser())]


def _absolute(entry: dict[str, Any], keys: tuple[str, ...], base: Path) -> dict[str, Any]:
    out = dict(entry)
    for key in keys:
        value = out.get(key)
        if isinstance(value, str) and value and not os.path.isabs(value):
            out[key] = str(base / value)
    return out


def _resolved(section: str, item: dict[str, Any], base: Path) -> dict[str, Any]:
    inner_key = dict(_SECTIONS)[section]
    inner = item.get(inner_key)
    if not isinstance(inner, dict):
        return item
    if section == "clusters":
        inner = _absolute(inner, _CLUSTER_FILES, base)
    elif section == "users":
        inner = _absolute(inner, _USER_FILES, base)
        run = inner.get("exec")
        if isinstance(run, dict) and "/" in str(run.get("command", "")):
            inner["exec"] = _absolute(run, ("command",), base)
    return {**item, inner_key: inner}


def merge(configs: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """kubectl's merge of several files, each given with its path: first name wins, first current-context wins."""
    merged: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": []}
    for path, config in configs:
        base = Path(path).resolve().parent
        for section, _ in _SECTIONS:
            entries = config.get(section) or []
            if not isinstance(entries, list):
                raise KubeError(f"kubeconfig {path}: {section} is not a list")
            taken = {e.get("name") for e in merged[section]}
            for item in entries:
                if not isinstance(item, dict):
                    raise KubeError(f"kubeconfig {path}: an entry of {section} is not a mapping")
                if item.get("name") not in taken:
                    merged[section].append(_resolved(section, item, base))
                    taken.add(item.get("name"))
        if not merged.get("current-context") and config.get("current-context"):
            merged["current-context"] = config["current-context"]
    return merged


def load(explicit: str | None = None, environ: Mapping[str, str] | None = None) -> Found:
    """The kubeconfig kubectl would use with ``--kubeconfig explicit`` (or none) in ``environ``."""
    environ = os.environ if environ is None else environ
    if explicit and not Path(explicit).exists():
        raise KubeError(f"kubeconfig {explicit}: not found")
    read: list[tuple[str, dict[str, Any]]] = []
    missing: list[str] = []
    for path in candidates(explicit, environ):
        if not Path(path).exists():
            missing.append(path)
            continue
        if not explicit and not Path(path).read_bytes().strip():
            continue  # an empty file in the list is an empty config to kubectl, not an error
        read.append((path, read_kubeconfig(path)))
    if not read:
        return Found(None, [], missing)
    merged = merge(read)
    if not merged["clusters"] and not merged["contexts"] and not explicit:
        return Found(None, [p for p, _ in read], missing)  # nothing usable in the files: kubectl tries in-cluster
    return Found(merged, [p for p, _ in read], missing)
