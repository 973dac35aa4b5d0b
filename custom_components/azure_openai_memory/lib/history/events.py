"""Agent history: an event as a row, and rows into the database.

An event is validated and encoded when it is handed over (encode_event), so a queue holds
what the event was then and the writer never meets one it cannot store. Its times are
INTEGER microseconds (see store.py); its public field `ref` is the column REF_COLUMN
(schema.py), named nowhere else. A duplicate event id is ignored: the same event recorded
twice is stored once. A parent that is not stored is refused when the caller waits for
the answer (strict), and dropped from the event otherwise: a turn's queued event is kept.
"""

from collections.abc import Sequence
from functools import partial
import logging
import sqlite3
from typing import Any, Final, TypeGuard

from .bulk import insert_in_bulk
from .models import (
    US_PER_SECOND,
    AgentHistoryEvent,
    HistoryError,
    HistoryEventType,
    HistorySnapshot,
    agent_text,
    decode_json,
    encode_json,
    event_type_of,
    from_us,
    optional_json,
    optional_text,
    optional_uuid,
    tags_of,
    to_us,
    uuid_text,
)
from .schema import REF_COLUMN, SNAPSHOT_REF_COLUMN, owner_of

_LOGGER = logging.getLogger(__name__)

# Events inserted at once from which they are indexed set by set, not by the trigger.
_BULK_ROWS = 64
# Parameters per `IN (...)` lookup, well under SQLite's limit of bound variables.
_LOOKUP_CHUNK = 500

# The stored columns of an event, in the order of its fields (`ref` is REF_COLUMN).
EVENT_COLUMNS: Final = (
    f"event_id, agent_id, timestamp, event_type, event_data, {REF_COLUMN}, session_id, "
    "parent_event_id, tags, metadata"
)
# The same, of the events table named `e`.
E_COLUMNS: Final = ", ".join(f"e.{column}" for column in EVENT_COLUMNS.split(", "))
# A duplicate event id is ignored: recording the same event twice stores it once.
INSERT_EVENT = (
    f"INSERT OR IGNORE INTO agent_history_events ({EVENT_COLUMNS}, owner) "
    f"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, {owner_of('?5', '?7')})"
)
SELECT_EVENT = f"SELECT {EVENT_COLUMNS} FROM agent_history_events WHERE event_id = ?"

# The stored form of an event, in EVENT_COLUMNS order.
type Row = tuple[str, str, int, str, str, str | None, str | None, str | None, str, str | None]
_PARENT: Final = 7


def encode_event(event: AgentHistoryEvent) -> Row:
    """Validate an event and encode it for the database, now: the queue then holds what the
    event was when it was handed over, and the writer can never meet an event it cannot
    store."""
    return (
        uuid_text(event.event_id, "event_id"),
        agent_text(event.agent_id),
        to_us(event.timestamp),
        event_type_of(event.event_type).value,
        encode_json(event.event_data, "event_data"),
        optional_text(event.ref, "ref"),
        optional_text(event.session_id, "session_id"),
        optional_uuid(event.parent_event_id, "parent_event_id"),
        encode_json(list(tags_of(event.tags)), "tags", None) if event.tags else "[]",
        optional_json(event.metadata, "metadata"),
    )


def _stored_type(value: str) -> HistoryEventType:
    """A stored type; one written by hand that is unknown reads as a system event."""
    try:
        return HistoryEventType(value)
    except ValueError:
        return HistoryEventType.SYSTEM


def decode_event(row: Sequence[Any]) -> AgentHistoryEvent:
    return AgentHistoryEvent(
        event_id=row[0],
        agent_id=row[1],
        timestamp=row[2] / US_PER_SECOND,
        event_type=_stored_type(row[3]),
        event_data=decode_json(row[4]),
        ref=row[5],
        session_id=row[6],
        parent_event_id=row[7],
        tags=tuple(decode_json(row[8]) or ()),
        metadata=decode_json(row[9]),
    )


def _missing_parents(conn: sqlite3.Connection, rows: Sequence[Row]) -> set[str]:
    """Parents that are neither stored nor earlier in `rows`: the foreign key would refuse
    those rows, and one refused row must not hold back the rest of a batch."""
    earlier: set[str] = set()
    wanted: set[str] = set()
    for row in rows:
        parent = row[_PARENT]
        if parent is not None and parent not in earlier:
            wanted.add(parent)
        earlier.add(row[0])
    if not wanted:
        return wanted
    candidates = list(wanted)
    for start in range(0, len(candidates), _LOOKUP_CHUNK):
        chunk = candidates[start : start + _LOOKUP_CHUNK]
        marks = ", ".join("?" * len(chunk))
        found = conn.execute(
            f"SELECT event_id FROM agent_history_events WHERE event_id IN ({marks})", chunk
        )
        wanted.difference_update(event_id for (event_id,) in found)
    return wanted


def _without_parent(row: Row) -> Row:
    return (row[0], row[1], row[2], row[3], row[4], row[5], row[6], None, row[8], row[9])


def insert_events(conn: sqlite3.Connection, rows: Sequence[Row], *, strict: bool) -> None:
    """Insert inside the caller's transaction. strict: an unknown parent is bad input;
    otherwise (queued events, whose caller is long gone) the link is dropped, not the event."""
    missing = _missing_parents(conn, rows)
    if missing:
        if strict:
            raise HistoryError("unknown_event", field="parent_event_id", event_id=min(missing))
        _LOGGER.debug("History: %d events name a parent that is not stored", len(missing))
        rows = [_without_parent(row) if row[_PARENT] in missing else row for row in rows]
    if len(rows) < _BULK_ROWS:
        conn.executemany(INSERT_EVENT, rows)
    else:
        insert_in_bulk(conn, partial(conn.executemany, INSERT_EVENT, rows))


def is_write_failure(err: BaseException) -> TypeGuard[sqlite3.DatabaseError]:
    """A fault of the database or disk (locked, full, damaged), not of what was written."""
    return isinstance(err, sqlite3.DatabaseError) and not isinstance(err, sqlite3.IntegrityError)


# The stored columns of a snapshot, in the order of its fields (`ref` is SNAPSHOT_REF_COLUMN).
SNAPSHOT_COLUMNS: Final = (
    f"snapshot_id, agent_id, timestamp, {SNAPSHOT_REF_COLUMN}, description, metadata, agent_state"
)
SELECT_SNAPSHOT: Final = f"SELECT {SNAPSHOT_COLUMNS} FROM history_snapshots"
INSERT_SNAPSHOT: Final = (
    f"INSERT INTO history_snapshots ({SNAPSHOT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)"
)

type SnapshotRow = tuple[str, str, int, str | None, str | None, str | None, str | None]


def encode_snapshot(snapshot: HistorySnapshot) -> SnapshotRow:
    """A snapshot's own row (its events are rows of their own), in SNAPSHOT_COLUMNS order."""
    return (
        uuid_text(snapshot.snapshot_id, "snapshot_id"),
        snapshot.agent_id,
        to_us(snapshot.timestamp),
        optional_text(snapshot.ref, "ref"),
        optional_text(snapshot.description, "description"),
        optional_json(snapshot.metadata, "metadata"),
        optional_json(snapshot.agent_state, "agent_state"),
    )


def decode_snapshot(conn: sqlite3.Connection, row: Sequence[Any]) -> HistorySnapshot:
    events = conn.execute(
        f"SELECT {E_COLUMNS} "
        "FROM snapshot_events s JOIN agent_history_events e ON e.event_id = s.event_id "
        "WHERE s.snapshot_id = ? ORDER BY e.timestamp, e.rowid",
        (row[0],),
    ).fetchall()
    return HistorySnapshot(
        snapshot_id=row[0],
        agent_id=row[1],
        timestamp=from_us(row[2]),
        events=tuple(decode_event(event) for event in events),
        ref=row[3],
        description=row[4],
        metadata=decode_json(row[5]),
        agent_state=decode_json(row[6]),
    )
