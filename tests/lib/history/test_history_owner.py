"""Each event's reader class (owner, schema version 3): the condition it answers is the
JSON rule's exactly, on any data; an upgraded database answers the same before, during
and after the classes are filled in."""

import dataclasses
import itertools
from pathlib import Path
import random
from typing import Any

import pytest

from custom_components.azure_openai_memory.lib.history.bulk import (
    index_batch,
    owner_batch,
    owner_pending,
)
from custom_components.azure_openai_memory.lib.history.events import INSERT_EVENT, encode_event
from custom_components.azure_openai_memory.lib.history.planner import EventRead
from custom_components.azure_openai_memory.lib.history.schema import (
    MIGRATIONS,
    OWNER_CURSOR,
    migrate_schema,
)
from custom_components.azure_openai_memory.lib.history.store import (
    PERSON_KEY,
    SCHEMA_VERSION,
    AgentHistoryEvent,
    HistoryStore,
    Visibility,
)

from .test_history_indexes import (
    INSERT_V1,
    answer,
    household,
    path_in,
    queries,
    raw,
    statistics,
)
from .test_history_visibility import ANNA, BEN, NOBODY, seen

READERS = [ANNA, BEN, NOBODY, Visibility("person.anna", "automation")]
PERSONS: list[Any] = ["person.anna", "person.ben", "person.annab", None, 7, True, ["x"], {}]


def random_owners(events: list[AgentHistoryEvent], seed: int) -> list[AgentHistoryEvent]:
    """The events with random data: a person named as text, as null or as something
    else, no person named, or data that is not an object."""
    rng = random.Random(seed)
    marked = []
    for n, event in enumerate(events):
        data: Any = {"n": n}
        match rng.randrange(4):
            case 0 | 1:
                data[PERSON_KEY] = rng.choice(PERSONS)
            case 2:
                data = rng.choice([[n, PERSON_KEY], "person.anna", n, None])
        marked.append(dataclasses.replace(event, event_data=data))
    return marked


def visible_ids(path: Path, reader: Visibility, *, owners_known: bool) -> set[str]:
    term, params = reader.where(owners_known=owners_known)
    with raw(path) as conn:
        rows = conn.execute(
            f"SELECT e.event_id FROM agent_history_events e WHERE {term}", params
        ).fetchall()
    return {row[0] for row in rows}


def json_ids(path: Path, reader: Visibility) -> set[str]:
    """The rule read from the JSON alone: every class set back to unknown, in a copy."""
    copy = path.with_name("json.db")
    with raw(path) as conn:
        conn.execute("VACUUM INTO ?", (str(copy),))
    with raw(copy) as conn:
        conn.execute("UPDATE agent_history_events SET owner = NULL")
    found = visible_ids(copy, reader, owners_known=False)
    copy.unlink()
    return found


def ids(events: list[AgentHistoryEvent]) -> set[str]:
    return {event.event_id for event in events}


@pytest.fixture
def events() -> list[AgentHistoryEvent]:
    return random_owners(household(800, seed=11), seed=4)


@pytest.fixture
def store(store: HistoryStore, events: list[AgentHistoryEvent]) -> HistoryStore:
    """The conftest's store, holding the events."""
    store.record_events(events)
    return store


@pytest.mark.parametrize("reader", READERS, ids=["anna", "ben", "nobody", "other-prefix"])
def test_the_class_answers_the_json_rule_on_any_data(
    store: HistoryStore, events: list[AgentHistoryEvent], reader: Visibility
) -> None:
    store.flush()
    path = store.path
    expected = ids(seen(events, reader))
    assert 0 < len(expected) < len(events)
    assert json_ids(path, reader) == expected
    assert visible_ids(path, reader, owners_known=True) == expected
    assert visible_ids(path, reader, owners_known=False) == expected
    with raw(path) as conn:
        assert conn.execute(
            "SELECT COUNT(*) FROM agent_history_events WHERE owner IS NULL"
        ).fetchone() == (0,)
    for query in itertools.islice(queries(events), 0, None, 9):
        page, total = store.query_events(dataclasses.replace(query, visibility=reader))
        assert ([e.event_id for e in page], total) == answer(seen(events, reader), query)
    for agent in (None, "conversation.kitchen", "automation"):
        assert store.get_statistics(agent, reader) == statistics(seen(events, reader), agent)


def test_events_written_or_changed_by_hand_get_their_class(
    store: HistoryStore, events: list[AgentHistoryEvent]
) -> None:
    store.flush()
    path = store.path
    new = random_owners(household(60, seed=12), seed=5)
    with raw(path) as conn:
        conn.executemany(INSERT_V1, [encode_event(event) for event in new])
        changed = [event for event in events if event.session_id is not None][:40]
        for n, event in enumerate(changed):
            conn.execute(
                "UPDATE agent_history_events SET event_data = ? WHERE event_id = ?",
                (f'{{"{PERSON_KEY}": "person.ben", "n": {n}}}', event.event_id),
            )
        assert conn.execute(
            "SELECT COUNT(*) FROM agent_history_events WHERE owner IS NULL"
        ).fetchone() == (0,)
    now = [
        dataclasses.replace(event, event_data={PERSON_KEY: "person.ben", "n": changed.index(event)})
        if event in changed
        else event
        for event in [*events, *new]
    ]
    for reader in READERS:
        assert visible_ids(path, reader, owners_known=True) == ids(seen(now, reader))


def version_2_database(path: Path, events: list[AgentHistoryEvent]) -> None:
    """A database as version 2 left it: its schema, its rows indexed, no reader class."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with raw(path) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        assert migrate_schema(conn, MIGRATIONS[:2]) == 2
        conn.execute("BEGIN")
        conn.executemany(INSERT_V1, [encode_event(event) for event in events])
        conn.execute("COMMIT")
        assert index_batch(conn, 10_000)


def test_a_version_2_database_answers_the_same_while_its_classes_are_filled_in(
    tmp_path: Path, events: list[AgentHistoryEvent]
) -> None:
    path = path_in(tmp_path)
    old, fresh = events[:600], events[600:]
    version_2_database(path, old)
    with raw(path) as conn:
        assert migrate_schema(conn, MIGRATIONS) == SCHEMA_VERSION == 3
        assert owner_pending(conn)
        assert conn.execute(
            "SELECT COUNT(*) FROM sqlite_master WHERE name = 'idx_history_owner'"
        ).fetchone() == (0,)
        stored = list(old)
        batches = 0
        while True:
            for reader in READERS:
                mine = seen(stored, reader)
                term, params = reader.where()
                found = conn.execute(
                    f"SELECT event_id FROM agent_history_events e WHERE {term}", params
                ).fetchall()
                assert {row[0] for row in found} == ids(mine)
                for query in itertools.islice(queries(stored), batches, None, 40):
                    read = EventRead.planned(conn, dataclasses.replace(query, visibility=reader))
                    rows = conn.execute(*read.page(query.limit, query.offset)).fetchall()
                    assert ([row[0] for row in rows], read.count(conn)) == answer(mine, query)
            if owner_batch(conn, 70):
                break
            batches += 1
            # Written between two batches: its class is written with it.
            conn.execute("BEGIN")
            conn.executemany(INSERT_EVENT, [encode_event(e) for e in fresh[:20]])
            conn.execute("COMMIT")
            stored.extend(fresh[:20])
            fresh = fresh[20:]
        assert batches >= 8
        assert not owner_pending(conn)
        assert conn.execute(
            "SELECT COUNT(*) FROM agent_history_events WHERE owner IS NULL"
        ).fetchone() == (0,)
        assert conn.execute(
            "SELECT COUNT(*) FROM sqlite_master WHERE name = 'idx_history_owner'"
        ).fetchone() == (1,)
    for reader in READERS:
        assert visible_ids(path, reader, owners_known=True) == ids(seen(stored, reader))


def test_the_store_fills_in_an_upgraded_database_s_classes_in_the_background(
    tmp_path: Path, events: list[AgentHistoryEvent]
) -> None:
    path = path_in(tmp_path)
    version_2_database(path, events)
    store = HistoryStore(path, index_batch=50)
    store.open()
    try:
        assert store.schema_version == 3
        assert store.wait_until_idle(30)
        with raw(path) as conn:
            assert conn.execute(
                "SELECT COUNT(*) FROM history_settings WHERE name = ?", (OWNER_CURSOR,)
            ).fetchone() == (0,)
            assert conn.execute(
                "SELECT COUNT(*) FROM agent_history_events WHERE owner IS NULL"
            ).fetchone() == (0,)
        for reader in READERS:
            mine = seen(events, reader)
            for query in itertools.islice(queries(events), 0, None, 13):
                page, total = store.query_events(dataclasses.replace(query, visibility=reader))
                assert ([e.event_id for e in page], total) == answer(mine, query), query
            for agent in (None, "conversation.kitchen"):
                assert store.get_statistics(agent, reader) == statistics(mine, agent)
    finally:
        store.close()
