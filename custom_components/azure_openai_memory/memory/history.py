"""Agent history (seed 001): an event-sourced audit trail of what the agent did, in SQLite.

How it is stored, and why:

* The seed's schema: three tables, eight indexes, three views, foreign keys on, WAL journal.
  The schema version lives in PRAGMA user_version; `_MIGRATIONS` holds one step per version
  (step n takes a database from version n to n + 1, in one transaction), so a database of any
  older version is brought up to date at open. Version 1 is the seed's schema plus a small
  key/value table of installation-wide settings (`history_settings`).
* Timestamps are INTEGER microseconds since the epoch (UTC), not the seed's whole seconds:
  one conversation turn writes several events within a millisecond, and a retention cut-off
  must be exact. Integers compare exactly (a REAL would round), and 2**63 microseconds last
  until the year 294,247. Events that share a microsecond keep the order they were recorded
  in: every read orders by (timestamp, rowid). `created_at` keeps the seed's whole seconds; it
  only says when a row was written and nothing orders by it. The views read the columns as
  stored, so their times are microseconds too.
* The index columns beyond the seed's names are chosen so the statistics read indexes only:
  `idx_history_agent_id` is (agent_id, session_id), which still filters by agent and also
  counts an agent's sessions without touching the table.
* New event ids are UUID version 7 (time first, then random bits; see _new_event_id), so
  the primary key grows at its end instead of at random pages; ids of any UUID version are
  accepted.
* One writer thread owns the write connection. A turn only appends to a queue (`enqueue`);
  the writer commits what has queued at most `batch_window` seconds after the first event,
  in one transaction. A turn never waits on the disk, and a crash loses at most one batch
  window of events (1 s by default). The other writes (`record_events`, snapshots, purges,
  settings) are jobs on the same thread, run after the queue is committed, so a parent
  queued earlier is always written before its child.
* synchronous=NORMAL under WAL: a committed batch survives a crash of Home Assistant; a power
  cut may lose the last commits, never the file's consistency.
* WAL lets readers run beside the writer: reads take a connection from a small pool (from any
  executor thread) and flush the queue first, so they see what was enqueued before them;
  while writes are failing they answer from what is stored instead of waiting on the lock.
* A failing write (locked by another process, disk full) keeps the events queued, up to
  `max_queue` (the oldest go first, counted), calls `on_failure` once per failure streak, and
  is retried every batch window.
* A file that is not a database, or one shorter than its header says, is moved aside as
  `<name>.corrupt.<UTC time>` (never deleted) and a fresh database started. Checking every
  page at start-up would cost seconds on a large history; damage deeper in the file surfaces
  as a failing write (reported through `on_failure`) or a failing read.
"""

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
import logging
import math
import os
from pathlib import Path
import re
import sqlite3
import threading
import time
from typing import Any, Final, TypeGuard
import uuid

import orjson

from .timeseries import format_time

_LOGGER = logging.getLogger(__name__)


class HistoryEventType(StrEnum):
    """The seed's eight kinds of event; the values are what services and the database use."""

    THOUGHT = "thought"
    ACTION = "action"
    TOOL_USE = "tool_use"
    STATE_CHANGE = "state_change"
    COMMUNICATION = "communication"
    DECISION = "decision"
    ERROR = "error"
    SYSTEM = "system"


MAX_EVENT_DATA_BYTES = 64 * 1024
MAX_QUERY_LIMIT = 10_000
SCHEMA_VERSION = 1
DEFAULT_BATCH_WINDOW = 1.0
DEFAULT_MAX_QUEUE = 10_000
# How long a write waits for another process's lock before it counts as failed.
BUSY_TIMEOUT = 1.0

_US = 1_000_000
_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS
_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_SQLITE_MAGIC = b"SQLite format 3\x00"
# Idle read connections kept for reuse; more may be open while many threads read at once.
_IDLE_READERS = 4
# Parameters per `IN (...)` lookup, well under SQLite's limit of bound variables.
_LOOKUP_CHUNK = 500
_WAL_SIZE_LIMIT = 16 * 2**20
_CORRUPTION_CODES = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


class HistoryError(ValueError):
    """Bad input; `key` is the translation key, `placeholders` name the field."""

    def __init__(self, translation_key: str, **placeholders: Any) -> None:
        super().__init__(translation_key, placeholders)
        self.key = translation_key
        self.placeholders = {name: str(value) for name, value in placeholders.items()}


def _to_us(timestamp: float) -> int:
    """Epoch seconds as the stored integer microseconds."""
    if not isinstance(timestamp, int | float) or not math.isfinite(timestamp):
        raise ValueError(f"timestamp must be a finite number of seconds, not {timestamp!r}")
    return round(timestamp * _US)


def _from_us(micros: int) -> float:
    return micros / _US


def _event_type(value: object) -> HistoryEventType:
    if isinstance(value, HistoryEventType):
        return value
    if isinstance(value, str):
        with suppress(ValueError):
            return HistoryEventType(value.strip().lower())
    raise HistoryError("unknown_event_type", event_type=value)


def _uuid_text(value: object, field: str) -> str:
    """The canonical text of a UUID (lower case, hyphens), so lookups match however typed."""
    if isinstance(value, str):
        if _CANONICAL_UUID.fullmatch(value):
            return value
        with suppress(ValueError):
            return str(uuid.UUID(value))
    raise HistoryError("invalid_event_id", field=field, value=value)


def _new_event_id(timestamp: float) -> str:
    """A UUID version 7 (RFC 9562) for an event at `timestamp`: 48 bits of Unix time in
    milliseconds, then random bits.

    Not version 4: the events' primary key is an index on this text, and random keys land
    on random pages of it. record_events of 10,000 into a history of 1,000,000 events ran
    at about 36,000 events/s with random ids against 125,000 with these (run
    benchmarks/bench_history.py with HISTORY_BENCH_RANDOM_IDS=1). Ids that grow with time
    are appended where the index ends. The time is the event's own, so importing old events
    stays local too. Any UUID is still accepted wherever an id is read.
    """
    millis = min(max(int(timestamp * 1000), 0), (1 << 48) - 1)
    rand = int.from_bytes(os.urandom(10))
    value = (
        (millis << 80)
        | (0x7 << 76)  # version
        | ((rand >> 62) & 0xFFF) << 64
        | (0b10 << 62)  # variant
        | (rand & ((1 << 62) - 1))
    )
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def _optional_uuid(value: object, field: str) -> str | None:
    return None if value is None else _uuid_text(value, field)


def _encode_json(value: Any, field: str, limit: int | None = MAX_EVENT_DATA_BYTES) -> str:
    try:
        encoded = orjson.dumps(value, option=_JSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        raise HistoryError("event_data_not_json", field=field) from None
    if limit is not None and len(encoded) > limit:
        raise HistoryError("event_data_too_large", field=field, max_bytes=limit)
    return encoded.decode()


def _optional_json(value: Any, field: str) -> str | None:
    return None if value is None else _encode_json(value, field)


def _decode_json(text: str | None) -> Any:
    """A stored JSON column; text written by hand that is not JSON comes back as text."""
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def _optional_text(value: object, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{field} must be text, not {type(value).__name__}")


def _agent_text(value: object) -> str:
    if isinstance(value, str):
        return value
    raise TypeError(f"agent_id must be text, not {type(value).__name__}")


def _tags(values: Iterable[str]) -> tuple[str, ...]:
    tags = tuple(values)
    for tag in tags:
        if not isinstance(tag, str):
            raise TypeError(f"tags must be text, not {type(tag).__name__}")
    return tags


@dataclass(frozen=True, slots=True)
class AgentHistoryEvent:
    """One thing the agent did (the seed's brain state); `ref` is its git_commit_hash."""

    event_id: str
    agent_id: str
    timestamp: float
    event_type: HistoryEventType
    event_data: Any
    ref: str | None = None
    session_id: str | None = None
    parent_event_id: str | None = None
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        # Callers may hand a plain string type or a list of tags; keep the declared types.
        if type(self.event_type) is not HistoryEventType:
            object.__setattr__(self, "event_type", _event_type(self.event_type))
        if type(self.tags) is not tuple:
            object.__setattr__(self, "tags", tuple(self.tags))

    @classmethod
    def new(
        cls,
        agent_id: str,
        event_type: HistoryEventType | str,
        event_data: Any,
        *,
        session_id: str | None = None,
        parent_event_id: str | None = None,
        tags: Iterable[str] = (),
        metadata: dict[str, Any] | None = None,
        ref: str | None = None,
        timestamp: float | None = None,
    ) -> "AgentHistoryEvent":
        """A validated event with a fresh id (see _new_event_id).

        The data is taken through JSON here, so the event holds its own copy in the form a
        read returns (string keys, lists), and the time is rounded to the microsecond that is
        stored: the event equals what a later query gives back.
        """
        kind = _event_type(event_type)
        _agent_text(agent_id)
        data = orjson.loads(_encode_json(event_data, "event_data"))
        meta = None if metadata is None else orjson.loads(_encode_json(metadata, "metadata"))
        when = _from_us(_to_us(time.time() if timestamp is None else timestamp))
        return cls(
            event_id=_new_event_id(when),
            agent_id=agent_id,
            timestamp=when,
            event_type=kind,
            event_data=data,
            ref=_optional_text(ref, "ref"),
            session_id=_optional_text(session_id, "session_id"),
            parent_event_id=_optional_uuid(parent_event_id, "parent_event_id"),
            tags=_tags(tags),
            metadata=meta,
        )

    def as_dict(self) -> dict[str, Any]:
        """The service shape: the seed's fields, time as ISO 8601 UTC."""
        return {
            "event_id": self.event_id,
            "agent_id": self.agent_id,
            "timestamp": format_time(self.timestamp),
            "event_type": self.event_type.value,
            "event_data": self.event_data,
            "session_id": self.session_id,
            "parent_event_id": self.parent_event_id,
            "tags": list(self.tags),
            "metadata": self.metadata,
            "ref": self.ref,
        }


def _check_count(field: str, value: object, low: int, high: int | None) -> None:
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or value < low
        or (high is not None and value > high)
    ):
        raise HistoryError("history_limit_out_of_range", field=field, value=value, max=high)


@dataclass(frozen=True, slots=True)
class HistoryQuery:
    """What query_events selects; validated here so a bad query never reaches the database."""

    agent_id: str | None = None
    session_id: str | None = None
    event_type: HistoryEventType | None = None
    tags: tuple[str, ...] = ()
    start_time: float | None = None
    end_time: float | None = None
    limit: int = 100
    offset: int = 0
    ascending: bool = False

    def __post_init__(self) -> None:
        if self.event_type is not None and type(self.event_type) is not HistoryEventType:
            object.__setattr__(self, "event_type", _event_type(self.event_type))
        if type(self.tags) is not tuple:
            object.__setattr__(self, "tags", _tags(self.tags))
        _check_count("limit", self.limit, 1, MAX_QUERY_LIMIT)
        _check_count("offset", self.offset, 0, None)
        for value in (self.start_time, self.end_time):
            if value is not None:
                _to_us(value)
        if (
            self.start_time is not None
            and self.end_time is not None
            and self.end_time < self.start_time
        ):
            raise HistoryError(
                "history_end_before_start",
                start_time=format_time(self.start_time),
                end_time=format_time(self.end_time),
            )


@dataclass(frozen=True, slots=True)
class HistorySnapshot:
    """A point in time of one agent: recent events plus its state (the seed's brain + body)."""

    snapshot_id: str
    agent_id: str
    timestamp: float
    events: tuple[AgentHistoryEvent, ...]
    ref: str | None = None
    description: str | None = None
    metadata: dict[str, Any] | None = None
    agent_state: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if type(self.events) is not tuple:
            object.__setattr__(self, "events", tuple(self.events))

    def as_dict(self) -> dict[str, Any]:
        """The service shape: events as theirs, time as ISO 8601 UTC."""
        return {
            "snapshot_id": self.snapshot_id,
            "agent_id": self.agent_id,
            "timestamp": format_time(self.timestamp),
            "events": [event.as_dict() for event in self.events],
            "ref": self.ref,
            "description": self.description,
            "metadata": self.metadata,
            "agent_state": self.agent_state,
        }


@dataclass(frozen=True, slots=True)
class HistoryStatistics:
    """The seed's statistics; `refs` are its git_commits, in the order first seen."""

    total_events: int
    events_by_type: dict[str, int]
    total_snapshots: int
    earliest_event: float | None
    latest_event: float | None
    unique_sessions: int
    refs: list[str]

    def as_dict(self) -> dict[str, Any]:
        """The service shape, times as ISO 8601 UTC."""
        return {
            "total_events": self.total_events,
            "events_by_type": dict(self.events_by_type),
            "total_snapshots": self.total_snapshots,
            "earliest_event": None
            if self.earliest_event is None
            else format_time(self.earliest_event),
            "latest_event": None if self.latest_event is None else format_time(self.latest_event),
            "unique_sessions": self.unique_sessions,
            "refs": list(self.refs),
        }


# --- Schema -------------------------------------------------------------------------------

_SCHEMA_1 = (
    """CREATE TABLE agent_history_events (
        event_id TEXT PRIMARY KEY NOT NULL,
        agent_id TEXT NOT NULL,
        timestamp INTEGER NOT NULL,
        event_type TEXT NOT NULL,
        event_data TEXT NOT NULL,
        git_commit_hash TEXT,
        session_id TEXT,
        parent_event_id TEXT,
        tags TEXT NOT NULL DEFAULT '[]',
        metadata TEXT,
        created_at INTEGER NOT NULL DEFAULT (strftime('%s', 'now')),
        FOREIGN KEY (parent_event_id) REFERENCES agent_history_events(event_id)
            ON DELETE SET NULL
    )""",
    """CREATE TABLE history_snapshots (
        snapshot_id TEXT PRIMARY KEY NOT NULL,
        agent_id TEXT NOT NULL,
        timestamp INTEGER NOT NULL,
        git_commit TEXT,
        description TEXT,
        metadata TEXT,
        agent_state TEXT,
        created_at INTEGER NOT NULL DEFAULT (strftime('%s', 'now'))
    )""",
    """CREATE TABLE snapshot_events (
        snapshot_id TEXT NOT NULL,
        event_id TEXT NOT NULL,
        PRIMARY KEY (snapshot_id, event_id),
        FOREIGN KEY (snapshot_id) REFERENCES history_snapshots(snapshot_id) ON DELETE CASCADE,
        FOREIGN KEY (event_id) REFERENCES agent_history_events(event_id) ON DELETE CASCADE
    )""",
    "CREATE INDEX idx_history_agent_id ON agent_history_events(agent_id, session_id)",
    "CREATE INDEX idx_history_timestamp ON agent_history_events(timestamp)",
    "CREATE INDEX idx_history_event_type ON agent_history_events(event_type)",
    "CREATE INDEX idx_history_session_id ON agent_history_events(session_id)",
    "CREATE INDEX idx_history_git_commit ON agent_history_events(git_commit_hash)",
    "CREATE INDEX idx_history_agent_timestamp ON agent_history_events(agent_id, timestamp)",
    "CREATE INDEX idx_history_agent_type ON agent_history_events(agent_id, event_type)",
    "CREATE INDEX idx_history_parent ON agent_history_events(parent_event_id)",
    """CREATE VIEW v_recent_agent_activity AS
        SELECT agent_id, event_type, COUNT(*) AS event_count,
               MAX(timestamp) AS last_event_time,
               MIN(timestamp) AS first_event_time
        FROM agent_history_events
        WHERE timestamp > (strftime('%s', 'now') - 86400) * 1000000
        GROUP BY agent_id, event_type""",
    """CREATE VIEW v_agent_event_summary AS
        SELECT agent_id,
               COUNT(*) AS total_events,
               COUNT(DISTINCT session_id) AS unique_sessions,
               COUNT(DISTINCT git_commit_hash) AS unique_commits,
               MIN(timestamp) AS earliest_event,
               MAX(timestamp) AS latest_event
        FROM agent_history_events
        GROUP BY agent_id""",
    """CREATE VIEW v_event_chains AS
        SELECT e1.event_id AS child_event_id,
               e1.event_type AS child_event_type,
               e2.event_id AS parent_event_id,
               e2.event_type AS parent_event_type,
               e1.agent_id
        FROM agent_history_events e1
        LEFT JOIN agent_history_events e2 ON e1.parent_event_id = e2.event_id
        WHERE e1.parent_event_id IS NOT NULL""",
    """CREATE TABLE history_settings (
        name TEXT PRIMARY KEY NOT NULL,
        value TEXT NOT NULL
    )""",
)


def _create_version_1(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA_1:
        conn.execute(statement)


type MigrationStep = Callable[[sqlite3.Connection], None]
# Step n takes a database from version n to n + 1; version 0 is an empty file.
_MIGRATIONS: tuple[MigrationStep, ...] = (_create_version_1,)
assert len(_MIGRATIONS) == SCHEMA_VERSION


def _migrate(conn: sqlite3.Connection, steps: Sequence[MigrationStep]) -> int:
    """Bring the database to len(steps), one transaction per step; its version after."""
    version: int = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > len(steps):
        raise sqlite3.DatabaseError(
            f"history database schema version {version} is newer than this integration "
            f"knows ({len(steps)}); it was left as it is"
        )
    while version < len(steps):
        with _transaction(conn):
            steps[version](conn)
            conn.execute(f"PRAGMA user_version = {version + 1}")
        _LOGGER.debug("History database migrated to schema version %d", version + 1)
        version += 1
    return version


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction; IMMEDIATE takes the write lock up front, so a lock held by
    another process fails here, before any work is done."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


_EVENT_COLUMNS = (
    "event_id, agent_id, timestamp, event_type, event_data, git_commit_hash, session_id, "
    "parent_event_id, tags, metadata"
)
# A duplicate event id is ignored: recording the same event twice stores it once.
_INSERT_EVENT = (
    f"INSERT OR IGNORE INTO agent_history_events ({_EVENT_COLUMNS}) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SELECT_EVENT = f"SELECT {_EVENT_COLUMNS} FROM agent_history_events WHERE event_id = ?"

# The stored form of an event, in _EVENT_COLUMNS order.
type _Row = tuple[str, str, int, str, str, str | None, str | None, str | None, str, str | None]
_PARENT: Final = 7


def _encode_event(event: AgentHistoryEvent) -> _Row:
    """Validate an event and encode it for the database, now: the queue then holds what the
    event was when it was handed over, and the writer can never meet an event it cannot
    store."""
    return (
        _uuid_text(event.event_id, "event_id"),
        _agent_text(event.agent_id),
        _to_us(event.timestamp),
        _event_type(event.event_type).value,
        _encode_json(event.event_data, "event_data"),
        _optional_text(event.ref, "ref"),
        _optional_text(event.session_id, "session_id"),
        _optional_uuid(event.parent_event_id, "parent_event_id"),
        _encode_json(list(_tags(event.tags)), "tags", None) if event.tags else "[]",
        _optional_json(event.metadata, "metadata"),
    )


def _stored_type(value: str) -> HistoryEventType:
    """A stored type; one written by hand that is unknown reads as a system event."""
    try:
        return HistoryEventType(value)
    except ValueError:
        return HistoryEventType.SYSTEM


def _decode_event(row: Sequence[Any]) -> AgentHistoryEvent:
    return AgentHistoryEvent(
        event_id=row[0],
        agent_id=row[1],
        timestamp=row[2] / _US,
        event_type=_stored_type(row[3]),
        event_data=_decode_json(row[4]),
        ref=row[5],
        session_id=row[6],
        parent_event_id=row[7],
        tags=tuple(_decode_json(row[8]) or ()),
        metadata=_decode_json(row[9]),
    )


def _missing_parents(conn: sqlite3.Connection, rows: Sequence[_Row]) -> set[str]:
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


def _without_parent(row: _Row) -> _Row:
    return (row[0], row[1], row[2], row[3], row[4], row[5], row[6], None, row[8], row[9])


def _insert_events(conn: sqlite3.Connection, rows: Sequence[_Row], *, strict: bool) -> None:
    """Insert inside the caller's transaction. strict: an unknown parent is bad input;
    otherwise (queued events, whose caller is long gone) the link is dropped, not the event."""
    missing = _missing_parents(conn, rows)
    if missing:
        if strict:
            raise HistoryError("unknown_event", field="parent_event_id", event_id=min(missing))
        _LOGGER.debug("History: %d events name a parent that is not stored", len(missing))
        rows = [_without_parent(row) if row[_PARENT] in missing else row for row in rows]
    conn.executemany(_INSERT_EVENT, rows)


def _damaged_header(path: Path) -> bool:
    """True when the file is not an SQLite database, or shorter than its own header says."""
    try:
        size = path.stat().st_size
        if size == 0:  # SQLite starts an empty file as a new database
            return False
        with path.open("rb") as file:
            header = file.read(100)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # unreadable: set it aside too
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        return True
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        return True
    wal = path.with_name(path.name + "-wal")
    with suppress(OSError):
        if wal.stat().st_size > 0:
            # Pages not yet copied back from the WAL; SQLite completes the file itself.
            return False
    if size % page_size:
        return True
    change_counter = int.from_bytes(header[24:28], "big")
    pages = int.from_bytes(header[28:32], "big")
    valid_for = int.from_bytes(header[92:96], "big")
    # The header's page count is only meaningful when the two counters agree.
    return pages > 0 and change_counter == valid_for and size < pages * page_size


def _is_corruption(err: sqlite3.DatabaseError) -> bool:
    code = getattr(err, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _CORRUPTION_CODES


def _is_write_failure(err: BaseException) -> TypeGuard[sqlite3.DatabaseError]:
    """A fault of the database or disk (locked, full, damaged), not of what was written."""
    return isinstance(err, sqlite3.DatabaseError) and not isinstance(err, sqlite3.IntegrityError)


# --- The store ----------------------------------------------------------------------------

# A job for the writer thread; None only waits for the queue to be committed before it.
type _Work = Callable[[sqlite3.Connection], Any] | None


class HistoryStore:
    """The history database: every method blocks and is thread-safe, except `enqueue`, which
    only appends to a queue and may be called from the event loop."""

    def __init__(
        self,
        path: Path,
        *,
        batch_window: float = DEFAULT_BATCH_WINDOW,
        max_queue: int = DEFAULT_MAX_QUEUE,
        on_failure: Callable[[Exception], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._path = Path(path)
        self._batch_window = max(0.0, batch_window)
        self._max_queue = max(1, max_queue)
        self._on_failure = on_failure
        self._clock = clock
        # Seconds a write waits on another process's lock; set before open() to change it.
        self.busy_timeout = BUSY_TIMEOUT
        self._cond = threading.Condition()
        # Everything below is guarded by _cond.
        self._pending: deque[_Row] = deque()
        self._in_flight = 0
        self._deadline = 0.0
        self._jobs: list[tuple[_Work, Future[Any]]] = []
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._dropped = 0
        self._commits = 0
        self._dropping = False
        # Touched by the writer thread only (read anywhere; a bool is read atomically).
        self._failing = False
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._open = False
        self._schema_version = 0

    # -- Life cycle ------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    @property
    def schema_version(self) -> int:
        """The database's schema version once open (0 before)."""
        return self._schema_version

    @property
    def dropped_events(self) -> int:
        """Queued events lost: pushed out by a full queue while writes failed, or still
        unwritten when the store closed."""
        return self._dropped

    @property
    def pending_events(self) -> int:
        """Events queued and not yet committed."""
        with self._cond:
            return len(self._pending) + self._in_flight

    @property
    def failing(self) -> bool:
        """True from a failed write until the next successful one."""
        return self._failing

    def open(self) -> Path | None:
        """Open or create the database and start the writer; the moved-aside path of a
        corrupt file (a fresh database is started in its place), else None."""
        with self._cond:
            if self._thread is not None:
                raise RuntimeError("history store is already open")
        self._path.parent.mkdir(parents=True, exist_ok=True)
        moved = self._move_aside() if _damaged_header(self._path) else None
        try:
            conn, version = self._connect_writer()
        except sqlite3.DatabaseError as err:
            if moved is not None or not _is_corruption(err):
                raise
            moved = self._move_aside()
            conn, version = self._connect_writer()
        if moved is not None:  # the caller reports it (the path is returned)
            _LOGGER.debug("History database was corrupt; moved to %s, a new one started", moved)
        self._schema_version = version
        with self._cond:
            self._stopping = False
            self._failing = False
            self._open = True
            if self._pending:
                self._deadline = time.monotonic() + self._batch_window
            self._thread = threading.Thread(
                target=self._run, args=(conn,), name="azure_openai_memory history", daemon=True
            )
            self._thread.start()
        return moved

    def close(self) -> None:
        """Commit what is queued, stop the writer and close every connection."""
        with self._cond:
            thread = self._thread
            if thread is None:
                return
            self._stopping = True
            self._cond.notify_all()
        thread.join()
        with self._cond:
            self._thread = None
            self._open = False
        with self._readers_lock:
            readers, self._readers = self._readers, []
        for conn in readers:
            conn.close()

    def size_bytes(self) -> int:
        """The database's size on disk, its WAL and shared-memory files included."""
        total = 0
        for suffix in ("", "-wal", "-shm"):
            with suppress(OSError):
                total += self._path.with_name(self._path.name + suffix).stat().st_size
        return total

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self._path, check_same_thread=False, isolation_level=None, cached_statements=64
        )
        conn.execute(f"PRAGMA busy_timeout = {round(self.busy_timeout * 1000)}")
        return conn

    def _connect_writer(self) -> tuple[sqlite3.Connection, int]:
        conn = self._connect()
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode != "wal":
                _LOGGER.warning("History database journal is %s, not WAL", mode)
            conn.execute("PRAGMA synchronous = NORMAL")
            # A WAL grown by a large batch or purge is cut back after its next checkpoint.
            conn.execute(f"PRAGMA journal_size_limit = {_WAL_SIZE_LIMIT}")
            conn.execute("PRAGMA foreign_keys = ON")
            version = _migrate(conn, _MIGRATIONS)
            # Reads the last page of each table: a damaged tree fails here, not mid-turn.
            for table in ("agent_history_events", "history_snapshots", "snapshot_events"):
                conn.execute(f"SELECT max(rowid) FROM {table}").fetchone()
        except BaseException:
            conn.close()
            raise
        return conn, version

    def _move_aside(self) -> Path:
        """Rename the file (and its WAL, which belongs to it) out of the way; never delete."""
        stamp = datetime.fromtimestamp(self._clock(), UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        target = self._path.with_name(f"{self._path.name}.corrupt.{stamp}")
        count = 1
        while target.exists():
            target = self._path.with_name(f"{self._path.name}.corrupt.{stamp}.{count}")
            count += 1
        self._path.rename(target)
        for suffix in ("-wal", "-shm", "-journal"):
            side = self._path.with_name(self._path.name + suffix)
            if side.exists():
                side.rename(target.with_name(target.name + suffix))
        return target

    # -- Writes ----------------------------------------------------------------------------

    def enqueue(self, event: AgentHistoryEvent) -> None:
        """Queue an event for the next batch; never waits on the disk."""
        row = _encode_event(event)
        with self._cond:
            if self._stopping:
                self._dropped += 1
                return
            if not self._pending and not self._in_flight:
                self._deadline = time.monotonic() + self._batch_window
                self._cond.notify_all()
            self._pending.append(row)
            if len(self._pending) > self._max_queue:
                self._drop_oldest(len(self._pending) - self._max_queue)

    def flush(self) -> None:
        """Commit everything queued now and wait for the attempt. A failing write does not
        raise here: the events stay queued and on_failure has been told."""
        with self._cond:
            if not self._pending and not self._in_flight:
                return
        self._submit(None)

    def record_event(self, event: AgentHistoryEvent) -> None:
        """Write one event now, in its own transaction (after what is queued)."""
        self.record_events((event,))

    def record_events(self, events: Iterable[AgentHistoryEvent]) -> None:
        """Write events now, in one transaction: all of them or (on bad input or a failing
        database) none. An unknown parent is HistoryError("unknown_event")."""
        rows = [_encode_event(event) for event in events]
        if not rows:
            return

        def write(conn: sqlite3.Connection) -> None:
            with _transaction(conn):
                _insert_events(conn, rows, strict=True)

        self._submit(write)

    def create_snapshot(self, snapshot: HistorySnapshot) -> None:
        """Store a snapshot and link its events (storing any that are not yet); the same id
        again replaces it."""
        snapshot_id = _uuid_text(snapshot.snapshot_id, "snapshot_id")
        rows = [_encode_event(event) for event in snapshot.events]
        values = (
            snapshot_id,
            snapshot.agent_id,
            _to_us(snapshot.timestamp),
            _optional_text(snapshot.ref, "ref"),
            _optional_text(snapshot.description, "description"),
            _optional_json(snapshot.metadata, "metadata"),
            _optional_json(snapshot.agent_state, "agent_state"),
        )

        def write(conn: sqlite3.Connection) -> None:
            with _transaction(conn):
                _insert_events(conn, rows, strict=False)
                conn.execute("DELETE FROM history_snapshots WHERE snapshot_id = ?", (snapshot_id,))
                conn.execute(
                    "INSERT INTO history_snapshots (snapshot_id, agent_id, timestamp, "
                    "git_commit, description, metadata, agent_state) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    values,
                )
                conn.executemany(
                    "INSERT OR IGNORE INTO snapshot_events (snapshot_id, event_id) VALUES (?, ?)",
                    [(snapshot_id, row[0]) for row in rows],
                )

        self._submit(write)

    def delete_events_before(self, timestamp: float) -> int:
        """Delete events older than `timestamp` (one at exactly it is kept); how many went.

        The foreign keys' actions (children lose their parent, snapshots lose the link) are
        applied here in bulk, with the foreign keys off for the statement: SQLite would
        otherwise scan snapshot_events once per deleted event (it has no index on event_id).
        """
        cutoff = _to_us(timestamp)
        doomed = "SELECT event_id FROM agent_history_events WHERE timestamp < ?"

        def delete(conn: sqlite3.Connection) -> int:
            conn.execute("PRAGMA foreign_keys = OFF")
            try:
                with _transaction(conn):
                    conn.execute(
                        f"DELETE FROM snapshot_events WHERE event_id IN ({doomed})", (cutoff,)
                    )
                    # The unary + keeps the planner on idx_history_parent.
                    conn.execute(
                        "UPDATE agent_history_events SET parent_event_id = NULL "
                        f"WHERE parent_event_id IN ({doomed}) AND +timestamp >= ?",
                        (cutoff, cutoff),
                    )
                    count: int = conn.execute(
                        "DELETE FROM agent_history_events WHERE timestamp < ?", (cutoff,)
                    ).rowcount
            finally:
                conn.execute("PRAGMA foreign_keys = ON")
            return count

        deleted: int = self._submit(delete)
        return deleted

    def set_setting(self, name: str, value: Any) -> None:
        """Store an installation-wide setting (any JSON value)."""
        encoded = _encode_json(value, name, None)

        def write(conn: sqlite3.Connection) -> None:
            with _transaction(conn):
                conn.execute(
                    "INSERT INTO history_settings (name, value) VALUES (?, ?) "
                    "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                    (name, encoded),
                )

        self._submit(write)

    # -- Reads -----------------------------------------------------------------------------

    def get_setting(self, name: str, default: Any) -> Any:
        """An installation-wide setting, or `default` when it was never set."""
        with self._reading(flush=False) as conn:
            row = conn.execute("SELECT value FROM history_settings WHERE name = ?", (name,))
            found = row.fetchone()
        return default if found is None else _decode_json(found[0])

    def get_event(self, event_id: str) -> AgentHistoryEvent | None:
        """One event by id, or None."""
        key = _uuid_text(event_id, "event_id")
        with self._reading() as conn:
            row = conn.execute(_SELECT_EVENT, (key,)).fetchone()
        return None if row is None else _decode_event(row)

    def get_events(self, agent_id: str, limit: int) -> list[AgentHistoryEvent]:
        """An agent's most recent events, newest first."""
        return self.query_events(HistoryQuery(agent_id=agent_id, limit=limit))[0]

    def get_events_by_type(
        self, agent_id: str, event_type: HistoryEventType | str, limit: int
    ) -> list[AgentHistoryEvent]:
        """An agent's most recent events of one type, newest first."""
        query = HistoryQuery(agent_id=agent_id, event_type=_event_type(event_type), limit=limit)
        return self.query_events(query)[0]

    def get_events_by_time_range(
        self, agent_id: str, start_time: float, end_time: float
    ) -> list[AgentHistoryEvent]:
        """Every event of an agent from start_time to end_time (both included), oldest
        first. Unbounded, as the seed's: query_events pages through a long range."""
        if end_time < start_time:
            raise HistoryError(
                "history_end_before_start",
                start_time=format_time(start_time),
                end_time=format_time(end_time),
            )
        with self._reading() as conn:
            rows = conn.execute(
                f"SELECT {_EVENT_COLUMNS} FROM agent_history_events "
                "WHERE agent_id = ? AND timestamp >= ? AND timestamp <= ? "
                "ORDER BY timestamp, rowid",
                (agent_id, _to_us(start_time), _to_us(end_time)),
            ).fetchall()
        return [_decode_event(row) for row in rows]

    def get_events_by_session(self, session_id: str) -> list[AgentHistoryEvent]:
        """Every event of one session (a conversation), oldest first."""
        with self._reading() as conn:
            rows = conn.execute(
                f"SELECT {_EVENT_COLUMNS} FROM agent_history_events WHERE session_id = ? "
                "ORDER BY timestamp, rowid",
                (session_id,),
            ).fetchall()
        return [_decode_event(row) for row in rows]

    def query_events(self, query: HistoryQuery) -> tuple[list[AgentHistoryEvent], int]:
        """One page of the events a query selects, and how many it selects in all."""
        terms: list[str] = []
        params: list[Any] = []
        for column, value in (
            ("agent_id", query.agent_id),
            ("session_id", query.session_id),
            ("event_type", None if query.event_type is None else query.event_type.value),
        ):
            if value is not None:
                terms.append(f"{column} = ?")
                params.append(value)
        if query.start_time is not None:
            terms.append("timestamp >= ?")
            params.append(_to_us(query.start_time))
        if query.end_time is not None:
            terms.append("timestamp <= ?")
            params.append(_to_us(query.end_time))
        for tag in dict.fromkeys(query.tags):
            terms.append("EXISTS (SELECT 1 FROM json_each(tags) WHERE value = ?)")
            params.append(tag)
        where = f"WHERE {' AND '.join(terms)}" if terms else ""
        order = "ASC" if query.ascending else "DESC"
        with self._reading() as conn:
            rows = conn.execute(
                f"SELECT {_EVENT_COLUMNS} FROM agent_history_events {where} "
                f"ORDER BY timestamp {order}, rowid {order} LIMIT ? OFFSET ?",
                (*params, query.limit, query.offset),
            ).fetchall()
            if 0 < len(rows) < query.limit or (not rows and query.offset == 0):
                total = query.offset + len(rows)  # the page ends before the limit: no count
            else:
                total = conn.execute(
                    f"SELECT COUNT(*) FROM agent_history_events {where}", params
                ).fetchone()[0]
        return [_decode_event(row) for row in rows], total

    def get_event_chain(self, event_id: str) -> list[AgentHistoryEvent]:
        """The causes of an event, root first and the event last. A cycle (only possible
        through data written by hand) or a parent that is gone ends the chain there."""
        current: str | None = _uuid_text(event_id, "event_id")
        chain: list[AgentHistoryEvent] = []
        seen: set[str] = set()
        with self._reading() as conn:
            while current is not None and current not in seen:
                row = conn.execute(_SELECT_EVENT, (current,)).fetchone()
                if row is None:
                    break
                seen.add(current)
                event = _decode_event(row)
                chain.append(event)
                current = event.parent_event_id
        if not chain:
            raise HistoryError("unknown_event", event_id=event_id)
        chain.reverse()
        return chain

    def get_statistics(self, agent_id: str | None = None) -> HistoryStatistics:
        """The seed's statistics of one agent, or of all (agent_id None).

        Each figure is one query answered from an index (see the schema), so none of them
        reads the events themselves.
        """
        where, params = ("WHERE agent_id = ?", (agent_id,)) if agent_id is not None else ("", ())
        both = f"{where} AND" if where else "WHERE"
        with self._reading() as conn:
            by_type = dict.fromkeys((kind.value for kind in HistoryEventType), 0)
            for kind, count in conn.execute(
                f"SELECT event_type, COUNT(*) FROM agent_history_events {where} "
                "GROUP BY event_type",
                params,
            ):
                by_type[kind] = count
            earliest = conn.execute(
                f"SELECT MIN(timestamp) FROM agent_history_events {where}", params
            ).fetchone()[0]
            latest = conn.execute(
                f"SELECT MAX(timestamp) FROM agent_history_events {where}", params
            ).fetchone()[0]
            sessions = conn.execute(
                f"SELECT COUNT(DISTINCT session_id) FROM agent_history_events {where}", params
            ).fetchone()[0]
            refs = [
                ref
                for (ref,) in conn.execute(
                    "SELECT git_commit_hash FROM agent_history_events "
                    f"{both} git_commit_hash IS NOT NULL "
                    "GROUP BY git_commit_hash ORDER BY MIN(timestamp), git_commit_hash",
                    params,
                )
            ]
            snapshots = conn.execute(
                f"SELECT COUNT(*) FROM history_snapshots {where}", params
            ).fetchone()[0]
        return HistoryStatistics(
            total_events=sum(by_type.values()),
            events_by_type=by_type,
            total_snapshots=snapshots,
            earliest_event=None if earliest is None else _from_us(earliest),
            latest_event=None if latest is None else _from_us(latest),
            unique_sessions=sessions,
            refs=refs,
        )

    def get_snapshot(self, snapshot_id: str) -> HistorySnapshot | None:
        """One snapshot with its events (oldest first), or None."""
        key = _uuid_text(snapshot_id, "snapshot_id")
        with self._reading() as conn:
            row = conn.execute(f"{_SELECT_SNAPSHOT} WHERE snapshot_id = ?", (key,)).fetchone()
            return None if row is None else _decode_snapshot(conn, row)

    def list_snapshots(self, agent_id: str) -> list[HistorySnapshot]:
        """An agent's snapshots, newest first, each with its events."""
        with self._reading() as conn:
            rows = conn.execute(
                f"{_SELECT_SNAPSHOT} WHERE agent_id = ? ORDER BY timestamp DESC, rowid DESC",
                (agent_id,),
            ).fetchall()
            return [_decode_snapshot(conn, row) for row in rows]

    @contextmanager
    def _reading(self, *, flush: bool = True) -> Iterator[sqlite3.Connection]:
        """A read connection in one read transaction (one consistent view of the database)."""
        if not self._open:
            raise RuntimeError("history store is not open")
        if flush and not self._failing:
            self.flush()
        with self._readers_lock:
            conn = self._readers.pop() if self._readers else None
        if conn is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only = ON")
        try:
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")
        except BaseException:
            conn.close()
            raise
        with self._readers_lock:
            if self._open and len(self._readers) < _IDLE_READERS:
                self._readers.append(conn)
                return
        conn.close()

    # -- The writer thread -----------------------------------------------------------------

    def _submit(self, work: _Work) -> Any:
        """Run `work` on the writer thread after the queue is committed; its result."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("the history store cannot be called from its own callbacks")
        future: Future[Any] = Future()
        with self._cond:
            if self._thread is None or self._stopping:
                raise RuntimeError("history store is not open")
            self._jobs.append((work, future))
            self._cond.notify_all()
        return future.result()

    def _drop_oldest(self, count: int) -> None:
        """Make room in a full queue (called with _cond held)."""
        for _ in range(count):
            self._pending.popleft()
        self._dropped += count
        if not self._dropping:
            self._dropping = True
            _LOGGER.warning(
                "History queue is full (%d events) while writes fail; the oldest are dropped",
                self._max_queue,
            )

    def _run(self, conn: sqlite3.Connection) -> None:
        try:
            while True:
                with self._cond:
                    while not (
                        self._jobs
                        or self._stopping
                        or (self._pending and time.monotonic() >= self._deadline)
                    ):
                        timeout = self._deadline - time.monotonic() if self._pending else None
                        self._cond.wait(timeout)
                    jobs, self._jobs = self._jobs, []
                    stopping = self._stopping
                    batch = list(self._pending)
                    self._pending.clear()
                    self._in_flight = len(batch)
                if batch:
                    self._write_batch(conn, batch)
                for work, future in jobs:
                    self._run_job(conn, work, future)
                if stopping:
                    break
        finally:
            self._shut_down(conn)

    def _write_batch(self, conn: sqlite3.Connection, batch: list[_Row]) -> None:
        try:
            with _transaction(conn):
                _insert_events(conn, batch, strict=False)
        except Exception as err:
            if not _is_write_failure(err):
                # Every row was validated when queued: this is a bug, not a fault of the
                # disk. Retrying would fail forever, so the batch is dropped and counted.
                _LOGGER.exception("History batch of %d events could not be stored", len(batch))
                with self._cond:
                    self._dropped += len(batch)
                    self._in_flight = 0
                return
            with self._cond:
                self._pending.extendleft(reversed(batch))
                if len(self._pending) > self._max_queue:
                    self._drop_oldest(len(self._pending) - self._max_queue)
                self._in_flight = 0
                self._deadline = time.monotonic() + self._batch_window
            self._failed(err)
            return
        with self._cond:
            self._in_flight = 0
            self._dropping = False
            self._commits += 1
            self._cond.notify_all()
        self._succeeded()

    def _run_job(self, conn: sqlite3.Connection, work: _Work, future: Future[Any]) -> None:
        if work is None:
            future.set_result(None)
            return
        try:
            result = work(conn)
        except BaseException as err:
            if _is_write_failure(err):
                self._failed(err)
            future.set_exception(err)
        else:
            self._succeeded()
            future.set_result(result)

    def _failed(self, err: Exception) -> None:
        if self._failing:
            return
        self._failing = True
        # Said once, by the callback's owner when there is one.
        _LOGGER.log(
            logging.DEBUG if self._on_failure is not None else logging.WARNING,
            "History database write failed (%s); events stay queued and are retried every %.1f s",
            err,
            self._batch_window,
        )
        if self._on_failure is not None:
            try:
                self._on_failure(err)
            except Exception:
                _LOGGER.exception("History failure callback failed")

    def _succeeded(self) -> None:
        if self._failing:
            self._failing = False
            _LOGGER.info("History database writes work again")

    def _shut_down(self, conn: sqlite3.Connection) -> None:
        """Last attempt at what is queued, then close; what still fails is counted lost."""
        with self._cond:
            batch = list(self._pending)
            self._pending.clear()
            jobs, self._jobs = self._jobs, []
        if batch:
            try:
                with _transaction(conn):
                    _insert_events(conn, batch, strict=False)
            except Exception as err:
                _LOGGER.warning(
                    "History: %d queued events could not be written at close: %s",
                    len(batch),
                    err,
                )
                with self._cond:
                    self._dropped += len(batch)
        for _work, future in jobs:
            future.set_exception(RuntimeError("history store closed"))
        conn.close()

    # -- For tests -------------------------------------------------------------------------

    def _wait_for_commits(self, count: int, timeout: float) -> bool:
        """Wait until `count` queued batches have been committed (False on timeout)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._commits >= count, timeout)


_SELECT_SNAPSHOT = (
    "SELECT snapshot_id, agent_id, timestamp, git_commit, description, metadata, agent_state "
    "FROM history_snapshots"
)


def _decode_snapshot(conn: sqlite3.Connection, row: Sequence[Any]) -> HistorySnapshot:
    events = conn.execute(
        f"SELECT {', '.join('e.' + c for c in _EVENT_COLUMNS.split(', '))} "
        "FROM snapshot_events s JOIN agent_history_events e ON e.event_id = s.event_id "
        "WHERE s.snapshot_id = ? ORDER BY e.timestamp, e.rowid",
        (row[0],),
    ).fetchall()
    return HistorySnapshot(
        snapshot_id=row[0],
        agent_id=row[1],
        timestamp=_from_us(row[2]),
        events=tuple(_decode_event(event) for event in events),
        ref=row[3],
        description=row[4],
        metadata=_decode_json(row[5]),
        agent_state=_decode_json(row[6]),
    )
