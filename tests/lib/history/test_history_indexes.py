"""Schema version 2: the side tables and counters that answer queries and statistics.

Every answer is checked against a plain Python reading of the same events, and every side
table and counter against a recount from the events themselves, after an upgrade from
version 1, after purges and erasures, and after SQL written by hand.
"""

from collections import Counter
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime
import itertools
import json
from pathlib import Path
import random
import sqlite3
import time
from typing import Any

import pytest

from custom_components.azure_openai_memory.lib.history import planner
from custom_components.azure_openai_memory.lib.history.bulk import index_batch
from custom_components.azure_openai_memory.lib.history.events import INSERT_EVENT, encode_event
from custom_components.azure_openai_memory.lib.history.models import to_us
from custom_components.azure_openai_memory.lib.history.planner import EventRead
from custom_components.azure_openai_memory.lib.history.schema import (
    INDEX_CURSOR,
    MIGRATIONS,
    migrate_schema,
)
from custom_components.azure_openai_memory.lib.history.store import (
    SCHEMA_VERSION,
    AgentHistoryEvent,
    HistoryEventType,
    HistoryQuery,
    HistoryStatistics,
    HistoryStore,
)

NOW = datetime(2025, 10, 25, 11, 0, tzinfo=UTC).timestamp()
DAY = 86400.0
HOUR = 3600.0
DAY_US = 86_400_000_000
AGENTS = ("conversation.azure_openai_memory", "conversation.kitchen", "automation")
TYPES = (
    HistoryEventType.COMMUNICATION,
    HistoryEventType.DECISION,
    HistoryEventType.TOOL_USE,
    HistoryEventType.ACTION,
    HistoryEventType.ERROR,
)
TAG_SETS: tuple[tuple[str, ...], ...] = (
    (),
    ("user",),
    ("agent",),
    ("user", "kitchen"),
    ("person:İlkay", "o'brien"),
    ("kitchen", "kitchen"),  # the same tag twice counts once
)
# The side tables and counters, each with the statement that lists its rows.
SIDE_TABLES = {
    "history_event_types": "SELECT event_type, timestamp, event_id FROM history_event_types",
    "history_event_tags": "SELECT tag, timestamp, event_id FROM history_event_tags",
    "history_counts": "SELECT day, agent_id, event_type, events FROM history_counts",
    "history_totals": "SELECT agent_id, event_type, events FROM history_totals",
    "history_tag_counts": "SELECT tag, day, events FROM history_tag_counts",
    "history_sessions": "SELECT session_id, events FROM history_sessions",
    "history_agent_sessions": "SELECT agent_id, session_id, events FROM history_agent_sessions",
    "history_agent_session_counts": "SELECT agent_id, sessions FROM history_agent_session_counts",
}


def household(count: int, seed: int = 5) -> list[AgentHistoryEvent]:
    """Events of three agents over three weeks (some before 1970, to cross a negative day),
    in sessions of a few turns, with ties at the same microsecond; recording order."""
    rng = random.Random(seed)
    events: list[AgentHistoryEvent] = []
    at = NOW - 21 * DAY
    session = "s0"
    for n in range(count):
        if n % 4 == 0:
            session = f"s{rng.randrange(count // 3)}"
        if rng.random() > 0.1:  # else the same microsecond as the one before
            at += rng.uniform(0, 21 * DAY * 2 / count)
        events.append(
            AgentHistoryEvent.new(
                AGENTS[rng.randrange(len(AGENTS))],
                TYPES[rng.randrange(len(TYPES))],
                {"n": n},
                session_id=None if n % 9 == 0 else session,
                tags=TAG_SETS[rng.randrange(len(TAG_SETS))],
                ref=f"r{n}" if n % 50 == 0 else None,
                timestamp=-DAY * 1.5 + n * HOUR if n < 20 else at,
            )
        )
    return events


def path_in(tmp_path: Path) -> Path:
    return tmp_path / "azure_openai_memory" / "history.db"


def checkpointed(conn: sqlite3.Connection) -> None:
    """The whole log copied into the database file. SQLite answers busy while another
    checkpoint (the store's own, beside its writer) is under way: then again."""
    deadline = time.monotonic() + 10
    while conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]:
        assert time.monotonic() < deadline, "the log could not be checkpointed"
        time.sleep(0.01)


def raw(path: Path) -> closing[sqlite3.Connection]:
    return closing(sqlite3.connect(path, isolation_level=None))


# Version 1's insert: no reader class.
INSERT_V1 = (
    INSERT_EVENT[: INSERT_EVENT.index(", owner)")] + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def version_1_database(path: Path, events: list[AgentHistoryEvent]) -> None:
    """A database as version 1 left it (its schema, its rows), holding `events`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with raw(path) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        assert migrate_schema(conn, MIGRATIONS[:1]) == 1
        conn.execute("BEGIN")
        conn.executemany(INSERT_V1, [encode_event(event) for event in events])
        conn.execute("COMMIT")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[HistoryStore]:
    opened = HistoryStore(path_in(tmp_path), batch_window=60)
    opened.open()
    yield opened
    opened.close()


# --- The references ---------------------------------------------------------------------


def tag_values(stored: Any) -> set[str]:
    """The text values of a stored tags column, as json_each reads it."""
    try:
        value = json.loads(stored)
    except (TypeError, ValueError):
        return set()
    if isinstance(value, dict):
        value = list(value.values())
    return {
        item for item in (value if isinstance(value, list) else [value]) if isinstance(item, str)
    }


def recount(conn: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    """What every side table and counter must hold, counted from the events alone."""
    rows = conn.execute(
        "SELECT event_id, agent_id, timestamp, event_type, tags, session_id "
        "FROM agent_history_events"
    ).fetchall()
    types, tags = [], []
    counts: Counter[tuple[Any, ...]] = Counter()
    totals: Counter[tuple[Any, ...]] = Counter()
    tag_counts: Counter[tuple[Any, ...]] = Counter()
    sessions: Counter[tuple[Any, ...]] = Counter()
    pairs: Counter[tuple[Any, ...]] = Counter()
    for event_id, agent, stamp, kind, stored_tags, session in rows:
        day = stamp // DAY_US
        types.append((kind, stamp, event_id))
        counts[day, agent, kind] += 1
        totals[agent, kind] += 1
        for tag in tag_values(stored_tags):
            tags.append((tag, stamp, event_id))
            tag_counts[tag, day] += 1
        if session is not None:
            sessions[(session,)] += 1
            pairs[agent, session] += 1
    per_agent = Counter(agent for agent, _session in pairs)
    return {
        "history_event_types": sorted(types),
        "history_event_tags": sorted(tags),
        "history_counts": sorted((*key, n) for key, n in counts.items()),
        "history_totals": sorted((*key, n) for key, n in totals.items()),
        "history_tag_counts": sorted((*key, n) for key, n in tag_counts.items()),
        "history_sessions": sorted((*key, n) for key, n in sessions.items()),
        "history_agent_sessions": sorted((*key, n) for key, n in pairs.items()),
        "history_agent_session_counts": sorted(per_agent.items()),
    }


def assert_counters_match_events(path: Path) -> None:
    with raw(path) as conn:
        conn.execute("BEGIN")
        expected = recount(conn)
        for table, statement in SIDE_TABLES.items():
            assert sorted(conn.execute(statement).fetchall()) == expected[table], table
        conn.execute("COMMIT")


def answer(events: list[AgentHistoryEvent], query: HistoryQuery) -> tuple[list[str], int]:
    """A query answered by reading every event in Python: newest (or oldest) first by
    time, then by the order they were recorded in."""
    start = None if query.start_time is None else to_us(query.start_time)
    end = None if query.end_time is None else to_us(query.end_time)
    chosen = []
    for order, event in enumerate(events):
        stamp = to_us(event.timestamp)
        if (
            (query.agent_id is None or event.agent_id == query.agent_id)
            and (query.session_id is None or event.session_id == query.session_id)
            and (query.event_type is None or event.event_type is query.event_type)
            and set(query.tags) <= set(event.tags)
            and (start is None or stamp >= start)
            and (end is None or stamp <= end)
        ):
            chosen.append((stamp, order, event.event_id))
    chosen.sort(reverse=not query.ascending)
    page = chosen[query.offset : query.offset + query.limit]
    return [event_id for _stamp, _order, event_id in page], len(chosen)


def statistics(events: list[AgentHistoryEvent], agent: str | None) -> HistoryStatistics:
    mine = [event for event in events if agent is None or event.agent_id == agent]
    by_type = dict.fromkeys((kind.value for kind in HistoryEventType), 0)
    by_type.update(Counter(event.event_type.value for event in mine))
    refs = sorted((to_us(e.timestamp), e.ref) for e in mine if e.ref is not None)
    return HistoryStatistics(
        total_events=len(mine),
        events_by_type=by_type,
        total_snapshots=0,
        earliest_event=min((e.timestamp for e in mine), default=None),
        latest_event=max((e.timestamp for e in mine), default=None),
        unique_sessions=len({e.session_id for e in mine if e.session_id is not None}),
        refs=[ref for _stamp, ref in refs],
    )


def queries(events: list[AgentHistoryEvent]) -> Iterator[HistoryQuery]:
    """Every filter alone and with others, each without a time range and with ranges
    that cover whole days, parts of days at either end, one end only, or one hour; pages
    at the start, further in and past the end."""
    stamps = sorted(event.timestamp for event in events)
    first, last = stamps[0], stamps[-1]
    middle = stamps[len(stamps) // 2]
    midnight = middle - middle % DAY
    ranges: list[tuple[float | None, float | None]] = [
        (None, None),
        (midnight - 3 * DAY, midnight + DAY - 1e-6),  # whole days only
        (middle - 4.3 * DAY, middle + 2.6 * DAY),  # parts of days at both ends
        (middle, None),
        (None, middle),
        (middle - HOUR, middle + HOUR),
        (first, last),
        (-DAY, DAY / 3),  # across the day before 1970
    ]
    filters: list[dict[str, Any]] = [
        {},
        {"agent_id": AGENTS[0]},
        {"session_id": events[40].session_id},
        {"event_type": HistoryEventType.TOOL_USE},
        {"event_type": HistoryEventType.ERROR},
        {"tags": ("user",)},
        {"tags": ("person:İlkay",)},
        {"tags": ("kitchen", "user")},
        {"tags": ("nowhere",)},
        {"agent_id": AGENTS[1], "event_type": HistoryEventType.DECISION},
        {"event_type": HistoryEventType.COMMUNICATION, "tags": ("agent",)},
        {"agent_id": AGENTS[2], "tags": ("user",), "session_id": events[41].session_id},
    ]
    pages = [(4, 0, False), (4, 6, True), (50, 0, False), (3, 5000, False)]
    for (start, end), fields, (limit, offset, ascending) in itertools.product(
        ranges, filters, pages
    ):
        yield HistoryQuery(
            **fields,
            start_time=start,
            end_time=end,
            limit=limit,
            offset=offset,
            ascending=ascending,
        )


def read_as_version_1(path: Path, query: HistoryQuery) -> tuple[list[str], int]:
    """The read a store makes while indexing is pending: the events alone."""
    read = EventRead.plain(query)
    with raw(path) as conn:
        rows = conn.execute(*read.page(query.limit, query.offset)).fetchall()
        return [row[0] for row in rows], read.count(conn)


def assert_answers(store: HistoryStore, events: list[AgentHistoryEvent]) -> None:
    assert store.indexed
    for query in queries(events):
        page, total = store.query_events(query)
        assert ([event.event_id for event in page], total) == answer(events, query), query
    for agent in (None, *AGENTS, "nobody"):
        assert store.get_statistics(agent) == statistics(events, agent), agent


# --- Upgrading from version 1 -------------------------------------------------------------


def test_upgrade_keeps_every_event_and_answers_as_before(tmp_path: Path) -> None:
    path = path_in(tmp_path)
    events = household(1500)
    version_1_database(path, events)
    for query in itertools.islice(queries(events), 0, None, 7):
        assert read_as_version_1(path, query) == answer(events, query), query

    store = HistoryStore(path, index_batch=97)
    store.open()
    try:
        assert store.schema_version == SCHEMA_VERSION == 3
        assert store.wait_for_index(30)
        with raw(path) as conn:
            assert conn.execute("SELECT COUNT(*) FROM agent_history_events").fetchone() == (1500,)
            assert conn.execute(
                "SELECT COUNT(*) FROM history_settings WHERE name = ?", (INDEX_CURSOR,)
            ).fetchone() == (0,)
        for event in events:
            assert store.get_event(event.event_id) == event
        assert_counters_match_events(path)
        assert_answers(store, events)
    finally:
        store.close()
    # Opened again, nothing is left to index.
    again = HistoryStore(path)
    again.open()
    assert again.indexed
    again.close()


def test_writes_between_indexing_batches_are_counted_once(tmp_path: Path) -> None:
    """Events written, deleted and changed while an upgraded database is being indexed:
    the triggers count the new ones, the batches skip them, the deleted are never found."""
    path = path_in(tmp_path)
    old = household(600)
    version_1_database(path, old)
    fresh = iter(household(200, seed=9))
    rng = random.Random(3)
    with raw(path) as conn:
        assert migrate_schema(conn, MIGRATIONS) == 3
        batches = 0
        while not index_batch(conn, 40):
            batches += 1
            conn.execute("BEGIN")
            conn.executemany(INSERT_EVENT, [encode_event(next(fresh)) for _ in range(9)])
            doomed = [old[rng.randrange(len(old))].event_id for _ in range(5)]
            conn.executemany(
                "DELETE FROM agent_history_events WHERE event_id = ?", [(d,) for d in doomed]
            )
            conn.execute(
                "UPDATE agent_history_events SET event_type = 'thought', tags = '[\"moved\"]', "
                "timestamp = timestamp + 86400000000, session_id = 'moved', agent_id = 'other' "
                "WHERE event_id = ?",
                (old[rng.randrange(len(old))].event_id,),
            )
            conn.execute("COMMIT")
        assert batches >= 10
    assert_counters_match_events(path)


def test_a_version_set_back_by_hand_upgrades_again(tmp_path: Path) -> None:
    """Version 2's tables already there: the step runs again, creating nothing twice and
    counting nothing twice."""
    path = path_in(tmp_path)
    events = household(400)
    store = HistoryStore(path)
    store.open()
    store.record_events(events)
    store.close()
    with raw(path) as conn:
        conn.execute("PRAGMA user_version = 1")
    store = HistoryStore(path, index_batch=50)
    store.open()
    try:
        assert store.schema_version == 3
        assert store.wait_for_index(30)
        assert_counters_match_events(path)
        assert_answers(store, events)
    finally:
        store.close()


# --- Keeping the counters -----------------------------------------------------------------


def test_purge_and_erasure_keep_side_tables_and_counters(
    store: HistoryStore, tmp_path: Path
) -> None:
    events = household(1200)
    remember = AgentHistoryEvent.new(
        AGENTS[0],
        HistoryEventType.TOOL_USE,
        {"tool": "remember", "arguments": {"id": "m-1"}},
        session_id="s-mem",
        tags=("memory",),
        timestamp=NOW,
    )
    store.record_events(events)  # many at once: indexed set by set
    store.record_event(remember)  # one: indexed by the trigger
    assert_counters_match_events(path_in(tmp_path))

    cutoff = sorted(event.timestamp for event in events)[700]
    purged = store.purge_before(cutoff)
    assert purged.events == sum(event.timestamp < cutoff for event in [*events, remember]) > 600
    assert store.delete_memory_events(["m-1"], ["remember"], "azure_openai_memory.") == 1
    kept = [event for event in events if event.timestamp >= cutoff]
    assert_counters_match_events(path_in(tmp_path))
    assert_answers(store, kept)


def test_purge_in_small_batches_keeps_the_counters(tmp_path: Path) -> None:
    store = HistoryStore(path_in(tmp_path), purge_batch=37)
    store.open()
    try:
        events = household(500)
        store.record_events(events)
        assert store.purge_before(NOW).events == sum(e.timestamp < NOW for e in events)
        assert_counters_match_events(path_in(tmp_path))
    finally:
        store.close()


def test_sql_written_by_hand_keeps_the_counters(store: HistoryStore, tmp_path: Path) -> None:
    """Inserted, changed and deleted with SQL, as someone might from the sqlite3 shell:
    tags that are no list, not JSON at all, numbers; types the store does not know."""
    path = path_in(tmp_path)
    store.record_events(household(100))
    rows = [
        ("11111111-1111-4111-8111-111111111111", "hand", 5, "Imported", '["a", 3, "a"]', "h"),
        ("22222222-2222-4222-8222-222222222222", "hand", -5, "system", "not json", None),
        ("33333333-3333-4333-8333-333333333333", "hand", 7, "thought", '{"k": "b"}', "h"),
        ("44444444-4444-4444-8444-444444444444", "hand", 8, "thought", '"c"', "i"),
    ]
    with raw(path) as conn:
        conn.executemany(
            "INSERT INTO agent_history_events (event_id, agent_id, timestamp, event_type, "
            "event_data, tags, session_id) VALUES (?, ?, ?, ?, '{}', ?, ?)",
            rows,
        )
        assert_counters_match_events(path)
        conn.execute(
            "UPDATE agent_history_events SET tags = '[\"d\"]', session_id = 'h2', "
            "timestamp = timestamp + 2 * 86400000000 WHERE agent_id = 'hand'"
        )
        conn.execute(
            "UPDATE agent_history_events SET event_data = '{\"x\": 1}', parent_event_id = NULL"
        )
        assert_counters_match_events(path)
        conn.execute("DELETE FROM agent_history_events WHERE agent_id = 'hand'")
        conn.execute("DELETE FROM agent_history_events WHERE rowid % 3 = 0")
    assert_counters_match_events(path)
    assert store.query_events(HistoryQuery(tags=("d",))) == ([], 0)


# --- Reading from the indexes -------------------------------------------------------------


def test_every_way_of_reading_answers_the_same(
    store: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent and a type are read through the type's table, the agent's index or both
    sorted, by how many events each holds: each way gives the same answer."""
    events = household(900)
    store.record_events(events)
    assert_answers(store, events)
    for sorted_at_most in (0, 10**9):
        monkeypatch.setattr(planner, "SORTED_AT_MOST", sorted_at_most)
        for query in queries(events):
            if query.agent_id is not None and query.event_type is not None:
                page, total = store.query_events(query)
                assert ([e.event_id for e in page], total) == answer(events, query)


def test_query_plans_use_the_indexes(store: HistoryStore) -> None:
    """No read of a query or of the statistics walks the whole events table."""
    events = household(300)
    store.record_events(events)
    statements: list[str] = []
    store.trace_reads(statements.append)
    day = (NOW - 10 * DAY, NOW - 9 * DAY)
    for fields in (
        {"session_id": events[40].session_id},
        {"agent_id": AGENTS[0]},
        {"event_type": HistoryEventType.TOOL_USE},
        {"tags": ("user",)},
        {"tags": ("user", "kitchen")},
        {"agent_id": AGENTS[1], "event_type": HistoryEventType.ACTION},
        {},
    ):
        for start, end in ((None, None), day, (day[0] + HOUR, day[1] + 3 * DAY)):
            # A page that is full, so that the total is counted too.
            store.query_events(HistoryQuery(**fields, start_time=start, end_time=end, limit=1))
    store.get_statistics()
    store.get_statistics(AGENTS[0])
    store.trace_reads(None)
    reads = [s for s in statements if s.startswith("SELECT")]
    assert len(reads) > 40
    with raw(store.path) as conn:
        for statement in reads:
            plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {statement}")]
            page = "LIMIT" in statement
            scans = [
                step for step in plan if step.startswith(("SCAN e", "SCAN agent_history_events"))
            ]
            if page and "idx_history_timestamp" in statement:
                # The newest page of everything: the time index walked in order, up to the page.
                assert scans in ([], ["SCAN e USING INDEX idx_history_timestamp"]), (
                    statement,
                    plan,
                )
            else:
                assert not scans, (statement, plan)
            # Only a session's events, or an agent's of one type when they are few, are sorted.
            if page and not (
                "idx_history_session_id" in statement or "idx_history_agent_type" in statement
            ):
                assert "USE TEMP B-TREE FOR ORDER BY" not in plan, (statement, plan)


# --- Space --------------------------------------------------------------------------------


def test_a_new_database_gives_purged_space_back(store: HistoryStore, tmp_path: Path) -> None:
    path = path_in(tmp_path)
    events = [
        AgentHistoryEvent.new("a", "thought", {"text": "x" * 2000}, timestamp=NOW - DAY + n)
        for n in range(3000)
    ]
    store.record_events(events)
    store.flush()
    with raw(path) as conn:
        assert conn.execute("PRAGMA auto_vacuum").fetchone() == (2,)  # incremental
        checkpointed(conn)
    full = path.stat().st_size
    assert store.purge_before(NOW).events == 3000
    assert store.wait_until_idle(30)  # the pages are handed back in the background
    with raw(path) as conn:
        checkpointed(conn)
        assert conn.execute("PRAGMA freelist_count").fetchone() == (0,)
    assert path.stat().st_size < full / 4


def test_a_version_1_file_keeps_its_size_and_reuses_its_pages(tmp_path: Path) -> None:
    path = path_in(tmp_path)
    events = [
        AgentHistoryEvent.new("a", "thought", {"text": "x" * 2000}, timestamp=NOW - DAY + n)
        for n in range(1000)
    ]
    version_1_database(path, events)
    store = HistoryStore(path)
    store.open()
    try:
        assert store.wait_for_index(30)
        assert store.purge_before(NOW).events == 1000
        assert store.wait_until_idle(30)
        with raw(path) as conn:
            assert conn.execute("PRAGMA auto_vacuum").fetchone() == (0,)
            assert conn.execute("PRAGMA freelist_count").fetchone()[0] > 0
    finally:
        store.close()
