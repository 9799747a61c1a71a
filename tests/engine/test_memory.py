"""freeze_startup_objects: what exists at start-up leaves the collector; later garbage is still freed."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from sentient.engine.memory import freeze_startup_objects


class _Cycle:
    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def frozen() -> Iterator[None]:
    gc.unfreeze()
    freeze_startup_objects()
    yield
    gc.unfreeze()


def test_start_up_objects_are_frozen_and_start_up_garbage_is_not(frozen: None) -> None:
    assert gc.get_freeze_count() > 0
    garbage = _Cycle()
    ref = weakref.ref(garbage)
    del garbage
    gc.unfreeze()
    freeze_startup_objects()  # collects first, so a cycle dropped before the freeze is freed
    assert ref() is None


def test_a_cycle_made_after_the_freeze_is_collected(frozen: None) -> None:
    later = _Cycle()
    ref = weakref.ref(later)
    del later
    gc.collect()
    assert ref() is None
