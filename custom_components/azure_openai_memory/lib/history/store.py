"""Agent history: an event-sourced audit trail of what the agent did, in SQLite.

HistoryStore is the one public class; each of its jobs has a module of its own:
events.py (an event as a row), writer.py (the writer thread, its queue and the backup's
hold), maintenance.py (purge, checkpoint, reclaim, indexing), reads.py and planner.py
(reads and the query planner), statistics.py, people.py (people's keys and erasure),
schema.py and bulk.py (the schema, its migrations, many events at once).

The rules of the storage:

* The schema: events, snapshots and the events each snapshot holds, with side tables and
  counters kept by triggers (schema.py), foreign keys on, WAL journal. The schema version
  lives in PRAGMA user_version; each step of MIGRATIONS takes a database one version up
  in one transaction, so a database of any older version is brought up to date at open.
* Timestamps are INTEGER microseconds since the epoch (UTC): one turn writes several
  events within a millisecond, and a retention cut-off must be exact. Events that share a
  microsecond keep the order they were recorded in: every read orders by (timestamp,
  rowid). `created_at` keeps whole seconds; nothing orders by it.
* New event ids are UUID version 7 (time first), so the primary key grows at its end;
  ids of any UUID version are accepted.
* synchronous=NORMAL under WAL: a committed batch survives a crash of Home Assistant; a
  power cut may lose the last commits, never the file's consistency.
* A file that is not a database, or one shorter than its header says, is moved aside as
  `<name>.corrupt.<UTC time>` (never deleted) and a fresh database started. Damage deeper
  in the file surfaces as a failing write (reported through `on_failure`) or a failing
  read: checking every page at start-up would cost seconds on a large history.
"""

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
import logging
from pathlib import Path
import sqlite3
import threading
import time
from typing import Any

from .events import INSERT_SNAPSHOT, encode_event, encode_snapshot, insert_events
from .maintenance import (
    CHECKPOINT_CHANGES,
    CHECKPOINT_INTERVAL,
    CHECKPOINT_WRITES,
    INDEX_BATCH,
    PURGE_BATCH,
    PURGE_FIRST_STEP,
    PURGE_STEP,
    PURGE_STEP_PART,
    RECLAIM_PAGES,
    WRITER_CHECKPOINT_PAGES,
)
from .models import (
    MAX_EVENT_DATA_BYTES,
    MAX_QUERY_LIMIT,
    MAX_QUERY_OFFSET,
    PERSON_KEY,
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
    encode_json,
    uuid_text,
)
from .people import delete_memory_events, delete_person_events, rename_people
from .planner import PROBE_ROWS
from .reads import HistoryReads
from .schema import (
    SCHEMA_VERSION,
    MigrationStep,
    damaged_header,
    is_corruption,
    prepare_writer,
    write_transaction,
)
from .writer import BUSY_TIMEOUT, DEFAULT_BATCH_WINDOW, DEFAULT_MAX_QUEUE

# The public names; each lives in the module of its job.
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


class HistoryStore(HistoryReads):
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
        super().__init__(
            path,
            batch_window=batch_window,
            max_queue=max_queue,
            on_failure=on_failure,
            clock=clock,
            purge_batch=purge_batch,
            index_batch=index_batch,
            checkpoint_interval=checkpoint_interval,
        )
        self._schema_version = 0

    # -- Life cycle ------------------------------------------------------------------------

    @property
    def schema_version(self) -> int:
        """The database's schema version once open (0 before)."""
        return self._schema_version

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
        self._start_maintenance(conn)
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
        self._start_checkpointer(checkpoint_conn)
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
        self._stop_checkpointer()
        with self._cond:
            self._thread = None
            self._open = False
        with self._readers_lock:
            readers, self._readers = self._readers, []
        for conn in readers:
            conn.close()

    def _connect_writer(self) -> tuple[sqlite3.Connection, int]:
        conn = self._connect()
        try:
            version = prepare_writer(conn)
            conn.execute(f"PRAGMA wal_autocheckpoint = {WRITER_CHECKPOINT_PAGES}")
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
                insert_events(conn, rows, strict=True)

        self._submit(write)

    def create_snapshot(self, snapshot: HistorySnapshot) -> None:
        """Store a snapshot and link its events (storing any that are not yet); the same id
        again replaces it."""
        snapshot_id = uuid_text(snapshot.snapshot_id, "snapshot_id")
        rows = [encode_event(event) for event in snapshot.events]
        values = encode_snapshot(snapshot)

        def write(conn: sqlite3.Connection) -> None:
            with write_transaction(conn):
                insert_events(conn, rows, strict=False)
                conn.execute("DELETE FROM history_snapshots WHERE snapshot_id = ?", (snapshot_id,))
                conn.execute(INSERT_SNAPSHOT, values)
                conn.executemany(
                    "INSERT OR IGNORE INTO snapshot_events (snapshot_id, event_id) VALUES (?, ?)",
                    [(snapshot_id, row[0]) for row in rows],
                )

        self._submit(write)

    def delete_memory_events(
        self,
        memory_ids: Iterable[str],
        tools: Iterable[str],
        service_prefix: str,
        visibility: Visibility | None = None,
    ) -> int:
        """Delete the memories' own events that refer to any of memory_ids, among those the
        eraser may read (visibility; None: all); how many went (see people.py)."""
        needles = [memory_id for memory_id in memory_ids if memory_id]
        if not needles:
            return 0
        names = list(tools)
        deleted: int = self._submit(
            lambda conn: delete_memory_events(
                conn,
                needles,
                names,
                service_prefix,
                visibility,
                owners_known=self._owners_known,
            )
        )
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

    # -- People's keys (see people.py) -----------------------------------------------------

    def rename_people(self, renamed: Callable[[str], str | None]) -> dict[str, str]:
        """Every event of a person whose key changes names the new key; old -> new."""
        changed: dict[str, str] = self._submit(lambda conn: rename_people(conn, renamed))
        return changed

    def delete_person_events(self, person: str) -> int:
        """Delete every event of one person's talk; how many went."""
        deleted: int = self._submit(lambda conn: delete_person_events(conn, person))
        return deleted
