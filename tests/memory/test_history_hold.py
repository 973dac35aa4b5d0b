"""HistoryStore while a backup holds its writes: reads see every queued event, and the
files the backup copies stay byte for byte as they were.

Real SQLite files in tmp_path; the events are queued as a turn queues them (enqueue).
"""

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
import hashlib
from pathlib import Path

import pytest

from custom_components.azure_openai_memory.lib.history.store import (
    PERSON_KEY,
    AgentHistoryEvent,
    HistoryEventType,
    HistoryQuery,
    HistoryStore,
    NotVisible,
)

from .test_history import AGENT, NOW, count_rows, db_path, ids, make
from .test_history_visibility import ANNA, BEN

SESSION = "kitchen"


def fingerprint(path: Path) -> dict[str, str]:
    """Each file of the database a backup copies (the -shm file is never copied)."""
    return {
        file.name: hashlib.sha256(file.read_bytes()).hexdigest()
        for file in (path, path.with_name(path.name + "-wal"))
        if file.exists()
    }


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return db_path(tmp_path)


@pytest.fixture
def store(path: Path) -> Iterator[HistoryStore]:
    """A long batch window: nothing is written unless asked to."""
    history = HistoryStore(path, batch_window=60)
    assert history.open() is None
    yield history
    history.close()


@pytest.fixture
def stored(store: HistoryStore) -> list[AgentHistoryEvent]:
    """Two events of the session written before the backup."""
    events = [
        make(
            HistoryEventType.COMMUNICATION, {"content": "Is the door locked?"}, session_id=SESSION
        ),
        make(HistoryEventType.DECISION, {"content": "Yes"}, session_id=SESSION, at=NOW + 1),
    ]
    store.record_events(events)
    return events


def held_turn(store: HistoryStore) -> list[AgentHistoryEvent]:
    """A turn queued while the writes are held: a question and its answer (its child)."""
    question = make(
        HistoryEventType.COMMUNICATION,
        {"content": "And the garage?"},
        session_id=SESSION,
        at=NOW + 2,
    )
    answer = make(
        HistoryEventType.DECISION,
        {"content": "Open"},
        session_id=SESSION,
        at=NOW + 3,
        parent_event_id=question.event_id,
    )
    for event in (question, answer):
        store.enqueue(event)
    return [question, answer]


def test_reads_during_a_hold_see_the_queued_events_and_change_no_file(
    store: HistoryStore, stored: list[AgentHistoryEvent], path: Path
) -> None:
    store.hold_writes()
    before = fingerprint(path)
    question, answer = held_turn(store)

    query = HistoryQuery(session_id=SESSION, ascending=True, limit=10)
    events, total = store.query_events(query)
    assert ids(events) == ids([*stored, question, answer])
    assert total == 4
    assert ids(store.get_events_by_session(SESSION)) == ids([*stored, question, answer])
    assert store.get_event(answer.event_id) == answer
    assert ids(store.get_event_chain(answer.event_id)) == [question.event_id, answer.event_id]
    statistics = store.get_statistics(AGENT)
    assert statistics.total_events == 4
    assert statistics.events_by_type[HistoryEventType.COMMUNICATION.value] == 2
    assert statistics.latest_event == NOW + 3

    # Nothing of it reached the files: a copy taken now is the one taken at the hold.
    assert fingerprint(path) == before
    assert count_rows(path) == 2
    assert store.pending_events == 2

    store.release_writes()
    store.flush()
    assert count_rows(path) == 4
    assert store.pending_events == 0
    assert ids(store.query_events(query)[0]) == ids([*stored, question, answer])


def test_many_readers_at_once_during_a_hold_each_see_every_queued_event(
    store: HistoryStore, stored: list[AgentHistoryEvent], path: Path
) -> None:
    """The panel, a turn and an automation read at once: each read sees all 500 queued
    events (they take the write lock in turn) and the files stay as they were."""
    store.hold_writes()
    before = fingerprint(path)
    queued = [make(data={"n": n}, at=NOW + 10 + n, session_id="busy") for n in range(500)]
    for event in queued:
        store.enqueue(event)

    def total(_: int) -> int:
        return store.query_events(HistoryQuery(session_id="busy", limit=1))[1]

    with ThreadPoolExecutor(8) as pool:
        totals = list(pool.map(total, range(40)))
    assert totals == [500] * 40
    assert fingerprint(path) == before
    assert count_rows(path) == 2


def test_events_queued_after_the_release_are_read_as_before(
    store: HistoryStore, stored: list[AgentHistoryEvent], path: Path
) -> None:
    """Released, a read commits what is queued (as it always did) and sees it once."""
    store.hold_writes()
    question, answer = held_turn(store)
    store.release_writes()
    late = make(data={"late": True}, at=NOW + 4, session_id=SESSION)
    store.enqueue(late)
    events, total = store.query_events(HistoryQuery(session_id=SESSION, ascending=True))
    assert ids(events) == ids([*stored, question, answer, late])
    assert total == 5
    assert count_rows(path) == 5


def test_a_person_reading_during_a_hold_sees_only_what_they_may(
    store: HistoryStore, stored: list[AgentHistoryEvent]
) -> None:
    """Anna's turn queued during the copy: she reads it back; Ben's reads, totals and
    statistics are what they would be without it, and her event is refused him."""
    ben_before = store.query_events(HistoryQuery(limit=10, visibility=BEN))
    ben_statistics = store.get_statistics(AGENT, BEN)
    store.hold_writes()
    anna_said = AgentHistoryEvent.new(
        "conversation.kitchen",
        HistoryEventType.COMMUNICATION,
        {"text": "My PIN is 4711", PERSON_KEY: "person.anna"},
        timestamp=NOW + 5,
        session_id="anna-talk",
    )
    store.enqueue(anna_said)

    assert store.query_events(HistoryQuery(limit=10, visibility=ANNA))[0][0] == anna_said
    assert store.query_events(HistoryQuery(limit=10, visibility=BEN)) == ben_before
    assert store.get_statistics(AGENT, BEN) == ben_statistics
    assert store.get_statistics("conversation.kitchen", BEN).total_events == 0
    assert store.get_statistics("conversation.kitchen", ANNA).total_events == 1
    with pytest.raises(NotVisible):
        store.get_event_chain(anna_said.event_id, BEN)
    assert store.is_visible(anna_said.event_id, BEN) is False
