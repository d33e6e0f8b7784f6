"""The fast YAML builder reads exactly what PyYAML's safe loader reads, and falls back for rarer YAML."""

from __future__ import annotations

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from tests import depth

from kubedra.objects.parse import parse_text

SAMPLES = [
    "a: 1\nb: [x, 2.5, true, null, 0x10, '3', 1_000, .inf, ~, yes]\nc: !!str 5\n",
    "base: &b {cpu: '1', memory: 1Gi}\nfirst: *b\nsecond: *b\n",
    "defaults: &d {a: 1, b: 2}\nmerged:\n  <<: *d\n  b: 3\n",  # merge key: the slow path
    "tags: !!set {x, y}\n",  # !!set: the slow path
    "list: !!omap [a: 1, b: 2]\n",
    "empty: {}\nnone:\nlist: []\n",
    "- 1\n- two\n- [3, {four: 4}]\n",
]


def _ours(text: str) -> object:
    documents, problems = parse_text(text, "t.yaml")
    assert problems == []
    return documents[0].data


def test_samples_read_as_pyyaml_reads_them() -> None:
    for text in SAMPLES:
        assert _ours(text) == yaml.safe_load(text), text


def test_aliases_are_built_once_and_shared() -> None:
    data = _ours(SAMPLES[1])
    assert isinstance(data, dict)
    assert data["first"] is data["second"]


def test_timestamps_stay_strings() -> None:
    assert _ours("when: 2026-01-01\n") == {"when": "2026-01-01"}


SCALARS = st.one_of(
    st.integers(-(10**12), 10**12), st.booleans(), st.none(), st.text(max_size=8),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
)
TREES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(min_size=1, max_size=6), children, max_size=4),
    max_leaves=25,
)


@settings(max_examples=depth.examples(200, 2000), deadline=None)
@given(TREES)
def test_any_dumped_tree_reads_back_like_pyyaml(tree: object) -> None:
    text = yaml.safe_dump({"doc": tree})
    assert _ours(text) == yaml.safe_load(text)
