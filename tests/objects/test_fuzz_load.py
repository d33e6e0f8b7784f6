"""Hypothesis fuzzing: no input makes the loader raise anything but InvalidInputError."""

from __future__ import annotations

import copy
from typing import Any

import yaml
from _samples import V1_DOCUMENTS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests import depth

from kubedra.data import seed_dir
from kubedra.objects.errors import InvalidInputError
from kubedra.objects.load import load_text

FUZZ = settings(max_examples=depth.examples(150, 1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEEDS = [f().copy() for f in V1_DOCUMENTS.values()]
SEED_TEXTS = [p.read_text() for p in sorted(seed_dir().glob("*.yaml"))]

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)),
    max_leaves=20,
)


def _load(text: str) -> None:
    """Either it loads, or it is refused with at least one readable problem — nothing else may escape."""
    problems = []
    try:
        load_text(text)
    except InvalidInputError as error:
        problems = error.problems or [None]
    assert all(p is not None and str(p) for p in problems)


@FUZZ
@given(st.text(max_size=300))
def test_arbitrary_text(text: str) -> None:
    _load(text)


@FUZZ
@given(st.binary(max_size=300))
def test_arbitrary_bytes(data: bytes) -> None:
    _load(data.decode("utf-8", "replace"))


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


@FUZZ
@given(st.sampled_from(range(len(SEEDS))), st.data())
def test_mutated_valid_documents(index: int, data: st.DataObject) -> None:
    document = copy.deepcopy(SEEDS[index])
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(document)[1:]))
        parent = document
        for key in path[:-1]:
            parent = parent[key]
        action = data.draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "delete":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[data.draw(st.text(max_size=10))] = data.draw(values)
        else:
            parent[path[-1]] = data.draw(values)
        if not _paths(document)[1:]:
            break
    _load(yaml.safe_dump(document))


@FUZZ
@given(st.sampled_from(SEED_TEXTS), st.integers(0, 2000), st.text(max_size=5))
def test_mutated_seed_text(text: str, position: int, insert: str) -> None:
    position = min(position, len(text))
    _load(text[:position] + insert + text[position + 1 :])
