"""What one reader may see of the history: every answer (pages, totals, statistics,
snapshots, chains) checked against a plain Python reading of the events they may see."""

import dataclasses
import itertools
from pathlib import Path
from typing import Any

import pytest

from custom_components.azure_openai_memory.lib.history import planner
from custom_components.azure_openai_memory.lib.history.schema import (
    MIGRATIONS,
    migrate_schema,
)
from custom_components.azure_openai_memory.lib.history.store import (
    PERSON_KEY,
    SCHEMA_VERSION,
    AgentHistoryEvent,
    HistoryEventType,
    HistoryQuery,
    HistorySnapshot,
    HistoryStore,
    NotVisible,
    Visibility,
)

from .test_history_indexes import (
    NOW,
    answer,
    household,
    path_in,
    queries,
    raw,
    read_as_version_1,
    statistics,
    version_1_database,
)

TALK = "conversation."
ANNA = Visibility("person.anna", TALK)
BEN = Visibility("person.ben", TALK)
NOBODY = Visibility(None, TALK)


def owned(events: list[AgentHistoryEvent]) -> list[AgentHistoryEvent]:
    """The household's events, each the talk of Anna, of Ben, of nobody known, or no one's
    (no person named: the household's, unless an agent's session recorded it before talk
    named its person); one not even an object."""
    marked = []
    for n, event in enumerate(events):
        data: Any = {"n": n}
        match n % 6:
            case 0:
                data[PERSON_KEY] = "person.anna"
            case 1:
                data[PERSON_KEY] = "person.ben"
            case 2:
                data[PERSON_KEY] = None
            case 3:
                data = [n, "not an object"]
        marked.append(dataclasses.replace(event, event_data=data))
    return marked


def may_see(event: AgentHistoryEvent, reader: Visibility) -> bool:
    data = event.event_data
    if isinstance(data, dict) and PERSON_KEY in data:
        return reader.person_id is not None and data[PERSON_KEY] == reader.person_id
    return not (event.session_id is not None and event.agent_id.startswith(reader.talk_prefix))


def seen(events: list[AgentHistoryEvent], reader: Visibility) -> list[AgentHistoryEvent]:
    return [event for event in events if may_see(event, reader)]


@pytest.fixture
def events() -> list[AgentHistoryEvent]:
    return owned(household(600))


@pytest.fixture
def store(store: HistoryStore, events: list[AgentHistoryEvent]) -> HistoryStore:
    """The conftest's store, holding the events."""
    store.record_events(events)
    return store


@pytest.mark.parametrize("reader", [ANNA, BEN, NOBODY], ids=["anna", "ben", "nobody"])
@pytest.mark.parametrize("probe", [planner.PROBE_ROWS, 40, 1], ids=["probed", "mixed", "by-class"])
def test_a_reader_s_pages_totals_and_statistics_are_of_what_they_may_see(
    store: HistoryStore,
    events: list[AgentHistoryEvent],
    reader: Visibility,
    probe: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A page is read from the newest events the query selects when they hold it (probe:
    how many are looked through), else class by class: the same answer either way."""
    monkeypatch.setattr(planner, "PROBE_ROWS", probe)
    mine = seen(events, reader)
    assert 0 < len(mine) < len(events)
    for query in itertools.islice(queries(events), 0, None, 5):
        page, total = store.query_events(dataclasses.replace(query, visibility=reader))
        assert ([e.event_id for e in page], total) == answer(mine, query), query
    for agent in (None, "conversation.kitchen", "automation"):
        assert store.get_statistics(agent, reader) == statistics(mine, agent), agent
    # Without a visibility, everything, as before.
    assert store.get_statistics() == statistics(events, None)


def test_a_database_still_being_indexed_answers_a_reader_the_same(
    tmp_path: Path, events: list[AgentHistoryEvent]
) -> None:
    """Upgraded, before any event is indexed or has its reader class: the JSON answers."""
    path = path_in(tmp_path)
    version_1_database(path, events)
    with raw(path) as conn:
        assert migrate_schema(conn, MIGRATIONS) == SCHEMA_VERSION
    mine = seen(events, BEN)
    for query in itertools.islice(queries(events), 0, None, 11):
        read = read_as_version_1(path, dataclasses.replace(query, visibility=BEN))
        assert read == answer(mine, query), query


def test_a_reader_follows_a_chain_and_reads_snapshots_only_of_what_they_may_see(
    tmp_path: Path,
) -> None:
    store = HistoryStore(path_in(tmp_path), batch_window=60)
    store.open()
    try:
        question = AgentHistoryEvent.new(
            "conversation.a",
            HistoryEventType.COMMUNICATION,
            {"text": "My dentist is on Friday", PERSON_KEY: "person.anna"},
            session_id="s",
            timestamp=NOW,
        )
        answer_ = AgentHistoryEvent.new(
            "conversation.a",
            HistoryEventType.COMMUNICATION,
            {"text": "Noted", PERSON_KEY: "person.anna"},
            session_id="s",
            parent_event_id=question.event_id,
            timestamp=NOW + 1,
        )
        follow = AgentHistoryEvent.new(
            "automation",
            HistoryEventType.SYSTEM,
            {"note": "reminder set"},
            parent_event_id=answer_.event_id,
            timestamp=NOW + 2,
        )
        store.record_events([question, answer_, follow])
        assert [e.event_id for e in store.get_event_chain(answer_.event_id, ANNA)] == [
            question.event_id,
            answer_.event_id,
        ]
        with pytest.raises(NotVisible):
            store.get_event_chain(answer_.event_id, BEN)
        # Ben may read the household's event, but not the talk that led to it.
        assert store.get_event_chain(follow.event_id, BEN) == [follow]
        assert store.is_visible(question.event_id, BEN) is False
        assert store.is_visible(follow.event_id, BEN) is True

        for snapshot_id, held in (
            ("00000000-0000-4000-8000-000000000001", (question, answer_)),
            ("00000000-0000-4000-8000-000000000002", (follow,)),
        ):
            store.create_snapshot(
                HistorySnapshot(snapshot_id, "conversation.a", NOW + 3, events=held)
            )
        listed, total = store.query_snapshots(visibility=BEN)
        assert ([s.snapshot_id for s in listed], total) == (
            ["00000000-0000-4000-8000-000000000002"],
            1,
        )
        assert store.query_snapshots(visibility=ANNA)[1] == 2
        with pytest.raises(NotVisible):
            store.get_snapshot("00000000-0000-4000-8000-000000000001", BEN)
        anna_s = store.get_snapshot("00000000-0000-4000-8000-000000000001", ANNA)
        assert anna_s is not None
        assert anna_s.events == (question, answer_)
        assert store.get_statistics(None, BEN).total_snapshots == 1
    finally:
        store.close()


@pytest.mark.parametrize("talk", [TALK, "gespräch."])
def test_agents_beside_the_talk_prefix_are_told_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, talk: str
) -> None:
    """Talk recorded before it named its person is nobody's when an agent whose id starts
    with the talk prefix recorded it, and the household's otherwise: ids that sort right
    before or after the prefix, or that are shorter than it, are not the reader's talk."""
    after = talk[:-1] + chr(ord(talk[-1]) + 1)
    agents = [talk[:-1], talk[:-2], talk, f"{talk}x", after]
    reader = Visibility("person.ben", talk)
    recorded = [
        AgentHistoryEvent.new(
            agent,
            HistoryEventType.COMMUNICATION,
            {"n": n},
            session_id=f"s{n}",
            timestamp=NOW + n,
        )
        for n, agent in enumerate(agents * 3)
    ]
    opened = HistoryStore(path_in(tmp_path), batch_window=60)
    opened.open()
    try:
        opened.record_events(recorded)
        for probe in (planner.PROBE_ROWS, 1):
            monkeypatch.setattr(planner, "PROBE_ROWS", probe)
            page, total = opened.query_events(HistoryQuery(limit=100, visibility=reader))
            expected = [e for e in reversed(recorded) if not e.agent_id.startswith(talk)]
            assert [e.agent_id for e in page] == [e.agent_id for e in expected]
            assert total == 9
        assert opened.get_statistics(None, reader).total_events == 9
    finally:
        opened.close()
