"""Property names as CRD rules read them (``schema.cel_rules.escape``): the cases of apiserver v0.37.2's
``pkg/cel/escaping_test.go`` (``TestEscaping``); the API server's own reading of rules over such names is compared in
``tests/schema/test_cel_rules_controlplane.py``."""

from __future__ import annotations

import pytest

from kubedra.schema.cel_rules import RESERVED, cel_names, escape

ESCAPED = {
    "a.a": "a__dot__a", "a-a": "a__dash__a", "a__a": "a__underscores__a",
    "a.-/__a": "a__dot____dash____slash____underscores__a", "a._a": "a__dot___a",
    "a__.__a": "a__underscores____dot____underscores__a", "a___a": "a__underscores___a",
    "a____a": "a__underscores____underscores__a", "a__dot__a": "a__underscores__dot__underscores__a",
    "a__underscores__a": "a__underscores__underscores__underscores__a",
    # CEL's macros and functions are no reserved words
    "has": "has", "all": "all", "exists": "exists", "exists_one": "exists_one", "filter": "filter", "size": "size",
}


@pytest.mark.parametrize("name", sorted(ESCAPED))
def test_escaped_as_the_api_server_escapes(name: str) -> None:
    assert escape(name) == ESCAPED[name]


@pytest.mark.parametrize("word", sorted(RESERVED))
def test_a_reserved_word_is_read_escaped_or_as_itself(word: str) -> None:
    assert escape(word) == f"__{word}__"
    assert cel_names(word) == (f"__{word}__", word)


@pytest.mark.parametrize("name", ["@", "1up", "\N{CROWN}", "my key", ""])
def test_a_name_cel_cannot_spell_is_not_read(name: str) -> None:
    assert escape(name) is None
    assert cel_names(name) == ()
