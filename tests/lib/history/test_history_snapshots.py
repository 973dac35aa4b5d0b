"""HistoryStore: snapshots go with the retention, are listed page by page, and a purge runs
in batches that leave the database consistent after each one."""

from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
import sqlite3
import threading
import time
from typing import Any
import uuid

import pytest

from custom_components.azure_openai_memory.lib.history.store import (
    MAX_QUERY_LIMIT,
    PURGE_FIRST_STEP,
    AgentHistoryEvent,
    HistoryError,
    HistoryEventType,
    HistoryPurge,
    HistoryQuery,
    HistorySnapshot,
    HistoryStore,
    ListedSnapshot,
)

NOW = datetime(2025, 10, 25, 11, 0, tzinfo=UTC).timestamp()
DAY = 86400.0
CUTOFF = NOW - 90 * DAY
AGENT = "conversation.azure_openai_memory"
OTHER = "conversation.kitchen"


def make(at: float, *, agent: str = AGENT, **fields: Any) -> AgentHistoryEvent:
    return AgentHistoryEvent.new(
        agent, HistoryEventType.THOUGHT, {"at": at}, timestamp=at, **fields
    )


def snapshot(at: float, events: tuple[AgentHistoryEvent, ...], **fields: Any) -> HistorySnapshot:
    return HistorySnapshot(str(uuid.uuid4()), fields.pop("agent", AGENT), at, events, **fields)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "history.db"


@pytest.fixture
def store(path: Path) -> Iterator[HistoryStore]:
    history = HistoryStore(path, batch_window=60)
    history.open()
    yield history
    history.close()


def rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql).fetchall()


def test_snapshots_go_with_the_retention(store: HistoryStore, path: Path) -> None:
    """Taken before the cut-off, or left without any of its events: gone, links and all.
    A snapshot with events left, or taken since the cut-off, stays."""
    ancient = make(NOW - 120 * DAY)
    old = make(NOW - 100 * DAY)
    recent = make(NOW - DAY)
    store.record_events([ancient, old, recent])
    taken_long_ago = snapshot(NOW - 95 * DAY, (ancient, old))
    emptied = snapshot(NOW - 80 * DAY, (old,))
    partly_kept = snapshot(NOW - 1, (old, recent), description="still useful")
    never_held_any = snapshot(NOW - 80 * DAY, ())
    taken_long_ago_empty = snapshot(NOW - 100 * DAY, ())
    for one in (taken_long_ago, emptied, partly_kept, never_held_any, taken_long_ago_empty):
        store.create_snapshot(one)

    assert store.purge_before(CUTOFF) == HistoryPurge(events=2, snapshots=3)

    for gone in (taken_long_ago, emptied, taken_long_ago_empty):
        assert store.get_snapshot(gone.snapshot_id) is None
    kept = store.get_snapshot(partly_kept.snapshot_id)
    assert kept is not None
    assert (kept.description, kept.events) == ("still useful", (recent,))
    assert store.get_snapshot(never_held_any.snapshot_id) == never_held_any
    assert store.get_statistics().total_snapshots == 2
    assert rows(path, "SELECT snapshot_id, event_id FROM snapshot_events") == [
        (partly_kept.snapshot_id, recent.event_id)
    ]
    assert rows(path, "PRAGMA foreign_key_check") == []
    assert store.purge_before(CUTOFF) == HistoryPurge(events=0, snapshots=0)


def test_snapshots_are_listed_page_by_page(store: HistoryStore) -> None:
    events = [make(NOW - n) for n in range(3)]
    store.record_events(events)
    mine = [snapshot(NOW + n, tuple(events[: n + 1]), ref=f"r{n}") for n in range(3)]
    theirs = snapshot(NOW + 10, (), agent=OTHER, metadata={"why": "update"})
    for one in (*mine, theirs):
        store.create_snapshot(one)

    listed, total = store.query_snapshots()
    assert total == 4
    assert [s.snapshot_id for s in listed] == [
        theirs.snapshot_id,
        *(s.snapshot_id for s in reversed(mine)),
    ]
    assert listed[0] == ListedSnapshot(
        theirs.snapshot_id, OTHER, NOW + 10, event_count=0, metadata={"why": "update"}
    )
    assert [(s.ref, s.event_count) for s in listed[1:]] == [("r2", 3), ("r1", 2), ("r0", 1)]

    page, total = store.query_snapshots(AGENT, limit=1, offset=1)
    assert (total, [s.snapshot_id for s in page]) == (3, [mine[1].snapshot_id])
    assert store.query_snapshots(AGENT, limit=2, offset=3) == ([], 3)
    assert store.query_snapshots("conversation.nobody") == ([], 0)
    for limit, offset in ((0, 0), (MAX_QUERY_LIMIT + 1, 0), (1, -1), (1, 2**63)):
        with pytest.raises(HistoryError) as err:
            store.query_snapshots(AGENT, limit=limit, offset=offset)
        assert err.value.key == "history_limit_out_of_range"


def test_a_purge_in_batches_deletes_everything_and_unlinks_across_them(
    path: Path,
) -> None:
    """Batches of 7: a parent in one batch and its child in another, or kept, are unlinked
    and the database is consistent after each; an event queued before the purge is kept."""
    store = HistoryStore(path, batch_window=60, purge_batch=7)
    store.open()
    try:
        chain: list[AgentHistoryEvent] = []
        for n in range(30):
            at = CUTOFF - (30 - n) * 60
            parent = chain[-1].event_id if chain else None
            chain.append(make(at, parent_event_id=parent))
        child = make(CUTOFF, parent_event_id=chain[-1].event_id)
        store.record_events([*chain, child])
        store.create_snapshot(snapshot(NOW, (chain[3], chain[20])))
        queued = make(CUTOFF + 1)
        store.enqueue(queued)

        assert store.purge_before(CUTOFF) == HistoryPurge(events=30, snapshots=1)

        remaining = store.query_events(HistoryQuery(ascending=True))[0]
        assert [e.event_id for e in remaining] == [child.event_id, queued.event_id]
        assert remaining[0].parent_event_id is None
        assert rows(path, "PRAGMA foreign_key_check") == []
        assert rows(path, "SELECT COUNT(*) FROM snapshot_events") == [(0,)]
    finally:
        store.close()


def test_a_purge_batch_commits_after_one_step_when_a_write_waits(
    store: HistoryStore, path: Path
) -> None:
    """A write that arrives while a batch runs waits for the step under way, not for the
    batch: the batch commits after its first step, consistent, and the purge goes on."""
    chain: list[AgentHistoryEvent] = []
    for n in range(400):
        parent = chain[-1].event_id if chain else None
        chain.append(make(CUTOFF - (400 - n) * 60, parent_event_id=parent))
    store.record_events(chain)
    store.create_snapshot(snapshot(NOW, (chain[2], chain[300])))

    def seen_by_the_write(conn: sqlite3.Connection) -> tuple[Any, ...]:
        """What a write queued behind the purge's first batch finds when it runs."""
        return (
            conn.execute("SELECT COUNT(*) FROM agent_history_events").fetchone()[0],
            conn.execute(
                "SELECT COUNT(*) FROM agent_history_events WHERE parent_event_id IS NULL"
            ).fetchone()[0],
            conn.execute("SELECT COUNT(*) FROM snapshot_events").fetchone()[0],
            conn.execute("PRAGMA foreign_key_check").fetchall(),
        )

    def jobs_queued(count: int) -> None:
        deadline = time.monotonic() + 10
        while store.waiting_jobs != count and time.monotonic() < deadline:
            time.sleep(0.001)
        assert store.waiting_jobs == count

    # The writer held up while the purge's first batch and then the write queue behind it.
    busy, go_on = threading.Event(), threading.Event()

    def hold_up(_conn: sqlite3.Connection) -> None:
        busy.set()
        go_on.wait(10)

    threading.Thread(target=store.run_on_writer, args=(hold_up,)).start()
    assert busy.wait(10)
    purged: list[HistoryPurge] = []
    purge = threading.Thread(target=lambda: purged.append(store.purge_before(CUTOFF)))
    purge.start()
    jobs_queued(1)
    seen: list[tuple[Any, ...]] = []
    write = threading.Thread(target=lambda: seen.append(store.run_on_writer(seen_by_the_write)))
    write.start()
    jobs_queued(2)
    go_on.set()
    write.join(10)
    purge.join(10)

    assert seen == [(400 - PURGE_FIRST_STEP, 1, 1, [])]  # one step, then the write
    assert purged == [HistoryPurge(events=400, snapshots=1)]
    assert store.query_events(HistoryQuery()) == ([], 0)


def test_a_purge_refreshes_the_planner_statistics(store: HistoryStore, path: Path) -> None:
    """PRAGMA optimize after a purge: the tables it shrank get statistics (sqlite_stat1)."""
    store.record_events([make(CUTOFF - n) for n in range(1, 400)] + [make(NOW)])
    assert store.delete_events_before(CUTOFF) == 399
    analysed = {table for (table,) in rows(path, "SELECT DISTINCT tbl FROM sqlite_stat1")}
    assert "agent_history_events" in analysed
