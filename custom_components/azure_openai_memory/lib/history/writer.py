"""Agent history: the writer thread, which owns the write connection.

* A turn only appends to a queue (`enqueue`); the writer commits what has queued at most
  `batch_window` seconds after the first event, in one transaction. A turn never waits on
  the disk, and a crash loses at most one batch window of events (1 s by default).
* Every other write is a job on the same thread, run after the queue is committed, so a
  parent queued earlier is always written before its child.
* A failing write (locked by another process, disk full) keeps the events queued, up to
  `max_queue` (the oldest go first, counted), calls `on_failure` once per failure streak,
  and is retried every batch window.
* A backup's copy (hold_writes): what is queued is committed, the log is copied into the
  database and emptied (TRUNCATE), and then nothing is written until release_writes:
  events queue in memory as while writes fail, other jobs wait. A copy of the file taken
  meanwhile is whole and needs no log.
* When nothing waits, the writer takes one step of its background work (_idle_step, see
  maintenance.py), so a write waits for one step at most.
"""

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import suppress
import logging
from pathlib import Path
import sqlite3
import threading
import time
from typing import Any

from .events import Row, encode_event, insert_events, is_write_failure
from .models import AgentHistoryEvent
from .schema import write_transaction

_LOGGER = logging.getLogger(__name__)

DEFAULT_BATCH_WINDOW = 1.0
DEFAULT_MAX_QUEUE = 10_000
# How long a write waits for another process's lock before it counts as failed.
BUSY_TIMEOUT = 1.0

# A job for the writer thread; None only waits for the queue to be committed before it.
type Work = Callable[[sqlite3.Connection], Any] | None


class HistoryWriter:
    """The write side of the history: the queue, the writer thread and its jobs, the hold.
    Every method blocks and is thread-safe, except `enqueue`, which only appends to a
    queue and may be called from the event loop."""

    def __init__(
        self,
        path: Path,
        *,
        batch_window: float,
        max_queue: int,
        on_failure: Callable[[Exception], None] | None,
        clock: Callable[[], float],
    ) -> None:
        self._path = Path(path)
        self._batch_window = max(0.0, batch_window)
        self._max_queue = max(1, max_queue)
        self._on_failure = on_failure
        self._clock = clock
        # Seconds a write waits on another process's lock; set before open() to change it.
        self.busy_timeout = BUSY_TIMEOUT
        # Taken by the checkpointer while it copies the log, and to hold the writes.
        self._checkpointing = threading.Lock()
        self._cond = threading.Condition()
        # Everything below is guarded by _cond.
        self._pending: deque[Row] = deque()
        self._in_flight = 0
        self._deadline = 0.0
        self._jobs: list[tuple[Work, Future[Any]]] = []
        self._thread: threading.Thread | None = None
        # Writes held for a backup's copy (hold_writes .. release_writes).
        self._held = False
        self._stopping = False
        self._dropped = 0
        # Events ever queued: a queued event's sequence number (see reads.py's held view).
        self._enqueued = 0
        self._commits = 0
        self._dropping = False
        # Touched by the writer thread only (read anywhere; a bool is read atomically).
        self._failing = False
        # Jobs the writer took together that wait behind the one it runs (writer thread only).
        self._jobs_behind = 0

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

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

    @property
    def held(self) -> bool:
        """True while writes are held for a backup's copy (hold_writes)."""
        return self._held

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
            self._enqueued += 1
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

    def run_on_writer[T](self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work` with the write connection on the writer thread, after what is queued
        is committed, and return its result (or raise its error): a write of the caller's
        own (its transaction its own), or a question to that connection (its PRAGMAs).
        Waits behind the jobs already queued, and for release_writes while writes are
        held."""
        result: T = self._submit(work)
        return result

    @property
    def waiting_jobs(self) -> int:
        """Jobs queued for the writer thread and not yet taken by it."""
        with self._cond:
            return len(self._jobs)

    # -- The writer thread -----------------------------------------------------------------

    def _submit(self, work: Work) -> Any:
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

    def _wait_for_release(self, jobs: list[tuple[Work, Future[Any]]]) -> None:
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
        held): the queue's deadline (maintenance.py adds its background work's)."""
        return self._deadline if self._pending else None

    def _idle_step(self, conn: sqlite3.Connection) -> None:
        """One step of the background work, when nothing else waits (see maintenance.py)."""

    def _end_held_reads(self) -> None:
        """Before the writer writes: reads of held events let go of the write lock (see
        reads.py)."""

    def _note_written(self, conn: sqlite3.Connection) -> None:
        """Told after each round of the writer (see maintenance.py)."""

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
                self._end_held_reads()
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

    def _write_batch(self, conn: sqlite3.Connection, batch: list[Row]) -> None:
        try:
            with write_transaction(conn):
                insert_events(conn, batch, strict=False)
        except Exception as err:
            if not is_write_failure(err):
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

    def _run_job(self, conn: sqlite3.Connection, work: Work, future: Future[Any]) -> None:
        if work is None:
            future.set_result(None)
            return
        try:
            result = work(conn)
        except BaseException as err:
            if is_write_failure(err):
                self._failed(err)
            future.set_exception(err)
        else:
            if not self._held:  # a hold writes nothing: it proves no write works again
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
        self._end_held_reads()
        with self._cond:
            batch = list(self._pending)
            self._pending.clear()
            jobs, self._jobs = self._jobs, []
        if batch:
            try:
                with write_transaction(conn):
                    insert_events(conn, batch, strict=False)
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
