"""Agent history: the writer's long jobs and background work (purge, checkpoint, giving
free pages back, indexing an upgraded database).

* A purge deletes in batches (one transaction each, of at most PURGE_BATCH events), so
  what a turn queued meanwhile is committed between two. A batch deletes in steps sized
  to take PURGE_STEP_PART seconds and commits once PURGE_STEP has passed, or as soon as a
  job waits for the writer: a write waits for one step, not for a batch. The snapshots go
  with the retention too. The side tables and counters of the deleted events are taken
  out a batch at a time (bulk.take_out_of_index), not row by row. PRAGMA optimize runs
  after a purge, with a bounded analysis_limit (schema.py).
* A database created by this store has auto_vacuum=INCREMENTAL: after a purge the writer
  hands the freed pages back to the file system when nothing else waits, a step at a
  time. An older file keeps its size and reuses its free pages.
* The events of an upgraded database are indexed by the writer when nothing else waits
  (INDEX_BATCH a transaction at most); reads answer from the events alone until then.
* The log is copied into the database (checkpointed) by a thread of its own, beside the
  writer, after about as much writing as SQLite would checkpoint after (CHECKPOINT_WRITES
  transactions or CHECKPOINT_CHANGES rows), resting CHECKPOINT_INTERVAL seconds between
  two, so that no write waits for a copy and its flush to disk. The writer checkpoints
  itself only when that thread falls far behind (WRITER_CHECKPOINT_PAGES), and nothing is
  copied while writes are held.
* Each step of these jobs is sized at the pace of the one before (_paced): a slow disk
  gets smaller steps, so a write never waits long.
"""

from collections.abc import Callable
from functools import partial
import logging
import sqlite3
import threading
import time
from typing import Any

from .bulk import index_batch, index_pending, owner_batch, owner_pending, take_out_of_index
from .events import is_write_failure
from .models import HistoryPurge, to_us
from .schema import OPTIMIZE, write_transaction
from .writer import HistoryWriter

_LOGGER = logging.getLogger(__name__)

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
WRITER_CHECKPOINT_PAGES = 10_000
# Events of an upgraded database indexed per transaction at most, while the writer is idle
# (each batch sized like a purge batch, to take about PURGE_STEP seconds).
INDEX_BATCH = 5000
# Free pages handed back to the file system per transaction after a purge, at most; the
# first step's, and the fewest however slow the disk.
RECLAIM_PAGES = 4096
_FIRST_RECLAIM_PAGES = 128
_FEWEST_RECLAIM_PAGES = 16

_AUTO_VACUUM_INCREMENTAL = 2


class HistoryMaintenance(HistoryWriter):
    """The writer with its long jobs and background work: purges, giving free pages back,
    indexing an upgraded database, and the checkpointer thread beside it."""

    def __init__(
        self,
        *args: Any,
        purge_batch: int,
        index_batch: int,
        checkpoint_interval: float,
        **writer: Any,
    ) -> None:
        super().__init__(*args, **writer)
        self._purge_batch = max(1, purge_batch)
        self._index_batch = max(1, index_batch)
        self._checkpoint_interval = max(0.0, checkpoint_interval)
        self._checkpointer: threading.Thread | None = None
        # Set by the writer when enough was written; stopping ends the checkpointer.
        self._checkpoint_due = threading.Event()
        self._checkpoint_stopping = threading.Event()
        # What the writer wrote since it last woke the checkpointer (writer thread only).
        self._writes_unchecked = 0
        self._changes_checked = 0
        self._index_size = min(_FIRST_PURGE_BATCH, self._index_batch)  # writer thread only
        # True once every event is in the side tables and counters (see schema.py);
        # until then reads answer from the events themselves. Written by the writer thread.
        self._indexed = True
        # When the writer next indexes a batch; None when there is nothing (more) to do.
        self._index_at: float | None = None
        # Whether every event's reader class is stored (see schema.py).
        self._owners_known = True
        # When the writer next gives free pages back after a purge (None: nothing to give),
        # how many in that step, and how many were free after the last (guarded by _cond).
        self._reclaim_at: float | None = None
        self._reclaim_pages = _FIRST_RECLAIM_PAGES
        self._reclaim_free: int | None = None

    @property
    def indexed(self) -> bool:
        """False while the events of an upgraded database are being indexed."""
        return self._indexed

    def wait_for_index(self, timeout: float) -> bool:
        """Wait until every event is indexed (False on timeout)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._indexed, timeout)

    def wait_until_idle(self, timeout: float) -> bool:
        """Wait until the writer has nothing left to do in the background: no events to
        index, no free pages to give back (False on timeout)."""
        with self._cond:
            return self._cond.wait_for(
                lambda: self._index_at is None and self._reclaim_at is None, timeout
            )

    def _start_maintenance(self, conn: sqlite3.Connection) -> None:
        """At open, before the writer starts: what is left to do in the background."""
        self._indexed = not index_pending(conn)
        self._owners_known = not owner_pending(conn)
        with self._cond:
            self._index_at = None if self._indexed and self._owners_known else 0.0
            self._reclaim_at = None
        self._checkpoint_stopping.clear()
        self._checkpoint_due.clear()
        self._writes_unchecked = self._changes_checked = 0  # the new connection counts from 0

    def _start_checkpointer(self, checkpoint: sqlite3.Connection) -> None:
        self._checkpointer = threading.Thread(
            target=self._checkpoint_loop,
            args=(checkpoint,),
            name="azure_openai_memory history checkpoint",
            daemon=True,
        )
        self._checkpointer.start()

    def _stop_checkpointer(self) -> None:
        if self._checkpointer is not None:
            self._checkpoint_stopping.set()
            self._checkpoint_due.set()
            self._checkpointer.join()
            self._checkpointer = None

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

    def _wake_at(self) -> float | None:
        """The queue's deadline, or the next step of the background work (called with
        _cond held)."""
        queue = super()._wake_at()
        wake = [at for at in (queue, self._index_at, self._reclaim_at) if at is not None]
        return min(wake) if wake else None

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
                if is_write_failure(err):
                    self._reclaim_at = time.monotonic() + self._batch_window
                else:
                    _LOGGER.exception("History: free pages could not be given back")
                    self._reclaim_at = None
                    self._cond.notify_all()
            if is_write_failure(err):
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
            failing = is_write_failure(err)
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
