"""HistoryStore: the seed's seven behaviours, the full query, purge, faults and the schema.

Every test runs on a real SQLite file in tmp_path. Queued events are committed by flush()
(or observed through the store's commit count), never by waiting a fixed time.
"""

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
import dataclasses
from datetime import UTC, datetime
from pathlib import Path
import sqlite3
import threading
import time
from typing import Any
import uuid

import pytest

from custom_components.azure_openai_memory.lib.history import schema as history_schema
from custom_components.azure_openai_memory.lib.history.store import (
    MAX_EVENT_DATA_BYTES,
    MAX_QUERY_LIMIT,
    SCHEMA_VERSION,
    AgentHistoryEvent,
    HistoryError,
    HistoryEventType,
    HistoryQuery,
    HistorySnapshot,
    HistoryStatistics,
    HistoryStore,
)

NOW = datetime(2025, 10, 25, 11, 0, tzinfo=UTC).timestamp()
HOUR = 3600.0
AGENT = "conversation.azure_openai_memory"
OTHER = "conversation.kitchen"
SEED_TABLES = {"agent_history_events", "history_snapshots", "snapshot_events"}
SEED_INDEXES = {
    "idx_history_agent_id",
    "idx_history_timestamp",
    "idx_history_event_type",
    "idx_history_session_id",
    "idx_history_git_commit",
    "idx_history_agent_timestamp",
    "idx_history_agent_type",
    "idx_history_parent",
}
SEED_VIEWS = {"v_recent_agent_activity", "v_agent_event_summary", "v_event_chains"}
# Schema version 2: the side tables and counters, and the triggers that keep them.
INDEX_TABLES = {
    "history_event_types",
    "history_event_tags",
    "history_counts",
    "history_totals",
    "history_tag_counts",
    "history_sessions",
    "history_agent_sessions",
    "history_agent_session_counts",
    "history_bulk_insert",
}
INDEX_TRIGGERS = {"history_event_added", "history_event_removed", "history_event_changed"}
# Schema version 3: each event's reader class, its index and the trigger that follows it.
OWNER_INDEX = "idx_history_owner"
OWNER_TRIGGERS = {"history_event_owned", "history_event_owner"}


def make(
    kind: HistoryEventType | str = HistoryEventType.THOUGHT,
    data: Any = None,
    *,
    agent: str = AGENT,
    at: float = NOW,
    **fields: Any,
) -> AgentHistoryEvent:
    return AgentHistoryEvent.new(
        agent, kind, {"content": "thinking"} if data is None else data, timestamp=at, **fields
    )


def db_path(tmp_path: Path) -> Path:
    return tmp_path / "azure_openai_memory" / "history.db"


def raw(path: Path) -> closing[sqlite3.Connection]:
    """A connection of our own, beside the store's (another process, in effect)."""
    return closing(sqlite3.connect(path, isolation_level=None))


def count_rows(path: Path) -> int:
    with raw(path) as conn:
        result: int = conn.execute("SELECT COUNT(*) FROM agent_history_events").fetchone()[0]
        return result


def wait_for_rows(path: Path, count: int, timeout: float = 10.0) -> None:
    """Return once the database holds `count` events (written by the store's own thread)."""
    deadline = time.monotonic() + timeout
    while count_rows(path) < count:
        assert time.monotonic() < deadline, f"{count_rows(path)} of {count} events written"
        time.sleep(0.01)


def events_in_the_file_alone(path: Path, copy: Path) -> int:
    """Events the database file holds without its log (0 before its tables are in it)."""
    copy.write_bytes(path.read_bytes())
    try:
        return count_rows(copy)
    except sqlite3.OperationalError:
        return 0


def wal_frames(path: Path) -> int:
    """Frames in the database's write-ahead log; every commit appends at least one."""
    wal = path.with_name(path.name + "-wal")
    page_size: int = raw_page_size(path)
    return max(wal.stat().st_size - 32, 0) // (24 + page_size) if wal.exists() else 0


def raw_page_size(path: Path) -> int:
    with raw(path) as conn:
        size: int = conn.execute("PRAGMA page_size").fetchone()[0]
        return size


def ids(events: list[AgentHistoryEvent]) -> list[str]:
    return [event.event_id for event in events]


# --- The seed's seven tested behaviours ---------------------------------------------------


def test_record_and_retrieve_event(store: HistoryStore) -> None:
    event = make(
        HistoryEventType.ACTION,
        {"action": "light.turn_on", "entity_id": "light.kitchen", "brightness": 0.85},
        session_id="01JB8Y3Z",
        tags=("lights",),
        metadata={"device_id": "satellite-1"},
        ref="abc123def456",
    )
    store.record_event(event)

    assert store.get_event(event.event_id) == event
    assert store.get_events(AGENT, 10) == [event]
    assert store.get_events(OTHER, 10) == []
    assert event.as_dict() == {
        "event_id": event.event_id,
        "agent_id": AGENT,
        "timestamp": "2025-10-25T11:00:00Z",
        "event_type": "action",
        "event_data": {"action": "light.turn_on", "entity_id": "light.kitchen", "brightness": 0.85},
        "session_id": "01JB8Y3Z",
        "parent_event_id": None,
        "tags": ["lights"],
        "metadata": {"device_id": "satellite-1"},
        "ref": "abc123def456",
    }


def test_batch_record_is_one_transaction(store: HistoryStore, path: Path) -> None:
    plan = make(HistoryEventType.THOUGHT, {"content": "Planning the task"})
    act = make(HistoryEventType.ACTION, {"action": "execute_plan"}, at=NOW + 1)
    answer = make(
        HistoryEventType.COMMUNICATION, {"text": "done"}, at=NOW + 2, parent_event_id=act.event_id
    )
    store.record_events([plan, act, answer])  # a parent earlier in the batch is fine
    assert store.get_events(AGENT, 10) == [answer, act, plan]

    orphan = make(at=NOW + 4, parent_event_id=str(uuid.uuid4()))
    with pytest.raises(HistoryError) as err:
        store.record_events([make(at=NOW + 3), orphan])
    assert err.value.key == "unknown_event"
    assert err.value.placeholders["field"] == "parent_event_id"
    assert count_rows(path) == 3  # neither event of the refused batch


def test_events_by_type(store: HistoryStore) -> None:
    thoughts = [make(HistoryEventType.THOUGHT, {"n": n}, at=NOW + n) for n in range(3)]
    store.record_events([*thoughts, make(HistoryEventType.DECISION, at=NOW + 5)])
    store.record_event(make(HistoryEventType.THOUGHT, agent=OTHER))

    assert store.get_events_by_type(AGENT, HistoryEventType.THOUGHT, 50) == thoughts[::-1]
    assert store.get_events_by_type(AGENT, "thought", 2) == thoughts[:0:-1]
    assert [e.event_type for e in store.get_events_by_type(AGENT, "decision", 50)] == [
        HistoryEventType.DECISION
    ]
    assert store.get_events_by_type(AGENT, HistoryEventType.ERROR, 50) == []


def test_create_and_retrieve_snapshot(store: HistoryStore) -> None:
    events = [make(data={"n": n}, at=NOW + n) for n in range(3)]
    store.record_events(events)
    unrecorded = make(data={"n": 9}, at=NOW + 9)
    snapshot = HistorySnapshot(
        snapshot_id=str(uuid.uuid4()),
        agent_id=AGENT,
        timestamp=NOW + 10,
        events=(*store.get_events(AGENT, 100), unrecorded),
        ref="abc123def456",
        description="Checkpoint before major refactor",
        metadata={"reason": "test"},
        agent_state={"status": "running", "memory_usage": 1024000, "cpu_usage": 45.2},
    )
    store.create_snapshot(snapshot)

    stored = store.get_snapshot(snapshot.snapshot_id)
    assert stored == dataclasses.replace(snapshot, events=(*events, unrecorded))
    assert store.get_event(unrecorded.event_id) == unrecorded  # stored with its snapshot
    assert store.get_snapshot(str(uuid.uuid4())) is None
    assert stored is not None
    shape = stored.as_dict()
    assert shape["timestamp"] == "2025-10-25T11:00:10Z"
    assert [e["event_data"] for e in shape["events"]] == [{"n": 0}, {"n": 1}, {"n": 2}, {"n": 9}]
    assert shape["agent_state"]["cpu_usage"] == 45.2

    # The same id again replaces the snapshot (and its links).
    store.create_snapshot(dataclasses.replace(snapshot, events=(events[0],), description="v2"))
    again = store.get_snapshot(snapshot.snapshot_id.upper())  # ids are matched however typed
    assert again is not None
    assert (again.description, again.events) == ("v2", (events[0],))


def test_statistics(store: HistoryStore) -> None:
    store.record_events(
        [
            make(HistoryEventType.THOUGHT, at=NOW, session_id="s1"),
            make(HistoryEventType.THOUGHT, at=NOW + 10, session_id="s1", ref="zzz"),
            make(HistoryEventType.TOOL_USE, at=NOW + 20, session_id="s2", ref="aaa"),
            make(HistoryEventType.ERROR, at=NOW + 30, ref="zzz"),
            make(HistoryEventType.ACTION, agent=OTHER, at=NOW - 100, session_id="s9", ref="o"),
        ]
    )
    store.create_snapshot(
        HistorySnapshot(
            str(uuid.uuid4()), AGENT, NOW + 40, events=tuple(store.get_events(AGENT, 1))
        )
    )

    stats = store.get_statistics(AGENT)
    assert stats == HistoryStatistics(
        total_events=4,
        events_by_type={
            "thought": 2,
            "action": 0,
            "tool_use": 1,
            "state_change": 0,
            "communication": 0,
            "decision": 0,
            "error": 1,
            "system": 0,
        },
        total_snapshots=1,
        earliest_event=NOW,
        latest_event=NOW + 30,
        unique_sessions=2,
        refs=["zzz", "aaa"],  # in the order first seen
    )
    everyone = store.get_statistics()
    assert (everyone.total_events, everyone.unique_sessions) == (5, 3)
    assert (everyone.earliest_event, everyone.refs) == (NOW - 100, ["o", "zzz", "aaa"])
    assert everyone.events_by_type["action"] == 1
    assert everyone.as_dict()["earliest_event"] == "2025-10-25T10:58:20Z"

    empty = store.get_statistics("conversation.nobody")
    assert (empty.total_events, empty.earliest_event, empty.refs) == (0, None, [])
    assert empty.as_dict()["latest_event"] is None


def test_event_chain(store: HistoryStore) -> None:
    question = make(HistoryEventType.COMMUNICATION, {"text": "lights on"})
    decision = make(HistoryEventType.DECISION, at=NOW + 1, parent_event_id=question.event_id)
    tool = make(HistoryEventType.TOOL_USE, at=NOW + 2, parent_event_id=decision.event_id)
    sibling = make(HistoryEventType.TOOL_USE, at=NOW + 3, parent_event_id=decision.event_id)
    for event in (question, decision, tool, sibling):
        store.enqueue(event)  # read through the queue: the chain flushes it first

    assert store.get_event_chain(tool.event_id) == [question, decision, tool]
    assert store.get_event_chain(sibling.event_id) == [question, decision, sibling]
    assert store.get_event_chain(question.event_id) == [question]
    with pytest.raises(HistoryError) as err:
        store.get_event_chain(str(uuid.uuid4()))
    assert err.value.key == "unknown_event"
    with pytest.raises(HistoryError) as err:
        store.get_event_chain("not-an-id")
    assert err.value.key == "invalid_event_id"


def test_time_range(store: HistoryStore) -> None:
    events = [make(data={"h": h}, at=NOW + h * HOUR) for h in range(6)]
    store.record_events([*reversed(events), make(agent=OTHER, at=NOW + 2 * HOUR)])

    # Both ends included, oldest first, only the agent's.
    assert store.get_events_by_time_range(AGENT, NOW + HOUR, NOW + 3 * HOUR) == events[1:4]
    assert store.get_events_by_time_range(AGENT, NOW + 10 * HOUR, NOW + 11 * HOUR) == []
    with pytest.raises(HistoryError) as err:
        store.get_events_by_time_range(AGENT, NOW + HOUR, NOW)
    assert err.value.key == "history_end_before_start"


# --- Queries beyond the seed's tests ------------------------------------------------------


@pytest.fixture
def household(store: HistoryStore) -> list[AgentHistoryEvent]:
    """Ten events of two agents, two sessions, four types, some tagged; oldest first."""
    kinds = [
        HistoryEventType.COMMUNICATION,
        HistoryEventType.DECISION,
        HistoryEventType.TOOL_USE,
        HistoryEventType.ACTION,
    ]
    tag_sets = [(), ("lights",), ("lights", "kitchen"), ("kitchen",), ("lights", "kitchen", "x")]
    events = [
        make(
            kinds[n % 4],
            {"n": n},
            agent=OTHER if n % 5 == 4 else AGENT,
            at=NOW + n * HOUR,
            session_id="s1" if n < 5 else "s2",
            tags=tag_sets[n % 5],
        )
        for n in range(10)
    ]
    store.record_events(events)
    return events


def test_query_events_every_field(store: HistoryStore, household: list[AgentHistoryEvent]) -> None:
    def run(**fields: Any) -> tuple[list[int], int]:
        page, total = store.query_events(HistoryQuery(**fields))
        return [event.event_data["n"] for event in page], total

    assert run() == ([9, 8, 7, 6, 5, 4, 3, 2, 1, 0], 10)  # newest first
    assert run(agent_id=OTHER) == ([9, 4], 2)
    assert run(session_id="s2") == ([9, 8, 7, 6, 5], 5)
    assert run(event_type=HistoryEventType.TOOL_USE) == ([6, 2], 2)
    assert run(event_type="decision", agent_id=AGENT) == ([5, 1], 2)
    assert run(tags=("lights",)) == ([9, 7, 6, 4, 2, 1], 6)
    assert run(tags=("lights", "kitchen")) == ([9, 7, 4, 2], 4)  # all of them, not any
    assert run(tags=("kitchen", "lights", "kitchen")) == ([9, 7, 4, 2], 4)
    assert run(tags=("nowhere",)) == ([], 0)
    assert run(start_time=NOW + 3 * HOUR, end_time=NOW + 5 * HOUR) == ([5, 4, 3], 3)
    assert run(start_time=NOW + 8 * HOUR) == ([9, 8], 2)
    assert run(end_time=NOW + HOUR) == ([1, 0], 2)
    assert run(ascending=True, limit=3) == ([0, 1, 2], 10)
    assert run(ascending=True, limit=3, offset=3) == ([3, 4, 5], 10)
    assert run(limit=4, offset=8) == ([1, 0], 10)
    assert run(limit=4, offset=10) == ([], 10)
    assert run(limit=4, offset=50) == ([], 10)
    assert run(
        agent_id=AGENT,
        session_id="s1",
        tags=("kitchen",),
        start_time=NOW + HOUR,
        end_time=NOW + 9 * HOUR,
        ascending=True,
        limit=1,
    ) == ([2], 2)
    page, _ = store.query_events(HistoryQuery(limit=1))
    assert page == [household[-1]]


def test_events_by_session(store: HistoryStore, household: list[AgentHistoryEvent]) -> None:
    assert store.get_events_by_session("s1") == household[:5]  # both agents, oldest first
    assert store.get_events_by_session("s3") == []


def test_events_of_one_instant_keep_their_order(store: HistoryStore) -> None:
    events = [make(data={"n": n}) for n in range(5)]  # one timestamp for all
    for event in events:
        store.enqueue(event)
    assert store.query_events(HistoryQuery(ascending=True))[0] == events
    assert store.get_events(AGENT, 10) == events[::-1]
    assert store.get_events_by_session("none") == []


def test_timestamps_keep_microseconds(store: HistoryStore) -> None:
    first = make(at=NOW + 0.000001)
    second = make(at=NOW + 0.0000011)  # rounds to the same microsecond as `first`
    third = make(at=NOW + 0.000002)
    store.record_events([third, second, first])
    assert second.timestamp == first.timestamp == NOW + 0.000001
    assert store.query_events(HistoryQuery(ascending=True))[0] == [second, first, third]


def test_delete_events_before_is_exact(store: HistoryStore, path: Path) -> None:
    cutoff = NOW
    older = make(data={"at": "cutoff - 1 us"}, at=(round(cutoff * 1e6) - 1) / 1e6)
    exact = make(data={"at": "cutoff"}, at=cutoff, parent_event_id=older.event_id)
    newer = make(data={"at": "cutoff + 1 us"}, at=(round(cutoff * 1e6) + 1) / 1e6)
    ancient = make(at=cutoff - 90 * 86400)
    store.record_events([ancient, older, exact, newer])
    snapshot_id = str(uuid.uuid4())
    store.create_snapshot(HistorySnapshot(snapshot_id, AGENT, NOW, (older, exact)))

    assert store.delete_events_before(cutoff) == 2
    assert store.query_events(HistoryQuery(ascending=True))[0] == [
        dataclasses.replace(exact, parent_event_id=None),  # its parent is gone
        newer,
    ]
    kept = store.get_snapshot(snapshot_id)
    assert kept is not None
    assert kept.events == (dataclasses.replace(exact, parent_event_id=None),)
    assert store.delete_events_before(cutoff) == 0
    with raw(path) as conn:
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_list_snapshots(store: HistoryStore) -> None:
    event = make()
    store.record_event(event)
    made = [HistorySnapshot(str(uuid.uuid4()), AGENT, NOW + n, (event,)) for n in range(3)]
    for snapshot in made:
        store.create_snapshot(snapshot)
    store.create_snapshot(HistorySnapshot(str(uuid.uuid4()), OTHER, NOW, ()))

    assert store.list_snapshots(AGENT) == made[::-1]  # newest first, with their events
    assert [s.agent_id for s in store.list_snapshots(OTHER)] == [OTHER]
    assert store.list_snapshots("conversation.nobody") == []


def test_settings_round_trip(store: HistoryStore, path: Path) -> None:
    assert store.get_setting("retention_days", 90) == 90
    store.set_setting("retention_days", 30.5)
    store.set_setting("recording", {"enabled": False, "agents": ["a", "b"]})
    store.set_setting("retention_days", 14)
    assert store.get_setting("retention_days", 90) == 14
    assert store.get_setting("recording", None) == {"enabled": False, "agents": ["a", "b"]}
    store.close()

    reopened = HistoryStore(path)
    reopened.open()
    try:
        assert reopened.get_setting("retention_days", 90) == 14
    finally:
        reopened.close()


def test_restart_keeps_everything(path: Path) -> None:
    store = HistoryStore(path, batch_window=60)
    store.open()
    recorded = [make(data={"n": n}, at=NOW + n, session_id="s1") for n in range(3)]
    store.record_events(recorded)
    queued = make(HistoryEventType.COMMUNICATION, at=NOW + 5, parent_event_id=recorded[-1].event_id)
    store.enqueue(queued)  # committed by close(), long before its batch window
    snapshot = HistorySnapshot(str(uuid.uuid4()), AGENT, NOW, tuple(recorded), ref="r1")
    store.create_snapshot(snapshot)
    store.set_setting("retention_days", 7)
    store.close()
    store.close()  # twice is harmless

    again = HistoryStore(path)
    assert again.open() is None
    try:
        assert again.get_events(AGENT, 10) == [queued, *recorded[::-1]]
        assert again.get_snapshot(snapshot.snapshot_id) == snapshot
        assert again.get_setting("retention_days", 90) == 7
        assert again.get_event_chain(queued.event_id)[-2:] == [recorded[-1], queued]
        assert again.schema_version == SCHEMA_VERSION
        assert again.dropped_events == 0
    finally:
        again.close()


def test_reads_see_what_was_enqueued_before_them(store: HistoryStore, path: Path) -> None:
    event = make()
    store.enqueue(event)
    assert store.pending_events == 1
    assert count_rows(path) == 0  # the batch window is a minute long
    assert store.get_events(AGENT, 1) == [event]
    assert store.pending_events == 0
    assert count_rows(path) == 1


def test_batch_window_commits_one_transaction(path: Path) -> None:
    store = HistoryStore(path, batch_window=0.2)
    store.open()
    try:
        frames = wal_frames(path)
        start = time.monotonic()
        for n in range(50):
            store.enqueue(make(data={"n": n}))
        wait_for_rows(path, 50)
        elapsed = time.monotonic() - start
        assert elapsed >= 0.2
        assert count_rows(path) == 50
        # All fifty in one transaction: fifty commits would add at least fifty frames.
        assert wal_frames(path) - frames < 50
    finally:
        store.close()


def test_the_log_is_copied_into_the_database_beside_the_writer(path: Path, tmp_path: Path) -> None:
    """No write waits for a checkpoint: the writer leaves the log to a thread of its own,
    which copies what was written into the database file soon after (one transaction of
    2,000 events is far from the pages at which the writer would checkpoint itself)."""
    store = HistoryStore(path, checkpoint_interval=0.01)
    copy = tmp_path / "database-file-alone.db"
    # Twice: a store opened again counts what its new connection writes from nothing.
    for turn in range(2):
        store.open()
        try:
            first = turn * 5000
            store.record_events(
                [make(data={"n": n}, at=NOW + n) for n in range(first, first + 2000)]
            )
            deadline = time.monotonic() + 10
            written = (turn + 1) * 2000
            while (copied := events_in_the_file_alone(path, copy)) < written:
                assert time.monotonic() < deadline, f"{copied} of {written} events copied"
                time.sleep(0.01)
        finally:
            store.close()


def test_queued_event_with_unknown_parent_is_kept_without_it(store: HistoryStore) -> None:
    """A queued event cannot refuse its caller any more; it loses the link, not its place."""
    event = make(parent_event_id=str(uuid.uuid4()))
    store.enqueue(event)
    store.flush()
    assert store.get_events(AGENT, 1) == [dataclasses.replace(event, parent_event_id=None)]


def test_the_same_event_twice_is_stored_once(store: HistoryStore, path: Path) -> None:
    event = make()
    store.record_event(event)
    store.record_event(event)
    store.enqueue(event)
    store.flush()
    assert count_rows(path) == 1


def test_event_ids_are_time_ordered_uuids() -> None:
    events = [make(at=NOW + n * 0.002) for n in range(20)]
    for event in events:
        parsed = uuid.UUID(event.event_id)
        assert (parsed.version, str(parsed)) == (7, event.event_id)
        assert parsed.int >> 80 == int(event.timestamp * 1000)  # milliseconds of its time
    assert sorted(ids(events)) == ids(events)
    assert len(set(ids([make() for _ in range(1000)]))) == 1000


# --- Faults -------------------------------------------------------------------------------


def test_garbage_file_is_moved_aside(path: Path) -> None:
    path.parent.mkdir(parents=True)
    garbage = b"this is not a database, it is a shopping list\n" * 200
    path.write_bytes(garbage)
    store = HistoryStore(path, clock=lambda: NOW)
    moved = store.open()
    try:
        assert moved == path.with_name("history.db.corrupt.20251025T110000.000000Z")
        assert moved.read_bytes() == garbage  # kept, never deleted
        event = make()
        store.record_event(event)
        assert store.get_events(AGENT, 1) == [event]
    finally:
        store.close()

    path.write_bytes(garbage)  # the same second again: a second name, the first kept
    second = HistoryStore(path, clock=lambda: NOW)
    try:
        assert second.open() == path.with_name("history.db.corrupt.20251025T110000.000000Z.1")
        assert moved.read_bytes() == garbage
    finally:
        second.close()


def _filled_database(path: Path, count: int = 2000) -> int:
    """A closed database of `count` events; its size."""
    store = HistoryStore(path)
    store.open()
    store.record_events([make(data={"n": n, "text": "x" * 200}, at=NOW + n) for n in range(count)])
    store.close()
    return path.stat().st_size


def test_truncated_database_is_moved_aside(path: Path) -> None:
    size = _filled_database(path)
    with path.open("r+b") as file:
        file.truncate(size // 2)
    store = HistoryStore(path)
    moved = store.open()
    try:
        assert moved is not None
        assert moved.name.startswith("history.db.corrupt.")
        assert moved.stat().st_size == size // 2
        assert store.get_statistics().total_events == 0  # a fresh database
    finally:
        store.close()


def opens_as_it_is(path: Path) -> bool:
    """Whether the store opens the file in place (None: nothing was moved aside)."""
    store = HistoryStore(path)
    try:
        return store.open() is None
    finally:
        store.close()


def test_header_check_compares_the_size_with_the_header(path: Path) -> None:
    """SQLite also notices most truncations itself; this check does not depend on which
    pages a read happens to touch."""
    size = _filled_database(path)
    copy = path.with_name("copy.db")
    copy.write_bytes(path.read_bytes())
    assert opens_as_it_is(copy)
    assert opens_as_it_is(path.with_name("missing.db"))  # a new database
    copy.write_bytes(path.read_bytes()[: size - 4096])  # a page short
    assert not opens_as_it_is(copy)
    copy.write_bytes(path.read_bytes()[: size - 4096 - 100])  # not a whole number of pages
    assert not opens_as_it_is(copy)
    copy.write_bytes(b"")
    assert opens_as_it_is(copy)  # SQLite starts an empty file as a new database


def test_a_database_with_its_write_ahead_log_opens_whole(path: Path, tmp_path: Path) -> None:
    """Copied while open (as a power cut leaves it), the log holds the newest pages:
    SQLite completes the file from it, nothing is set aside."""
    store = HistoryStore(path)
    store.open()
    try:
        store.record_events([make(data={"n": n}, at=NOW + n) for n in range(200)])
        crashed = tmp_path / "crashed"
        crashed.mkdir()
        for name in ("history.db", "history.db-wal"):
            (crashed / name).write_bytes(path.with_name(name).read_bytes())
    finally:
        store.close()
    assert (crashed / "history.db-wal").stat().st_size > 0
    again = HistoryStore(crashed / "history.db")
    try:
        assert again.open() is None
        assert again.get_statistics().total_events == 200
    finally:
        again.close()


def test_damaged_pages_are_moved_aside(path: Path) -> None:
    """The header page intact, the tables behind it overwritten."""
    size = _filled_database(path)
    with path.open("r+b") as file:
        file.seek(4096)
        file.write(b"\xa5" * (size - 4096))
    store = HistoryStore(path)
    try:
        moved = store.open()
        assert moved is not None
        assert moved.stat().st_size == size
        assert store.get_events(AGENT, 10) == []
    finally:
        store.close()


def test_newer_schema_is_refused_and_left_alone(path: Path) -> None:
    _filled_database(path, 3)
    with raw(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    before = path.read_bytes()
    store = HistoryStore(path)
    with pytest.raises(sqlite3.DatabaseError, match="newer"):
        store.open()
    assert path.read_bytes() == before
    assert list(path.parent.glob("*.corrupt.*")) == []


class Locked:
    """Another process holding the database's write lock."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)

    def __enter__(self) -> "Locked":
        self.conn.execute("BEGIN EXCLUSIVE")
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.execute("ROLLBACK")

    def close(self) -> None:
        self.conn.close()


@contextmanager
def locked_store(
    path: Path, busy_timeout: float = 0.05, **options: Any
) -> Iterator[tuple[HistoryStore, Locked]]:
    """A store open on path, waiting busy_timeout on a lock, and another process that can
    take the database's write lock (with locker: ...); both closed after."""
    store = HistoryStore(path, **options)
    store.busy_timeout = busy_timeout
    store.open()
    locker = Locked(path)
    try:
        yield store, locker
    finally:
        locker.close()
        store.close()


def test_locked_database_keeps_events_and_reports_once(path: Path) -> None:
    failures: list[Exception] = []
    with locked_store(path, batch_window=60, on_failure=failures.append) as (store, locker):
        first = [make(data={"n": n}, at=NOW + n) for n in range(3)]
        with locker:
            for event in first[:2]:
                store.enqueue(event)
            store.flush()  # the attempt fails: no exception here, the events stay queued
            assert len(failures) == 1
            assert isinstance(failures[0], sqlite3.OperationalError)
            assert "locked" in str(failures[0])
            assert (store.failing, store.pending_events) == (True, 2)

            store.enqueue(first[2])
            store.flush()
            with pytest.raises(sqlite3.OperationalError):
                store.record_event(make(at=NOW + 10))
            assert len(failures) == 1  # one report for the whole streak
            # Reads answer from what is stored (WAL), without waiting on the lock.
            assert store.get_events(AGENT, 10) == []
            assert store.pending_events == 3

        store.flush()
        assert (store.failing, store.pending_events, store.dropped_events) == (False, 0, 0)
        assert store.get_events(AGENT, 10) == first[::-1]

        with locker:  # a new streak after a success is reported again
            store.enqueue(make(at=NOW + 20))
            store.flush()
            assert len(failures) == 2
        store.flush()
        assert store.get_statistics().total_events == 4


def test_failed_batch_is_retried_after_the_window(path: Path) -> None:
    failed = threading.Event()
    with locked_store(path, batch_window=0.05, on_failure=lambda err: failed.set()) as (
        store,
        locker,
    ):
        with locker:
            store.enqueue(make())
            assert failed.wait(10)
        wait_for_rows(path, 1)  # no flush: the writer retried
        assert count_rows(path) == 1
        assert not store.failing


def test_enqueue_does_not_wait_on_a_locked_database(path: Path) -> None:
    failed = threading.Event()
    with locked_store(
        path, batch_window=0, on_failure=lambda err: failed.set(), busy_timeout=1.0
    ) as (store, locker):
        with locker:
            events = [make(data={"n": n}) for n in range(1000)]
            start = time.monotonic()
            for event in events:
                store.enqueue(event)
            enqueued = time.monotonic() - start
            assert failed.wait(10)
            failed_after = time.monotonic() - start
        assert enqueued < 0.5 < failed_after  # the writer waited on the lock; callers did not
        store.flush()
        assert count_rows(path) == 1000


def test_full_queue_drops_the_oldest_and_counts(path: Path) -> None:
    failures: list[Exception] = []
    events = [make(data={"n": n}, at=NOW + n) for n in range(7)]
    with locked_store(path, batch_window=60, max_queue=3, on_failure=failures.append) as (
        store,
        locker,
    ):
        with locker:
            for event in events[:5]:
                store.enqueue(event)
            assert (store.pending_events, store.dropped_events) == (3, 2)
            store.flush()
            assert (store.pending_events, store.dropped_events) == (3, 2)
            store.enqueue(events[5])
            store.enqueue(events[6])
            assert (store.pending_events, store.dropped_events) == (3, 4)
        store.flush()
        assert store.get_events(AGENT, 10) == events[:3:-1]  # the newest three
        assert len(failures) == 1


def test_close_while_locked_counts_what_is_lost(path: Path) -> None:
    with locked_store(path, batch_window=60) as (store, locker):
        with locker:
            store.enqueue(make())
            store.enqueue(make())
            store.close()
        assert store.dropped_events == 2
        store.enqueue(make())  # after close: counted, never raised into the caller
        assert store.dropped_events == 3


def test_failure_callback_errors_do_not_stop_the_writer(path: Path) -> None:
    def broken(err: Exception) -> None:
        raise RuntimeError("callback bug")

    with locked_store(path, batch_window=60, on_failure=broken) as (store, locker):
        with locker:
            store.enqueue(make())
            store.flush()
        store.flush()
        assert count_rows(path) == 1


def test_reads_and_writes_from_many_threads(store: HistoryStore, path: Path) -> None:
    def writer(worker: int) -> None:
        for n in range(50):
            event = make(data={"w": worker, "n": n}, agent=f"agent_{worker}")
            if n % 10 == 0:
                store.record_event(event)
            else:
                store.enqueue(event)

    def reader(worker: int) -> int:
        seen = 0
        for _ in range(30):
            page, total = store.query_events(HistoryQuery(agent_id=f"agent_{worker}"))
            assert len(page) == total
            seen = max(seen, total)
            store.get_statistics()
        return seen

    with ThreadPoolExecutor(8) as pool:
        writes = [pool.submit(writer, w) for w in range(4)]
        reads = [pool.submit(reader, w) for w in range(4)]
        for future in writes:
            future.result()
        assert all(0 <= future.result() <= 50 for future in reads)
    assert store.get_statistics().total_events == 200
    assert count_rows(path) == 200


# --- Bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "key"),
    [
        (lambda: make("dance"), "unknown_event_type"),
        (lambda: make(42), "unknown_event_type"),
        (lambda: make(parent_event_id="not-a-uuid"), "invalid_event_id"),
        (lambda: make(data={1, 2}), "event_data_not_json"),
        (lambda: make(data={"big": "x" * MAX_EVENT_DATA_BYTES}), "event_data_too_large"),
        (lambda: make(metadata={"when": object()}), "event_data_not_json"),
        (lambda: HistoryQuery(start_time=NOW, end_time=NOW - 1), "history_end_before_start"),
        (lambda: HistoryQuery(limit=0), "history_limit_out_of_range"),
        (lambda: HistoryQuery(limit=MAX_QUERY_LIMIT + 1), "history_limit_out_of_range"),
        (lambda: HistoryQuery(limit=True), "history_limit_out_of_range"),
        (lambda: HistoryQuery(offset=-1), "history_limit_out_of_range"),
        (lambda: HistoryQuery(event_type="dance"), "unknown_event_type"),  # type: ignore[arg-type]
    ],
)
def test_bad_input_raises_translated_errors(build: Callable[[], object], key: str) -> None:
    with pytest.raises(HistoryError) as err:
        build()
    assert err.value.key == key


def test_bad_input_writes_nothing(store: HistoryStore, path: Path) -> None:
    good = make()
    bad = dataclasses.replace(make(), event_id="not-a-uuid")
    with pytest.raises(HistoryError) as err:
        store.record_events([good, bad])
    assert (err.value.key, err.value.placeholders["field"]) == ("invalid_event_id", "event_id")
    with pytest.raises(HistoryError):
        store.enqueue(dataclasses.replace(good, event_data={"x": {1, 2}}))
    assert store.pending_events == 0
    with pytest.raises(HistoryError) as err:
        store.get_event("nope")
    assert err.value.key == "invalid_event_id"
    with pytest.raises(HistoryError) as err:
        store.get_snapshot("nope")
    assert err.value.key == "invalid_event_id"
    with pytest.raises(HistoryError) as err:
        store.get_events(AGENT, MAX_QUERY_LIMIT + 1)
    assert err.value.key == "history_limit_out_of_range"
    with pytest.raises(HistoryError) as err:
        store.create_snapshot(
            HistorySnapshot(str(uuid.uuid4()), AGENT, NOW, (good,), agent_state={"x": {1}})
        )
    assert err.value.placeholders["field"] == "agent_state"
    assert count_rows(path) == 0


def test_limits_at_the_edges_are_accepted() -> None:
    assert HistoryQuery(limit=1).limit == 1
    assert HistoryQuery(limit=MAX_QUERY_LIMIT, start_time=NOW, end_time=NOW).limit == 10_000
    assert make(data={"big": "x" * (MAX_EVENT_DATA_BYTES - 12)}).event_data["big"]
    assert HistoryQuery(event_type="tool_use").event_type is HistoryEventType.TOOL_USE  # type: ignore[arg-type]
    assert make(data={1: "a"}).event_data == {"1": "a"}  # as it reads back from JSON


# --- Schema -------------------------------------------------------------------------------


def test_schema_objects_and_settings(store: HistoryStore, path: Path) -> None:
    with raw(path) as conn:
        objects: dict[str, set[str]] = {}
        for kind, name in conn.execute(
            "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
        ):
            objects.setdefault(kind, set()).add(name)
        assert objects == {
            "table": SEED_TABLES | {"history_settings"} | INDEX_TABLES,
            "index": SEED_INDEXES | {OWNER_INDEX},
            "view": SEED_VIEWS,
            "trigger": INDEX_TRIGGERS | OWNER_TRIGGERS,
        }
        columns = [row[1] for row in conn.execute("PRAGMA table_info(agent_history_events)")]
        assert columns == [
            "event_id",
            "agent_id",
            "timestamp",
            "event_type",
            "event_data",
            "git_commit_hash",
            "session_id",
            "parent_event_id",
            "tags",
            "metadata",
            "created_at",
            "owner",
        ]
        snapshot_columns = [row[1] for row in conn.execute("PRAGMA table_info(history_snapshots)")]
        assert "git_commit" in snapshot_columns
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    # The writer's connection: foreign keys on, NORMAL sync under WAL.
    assert store.run_on_writer(lambda conn: conn.execute("PRAGMA foreign_keys").fetchone()[0]) == 1
    assert store.run_on_writer(lambda conn: conn.execute("PRAGMA synchronous").fetchone()[0]) == 1
    assert store.schema_version == 3
    assert store.path == path
    assert store.size_bytes() > 0


def test_timestamps_are_stored_as_integer_microseconds(store: HistoryStore, path: Path) -> None:
    store.record_event(make(at=NOW + 0.123456))
    with raw(path) as conn:
        stored, kind = conn.execute(
            "SELECT timestamp, typeof(timestamp) FROM agent_history_events"
        ).fetchone()
    assert (stored, kind) == (round(NOW * 1e6) + 123456, "integer")


def test_views(store: HistoryStore, path: Path) -> None:
    now = time.time()
    parent = make(HistoryEventType.THOUGHT, at=now - 60, session_id="s", ref="c1")
    child = make(HistoryEventType.ACTION, at=now - 30, parent_event_id=parent.event_id)
    old = make(HistoryEventType.THOUGHT, at=now - 3 * 86400, session_id="t", ref="c2")
    store.record_events([old, parent, child])
    with raw(path) as conn:
        recent = conn.execute(
            "SELECT agent_id, event_type, event_count FROM v_recent_agent_activity "
            "ORDER BY event_type"
        ).fetchall()
        assert recent == [(AGENT, "action", 1), (AGENT, "thought", 1)]  # the last day only
        summary = conn.execute("SELECT * FROM v_agent_event_summary").fetchall()
        assert summary == [
            (AGENT, 3, 2, 2, round(old.timestamp * 1e6), round(child.timestamp * 1e6))
        ]
        chains = conn.execute("SELECT * FROM v_event_chains").fetchall()
        assert chains == [(child.event_id, "action", parent.event_id, "thought", AGENT)]


def test_chain_ends_cleanly_on_a_cycle_or_missing_parent(store: HistoryStore, path: Path) -> None:
    """Only data written by hand can do this: foreign keys off, rows inserted with SQL."""
    a, b, c, loop, orphan = (str(uuid.uuid4()) for _ in range(5))
    rows = [
        (a, b, 1),  # a's parent is b, b's parent is c, c's parent is a: a cycle
        (b, c, 2),
        (c, a, 3),
        (loop, loop, 4),  # its own parent
        (orphan, str(uuid.uuid4()), 5),  # a parent that was never stored
    ]
    with raw(path) as conn:
        conn.executemany(
            "INSERT INTO agent_history_events (event_id, agent_id, timestamp, event_type, "
            "event_data, parent_event_id) VALUES (?, 'hand', ?, 'system', '{}', ?)",
            [(event_id, stamp, parent) for event_id, parent, stamp in rows],
        )
    assert ids(store.get_event_chain(a)) == [c, b, a]
    assert ids(store.get_event_chain(b)) == [a, c, b]
    assert ids(store.get_event_chain(loop)) == [loop]
    assert ids(store.get_event_chain(orphan)) == [orphan]


def test_hand_written_rows_read_back(store: HistoryStore, path: Path) -> None:
    with raw(path) as conn:
        conn.execute(
            "INSERT INTO agent_history_events (event_id, agent_id, timestamp, event_type, "
            "event_data, tags) VALUES (?, 'hand', 5, 'Imported', 'not json', '[\"t\"]')",
            (str(uuid.uuid4()),),
        )
    (event,) = store.get_events("hand", 1)
    assert (event.event_type, event.event_data, event.tags) == (
        HistoryEventType.SYSTEM,
        "not json",
        ("t",),
    )


def _current_database(path: Path) -> None:
    """A database of the current schema version, holding one event."""
    store = HistoryStore(path)
    store.open()
    store.record_event(make())
    store.close()


def with_steps(
    monkeypatch: pytest.MonkeyPatch, *steps: Callable[[sqlite3.Connection], None]
) -> None:
    """The schema's migration steps, and these after them (a later schema version)."""
    monkeypatch.setattr(history_schema, "MIGRATIONS", (*history_schema.MIGRATIONS, *steps))


def test_migration_steps_run_in_order_and_keep_data(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _current_database(path)

    def to_next_version(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE agent_history_events ADD COLUMN language TEXT")
        conn.execute("UPDATE agent_history_events SET language = 'en'")

    assert opens_as_it_is(path)  # up to date: nothing runs
    with raw(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    with_steps(monkeypatch, to_next_version)
    store = HistoryStore(path)
    try:
        assert store.open() is None
        assert store.schema_version == SCHEMA_VERSION + 1
        assert store.get_statistics().total_events == 1
    finally:
        store.close()
    with raw(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
        assert conn.execute("SELECT language FROM agent_history_events").fetchall() == [("en",)]


def test_failed_migration_step_changes_nothing(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _current_database(path)

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE half_done (x)")
        conn.execute("DELETE FROM agent_history_events")
        raise sqlite3.OperationalError("disk I/O error")

    with_steps(monkeypatch, broken)
    with pytest.raises(sqlite3.OperationalError):
        HistoryStore(path).open()
    with raw(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("SELECT COUNT(*) FROM agent_history_events").fetchone()[0] == 1
        assert conn.execute(
            "SELECT COUNT(*) FROM sqlite_master WHERE name = 'half_done'"
        ).fetchone() == (0,)


def test_empty_database_migrates_from_version_0(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    with raw(empty) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
    store = HistoryStore(empty)
    try:
        assert store.open() is None
        assert store.schema_version == SCHEMA_VERSION
    finally:
        store.close()
    with raw(empty) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert names >= SEED_TABLES | SEED_INDEXES | SEED_VIEWS


def test_queries_are_answered_from_indexes(store: HistoryStore) -> None:
    """The plans behind the benchmark's figures: each read walks an index, none sorts."""
    store.record_event(make(session_id="s"))
    statements: list[str] = []
    store.trace_reads(statements.append)

    store.query_events(
        HistoryQuery(agent_id=AGENT, start_time=NOW - HOUR, end_time=NOW + HOUR, limit=1)
    )
    store.get_statistics(AGENT)
    store.trace_reads(None)
    plans = {}
    with raw(store.path) as conn:
        for statement in statements:
            if statement.startswith("SELECT"):
                plan = conn.execute(f"EXPLAIN QUERY PLAN {statement}").fetchall()
                plans[statement] = " | ".join(row[3] for row in plan)
    page = next(p for s, p in plans.items() if "LIMIT" in s)
    assert "idx_history_agent_timestamp" in page
    assert "TEMP B-TREE" not in page
    by_type = next(p for s, p in plans.items() if "GROUP BY event_type" in s)
    assert "history_totals" in by_type  # the counters (schema version 2)
    sessions = next(p for s, p in plans.items() if "session_counts" in s)
    assert "PRIMARY KEY" in sessions
    for statement, plan in plans.items():
        if "MIN(timestamp)" in statement and "git_commit_hash" not in statement:
            assert "idx_history_agent_timestamp" in plan


def test_store_must_be_open_to_read(path: Path) -> None:
    store = HistoryStore(path)
    with pytest.raises(RuntimeError):
        store.get_events(AGENT, 1)
    store.open()
    with pytest.raises(RuntimeError):
        store.open()
    store.close()
    with pytest.raises(RuntimeError):
        store.get_events(AGENT, 1)
