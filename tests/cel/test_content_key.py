"""``DeviceView.content_key``: one key per set of reads, alike devices sharing one copy where the caller keeps them."""

from __future__ import annotations

from cel_devices import DRIVER, make_view


def test_alike_devices_share_one_key_and_each_set_of_reads_has_its_own() -> None:
    kept: dict[bytes, bytes] = {}
    model, uuid = frozenset({(DRIVER, "model")}), frozenset({(DRIVER, "uuid")})
    a = make_view({"model": "A100", "uuid": "GPU-a"})
    b = make_view({"model": "A100", "uuid": "GPU-b"})
    key = a.content_key(model, kept)
    assert b.content_key(model, kept) is key  # alike in what is read: one copy
    by_uuid = a.content_key(uuid)  # a second set of reads, kept beside the first
    assert by_uuid != b.content_key(uuid) and by_uuid != key
    assert a.content_key(model) is key and a.content_key(uuid) is by_uuid
    assert make_view({"model": "H100", "uuid": "GPU-a"}).content_key(model, kept) != key
