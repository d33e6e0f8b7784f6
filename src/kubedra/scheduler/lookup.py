"""Finding the object a user names (``kubedra explain``): ``ns/name``, a name unique across namespaces, or close
matches to offer."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from kubedra.scheduler.claims import key_of


@dataclass(frozen=True)
class Lookup:
    key: str | None  # the one object meant, or None
    matches: list[str]  # when key is None: the ambiguous or close names


def lookup(keys: Iterable[str], name: str, namespace: str | None = None) -> Lookup:
    """``ns/name``, ``name`` with ``namespace``, or a name unique across namespaces; else close matches."""
    keys = list(keys)
    if namespace is None and "/" in name:
        namespace, name = name.split("/", 1)
    if namespace is not None:
        wanted = key_of(namespace, name)
        if wanted in keys:
            return Lookup(wanted, [])
    else:
        same = [k for k in keys if k.split("/", 1)[1] == name]
        if len(same) == 1:
            return Lookup(same[0], [])
        if same:
            return Lookup(None, same)
    scoped = [k for k in keys if namespace is None or k.startswith(namespace + "/")]
    prefixed = [k for k in scoped if k.split("/", 1)[1].startswith(name)]
    names = {k.split("/", 1)[1]: k for k in scoped}
    close = [names[n] for n in difflib.get_close_matches(name, list(names), n=5, cutoff=0.6)]
    return Lookup(None, list(dict.fromkeys([*prefixed[:10], *close])))
