"""Agent history: the SQLite schema, its migrations, the write connection's PRAGMAs and the
detection of a damaged database file. See history.py for how the history is stored."""

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
import logging
from pathlib import Path
import sqlite3

_LOGGER = logging.getLogger(__name__)

SCHEMA_VERSION = 1
_SQLITE_MAGIC = b"SQLite format 3\x00"
_WAL_SIZE_LIMIT = 16 * 2**20
_CORRUPTION_CODES = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
# Rows ANALYZE reads per index: approximate statistics, in milliseconds however large the
# history (an exact ANALYZE reads every row of every index).
_ANALYSIS_LIMIT = 1000
# PRAGMA optimize at open: 0x10000 looks at every table, not only those this connection has
# queried (SQLite 3.46 and later; older versions skip the bit and look at none at open).
OPTIMIZE_AT_OPEN = "PRAGMA optimize = 0x10002"
OPTIMIZE = "PRAGMA optimize"


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


def _prepare_writer(conn: sqlite3.Connection) -> int:
    """Set the write connection's PRAGMAs, bring the schema up to date and check that the
    tables can be read; the schema version after."""
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if mode != "wal":
        _LOGGER.warning("History database journal is %s, not WAL", mode)
    conn.execute("PRAGMA synchronous = NORMAL")
    # A WAL grown by a large batch or purge is cut back after its next checkpoint.
    conn.execute(f"PRAGMA journal_size_limit = {_WAL_SIZE_LIMIT}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(f"PRAGMA analysis_limit = {_ANALYSIS_LIMIT}")
    version = _migrate(conn, _MIGRATIONS)
    # Reads the last page of each table: a damaged tree fails here, not mid-turn.
    for table in ("agent_history_events", "history_snapshots", "snapshot_events"):
        conn.execute(f"SELECT max(rowid) FROM {table}").fetchone()
    # The planner's statistics, refreshed only where they are missing or out of date
    # (usually nothing to do): without them it guesses each index's selectivity.
    conn.execute(OPTIMIZE_AT_OPEN).fetchall()
    return version


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
