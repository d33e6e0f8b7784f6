"""Loading then dumping a v1 object gives the same object back (modulo defaults), for every kind."""

from __future__ import annotations

import pytest
import yaml
from _samples import V1_DOCUMENTS
from _schema import schema_errors

from kubedra.objects.load import load_text
from kubedra.objects.model import to_dict


def _clean(document: dict) -> dict:
    """Modulo defaults: the model writes an empty spec/status that the original left out."""
    return {k: v for k, v in document.items() if not (k in ("spec", "status") and v == {})}


@pytest.mark.parametrize("kind", list(V1_DOCUMENTS))
def test_round_trip(kind: str) -> None:
    original = V1_DOCUMENTS[kind]()
    assert schema_errors(original) == []
    (obj,) = load_text(yaml.safe_dump(original)).objects
    dumped = _clean(to_dict(obj))
    assert dumped == original
    assert schema_errors(dumped) == []
    (again,) = load_text(yaml.safe_dump(dumped)).objects
    assert again == obj
