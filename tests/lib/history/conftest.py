"""The history store's fixtures: a database file in the test's folder, and a store open on it."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from custom_components.azure_openai_memory.lib.history.store import HistoryStore


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "azure_openai_memory" / "history.db"


@pytest.fixture
def store(path: Path) -> Iterator[HistoryStore]:
    """A long batch window: queued events reach the disk only through flush() or a read."""
    history = HistoryStore(path, batch_window=60)
    assert history.open() is None
    yield history
    history.close()
