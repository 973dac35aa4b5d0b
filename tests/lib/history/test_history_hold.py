"""HistoryStore while a backup holds its writes: reads see every queued event, and the
files the backup copies stay byte for byte as they were.

Real SQLite files in tmp_path; the events are queued as a turn queues them (enqueue).
"""

from concurrent.futures import ThreadPoolExecutor
import hashlib
from pathlib import Path
import time

import pytest

from custom_components.azure_openai_memory.lib.history.store import (
    PERSON_KEY,
    AgentHistoryEvent,
    HistoryEventType,
    HistoryQuery,
    HistoryStore,
    NotVisible,
)

from .test_history import AGENT, NOW, count_rows, ids, make, raw
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


def said(person: str, text: str, at: float) -> AgentHistoryEvent:
    """One line of a person's talk with the kitchen agent."""
    return AgentHistoryEvent.new(
        "conversation.kitchen",
        HistoryEventType.COMMUNICATION,
        {"text": text, PERSON_KEY: person},
        timestamp=at,
        session_id=f"{person}-talk",
    )


def test_a_person_reading_during_a_hold_sees_only_what_they_may(store: HistoryStore) -> None:
    """Ben and Anna each talked before the copy and during it: each reads back their own,
    held or stored; Ben's pages, totals and statistics hold nothing of Anna's, and her held
    event is refused him."""
    store.record_events([said("person.anna", "Hello", NOW), said("person.ben", "Hi", NOW + 1)])
    store.hold_writes()
    anna_held = said("person.anna", "My PIN is 4711", NOW + 2)
    ben_held = said("person.ben", "Lights off", NOW + 3)
    for event in (anna_held, ben_held):
        store.enqueue(event)

    ben_reads = store.query_events(HistoryQuery(limit=10, visibility=BEN, ascending=True))
    assert [e.event_data["text"] for e in ben_reads[0]] == ["Hi", "Lights off"]
    assert ben_reads[1] == 2
    anna_reads = store.query_events(HistoryQuery(limit=10, visibility=ANNA, ascending=True))
    assert [e.event_data["text"] for e in anna_reads[0]] == ["Hello", "My PIN is 4711"]
    ben_statistics = store.get_statistics("conversation.kitchen", BEN)
    assert (ben_statistics.total_events, ben_statistics.unique_sessions) == (2, 1)
    assert ben_statistics.latest_event == NOW + 3
    assert store.get_statistics("conversation.kitchen").total_events == 4
    with pytest.raises(NotVisible):
        store.get_event_chain(anna_held.event_id, BEN)
    assert store.is_visible(anna_held.event_id, BEN) is False
    assert store.is_visible(ben_held.event_id, BEN) is True


def test_a_full_queue_of_large_events_held_changes_no_file(
    store: HistoryStore, stored: list[AgentHistoryEvent], path: Path
) -> None:
    """A full queue (10,000 held events of 2 KB each) is far more than the cache holds:
    the events stay in memory all the same (the cache never spills into the log), and
    reads count them, without the one a full queue drops."""
    store.hold_writes()
    before = fingerprint(path)
    for n in range(10_000):
        store.enqueue(make(data={"n": n, "text": "x" * 2000}, at=NOW + 10 + n, session_id="big"))
    assert store.query_events(HistoryQuery(session_id="big", limit=1))[1] == 10_000
    # One more: the full queue drops its oldest, and the reads no longer count it.
    store.enqueue(make(data={"n": "one more"}, at=NOW + 20_000, session_id="big"))
    oldest, total = store.query_events(HistoryQuery(session_id="big", limit=1, ascending=True))
    assert (oldest[0].event_data["n"], total) == (1, 10_000)
    assert store.dropped_events == 1
    assert fingerprint(path) == before
    store.release_writes()
    store.flush()
    assert count_rows(path) == 2 + 10_000


def test_a_close_during_a_hold_writes_every_held_event(
    stored: list[AgentHistoryEvent], store: HistoryStore, path: Path
) -> None:
    """Home Assistant stops while a backup holds the writes and the household reads: the
    reads let go of the database first, and every held event is written."""
    store.hold_writes()
    for n in range(3000):
        store.enqueue(make(data={"n": n}, at=NOW + 10 + n, session_id="late"))
    with ThreadPoolExecutor(3) as pool:
        totals = list(pool.map(lambda _: store.query_events(HistoryQuery(limit=1))[1], range(6)))
    assert totals == [3002] * 6
    store.close()
    assert store.dropped_events == 0
    assert count_rows(path) == 3002


def test_a_write_that_waited_for_the_release_runs_after_held_reads(
    store: HistoryStore, path: Path
) -> None:
    """Anna's erasure waits for the backup; the release lets it run, though reads of the
    held events came just before: it is not refused as a locked database."""
    store.record_events([said("person.anna", "Hello", NOW), said("person.ben", "Hi", NOW + 1)])
    store.hold_writes()
    for n in range(2000):
        store.enqueue(said("person.anna", f"held {n}", NOW + 10 + n))
    assert store.query_events(HistoryQuery(limit=1, visibility=ANNA))[1] == 2001
    with ThreadPoolExecutor(2) as pool:
        erasure = pool.submit(store.delete_person_events, "person.anna")
        deadline = time.monotonic() + 10
        while store.waiting_jobs != 1 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert store.waiting_jobs == 1  # the erasure waits behind the hold
        reading = pool.submit(lambda: store.query_events(HistoryQuery(limit=1))[1])
        assert reading.result() == 2002
        assert not erasure.done()
        store.release_writes()
        assert erasure.result() == 2001
    assert not store.failing
    assert store.pending_events == 0
    assert count_rows(path) == 1


def test_a_hold_while_another_process_writes_answers_from_what_is_stored(
    store: HistoryStore, stored: list[AgentHistoryEvent], path: Path
) -> None:
    """Another program holds the database's write lock during the copy: reads answer at
    once from what is stored; once it lets go, they see the held events again; nothing
    is lost."""
    store.hold_writes()
    held_turn(store)
    with raw(path) as other:
        other.execute("BEGIN IMMEDIATE")
        for _ in range(3):
            assert store.query_events(HistoryQuery(session_id=SESSION, limit=10))[1] == 2
        other.execute("ROLLBACK")
    assert store.query_events(HistoryQuery(session_id=SESSION, limit=10))[1] == 4
    assert count_rows(path) == 2
    store.release_writes()
    assert store.query_events(HistoryQuery(session_id=SESSION, limit=10))[1] == 4
    assert count_rows(path) == 4


def test_reads_waiting_when_the_backup_ends_see_every_held_event(
    store: HistoryStore, stored: list[AgentHistoryEvent], path: Path
) -> None:
    """The backup ends while reads wait their turn at the held view: each of them still
    counts every event acknowledged (written by then, or read from the view)."""
    store.hold_writes()
    for n in range(10_000):
        store.enqueue(make(data={"n": n}, at=NOW + 10 + n, session_id="late"))
    with ThreadPoolExecutor(4) as pool:
        reads = [
            pool.submit(lambda: store.query_events(HistoryQuery(limit=1))[1]) for _ in range(4)
        ]
        store.release_writes()
        assert [read.result() for read in reads] == [10_002] * 4
    assert count_rows(path) == 10_002


def test_each_read_during_a_hold_adds_only_what_queued_since_the_last(
    store: HistoryStore, stored: list[AgentHistoryEvent]
) -> None:
    """The first read puts the held events into the view, later reads only the new ones;
    once the queue is full, a new event takes the oldest out of the view, nothing more."""
    statements: list[str] = []

    def changes() -> tuple[int, int]:
        """The statements traced since the last call that insert and delete events."""
        counted = (
            sum(s.startswith("INSERT") for s in statements),
            sum(s.startswith("DELETE") for s in statements),
        )
        statements.clear()
        return counted

    store.trace_reads(statements.append)
    store.hold_writes()
    for n in range(9_997):
        store.enqueue(make(data={"n": n}, at=NOW + 10 + n))
    assert store.query_events(HistoryQuery(limit=1))[1] == 2 + 9_997
    changes()
    store.enqueue(make(data={"n": "one"}, at=NOW + 20_000))
    assert store.query_events(HistoryQuery(limit=1))[1] == 2 + 9_998
    one_event, deleted = changes()  # what inserting one event traces (its triggers too)
    assert (one_event > 0, deleted) == (True, 0)
    store.enqueue(make(data={"n": "two"}, at=NOW + 20_001))
    store.enqueue(make(data={"n": "three"}, at=NOW + 20_002))
    assert store.query_events(HistoryQuery(limit=1))[1] == 2 + 10_000
    assert changes() == (2 * one_event, 0)
    store.enqueue(make(data={"n": "one too many"}, at=NOW + 20_003))  # the oldest is dropped
    assert store.query_events(HistoryQuery(limit=1))[1] == 2 + 10_000
    inserted, deleted = changes()
    assert (inserted, deleted > 0) == (one_event, True)
    store.trace_reads(None)
    store.release_writes()
