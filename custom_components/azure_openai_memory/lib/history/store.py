"""Agent history: an event-sourced audit trail of what the agent did, in SQLite.

How it is stored, and why:

* The schema: events, snapshots and the events each snapshot holds (three tables), eight
  indexes, three views, foreign keys on, WAL journal.
  The schema version lives in PRAGMA user_version; `MIGRATIONS` holds one step per version
  (step n takes a database from version n to n + 1, in one transaction), so a database of any
  older version is brought up to date at open. Version 1 also has a small key/value table
  of installation-wide settings (`history_settings`).
* Timestamps are INTEGER microseconds since the epoch (UTC), not whole seconds:
  one conversation turn writes several events within a millisecond, and a retention cut-off
  must be exact. Integers compare exactly (a REAL would round), and 2**63 microseconds last
  until the year 294,247. Events that share a microsecond keep the order they were recorded
  in: every read orders by (timestamp, rowid). `created_at` keeps whole seconds; it
  only says when a row was written and nothing orders by it. The views read the columns as
  stored, so their times are microseconds too.
* `idx_history_agent_id` is (agent_id, session_id): it filters by agent and, until a
  database is indexed (see below), counts an agent's sessions without touching the table.
* New event ids are UUID version 7 (time first, then random bits; see _new_event_id), so
  the primary key grows at its end instead of at random pages; ids of any UUID version are
  accepted.
* One writer thread owns the write connection. A turn only appends to a queue (`enqueue`);
  the writer commits what has queued at most `batch_window` seconds after the first event,
  in one transaction. A turn never waits on the disk, and a crash loses at most one batch
  window of events (1 s by default). The other writes (`record_events`, snapshots, purges,
  settings) are jobs on the same thread, run after the queue is committed, so a parent
  queued earlier is always written before its child.
* A purge deletes in batches (one transaction each, of at most PURGE_BATCH events), so
  what a turn queued meanwhile is committed between two. A batch deletes in steps sized
  to take PURGE_STEP / 4 seconds and commits once PURGE_STEP has passed, or as soon as a
  write waits for the writer: a write waits for one step, not for a batch. The
  snapshots go with the retention too. The side tables and counters of the deleted events
  are taken out a batch at a time (history_schema.take_out_of_index), not row by row.
  PRAGMA optimize runs at open and after a purge, with a bounded analysis_limit: the
  planner's statistics stay current for milliseconds of work. Those statistics are
  approximate (and absent until SQLite 3.46 analyses at open), so the reads that matter
  name their index (INDEXED BY, CROSS JOIN) rather than leave the choice to them.
* Schema version 2 adds side tables and counters kept by triggers (see history_schema):
  each query is read in time order from the index that narrows it most, and a total or
  a statistic is summed from counters (see EventRead). A version 1 database gets them at
  open in milliseconds; its events are indexed afterwards by the writer when nothing else
  waits (INDEX_BATCH a transaction), reads answering as version 1 did until then.
* A database created by this store has auto_vacuum=INCREMENTAL: after a purge the writer
  hands the freed pages back to the file system when nothing else waits, a step at a
  time. An older file keeps its size and reuses its free pages.
* synchronous=NORMAL under WAL: a committed batch survives a crash of Home Assistant; a power
  cut may lose the last commits, never the file's consistency.
* WAL lets readers run beside the writer: reads take a connection from a small pool (from any
  executor thread) and flush the queue first, so they see what was enqueued before them;
  while writes are failing they answer from what is stored instead of waiting on the lock.
* The log is copied into the database (checkpointed) by a thread of its own, beside the
  writer, after about as much writing as SQLite would checkpoint after (CHECKPOINT_WRITES
  transactions or CHECKPOINT_CHANGES rows), resting CHECKPOINT_INTERVAL seconds between two:
  left to the writer, that copy and its flush to disk fell on whichever write crossed
  1,000 log pages, which then waited for it (hundreds of milliseconds on a busy disk, and
  often during a purge). The writer checkpoints itself only when that thread falls far
  behind.
* A failing write (locked by another process, disk full) keeps the events queued, up to
  `max_queue` (the oldest go first, counted), calls `on_failure` once per failure streak, and
  is retried every batch window.
* A backup's copy (hold_writes): what is queued is committed, the log is copied into the
  database and emptied (TRUNCATE), and then nothing is written (not by the writer, not by
  the checkpointer) until release_writes: events queue in memory as while writes fail,
  other writes (a purge, an erasure) wait. Reads see the queued events too: each read
  inserts them in its own transaction and rolls it back (see _begin_reading), so nothing
  reaches the files. A copy of the file taken meanwhile is whole and needs no log.
* A file that is not a database, or one shorter than its header says, is moved aside as
  `<name>.corrupt.<UTC time>` (never deleted) and a fresh database started. Checking every
  page at start-up would cost seconds on a large history; damage deeper in the file surfaces
  as a failing write (reported through `on_failure`) or a failing read.
"""

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
import logging
from pathlib import Path
import sqlite3
import threading
import time
from typing import Any, Final, TypeGuard

from ..times import format_time
from .models import (
    MAX_EVENT_DATA_BYTES,
    MAX_QUERY_LIMIT,
    MAX_QUERY_OFFSET,
    PERSON_KEY,
    US_PER_SECOND,
    AgentHistoryEvent,
    HistoryError,
    HistoryEventType,
    HistoryPurge,
    HistoryQuery,
    HistorySnapshot,
    HistoryStatistics,
    ListedSnapshot,
    NotVisible,
    Visibility,
    agent_text,
    check_count,
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
from .schema import (
    OPTIMIZE,
    SCHEMA_VERSION,
    MigrationStep,
    damaged_header,
    day_of,
    day_start,
    delete_person_events,
    index_batch,
    index_pending,
    insert_in_bulk,
    is_corruption,
    owner_batch,
    owner_of,
    owner_pending,
    prepare_writer,
    rename_people,
    take_out_of_index,
    write_transaction,
)

# Texts (or ids) per statement, well under SQLite's limit on bound parameters.
_NEEDLES_PER_QUERY = 400
# The fields of the memories' events that refer to one memory by its id, and those that
# list memory ids: what an erasure of a memory finds its events by.
MEMORY_REFERENCES: Final = frozenset({"id", "memory_id", "new_id", "existing", "superseded_by"})
MEMORY_REFERENCE_LISTS: Final = frozenset({"ids", "erased", "added", "unchanged", "conflicts"})

# The public names; the models and the schema live in their own modules.
__all__ = [
    "BUSY_TIMEOUT",
    "CHECKPOINT_CHANGES",
    "CHECKPOINT_INTERVAL",
    "CHECKPOINT_WRITES",
    "DEFAULT_BATCH_WINDOW",
    "DEFAULT_MAX_QUEUE",
    "INDEX_BATCH",
    "MAX_EVENT_DATA_BYTES",
    "MAX_QUERY_LIMIT",
    "MAX_QUERY_OFFSET",
    "PERSON_KEY",
    "PROBE_ROWS",
    "PURGE_BATCH",
    "PURGE_FIRST_STEP",
    "PURGE_STEP",
    "PURGE_STEP_PART",
    "RECLAIM_PAGES",
    "SCHEMA_VERSION",
    "AgentHistoryEvent",
    "HistoryError",
    "HistoryEventType",
    "HistoryPurge",
    "HistoryQuery",
    "HistorySnapshot",
    "HistoryStatistics",
    "HistoryStore",
    "ListedSnapshot",
    "MigrationStep",
    "NotVisible",
    "Visibility",
]

_LOGGER = logging.getLogger(__name__)

DEFAULT_BATCH_WINDOW = 1.0
DEFAULT_MAX_QUEUE = 10_000
# How long a write waits for another process's lock before it counts as failed.
BUSY_TIMEOUT = 1.0
# Events a purge deletes per transaction at most; queued events are committed between two.
PURGE_BATCH = 5000
# Seconds one purge batch takes at most (then it commits), and that a step of the other
# long jobs on the writer aims to take (their size follows the pace of the one before);
# the first such step's size, and the fewest events one handles however slow the disk.
PURGE_STEP = 0.02
_FIRST_PURGE_BATCH = 500
_SMALLEST_PURGE_BATCH = 100
# A purge batch deletes in steps aiming at this many seconds (sized at the pace of the
# step before): the most a write that arrives during a batch waits for it, the commit
# aside. The first step's size, and the fewest events a step deletes.
PURGE_STEP_PART = PURGE_STEP / 4
PURGE_FIRST_STEP = 50
_SMALLEST_PURGE_STEP = 10
# The checkpointer copies the log into the database after this many of the writer's
# transactions or changed rows, whichever comes first (about SQLite's own 1,000 pages),
# and rests this many seconds after each copy: during a purge the log is then copied in
# small pieces, each flushed quickly (on the year of state, with 1 s between copies the
# longest wait of a write during a purge doubled); log pages past which the writer
# checkpoints itself after a commit.
CHECKPOINT_WRITES = 64
CHECKPOINT_CHANGES = 2000
CHECKPOINT_INTERVAL = 0.05
_WRITER_CHECKPOINT_PAGES = 10_000
# Events of an upgraded database indexed per transaction at most, while the writer is idle
# (each batch sized like a purge batch, to take about PURGE_STEP seconds).
INDEX_BATCH = 5000
# Free pages handed back to the file system per transaction after a purge, at most; the
# first step's, and the fewest however slow the disk.
RECLAIM_PAGES = 4096
_FIRST_RECLAIM_PAGES = 128
_FEWEST_RECLAIM_PAGES = 16

_AUTO_VACUUM_INCREMENTAL = 2
# Idle read connections kept for reuse; more may be open while many threads read at once.
_IDLE_READERS = 4
# Events inserted at once from which they are indexed set by set, not by the trigger.
_BULK_ROWS = 64
# Parameters per `IN (...)` lookup, well under SQLite's limit of bound variables.
_LOOKUP_CHUNK = 500


_EVENT_COLUMNS = (
    "event_id, agent_id, timestamp, event_type, event_data, git_commit_hash, session_id, "
    "parent_event_id, tags, metadata"
)
# A duplicate event id is ignored: recording the same event twice stores it once.
INSERT_EVENT = (
    f"INSERT OR IGNORE INTO agent_history_events ({_EVENT_COLUMNS}, owner) "
    f"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, {owner_of('?5', '?7')})"
)
_SELECT_EVENT = f"SELECT {_EVENT_COLUMNS} FROM agent_history_events WHERE event_id = ?"

# The stored form of an event, in _EVENT_COLUMNS order.
type _Row = tuple[str, str, int, str, str, str | None, str | None, str | None, str, str | None]
_PARENT: Final = 7


def encode_event(event: AgentHistoryEvent) -> _Row:
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


def _decode_event(row: Sequence[Any]) -> AgentHistoryEvent:
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
    if len(rows) < _BULK_ROWS:
        conn.executemany(INSERT_EVENT, rows)
    else:
        insert_in_bulk(conn, partial(conn.executemany, INSERT_EVENT, rows))


def _is_write_failure(err: BaseException) -> TypeGuard[sqlite3.DatabaseError]:
    """A fault of the database or disk (locked, full, damaged), not of what was written."""
    return isinstance(err, sqlite3.DatabaseError) and not isinstance(err, sqlite3.IntegrityError)


# --- Reading a query -----------------------------------------------------------------------

_E_COLUMNS = ", ".join(f"e.{column}" for column in _EVENT_COLUMNS.split(", "))
# A type and agent with at most this many events are read whole and sorted by time; more
# are read in time order from the index that holds them most densely, until a page is full.
_SORTED_AT_MOST = 5000
# The newest events looked through for a page of a reader who sees part of the history,
# before their page is read class by class (EventRead.rows).
PROBE_ROWS = 5000
# Whether an event carries a tag, answered from the tags' table (no JSON is read); {0} is
# the table whose row names the event: the lead tag's row when there is one, so that an
# event without the other tags is passed over before it is read.
_HAS_TAG = (
    "EXISTS (SELECT 1 FROM history_event_tags x WHERE x.tag = ? "
    "AND x.timestamp = {0}.timestamp AND x.event_id = {0}.event_id)"
)


@dataclass(slots=True)
class EventRead:
    """How one query reads its events: the tables (`e` is the events), the conditions
    besides time, the time column that orders the page and takes the range, and the
    counters its total can be summed from (per day, and for all days; None: it is
    counted).

    A page is read in time order from one index, so it stops after limit + offset rows.
    Which index: a session's own (a session is a conversation: few events), else the
    rarest tag's table, else the type's table, else the agent's index, else the time
    index. A total over a long range sums the counters of its whole days and counts only
    the two partial days at its ends.
    """

    source: str
    terms: list[str]
    params: list[Any]
    time: str
    ascending: bool
    start: int | None
    end: int | None
    counters: tuple[str, str, list[tuple[str, Any]]] | None = None
    counted_from: str | None = None
    # The reader's classes (Visibility.classes) and where its condition is in terms: a
    # count from counted_from is summed class by class through the classes' index.
    classes: list[tuple[str, list[Any]]] | None = None
    visibility_at: tuple[int, int, int] = (0, 0, 0)  # term, first parameter, parameters

    @classmethod
    def plain(cls, query: HistoryQuery, owners_known: bool = False) -> "EventRead":
        """Version 1's read: the events alone, SQLite choosing the index."""
        read = cls("agent_history_events e", [], [], "e.timestamp", query.ascending, *_range(query))
        read.add_columns(query, owners_known)
        for tag in dict.fromkeys(query.tags):
            read.terms.append("EXISTS (SELECT 1 FROM json_each(e.tags) WHERE value = ?)")
            read.params.append(tag)
        return read

    @classmethod
    def planned(
        cls, conn: sqlite3.Connection, query: HistoryQuery, owners_known: bool = False
    ) -> "EventRead":
        """The read through the side tables and counters (every event indexed)."""
        start, end = _range(query)
        tags = list(dict.fromkeys(query.tags))
        kind = None if query.event_type is None else query.event_type.value
        agent = query.agent_id

        def events(index: str) -> EventRead:
            return cls(
                f"agent_history_events e INDEXED BY {index}",
                [],
                [],
                "e.timestamp",
                query.ascending,
                start,
                end,
            )

        if query.session_id is not None:
            read = events("idx_history_session_id")
        elif tags:
            lead = min(tags, key=lambda tag: (_tag_total(conn, tag), tags.index(tag)))
            tags.remove(lead)
            read = cls(
                "history_event_tags g CROSS JOIN agent_history_events e",
                ["g.tag = ?", "e.event_id = g.event_id"],
                [lead],
                "g.timestamp",
                query.ascending,
                start,
                end,
            )
            if agent is None and kind is None and not tags:
                read.counters = ("history_tag_counts", "history_tag_counts", [("tag = ?", lead)])
        else:
            read = cls._by_agent_and_type(conn, events, agent, kind, query)
            filters = {"agent_id": agent, "event_type": kind}
            read.counters = (
                "history_counts",
                "history_totals",
                [
                    (f"{column} = ?", value)
                    for column, value in filters.items()
                    if value is not None
                ],
            )
        read.add_columns(query, owners_known)
        row = "g" if read.source.startswith("history_event_tags") else "e"
        for tag in tags:
            read.terms.append(_HAS_TAG.format(row))
            read.params.append(tag)
        if query.visibility is not None:
            # The counters count every reader's events: what one reader sees is counted,
            # from the reader classes' index rather than the one that orders a page.
            read.counters = None
            if read.source.startswith("agent_history_events e INDEXED BY"):
                read.counted_from = "agent_history_events e"
        return read

    @classmethod
    def _by_agent_and_type(
        cls,
        conn: sqlite3.Connection,
        events: Callable[[str], "EventRead"],
        agent: str | None,
        kind: str | None,
        query: HistoryQuery,
    ) -> "EventRead":
        start, end = _range(query)
        by_type = cls(
            "history_event_types t CROSS JOIN agent_history_events e",
            ["t.event_type = ?", "e.event_id = t.event_id"],
            [kind],
            "t.timestamp",
            query.ascending,
            start,
            end,
        )
        if kind is None:
            return events(
                "idx_history_timestamp" if agent is None else "idx_history_agent_timestamp"
            )
        if agent is None:
            return by_type
        both, of_type, of_agent = conn.execute(
            "SELECT TOTAL(events * (agent_id = ? AND event_type = ?)), "
            "TOTAL(events * (event_type = ?)), TOTAL(events * (agent_id = ?)) FROM history_totals",
            (agent, kind, kind, agent),
        ).fetchone()
        wanted = query.offset + query.limit
        # Rows read: all of the agent's events of the type (then sorted), or, in time
        # order, as many of the type's (or the agent's) as hold a page of both.
        if both <= _SORTED_AT_MOST or both * both <= wanted * min(of_type, of_agent):
            return events("idx_history_agent_type")
        return by_type if of_type <= of_agent else events("idx_history_agent_timestamp")

    def add_columns(self, query: HistoryQuery, owners_known: bool = False) -> None:
        for column, value in (
            ("agent_id", query.agent_id),
            ("session_id", query.session_id),
            ("event_type", None if query.event_type is None else query.event_type.value),
        ):
            if value is not None:
                self.terms.append(f"e.{column} = ?")
                self.params.append(value)
        if query.visibility is not None:
            term, params = query.visibility.where(owners_known=owners_known)
            if owners_known:
                self.classes = query.visibility.classes()
                self.visibility_at = (len(self.terms), len(self.params), len(params))
            self.terms.append(term)
            self.params.extend(params)

    def where_clause(self, start: int | None, end: int | None) -> tuple[str, list[Any]]:
        """The WHERE clause (empty when nothing is selected) and its parameters, the time
        taken from start to end."""
        terms, params = list(self.terms), list(self.params)
        if start is not None:
            terms.append(f"{self.time} >= ?")
            params.append(start)
        if end is not None:
            terms.append(f"{self.time} <= ?")
            params.append(end)
        return (f"WHERE {' AND '.join(terms)}" if terms else ""), params

    def page(self, limit: int, offset: int) -> tuple[str, list[Any]]:
        """The statement of one page, ordered by (timestamp, rowid)."""
        where, params = self.where_clause(self.start, self.end)
        order = "ASC" if self.ascending else "DESC"
        return (
            f"SELECT {_E_COLUMNS} FROM {self.source} {where} "
            f"ORDER BY {self.time} {order}, e.rowid {order} LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )

    def rows(self, conn: sqlite3.Connection, limit: int, offset: int) -> list[Any]:
        """One page's rows (of page()'s columns and order).

        For a reader who sees part of the history, with every event's class known, the
        newest PROBE_ROWS events the other filters select are looked through first; when
        they hold no full page (the reader sees few of them: a year of other people's
        talk), the page is read class by class from the classes' index instead, each
        class's first offset + limit events merged, rather than through every event.
        """
        if (
            self.classes is None
            or self.counted_from is None
            or not self.source.startswith("agent_history_events e INDEXED BY")
        ):
            return conn.execute(*self.page(limit, offset)).fetchall()
        order = "ASC" if self.ascending else "DESC"
        seen, seen_params, unseen = self._without_visibility()
        where, params = unseen.where_clause(self.start, self.end)
        columns = ", ".join(_EVENT_COLUMNS.split(", "))
        order_by = f"ORDER BY timestamp {order}, rid {order}"
        if offset + limit <= PROBE_ROWS:
            probed = conn.execute(
                f"SELECT {columns} FROM (SELECT {_E_COLUMNS}, e.owner, e.rowid AS rid "
                f"FROM {self.source} {where} ORDER BY {self.time} {order}, e.rowid {order} "
                f"LIMIT ?) e WHERE {seen} {order_by} LIMIT ? OFFSET ?",
                [*params, PROBE_ROWS, *seen_params, limit, offset],
            ).fetchall()
            if len(probed) == limit:
                return probed
            # Fewer: exact when the filters select fewer events than were looked through.
            looked: int = conn.execute(
                f"SELECT COUNT(*) FROM (SELECT 1 FROM {self.source} {where} LIMIT ?)",
                [*params, PROBE_ROWS],
            ).fetchone()[0]
            if looked < PROBE_ROWS:
                return probed
        parts: list[str] = []
        part_params: list[Any] = []
        for read in self._class_reads():
            class_where, class_all = read.where_clause(self.start, self.end)
            parts.append(
                f"SELECT * FROM (SELECT {_E_COLUMNS}, e.rowid AS rid FROM {read.source} "
                f"{class_where} ORDER BY e.timestamp {order}, e.rowid {order} LIMIT ?)"
            )
            part_params.extend([*class_all, offset + limit])
        return conn.execute(
            f"SELECT {columns} FROM ({' UNION ALL '.join(parts)}) {order_by} LIMIT ? OFFSET ?",
            [*part_params, limit, offset],
        ).fetchall()

    def _without_visibility(self) -> tuple[str, list[Any], "EventRead"]:
        """The reader's condition, its parameters, and this read without it."""
        at, first, width = self.visibility_at
        unseen = EventRead(
            self.source,
            self.terms[:at] + self.terms[at + 1 :],
            self.params[:first] + self.params[first + width :],
            self.time,
            self.ascending,
            self.start,
            self.end,
        )
        return self.terms[at], self.params[first : first + width], unseen

    def _class_reads(self) -> list["EventRead"]:
        """This read once per reader class the reader sees, each through the classes'
        index (no event is in two classes)."""
        _seen, _params, unseen = self._without_visibility()
        return [
            EventRead(
                "agent_history_events e INDEXED BY idx_history_owner",
                [*unseen.terms, term],
                [*unseen.params, *params],
                self.time,
                self.ascending,
                self.start,
                self.end,
            )
            for term, params in self.classes or ()
        ]

    def _counted(self, conn: sqlite3.Connection, start: int | None, end: int | None) -> int:
        if self.counted_from is not None and self.classes is not None:
            return self._counted_by_class(conn, start, end)
        where, params = self.where_clause(start, end)
        counted: int = conn.execute(
            f"SELECT COUNT(*) FROM {self.counted_from or self.source} {where}", params
        ).fetchone()[0]
        return counted

    def _counted_by_class(
        self, conn: sqlite3.Connection, start: int | None, end: int | None
    ) -> int:
        total = 0
        for read in self._class_reads():
            where, all_params = read.where_clause(start, end)
            counted: int = conn.execute(
                f"SELECT COUNT(*) FROM {read.source} {where}", all_params
            ).fetchone()[0]
            total += counted
        return total

    def count(self, conn: sqlite3.Connection) -> int:
        """How many events the query selects."""
        if self.counters is None:
            return self._counted(conn, self.start, self.end)
        first = None if self.start is None else day_of(self.start - 1) + 1
        last = None if self.end is None else day_of(self.end + 1) - 1
        if first is not None and last is not None and first > last:
            return self._counted(conn, self.start, self.end)  # within two days
        by_day, all_days, conditions = self.counters
        table = all_days if first is None and last is None else by_day
        if first is not None:
            conditions = [*conditions, ("day >= ?", first)]
        if last is not None:
            conditions = [*conditions, ("day <= ?", last)]
        where = " AND ".join(term for term, _ in conditions)
        sql = f"SELECT SUM(events) FROM {table}" + (f" WHERE {where}" if where else "")
        params = [value for _, value in conditions]
        total = int(conn.execute(sql, params).fetchone()[0] or 0)
        if self.start is not None and first is not None and self.start < day_start(first):
            total += self._counted(conn, self.start, day_start(first) - 1)
        if self.end is not None and last is not None and self.end >= day_start(last + 1):
            total += self._counted(conn, day_start(last + 1), self.end)
        return total


def _range(query: HistoryQuery) -> tuple[int | None, int | None]:
    return (
        None if query.start_time is None else to_us(query.start_time),
        None if query.end_time is None else to_us(query.end_time),
    )


def _tag_total(conn: sqlite3.Connection, tag: str) -> int:
    total = conn.execute("SELECT SUM(events) FROM history_tag_counts WHERE tag = ?", (tag,))
    return int(total.fetchone()[0] or 0)


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
        purge_batch: int = PURGE_BATCH,
        index_batch: int = INDEX_BATCH,
        checkpoint_interval: float = CHECKPOINT_INTERVAL,
    ) -> None:
        self._path = Path(path)
        self._batch_window = max(0.0, batch_window)
        self._max_queue = max(1, max_queue)
        self._purge_batch = max(1, purge_batch)
        self._index_batch = max(1, index_batch)
        self._checkpoint_interval = max(0.0, checkpoint_interval)
        self._checkpointer: threading.Thread | None = None
        # Set by the writer when enough was written; stopping ends the checkpointer.
        self._checkpoint_due = threading.Event()
        self._checkpoint_stopping = threading.Event()
        # Taken by the checkpointer while it copies the log, and to hold the writes.
        self._checkpointing = threading.Lock()
        # What the writer wrote since it last woke the checkpointer (writer thread only).
        self._writes_unchecked = 0
        self._changes_checked = 0
        self._index_size = min(_FIRST_PURGE_BATCH, self._index_batch)  # writer thread only
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
        # Writes held for a backup's copy (hold_writes .. release_writes).
        self._held = False
        # Taken by a read that sees the held events (_begin_reading).
        self._held_reading = threading.Lock()
        self._stopping = False
        self._dropped = 0
        self._commits = 0
        self._dropping = False
        # Touched by the writer thread only (read anywhere; a bool is read atomically).
        self._failing = False
        # Jobs the writer took together that wait behind the one it runs (writer thread only).
        self._jobs_behind = 0
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._open = False
        self._schema_version = 0
        # True once every event is in the side tables and counters (see history_schema);
        # until then reads answer from the events themselves. Written by the writer thread.
        self._indexed = True
        # When the writer next indexes a batch; None when there is nothing (more) to do.
        self._index_at: float | None = None
        # Whether every event's reader class is stored (see history_schema).
        self._owners_known = True
        # When the writer next gives free pages back after a purge (None: nothing to give),
        # how many in that step, and how many were free after the last (guarded by _cond).
        self._reclaim_at: float | None = None
        self._reclaim_pages = _FIRST_RECLAIM_PAGES
        self._reclaim_free: int | None = None

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
    def indexed(self) -> bool:
        """False while the events of an upgraded database are being indexed."""
        return self._indexed

    @property
    def failing(self) -> bool:
        """True from a failed write until the next successful one."""
        return self._failing

    @property
    def held(self) -> bool:
        """True while writes are held for a backup's copy (hold_writes)."""
        return self._held

    def open(self) -> Path | None:
        """Open or create the database and start the writer; the moved-aside path of a
        corrupt file (a fresh database is started in its place), else None."""
        with self._cond:
            if self._thread is not None:
                raise RuntimeError("history store is already open")
        self._path.parent.mkdir(parents=True, exist_ok=True)
        moved = self._move_aside() if damaged_header(self._path) else None
        try:
            conn, version = self._connect_writer()
        except sqlite3.DatabaseError as err:
            if moved is not None or not is_corruption(err):
                raise
            moved = self._move_aside()
            conn, version = self._connect_writer()
        try:
            checkpoint_conn = self._connect()
        except BaseException:
            conn.close()
            raise
        if moved is not None:  # the caller reports it (the path is returned)
            _LOGGER.debug("History database was corrupt; moved to %s, a new one started", moved)
        self._schema_version = version
        self._indexed = not index_pending(conn)
        self._owners_known = not owner_pending(conn)
        with self._cond:
            self._index_at = None if self._indexed and self._owners_known else 0.0
            self._reclaim_at = None
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
        self._checkpoint_stopping.clear()
        self._checkpoint_due.clear()
        self._writes_unchecked = self._changes_checked = 0  # the new connection counts from 0
        self._checkpointer = threading.Thread(
            target=self._checkpoint_loop,
            args=(checkpoint_conn,),
            name="azure_openai_memory history checkpoint",
            daemon=True,
        )
        self._checkpointer.start()
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
        if self._checkpointer is not None:
            self._checkpoint_stopping.set()
            self._checkpoint_due.set()
            self._checkpointer.join()
            self._checkpointer = None
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
            version = prepare_writer(conn)
            conn.execute(f"PRAGMA wal_autocheckpoint = {_WRITER_CHECKPOINT_PAGES}")
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
        row = encode_event(event)
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
        raise here: the events stay queued and on_failure has been told. While writes are
        held (hold_writes) the events stay queued and this returns at once."""
        with self._cond:
            if (not self._pending and not self._in_flight) or self._held:
                return
        self._submit(None)

    def hold_writes(self) -> None:
        """Commit what is queued, copy the log into the database and empty it, then write
        nothing until release_writes (or close): a copy of the files taken meanwhile is a
        whole database. Events queue meanwhile (up to max_queue), other writes wait, reads
        answer from what was stored and what queued."""

        with self._cond:
            if self._held:
                return

        def hold(conn: sqlite3.Connection) -> None:
            with self._checkpointing:
                try:
                    busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                except sqlite3.Error as err:
                    busy = err
                with self._cond:
                    self._held = True
                    waiting, self._jobs = self._jobs, []
                self._wait_for_release(waiting)
            if busy:
                # A reader kept the log from being emptied: it stays beside the database,
                # unchanged until the release, and a copy of both is whole.
                _LOGGER.debug("History log not emptied before the hold: %s", busy)

        self._submit(hold)

    def release_writes(self) -> None:
        """End hold_writes: what queued meanwhile is committed now, waiting writes run."""
        with self._cond:
            if not self._held:
                return
            self._held = False
            if self._pending:
                self._deadline = time.monotonic()
            self._cond.notify_all()

    def record_event(self, event: AgentHistoryEvent) -> None:
        """Write one event now, in its own transaction (after what is queued)."""
        self.record_events((event,))

    def record_events(self, events: Iterable[AgentHistoryEvent]) -> None:
        """Write events now, in one transaction: all of them or (on bad input or a failing
        database) none. An unknown parent is HistoryError("unknown_event")."""
        rows = [encode_event(event) for event in events]
        if not rows:
            return

        def write(conn: sqlite3.Connection) -> None:
            with write_transaction(conn):
                _insert_events(conn, rows, strict=True)

        self._submit(write)

    def create_snapshot(self, snapshot: HistorySnapshot) -> None:
        """Store a snapshot and link its events (storing any that are not yet); the same id
        again replaces it."""
        snapshot_id = uuid_text(snapshot.snapshot_id, "snapshot_id")
        rows = [encode_event(event) for event in snapshot.events]
        values = (
            snapshot_id,
            snapshot.agent_id,
            to_us(snapshot.timestamp),
            optional_text(snapshot.ref, "ref"),
            optional_text(snapshot.description, "description"),
            optional_json(snapshot.metadata, "metadata"),
            optional_json(snapshot.agent_state, "agent_state"),
        )

        def write(conn: sqlite3.Connection) -> None:
            with write_transaction(conn):
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
        """Delete what is older than `timestamp` (see purge_before); how many events went."""
        return self.purge_before(timestamp).events

    def purge_before(self, timestamp: float) -> HistoryPurge:
        """Delete events older than `timestamp` (one at exactly it is kept), the snapshots
        taken before it and the snapshots left without any of their events: a snapshot goes
        with the retention, as its events do.

        In batches of at most `purge_batch` events, each its own transaction and its own job
        on the writer thread, so what was queued meanwhile is committed between two batches.
        A batch ends after PURGE_STEP seconds, or after the step under way (PURGE_STEP_PART
        seconds) once another job waits: a large purge never holds the write lock for long,
        and a write arriving meanwhile waits for one step. Then PRAGMA optimize (a purge is
        what changes the tables' sizes most); the writer then hands the freed pages back in
        the background (reclaim_space).
        """
        cutoff = to_us(timestamp)
        events = snapshots = 0
        step = min(PURGE_FIRST_STEP, self._purge_batch)
        while True:
            batch = partial(_purge_batch, cutoff, self._purge_batch, step, self._jobs_waiting)
            deleted, emptied, step, finished = self._submit(batch)
            events += deleted
            snapshots += emptied
            if finished:
                break
        snapshots += self._submit(partial(_purge_snapshots_before, cutoff))
        self.reclaim_space()
        return HistoryPurge(events=events, snapshots=snapshots)

    def reclaim_space(self) -> None:
        """Have the pages a purge freed handed back to the file system, in the background:
        the writer does it when nothing else waits, a step at a time, each sized like a
        purge batch to take about PURGE_STEP seconds (moving a page costs far more than
        deleting an event).

        Only a database created with auto_vacuum=INCREMENTAL can (every one created by
        this store). An older file keeps its size and reuses the freed pages for new
        events; making it smaller takes one VACUUM, which rewrites the whole file and so
        is left to its owner (with Home Assistant stopped).
        """
        with self._cond:
            self._reclaim_at = 0.0
            self._reclaim_pages = _FIRST_RECLAIM_PAGES
            self._reclaim_free = None
            self._cond.notify_all()

    def delete_memory_events(
        self,
        memory_ids: Iterable[str],
        tools: Iterable[str],
        service_prefix: str,
        visibility: Visibility | None = None,
    ) -> int:
        """Delete the memories' own events that refer to any of memory_ids; how many went.

        For erasure: what a user asked to be forgotten must not stay in the tool calls
        (the agents' remember, recall and forget, named in tools) and service events
        (agent ids starting with service_prefix) that carried it. Only those events are
        looked at, and only those the eraser may read (visibility; None: all). An event
        refers to a memory when one of its reference fields (MEMORY_REFERENCES: `id`,
        `ids`, `erased`, ...) holds that id exactly: never a search of its text, since a
        memory's words (or an id chosen to look like a word) also appear in events about
        other things and other people. Those events are read once, which an erasure
        (rare) can afford.
        """
        needles = sorted({memory_id for memory_id in memory_ids if memory_id})
        names = sorted(set(tools))
        if not needles:
            return 0
        tool_marks = ",".join("?" * len(names)) or "NULL"
        own = (
            f"((e.event_type = ? AND json_extract(e.event_data, '$.tool') IN ({tool_marks})) "
            "OR (e.event_type = ? AND substr(e.agent_id, 1, ?) = ?))"
        )
        own_args: list[Any] = [
            HistoryEventType.TOOL_USE.value,
            *names,
            HistoryEventType.STATE_CHANGE.value,
            len(service_prefix),
            service_prefix,
        ]
        keys = sorted(MEMORY_REFERENCES)
        key_marks = ",".join("?" * len(keys))
        lists = sorted(MEMORY_REFERENCE_LISTS)
        list_marks = ",".join("?" * len(lists))
        # A reference: an object's field of one of those names holding the id as text, or
        # an element of a list of ids under one of those names.
        refers = (
            "EXISTS (SELECT 1 FROM json_tree(e.event_data) AS t WHERE t.type = 'text' "
            f"AND t.atom IN ({{marks}}) AND (t.key IN ({key_marks}) OR "
            f"(typeof(t.key) = 'integer' AND EXISTS (SELECT 1 FROM json_tree(e.event_data) AS p "
            f"WHERE p.fullkey = t.path AND p.key IN ({list_marks})))))"
        )

        def delete(conn: sqlite3.Connection) -> int:
            seen: str = "1"
            seen_args: list[Any] = []
            if visibility is not None:
                seen, seen_args = visibility.where("e", owners_known=self._owners_known)
            doomed: set[str] = set()
            with write_transaction(conn):
                for start in range(0, len(needles), _NEEDLES_PER_QUERY):
                    chunk = needles[start : start + _NEEDLES_PER_QUERY]
                    marks = ",".join("?" * len(chunk))
                    rows = conn.execute(
                        f"SELECT e.event_id FROM agent_history_events AS e WHERE {own} "
                        f"AND {seen} AND {refers.format(marks=marks)}",
                        (*own_args, *seen_args, *chunk, *keys, *lists),
                    )
                    doomed.update(row[0] for row in rows)
                ids = sorted(doomed)
                for start in range(0, len(ids), _NEEDLES_PER_QUERY):
                    chunk = ids[start : start + _NEEDLES_PER_QUERY]
                    marks = ",".join("?" * len(chunk))
                    # The foreign keys unlink children and snapshots.
                    conn.execute(
                        f"DELETE FROM agent_history_events WHERE event_id IN ({marks})", chunk
                    )
            return len(doomed)

        deleted: int = self._submit(delete)
        return deleted

    def set_setting(self, name: str, value: Any) -> None:
        """Store an installation-wide setting (any JSON value)."""
        encoded = encode_json(value, name, None)

        def write(conn: sqlite3.Connection) -> None:
            with write_transaction(conn):
                conn.execute(
                    "INSERT INTO history_settings (name, value) VALUES (?, ?) "
                    "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                    (name, encoded),
                )

        self._submit(write)

    # -- People's keys (see history_schema.rename_people) ----------------------------------

    def rename_people(self, renamed: Callable[[str], str | None]) -> dict[str, str]:
        """Every event of a person whose key changes names the new key; old -> new."""
        changed: dict[str, str] = self._submit(lambda conn: rename_people(conn, renamed))
        return changed

    def delete_person_events(self, person: str) -> int:
        """Delete every event of one person's talk; how many went."""
        deleted: int = self._submit(lambda conn: delete_person_events(conn, person))
        return deleted

    # -- Reads -----------------------------------------------------------------------------

    def get_setting(self, name: str, default: Any) -> Any:
        """An installation-wide setting, or `default` when it was never set."""
        with self._reading(flush=False) as conn:
            row = conn.execute("SELECT value FROM history_settings WHERE name = ?", (name,))
            found = row.fetchone()
        return default if found is None else decode_json(found[0])

    def get_event(self, event_id: str) -> AgentHistoryEvent | None:
        """One event by id, or None."""
        key = uuid_text(event_id, "event_id")
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
        query = HistoryQuery(agent_id=agent_id, event_type=event_type_of(event_type), limit=limit)
        return self.query_events(query)[0]

    def get_events_by_time_range(
        self, agent_id: str, start_time: float, end_time: float
    ) -> list[AgentHistoryEvent]:
        """Every event of an agent from start_time to end_time (both included), oldest
        first. Unbounded: query_events pages through a long range."""
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
                (agent_id, to_us(start_time), to_us(end_time)),
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
        events, total = self._query(query, count=True)
        assert total is not None
        return events, total

    def query_page(self, query: HistoryQuery) -> tuple[list[AgentHistoryEvent], int | None]:
        """One page of the events a query selects, and how many in all when the page tells
        (it ends before the limit), else None: uncounted. Counting everything a reader who
        does not see all may see reads their part of the index, which on a year of the
        household's talk takes far longer than their page."""
        return self._query(query, count=False)

    def _query(
        self, query: HistoryQuery, *, count: bool
    ) -> tuple[list[AgentHistoryEvent], int | None]:
        total: int | None
        with self._reading() as conn:
            known = self._owners_known
            read = (
                EventRead.planned(conn, query, known)
                if self._indexed
                else EventRead.plain(query, known)
            )
            rows = read.rows(conn, query.limit, query.offset)
            if 0 < len(rows) < query.limit or (not rows and query.offset == 0):
                total = query.offset + len(rows)  # the page ends before the limit: no count
            else:
                total = read.count(conn) if count else None
        return [_decode_event(row) for row in rows], total

    def get_event_chain(
        self, event_id: str, visibility: Visibility | None = None
    ) -> list[AgentHistoryEvent]:
        """The causes of an event, root first and the event last. A cycle (only possible
        through data written by hand) or a parent that is gone ends the chain there.

        With a visibility, an event the reader may not see is refused (NotVisible), and a
        cause they may not see ends the chain before it.
        """
        current: str | None = uuid_text(event_id, "event_id")
        chain: list[AgentHistoryEvent] = []
        seen: set[str] = set()
        with self._reading() as conn:
            while current is not None and current not in seen:
                row = conn.execute(_SELECT_EVENT, (current,)).fetchone()
                if row is None:
                    break
                if visibility is not None and not _visible(conn, current, visibility):
                    if not chain:
                        raise NotVisible(event_id)
                    break
                seen.add(current)
                event = _decode_event(row)
                chain.append(event)
                current = event.parent_event_id
        if not chain:
            raise HistoryError("unknown_event", event_id=event_id)
        chain.reverse()
        return chain

    def is_visible(self, event_id: str, visibility: Visibility) -> bool | None:
        """Whether the reader may see an event; None when there is no such event."""
        key = uuid_text(event_id, "event_id")
        with self._reading() as conn:
            if conn.execute(_SELECT_EVENT, (key,)).fetchone() is None:
                return None
            return _visible(conn, key, visibility)

    def get_statistics(
        self, agent_id: str | None = None, visibility: Visibility | None = None
    ) -> HistoryStatistics:
        """The statistics of one agent, or of all (agent_id None).

        Counts come from the counters (see history_schema), times and references from
        indexes, so no figure reads the events themselves. Until an upgraded database is
        indexed, the counts are taken from the indexes of the events, as version 1 did.
        With a visibility, every figure is of what the reader may see, counted from the
        events (the counters count everyone's).
        """
        if visibility is not None:
            return self._visible_statistics(agent_id, visibility)
        where, params = ("WHERE agent_id = ?", (agent_id,)) if agent_id is not None else ("", ())
        # The unary + keeps SQLite on the references' index: few events carry one, and the
        # agent's own index would read all of that agent's events.
        refs_where = "WHERE +agent_id = ? AND" if agent_id is not None else "WHERE"
        with self._reading() as conn:
            if self._indexed:
                counts = f"SELECT event_type, SUM(events) FROM history_totals {where} "
                sessions_sql = (
                    "SELECT COALESCE(SUM(sessions), 0) FROM history_agent_session_counts "
                    "WHERE agent_id = ?"
                    if agent_id is not None
                    else "SELECT COUNT(*) FROM history_sessions"
                )
            else:
                counts = f"SELECT event_type, COUNT(*) FROM agent_history_events {where} "
                sessions_sql = (
                    f"SELECT COUNT(DISTINCT session_id) FROM agent_history_events {where}"
                )
            by_type = dict.fromkeys((kind.value for kind in HistoryEventType), 0)
            for kind, count in conn.execute(f"{counts} GROUP BY event_type", params):
                by_type[kind] = count
            earliest = conn.execute(
                f"SELECT MIN(timestamp) FROM agent_history_events {where}", params
            ).fetchone()[0]
            latest = conn.execute(
                f"SELECT MAX(timestamp) FROM agent_history_events {where}", params
            ).fetchone()[0]
            sessions = conn.execute(sessions_sql, params).fetchone()[0]
            refs = [
                ref
                for (ref,) in conn.execute(
                    "SELECT git_commit_hash FROM agent_history_events "
                    f"{refs_where} git_commit_hash IS NOT NULL "
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
            earliest_event=None if earliest is None else from_us(earliest),
            latest_event=None if latest is None else from_us(latest),
            unique_sessions=sessions,
            refs=refs,
        )

    def _visible_statistics(
        self, agent_id: str | None, visibility: Visibility
    ) -> HistoryStatistics:
        seen, seen_params = visibility.where(owners_known=self._owners_known)
        terms, params = [seen], list(seen_params)
        if agent_id is not None:
            terms.insert(0, "e.agent_id = ?")
            params.insert(0, agent_id)
        where = "WHERE " + " AND ".join(terms)
        snapshot_term, snapshot_params = _snapshot_visible(visibility)
        snapshot_terms = [snapshot_term]
        if agent_id is not None:
            snapshot_terms.insert(0, "s.agent_id = ?")
            snapshot_params.insert(0, agent_id)
        # Every class known: the events seen, class by class, from the classes' index alone.
        events, events_params = f"agent_history_events e {where}", params
        if self._owners_known:
            parts, events_params = [], []
            for term, class_params in visibility.classes():
                agent = "e.agent_id = ? AND " if agent_id is not None else ""
                parts.append(
                    "SELECT e.event_type, e.timestamp, e.session_id "
                    f"FROM agent_history_events e INDEXED BY idx_history_owner "
                    f"WHERE {agent}{term}"
                )
                events_params.extend([agent_id] if agent_id is not None else [])
                events_params.extend(class_params)
            events = f"({' UNION ALL '.join(parts)})"
        with self._reading() as conn:
            by_type = dict.fromkeys((kind.value for kind in HistoryEventType), 0)
            for kind, count in conn.execute(
                f"SELECT event_type, COUNT(*) FROM {events} GROUP BY event_type",
                events_params,
            ):
                by_type[kind] = count
            earliest, latest, sessions = conn.execute(
                f"SELECT MIN(timestamp), MAX(timestamp), COUNT(DISTINCT session_id) FROM {events}",
                events_params,
            ).fetchone()
            # Few events carry a reference: found by its index, then each checked.
            refs = [
                ref
                for (ref,) in conn.execute(
                    "SELECT git_commit_hash FROM agent_history_events e "
                    f"INDEXED BY idx_history_git_commit {where} "
                    "AND git_commit_hash IS NOT NULL "
                    "GROUP BY git_commit_hash ORDER BY MIN(timestamp), git_commit_hash",
                    params,
                )
            ]
            snapshots = conn.execute(
                "SELECT COUNT(*) FROM history_snapshots s WHERE " + " AND ".join(snapshot_terms),
                snapshot_params,
            ).fetchone()[0]
        return HistoryStatistics(
            total_events=sum(by_type.values()),
            events_by_type=by_type,
            total_snapshots=snapshots,
            earliest_event=None if earliest is None else from_us(earliest),
            latest_event=None if latest is None else from_us(latest),
            unique_sessions=sessions,
            refs=refs,
        )

    def get_snapshot(
        self, snapshot_id: str, visibility: Visibility | None = None
    ) -> HistorySnapshot | None:
        """One snapshot with its events (oldest first), or None. With a visibility, one
        holding an event the reader may not see is refused (NotVisible)."""
        key = uuid_text(snapshot_id, "snapshot_id")
        with self._reading() as conn:
            row = conn.execute(f"{_SELECT_SNAPSHOT} WHERE snapshot_id = ?", (key,)).fetchone()
            if row is None:
                return None
            if visibility is not None:
                term, params = _snapshot_visible(visibility)
                found = conn.execute(
                    f"SELECT 1 FROM history_snapshots s WHERE s.snapshot_id = ? AND {term}",
                    (key, *params),
                ).fetchone()
                if found is None:
                    raise NotVisible(snapshot_id)
            return _decode_snapshot(conn, row)

    def list_snapshots(self, agent_id: str) -> list[HistorySnapshot]:
        """An agent's snapshots, newest first, each with its events."""
        with self._reading() as conn:
            rows = conn.execute(
                f"{_SELECT_SNAPSHOT} WHERE agent_id = ? ORDER BY timestamp DESC, rowid DESC",
                (agent_id,),
            ).fetchall()
            return [_decode_snapshot(conn, row) for row in rows]

    def query_snapshots(
        self,
        agent_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
        visibility: Visibility | None = None,
    ) -> tuple[list[ListedSnapshot], int]:
        """One page of the snapshots (of one agent, or of all), newest first, without their
        events; and how many there are in all. With a visibility, only the snapshots every
        event of which the reader may see."""
        check_count("limit", limit, 1, MAX_QUERY_LIMIT)
        check_count("offset", offset, 0, MAX_QUERY_OFFSET)
        terms: list[str] = []
        params: list[Any] = []
        if agent_id is not None:
            terms.append("s.agent_id = ?")
            params.append(agent_id)
        if visibility is not None:
            term, seen = _snapshot_visible(visibility)
            terms.append(term)
            params.extend(seen)
        where = f"WHERE {' AND '.join(terms)}" if terms else ""
        with self._reading() as conn:
            rows = conn.execute(
                "SELECT snapshot_id, agent_id, timestamp, git_commit, description, metadata, "
                "(SELECT COUNT(*) FROM snapshot_events e WHERE e.snapshot_id = s.snapshot_id) "
                f"FROM history_snapshots s {where} "
                "ORDER BY timestamp DESC, rowid DESC LIMIT ? OFFSET ?",
                (*params, limit, offset),
            ).fetchall()
            total: int = conn.execute(
                f"SELECT COUNT(*) FROM history_snapshots s {where}", params
            ).fetchone()[0]
        listed = [
            ListedSnapshot(
                snapshot_id=row[0],
                agent_id=row[1],
                timestamp=from_us(row[2]),
                event_count=row[6],
                ref=row[3],
                description=row[4],
                metadata=decode_json(row[5]),
            )
            for row in rows
        ]
        return listed, total

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
            # Changes of a read transaction (the held events) never reach the log.
            conn.execute("PRAGMA cache_spill = OFF")
        with self._cond:
            held = list(self._pending) if flush and self._held else []
        try:
            # Reads that insert the held events take the write lock: one at a time, in turn.
            with self._held_reading if held else nullcontext():
                held_in = self._begin_reading(conn, held)
                try:
                    yield conn
                finally:
                    conn.execute("ROLLBACK" if held_in else "COMMIT")
        except BaseException:
            conn.close()
            raise
        with self._readers_lock:
            if self._open and len(self._readers) < _IDLE_READERS:
                self._readers.append(conn)
                return
        conn.close()

    def _begin_reading(self, conn: sqlite3.Connection, held: list[_Row]) -> bool:
        """Begin a read transaction; with events held for a backup's copy, one that sees them
        too: they are inserted in this transaction only and rolled back after the read, so
        every query, total and statistic counts them and nothing reaches the files (the
        cache never spills, and a rollback writes nothing). True when they were inserted.
        Should that fail (another process holds the write lock), the read answers from what
        is stored."""
        if not held:
            conn.execute("BEGIN")
            return False
        conn.execute("PRAGMA query_only = OFF")
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                _insert_events(conn, held, strict=False)
            except sqlite3.Error:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as err:
            _LOGGER.debug("History read without the %d events held: %s", len(held), err)
            conn.execute("BEGIN")
            return False
        finally:
            conn.execute("PRAGMA query_only = ON")
        return True

    # -- The writer thread -----------------------------------------------------------------

    def _submit(self, work: _Work) -> Any:
        """Run `work` on the writer thread after the queue is committed; its result."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("the history store cannot be called from its own callbacks")
        future: Future[Any] = Future()
        with self._cond:
            if self._thread is None or self._stopping:
                raise RuntimeError("history store is not open")
            if work is None and self._held:
                return None  # a flush: the queue is held (hold_writes)
            self._jobs.append((work, future))
            self._cond.notify_all()
        return future.result()

    def _wait_for_release(self, jobs: list[tuple[_Work, Future[Any]]]) -> None:
        """Jobs that came behind a hold wait for its release, first in line; a flush among
        them has nothing to wait for (the queue is held) and returns at once."""
        waiting = []
        for work, future in jobs:
            if work is None:
                future.set_result(None)
            else:
                waiting.append((work, future))
        with self._cond:
            self._jobs[:0] = waiting

    def _jobs_waiting(self) -> bool:
        """Whether another job waits for the writer, taken with the one running or queued
        since (asked by a long job between its steps, on the writer thread)."""
        if self._jobs_behind:
            return True
        with self._cond:
            return bool(self._jobs)

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

    def _wake_at(self) -> float | None:
        """When the writer has something to do without being asked (called with _cond
        held): the queue's deadline, or the next indexing batch."""
        wake = [self._deadline] if self._pending else []
        wake += [at for at in (self._index_at, self._reclaim_at) if at is not None]
        return min(wake) if wake else None

    def _run(self, conn: sqlite3.Connection) -> None:
        try:
            while True:
                with self._cond:
                    while self._held and not self._stopping:
                        self._cond.wait()
                    while not (self._jobs or self._stopping):
                        wake = self._wake_at()
                        if wake is not None and time.monotonic() >= wake:
                            break
                        self._cond.wait(None if wake is None else wake - time.monotonic())
                    jobs, self._jobs = self._jobs, []
                    stopping = self._stopping
                    due = self._pending and time.monotonic() >= self._deadline
                    batch = list(self._pending) if due or jobs or stopping else []
                    if batch:
                        self._pending.clear()
                    self._in_flight = len(batch)
                if batch:
                    self._write_batch(conn, batch)
                for behind, (work, future) in zip(range(len(jobs) - 1, -1, -1), jobs, strict=True):
                    if self._held and not stopping:
                        self._wait_for_release(jobs[len(jobs) - 1 - behind :])
                        break
                    self._jobs_behind = behind
                    self._run_job(conn, work, future)
                if stopping:
                    break
                if not jobs and not self._held:
                    self._idle_step(conn)
                self._note_written(conn)
        finally:
            self._shut_down(conn)

    def _idle_step(self, conn: sqlite3.Connection) -> None:
        """What the writer does when nothing waits: index an upgraded database's events,
        then give back the pages a purge freed; one step of either."""
        now = time.monotonic()
        if self._index_at is not None:
            if now >= self._index_at:
                self._index_step(conn)
        elif self._reclaim_at is not None and now >= self._reclaim_at:
            self._reclaim_step(conn)

    def _reclaim_step(self, conn: sqlite3.Connection) -> None:
        started = time.monotonic()
        try:
            left = _reclaim(self._reclaim_pages, conn)
        except Exception as err:
            with self._cond:
                if _is_write_failure(err):
                    self._reclaim_at = time.monotonic() + self._batch_window
                else:
                    _LOGGER.exception("History: free pages could not be given back")
                    self._reclaim_at = None
                    self._cond.notify_all()
            if _is_write_failure(err):
                self._failed(err)
            return
        self._succeeded()
        with self._cond:
            if self._reclaim_at is None:
                return
            if not left or (self._reclaim_free is not None and left >= self._reclaim_free):
                self._reclaim_at = None  # all back, or nothing more came back
                self._cond.notify_all()
                return
            self._reclaim_pages = _paced(
                self._reclaim_pages, started, _FEWEST_RECLAIM_PAGES, RECLAIM_PAGES
            )
            self._reclaim_free = left

    def _index_step(self, conn: sqlite3.Connection) -> None:
        """One batch of an upgraded database's events into the side tables, then of their
        reader classes; queued events and jobs go first, so a batch is what a write waits
        for at most."""
        try:
            started = time.monotonic()
            if self._indexed:
                indexed, done = True, owner_batch(conn, self._index_size)
            else:
                indexed = done = index_batch(conn, self._index_size)
                if indexed:
                    done = not owner_pending(conn)
        except Exception as err:
            failing = _is_write_failure(err)
            if not failing:
                # Not a fault of the disk: trying again would fail again. Reads keep
                # answering from the events themselves; the next start tries anew.
                _LOGGER.exception("History events could not be indexed")
            with self._cond:
                self._index_at = time.monotonic() + self._batch_window if failing else None
                self._cond.notify_all()
            if failing:
                self._failed(err)
            return
        self._succeeded()
        self._index_size = _paced(
            self._index_size,
            started,
            min(_SMALLEST_PURGE_BATCH, self._index_batch),
            self._index_batch,
        )
        if indexed and not self._indexed:
            conn.execute(OPTIMIZE).fetchall()
            with self._cond:
                self._indexed = True
                self._cond.notify_all()
            _LOGGER.debug("History: every event is indexed")
        if done:
            conn.execute(OPTIMIZE).fetchall()
            with self._cond:
                self._index_at = None
                self._owners_known = True
                self._cond.notify_all()
            _LOGGER.debug("History: every event's reader is known")

    def _write_batch(self, conn: sqlite3.Connection, batch: list[_Row]) -> None:
        try:
            with write_transaction(conn):
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

    def _checkpoint_loop(self, conn: sqlite3.Connection) -> None:
        """Copy the log into the database when the writer says enough was written, beside
        it (PASSIVE: it waits for no reader or writer), then rest CHECKPOINT_INTERVAL."""
        try:
            while True:
                self._checkpoint_due.wait()
                if self._checkpoint_stopping.is_set():
                    return
                self._checkpoint_due.clear()
                try:
                    with self._checkpointing:
                        if not self._held:
                            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as err:
                    # The writer reports what fails on the disk; the next write brings
                    # the next attempt.
                    _LOGGER.debug("History checkpoint failed: %s", err)
                if self._checkpoint_stopping.wait(self._checkpoint_interval):
                    return
        finally:
            conn.close()

    def _note_written(self, conn: sqlite3.Connection) -> None:
        """Wake the checkpointer once CHECKPOINT_WRITES transactions or CHECKPOINT_CHANGES
        rows were written since it was last woken."""
        self._writes_unchecked += 1
        changes = conn.total_changes
        if (
            self._writes_unchecked >= CHECKPOINT_WRITES
            or changes - self._changes_checked >= CHECKPOINT_CHANGES
        ):
            self._writes_unchecked = 0
            self._changes_checked = changes
            self._checkpoint_due.set()

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
                with write_transaction(conn):
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

    def _wait_for_index(self, timeout: float) -> bool:
        """Wait until every event is indexed (False on timeout)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._indexed, timeout)

    def _wait_until_idle(self, timeout: float) -> bool:
        """Wait until the writer has nothing left to do in the background: no events to
        index, no free pages to give back (False on timeout)."""
        with self._cond:
            return self._cond.wait_for(
                lambda: self._index_at is None and self._reclaim_at is None, timeout
            )


# The events of one purge batch, and the snapshots that held any of them (the write
# connection's own temporary tables).
_PURGE_TABLES = (
    "CREATE TEMP TABLE IF NOT EXISTS purged_events "
    "(row INTEGER PRIMARY KEY, event_id TEXT NOT NULL UNIQUE)",
    "CREATE TEMP TABLE IF NOT EXISTS purged_snapshots (snapshot_id TEXT PRIMARY KEY)",
)
_PURGED = "SELECT event_id FROM temp.purged_events"


def _purge_batch(
    cutoff: int,
    limit: int,
    step: int,
    waiting: Callable[[], bool],
    conn: sqlite3.Connection,
) -> tuple[int, int, int, bool]:
    """Delete up to `limit` of the oldest events before `cutoff`, in one transaction of
    steps of about PURGE_STEP_PART seconds (the first of `step` events): it commits once
    PURGE_STEP has passed or `waiting()` says a job waits. (Events deleted, snapshots left
    without events and deleted with them, the next step's size, whether none is left.)

    The foreign keys' actions (children lose their parent, snapshots lose the link) are
    applied here in bulk, with the foreign keys off: SQLite would otherwise scan
    snapshot_events once per deleted event (it has no index on event_id). Every child
    outside a step is unlinked, so the database is consistent after each.
    """
    started = time.monotonic()
    events = snapshots = 0
    finished = False
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        with write_transaction(conn):
            for statement in _PURGE_TABLES:
                conn.execute(statement)
            while True:
                size = min(step, limit - events)
                step_started = time.monotonic()
                deleted, emptied = _purge_step(cutoff, size, conn)
                events += deleted
                snapshots += emptied
                if deleted < size:
                    finished = True
                    break
                step = _paced(step, step_started, _SMALLEST_PURGE_STEP, limit, PURGE_STEP_PART)
                if (
                    events >= limit
                    or time.monotonic() - started >= PURGE_STEP - PURGE_STEP_PART
                    or waiting()
                ):
                    break
    finally:
        conn.execute("PRAGMA foreign_keys = ON")
    return events, snapshots, step, finished


def _purge_step(cutoff: int, limit: int, conn: sqlite3.Connection) -> tuple[int, int]:
    """Inside the caller's transaction: delete up to `limit` of the oldest events before
    `cutoff`, unlinking what outlives them; (events, snapshots) deleted."""
    conn.execute("DELETE FROM temp.purged_events")
    conn.execute("DELETE FROM temp.purged_snapshots")
    conn.execute(
        "INSERT INTO temp.purged_events (row, event_id) "
        "SELECT rowid, event_id FROM agent_history_events WHERE timestamp < ? "
        "ORDER BY timestamp LIMIT ?",
        (cutoff, limit),
    )
    conn.execute(
        "INSERT OR IGNORE INTO temp.purged_snapshots "
        f"SELECT snapshot_id FROM snapshot_events WHERE event_id IN ({_PURGED})"
    )
    conn.execute(f"DELETE FROM snapshot_events WHERE event_id IN ({_PURGED})")
    conn.execute(
        "UPDATE agent_history_events SET parent_event_id = NULL "
        f"WHERE parent_event_id IN ({_PURGED}) AND event_id NOT IN ({_PURGED})"
    )
    take_out_of_index(
        conn,
        "FROM temp.purged_events p CROSS JOIN agent_history_events e ON e.rowid = p.row WHERE true",
        (),
    )
    events: int = conn.execute(
        "DELETE FROM agent_history_events WHERE rowid IN (SELECT row FROM temp.purged_events)"
    ).rowcount
    snapshots: int = conn.execute(
        "DELETE FROM history_snapshots "
        "WHERE snapshot_id IN (SELECT snapshot_id FROM temp.purged_snapshots) "
        "AND NOT EXISTS (SELECT 1 FROM snapshot_events e "
        "WHERE e.snapshot_id = history_snapshots.snapshot_id)"
    ).rowcount
    conn.execute("DELETE FROM temp.purged_events")
    conn.execute("DELETE FROM temp.purged_snapshots")
    return events, snapshots


def _purge_snapshots_before(cutoff: int, conn: sqlite3.Connection) -> int:
    """Delete the snapshots taken before `cutoff` (their links go by the foreign key), then
    let SQLite refresh the statistics the purge put out of date; how many snapshots went."""
    with write_transaction(conn):
        deleted: int = conn.execute(
            "DELETE FROM history_snapshots WHERE timestamp < ?", (cutoff,)
        ).rowcount
    conn.execute(OPTIMIZE).fetchall()
    return deleted


def _paced(
    size: int, started: float, smallest: int, largest: int, seconds: float = PURGE_STEP
) -> int:
    """The size of the next step of a long job on the writer (purge, indexing, giving pages
    back) that takes `seconds` at the pace of the step that began at `started`
    (time.monotonic): a slow disk gets smaller steps, so a write never waits long."""
    pace = size / max(time.monotonic() - started, 1e-3)
    return max(smallest, min(largest, int(pace * seconds)))


def _reclaim(pages: int, conn: sqlite3.Connection) -> int:
    """Give up to `pages` free pages back (its own transaction); how many are still free.
    0 when the database cannot (auto_vacuum is not INCREMENTAL)."""
    if conn.execute("PRAGMA auto_vacuum").fetchone()[0] != _AUTO_VACUUM_INCREMENTAL:
        return 0
    conn.execute(f"PRAGMA incremental_vacuum({int(pages)})").fetchall()
    free: int = conn.execute("PRAGMA freelist_count").fetchone()[0]
    return free


_SELECT_SNAPSHOT = (
    "SELECT snapshot_id, agent_id, timestamp, git_commit, description, metadata, agent_state "
    "FROM history_snapshots"
)


def _visible(conn: sqlite3.Connection, event_id: str, visibility: Visibility) -> bool:
    term, params = visibility.where()
    found = conn.execute(
        f"SELECT 1 FROM agent_history_events e WHERE e.event_id = ? AND {term}",
        (event_id, *params),
    ).fetchone()
    return found is not None


def _snapshot_visible(visibility: Visibility) -> tuple[str, list[Any]]:
    """The condition on a snapshots row `s`: the reader may see every event it holds."""
    term, params = visibility.where()
    return (
        "NOT EXISTS (SELECT 1 FROM snapshot_events x "
        "JOIN agent_history_events e ON e.event_id = x.event_id "
        f"WHERE x.snapshot_id = s.snapshot_id AND NOT {term})",
        params,
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
        timestamp=from_us(row[2]),
        events=tuple(_decode_event(event) for event in events),
        ref=row[3],
        description=row[4],
        metadata=decode_json(row[5]),
        agent_state=decode_json(row[6]),
    )
