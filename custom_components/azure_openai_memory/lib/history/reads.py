"""Agent history: the reads. WAL lets them run beside the writer.

* A read takes a connection from a small pool (from any executor thread) and reads in one
  read transaction: one consistent view of the database.
* A read flushes the queue first, so it sees what was enqueued before it; while writes are
  failing it answers from what is stored instead of waiting on the lock.
* While writes are held for a backup's copy, a read sees the queued events too. They are
  inserted into one transaction of a connection of their own (the held view), never
  committed: each read adds only what queued since the last, and reads there one at a time.
  Its cache never spills, so nothing reaches the files the backup copies; the writer rolls
  it back before it writes again (at the release, or at close). While another process
  holds the database's write lock, a read answers from what is stored (it never waits).
* With a visibility, a read answers only from what that reader may see, and what they ask
  for by id that is someone else's is refused (NotVisible), never shown in part.
"""

from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
import logging
import sqlite3
import threading
from typing import Any

from ..times import format_time
from .events import (
    EVENT_COLUMNS,
    SELECT_EVENT,
    SELECT_SNAPSHOT,
    decode_event,
    decode_snapshot,
    insert_events,
)
from .maintenance import HistoryMaintenance
from .models import (
    MAX_QUERY_LIMIT,
    MAX_QUERY_OFFSET,
    AgentHistoryEvent,
    HistoryError,
    HistoryEventType,
    HistoryQuery,
    HistorySnapshot,
    HistoryStatistics,
    ListedSnapshot,
    NotVisible,
    Visibility,
    check_count,
    decode_json,
    event_type_of,
    from_us,
    to_us,
    uuid_text,
)
from .planner import EventRead, snapshot_visible
from .schema import SNAPSHOT_REF_COLUMN
from .statistics import statistics

_LOGGER = logging.getLogger(__name__)

# Idle read connections kept for reuse; more may be open while many threads read at once.
_IDLE_READERS = 4


class HistoryReads(HistoryMaintenance):
    """The writer and its maintenance, and the reads beside them."""

    def __init__(self, *args: Any, **settings: Any) -> None:
        super().__init__(*args, **settings)
        # The held view (see the module's docstring): its connection and the queue's sequence
        # numbers it holds (from, up to). Used only with _held_reading taken, which is never
        # taken inside _cond.
        self._held_reading = threading.Lock()
        self._held_view: sqlite3.Connection | None = None
        self._held_from = 0
        self._held_upto = 0
        # The ids of the events the view inserted, oldest first, and the last stored rowid
        # when it began (rows after it are the view's own).
        self._held_ids: deque[str] = deque()
        self._held_base = 0
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._open = False
        self._read_trace: Callable[[str], None] | None = None

    def trace_reads(self, callback: Callable[[str], None] | None) -> None:
        """Have every read connection hand each statement it runs (parameters filled in)
        to `callback` (None: stop): to see which plans the reads take."""
        self._read_trace = callback

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
            row = conn.execute(SELECT_EVENT, (key,)).fetchone()
        return None if row is None else decode_event(row)

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
                f"SELECT {EVENT_COLUMNS} FROM agent_history_events "
                "WHERE agent_id = ? AND timestamp >= ? AND timestamp <= ? "
                "ORDER BY timestamp, rowid",
                (agent_id, to_us(start_time), to_us(end_time)),
            ).fetchall()
        return [decode_event(row) for row in rows]

    def get_events_by_session(self, session_id: str) -> list[AgentHistoryEvent]:
        """Every event of one session (a conversation), oldest first."""
        with self._reading() as conn:
            rows = conn.execute(
                f"SELECT {EVENT_COLUMNS} FROM agent_history_events WHERE session_id = ? "
                "ORDER BY timestamp, rowid",
                (session_id,),
            ).fetchall()
        return [decode_event(row) for row in rows]

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
        return [decode_event(row) for row in rows], total

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
                row = conn.execute(SELECT_EVENT, (current,)).fetchone()
                if row is None:
                    break
                if visibility is not None and not _visible(conn, current, visibility):
                    if not chain:
                        raise NotVisible(event_id)
                    break
                seen.add(current)
                event = decode_event(row)
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
            if conn.execute(SELECT_EVENT, (key,)).fetchone() is None:
                return None
            return _visible(conn, key, visibility)

    def get_statistics(
        self, agent_id: str | None = None, visibility: Visibility | None = None
    ) -> HistoryStatistics:
        """The statistics of one agent, or of all (agent_id None); with a visibility, every
        figure is of what the reader may see."""
        with self._reading() as conn:
            return statistics(
                conn,
                agent_id,
                visibility,
                indexed=self._indexed,
                owners_known=self._owners_known,
            )

    def get_snapshot(
        self, snapshot_id: str, visibility: Visibility | None = None
    ) -> HistorySnapshot | None:
        """One snapshot with its events (oldest first), or None. With a visibility, one
        holding an event the reader may not see is refused (NotVisible)."""
        key = uuid_text(snapshot_id, "snapshot_id")
        with self._reading() as conn:
            row = conn.execute(f"{SELECT_SNAPSHOT} WHERE snapshot_id = ?", (key,)).fetchone()
            if row is None:
                return None
            if visibility is not None:
                term, params = snapshot_visible(visibility)
                found = conn.execute(
                    f"SELECT 1 FROM history_snapshots s WHERE s.snapshot_id = ? AND {term}",
                    (key, *params),
                ).fetchone()
                if found is None:
                    raise NotVisible(snapshot_id)
            return decode_snapshot(conn, row)

    def list_snapshots(self, agent_id: str) -> list[HistorySnapshot]:
        """An agent's snapshots, newest first, each with its events."""
        with self._reading() as conn:
            rows = conn.execute(
                f"{SELECT_SNAPSHOT} WHERE agent_id = ? ORDER BY timestamp DESC, rowid DESC",
                (agent_id,),
            ).fetchall()
            return [decode_snapshot(conn, row) for row in rows]

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
            term, seen = snapshot_visible(visibility)
            terms.append(term)
            params.extend(seen)
        where = f"WHERE {' AND '.join(terms)}" if terms else ""
        with self._reading() as conn:
            rows = conn.execute(
                f"SELECT snapshot_id, agent_id, timestamp, {SNAPSHOT_REF_COLUMN}, description, metadata, "
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
        """A read connection in one read transaction (one consistent view of the database);
        while writes are held, the held view."""
        if not self._open:
            raise RuntimeError("history store is not open")
        if flush and not self._failing:
            self.flush()
        if flush and self._held:
            with self._held_reading:
                view, released = self._held_view_now()
                if view is not None:
                    try:
                        yield view
                    except sqlite3.Error:
                        self._drop_held_view()
                        raise
                    return
            if released:
                self.flush()  # released while this read waited: what was held is written now
        with self._readers_lock:
            conn = self._readers.pop() if self._readers else None
        if conn is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only = ON")
        conn.set_trace_callback(self._read_trace)
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

    def _held_view_now(self) -> tuple[sqlite3.Connection | None, bool]:
        """The held view with every event queued so far in it (None when it cannot be had:
        another process holds the write lock now), and whether the hold has ended (or the
        store closes) meanwhile: then there is no view either. Called with _held_reading
        taken."""
        with self._cond:
            if not self._held or self._stopping:
                return None, not self._stopping
            rows = list(self._pending)
            first = self._enqueued - len(rows)  # the sequence number of rows[0]
        try:
            view = self._held_view
            if view is None:
                view = self._connect()
                # Uncommitted pages stay in memory, never in the log the backup copies.
                view.execute("PRAGMA cache_spill = OFF")
                # Another process writing: this read answers from what is stored, the next
                # one tries again, none waits.
                view.execute("PRAGMA busy_timeout = 0")
                self._held_view = view
                view.execute("BEGIN IMMEDIATE")
                self._held_base = view.execute(
                    "SELECT COALESCE(MAX(rowid), 0) FROM agent_history_events"
                ).fetchone()[0]
                self._held_from = self._held_upto = first
                self._held_ids.clear()
            view.set_trace_callback(self._read_trace)
            if first > self._held_from:
                # A full queue dropped its oldest: they go from the view too (only those it
                # inserted: an event already stored is never among them).
                gone = [self._held_ids.popleft() for _ in range(first - self._held_from)]
                view.executemany(
                    "DELETE FROM agent_history_events WHERE event_id = ? AND rowid > ?",
                    [(event_id, self._held_base) for event_id in gone],
                )
                self._held_from = first
            new = rows[self._held_upto - first :]
            if new:
                insert_events(view, new, strict=False)
                self._held_ids.extend(row[0] for row in new)
                self._held_upto = first + len(rows)
        except sqlite3.Error as err:
            _LOGGER.debug("History read during a hold answers from what is stored: %s", err)
            self._drop_held_view()
            return None, False
        return view, False

    def _drop_held_view(self) -> None:
        """Roll the held view back and close it (called with _held_reading taken)."""
        view, self._held_view = self._held_view, None
        if view is not None:
            with suppress(sqlite3.Error):  # never begun: closing discards what it holds
                view.execute("ROLLBACK")
            view.close()

    def _end_held_reads(self) -> None:
        """The writer writes again: the held view lets go of the write lock first."""
        with self._held_reading:
            self._drop_held_view()


def _visible(conn: sqlite3.Connection, event_id: str, visibility: Visibility) -> bool:
    term, params = visibility.where()
    found = conn.execute(
        f"SELECT 1 FROM agent_history_events e WHERE e.event_id = ? AND {term}",
        (event_id, *params),
    ).fetchone()
    return found is not None
