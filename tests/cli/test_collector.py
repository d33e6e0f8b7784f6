"""The batch collector: survivors of each full pass leave the later passes, and nothing stays registered after."""

from __future__ import annotations

import gc

from kubedra.cli.collector import batch_collection


def test_full_pass_survivors_are_frozen_and_the_hook_removed() -> None:
    kept: list[list[int]] = []
    before = len(gc.callbacks)
    try:
        with batch_collection():
            frozen_at_start = gc.get_freeze_count()
            kept.extend([i] for i in range(5_000))  # tracked objects made inside the run
            gc.collect()  # a full pass: its survivors, ours among them, are frozen
            assert gc.get_freeze_count() >= frozen_at_start + len(kept)
            assert not any(o is kept[0] for o in gc.get_objects(2))
        assert len(gc.callbacks) == before
    finally:
        gc.unfreeze()


def test_generation_one_survivors_are_frozen() -> None:
    kept: list[list[int]] = []
    try:
        with batch_collection():
            frozen_at_start = gc.get_freeze_count()
            kept.extend([i] for i in range(5_000))
            gc.collect(1)  # a generation-1 pass: its survivors are frozen, no full pass needed
            assert gc.get_freeze_count() >= frozen_at_start + len(kept)
            assert not any(o is kept[0] for o in gc.get_objects(2))
    finally:
        gc.unfreeze()
