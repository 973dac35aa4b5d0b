"""Agent history: the SQLite schema, its migrations, the write connection's PRAGMAs and the
detection of a damaged database file. store.py says how the history is stored; bulk.py
indexes many events at once.

Version 2 adds what answers a query or the statistics without reading every event:

* `history_event_types` and `history_event_tags`: (type or tag, timestamp, event_id),
  each a table ordered by its key, so the newest events of a type or tag are read in order
  and nothing is sorted. Tags live in a JSON column, which no index can reach.
* `history_counts` (events per UTC day, agent and type), `history_totals` (events per
  agent and type, all days together), `history_tag_counts` (events
  per tag and day), `history_sessions` and `history_agent_sessions` (events per session,
  and per agent and session) and `history_agent_session_counts` (sessions per agent): a
  total or a statistic is a sum over a few thousand counters, not a count over up to
  every event.

Triggers keep them in step with every insert, delete and change of an event, whoever
writes (our store, or SQL by hand). An event is *indexed* when its row in
`history_event_types` exists; the other triggers act only on indexed events. A database
of version 1 gets the tables and triggers at once (milliseconds) and its existing events
are indexed afterwards, a batch at a time in the writer thread (`bulk.index_batch`), walking
the events by id from a cursor kept in history_settings. Until that cursor is gone, reads
answer from the events themselves, as version 1 did.

Version 3 adds each event's reader class, `owner`, so that what a reader who does not see
everything may read (Visibility) is answered from an index, not from every event's JSON:

* `=` followed by the person id: the talk of that person (the events' data names them as text);
* `*`: no person named and no session: the household's;
* `~`: no person named, in a session: the household's unless an agent whose id starts
  with the reader's talk prefix recorded it (talk from before it named its person);
* `!`: a person named as null or not as text: nobody known, seen by no such reader.

The store writes it with each event. NULL is not yet known (an event of an upgraded
database not reached yet, or one written by hand): its JSON is read instead. Existing
events get theirs in batches in the writer thread (`bulk.owner_batch`), after index_batch;
once every event has one, the condition reads the class alone.
"""

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
import logging
from pathlib import Path
import sqlite3
from typing import Final

from .models import OWNER_PERSON, PERSON_KEY

_LOGGER = logging.getLogger(__name__)

SCHEMA_VERSION = 3
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
# The setting that holds how far the events of an upgraded database have been indexed (the
# last event id done); there is none once every event is.
INDEX_CURSOR = "index_cursor"
# How far the events of a database upgraded to version 3 have got their reader class (the
# last rowid done); there is none once every event has.
OWNER_CURSOR = "owner_cursor"
# The public field `ref` of an event and of a snapshot is stored in these columns, named
# by the first schema and kept (a rename would rewrite every database). SQL names them only
# through these two; everything else says `ref`.
REF_COLUMN: Final = "git_commit_hash"
SNAPSHOT_REF_COLUMN: Final = "git_commit"
_DAY_US = 86_400_000_000


def day_sql(column: str) -> str:
    """The UTC day of a stored time, as SQL: floor division, also before 1970."""
    return f"(({column} - ((({column}) % {_DAY_US}) + {_DAY_US}) % {_DAY_US}) / {_DAY_US})"


def day_of(micros: int) -> int:
    """The UTC day of a stored time (the counters' key)."""
    return micros // _DAY_US


def day_start(day: int) -> int:
    """The first microsecond of a day."""
    return day * _DAY_US


_SCHEMA_1 = (
    f"""CREATE TABLE agent_history_events (
        event_id TEXT PRIMARY KEY NOT NULL,
        agent_id TEXT NOT NULL,
        timestamp INTEGER NOT NULL,
        event_type TEXT NOT NULL,
        event_data TEXT NOT NULL,
        {REF_COLUMN} TEXT,
        session_id TEXT,
        parent_event_id TEXT,
        tags TEXT NOT NULL DEFAULT '[]',
        metadata TEXT,
        created_at INTEGER NOT NULL DEFAULT (strftime('%s', 'now')),
        FOREIGN KEY (parent_event_id) REFERENCES agent_history_events(event_id)
            ON DELETE SET NULL
    )""",
    f"""CREATE TABLE history_snapshots (
        snapshot_id TEXT PRIMARY KEY NOT NULL,
        agent_id TEXT NOT NULL,
        timestamp INTEGER NOT NULL,
        {SNAPSHOT_REF_COLUMN} TEXT,
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
    f"CREATE INDEX idx_history_git_commit ON agent_history_events({REF_COLUMN})",
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
    f"""CREATE VIEW v_agent_event_summary AS
        SELECT agent_id,
               COUNT(*) AS total_events,
               COUNT(DISTINCT session_id) AS unique_sessions,
               COUNT(DISTINCT {REF_COLUMN}) AS unique_commits,
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


def text_values(column: str, alias: str = "j") -> str:
    """The text values in a stored tags column (a JSON list), as a json_each table named
    `alias`; a column that is not JSON holds none."""
    return f"json_each(CASE WHEN json_valid({column}) THEN {column} ELSE '[]' END) AS {alias}"


def indexed_sql(row: str) -> str:
    return (
        f"EXISTS (SELECT 1 FROM history_event_types WHERE event_type = {row}.event_type "
        f"AND timestamp = {row}.timestamp AND event_id = {row}.event_id)"
    )


def _index_event(row: str) -> str:
    """The statements that add one event to the side tables and counters."""
    day = day_sql(f"{row}.timestamp")
    pair = f"agent_id = {row}.agent_id AND session_id = {row}.session_id"
    tags = f"FROM {text_values(f'{row}.tags')} WHERE j.type = 'text'"
    return f"""
        INSERT INTO history_event_types (event_type, timestamp, event_id)
            VALUES ({row}.event_type, {row}.timestamp, {row}.event_id);
        INSERT INTO history_event_tags (tag, timestamp, event_id)
            SELECT DISTINCT j.value, {row}.timestamp, {row}.event_id {tags};
        INSERT INTO history_tag_counts (tag, day, events)
            SELECT DISTINCT j.value, {day}, 1 {tags}
            ON CONFLICT DO UPDATE SET events = events + 1;
        INSERT INTO history_counts (day, agent_id, event_type, events)
            VALUES ({day}, {row}.agent_id, {row}.event_type, 1)
            ON CONFLICT DO UPDATE SET events = events + 1;
        INSERT INTO history_totals (agent_id, event_type, events)
            VALUES ({row}.agent_id, {row}.event_type, 1)
            ON CONFLICT DO UPDATE SET events = events + 1;
        INSERT INTO history_sessions (session_id, events)
            SELECT {row}.session_id, 1 WHERE {row}.session_id IS NOT NULL
            ON CONFLICT DO UPDATE SET events = events + 1;
        INSERT INTO history_agent_session_counts (agent_id, sessions)
            SELECT {row}.agent_id, 1 WHERE {row}.session_id IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM history_agent_sessions WHERE {pair})
            ON CONFLICT DO UPDATE SET sessions = sessions + 1;
        INSERT INTO history_agent_sessions (agent_id, session_id, events)
            SELECT {row}.agent_id, {row}.session_id, 1 WHERE {row}.session_id IS NOT NULL
            ON CONFLICT DO UPDATE SET events = events + 1;"""


def _unindex_event(row: str) -> str:
    """The statements that take one indexed event out again; a counter that reaches zero
    goes."""
    day = day_sql(f"{row}.timestamp")
    total = f"agent_id = {row}.agent_id AND event_type = {row}.event_type"
    counter = f"day = {day} AND {total}"
    pair = f"agent_id = {row}.agent_id AND session_id = {row}.session_id"
    tags = f"SELECT j.value FROM {text_values(f'{row}.tags')} WHERE j.type = 'text'"
    return f"""
        DELETE FROM history_event_types WHERE event_type = {row}.event_type
            AND timestamp = {row}.timestamp AND event_id = {row}.event_id;
        DELETE FROM history_event_tags WHERE tag IN ({tags})
            AND timestamp = {row}.timestamp AND event_id = {row}.event_id;
        UPDATE history_tag_counts SET events = events - 1 WHERE day = {day} AND tag IN ({tags});
        DELETE FROM history_tag_counts WHERE day = {day} AND tag IN ({tags}) AND events <= 0;
        UPDATE history_counts SET events = events - 1 WHERE {counter};
        DELETE FROM history_counts WHERE {counter} AND events <= 0;
        UPDATE history_totals SET events = events - 1 WHERE {total};
        DELETE FROM history_totals WHERE {total} AND events <= 0;
        UPDATE history_sessions SET events = events - 1 WHERE session_id = {row}.session_id;
        DELETE FROM history_sessions WHERE session_id = {row}.session_id AND events <= 0;
        UPDATE history_agent_sessions SET events = events - 1 WHERE {pair};
        UPDATE history_agent_session_counts SET sessions = sessions - 1
            WHERE agent_id = {row}.agent_id
            AND EXISTS (SELECT 1 FROM history_agent_sessions WHERE {pair} AND events <= 0);
        DELETE FROM history_agent_session_counts
            WHERE agent_id = {row}.agent_id AND sessions <= 0;
        DELETE FROM history_agent_sessions WHERE {pair} AND events <= 0;"""


_SCHEMA_2 = (
    """CREATE TABLE IF NOT EXISTS history_event_types (
        event_type TEXT NOT NULL,
        timestamp INTEGER NOT NULL,
        event_id TEXT NOT NULL,
        PRIMARY KEY (event_type, timestamp, event_id)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS history_event_tags (
        tag TEXT NOT NULL,
        timestamp INTEGER NOT NULL,
        event_id TEXT NOT NULL,
        PRIMARY KEY (tag, timestamp, event_id)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS history_counts (
        day INTEGER NOT NULL,
        agent_id TEXT NOT NULL,
        event_type TEXT NOT NULL,
        events INTEGER NOT NULL,
        PRIMARY KEY (day, agent_id, event_type)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS history_totals (
        agent_id TEXT NOT NULL,
        event_type TEXT NOT NULL,
        events INTEGER NOT NULL,
        PRIMARY KEY (agent_id, event_type)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS history_tag_counts (
        tag TEXT NOT NULL,
        day INTEGER NOT NULL,
        events INTEGER NOT NULL,
        PRIMARY KEY (tag, day)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS history_sessions (
        session_id TEXT PRIMARY KEY NOT NULL,
        events INTEGER NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS history_agent_sessions (
        agent_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        events INTEGER NOT NULL,
        PRIMARY KEY (agent_id, session_id)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS history_agent_session_counts (
        agent_id TEXT PRIMARY KEY NOT NULL,
        sessions INTEGER NOT NULL
    ) WITHOUT ROWID""",
    # Holds a row only inside a transaction of the store's own that indexes the events it
    # inserts itself, set by set (insert_in_bulk); no other connection ever sees one.
    "CREATE TABLE IF NOT EXISTS history_bulk_insert (running INTEGER NOT NULL)",
    f"""CREATE TRIGGER IF NOT EXISTS history_event_added AFTER INSERT ON agent_history_events
    WHEN NOT EXISTS (SELECT 1 FROM history_bulk_insert)
    BEGIN {_index_event("new")}
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS history_event_removed AFTER DELETE ON agent_history_events
    WHEN {indexed_sql("old")}
    BEGIN {_unindex_event("old")}
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS history_event_changed
    AFTER UPDATE OF event_id, agent_id, timestamp, event_type, tags, session_id
    ON agent_history_events
    WHEN {indexed_sql("old")}
    BEGIN {_unindex_event("old")} {_index_event("new")}
    END""",
)


def _create_version_2(conn: sqlite3.Connection) -> None:
    """The side tables, counters and their triggers. Events already stored are indexed
    later, in batches (bulk.index_batch): at a million events that takes seconds, which an
    upgrade must not add to Home Assistant's start.

    Safe to run again on a database that has them (its version number set back by hand):
    nothing is created twice, and indexing walks every event again, skipping those that
    are indexed already.
    """
    for statement in _SCHEMA_2:
        conn.execute(statement)
    if conn.execute("SELECT 1 FROM agent_history_events LIMIT 1").fetchone() is not None:
        conn.execute(
            "INSERT INTO history_settings (name, value) VALUES (?, ?) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (INDEX_CURSOR, '""'),
        )


PERSON_PATH = f"'$.{PERSON_KEY}'"


def owner_of(data: str, session: str) -> str:
    """The reader class of an event (see the module's docstring) as SQL, from its data and
    session_id expressions."""
    kind = f"json_type({data}, {PERSON_PATH})"
    unnamed = f"(CASE WHEN {session} IS NULL THEN '*' ELSE '~' END)"
    return (
        f"(CASE WHEN NOT json_valid({data}) THEN {unnamed} WHEN {kind} IS NULL THEN {unnamed} "
        f"WHEN {kind} = 'text' THEN '{OWNER_PERSON}' || json_extract({data}, {PERSON_PATH}) "
        "ELSE '!' END)"
    )


# Covering for what a reader's totals and statistics read: no event row is visited.
OWNER_INDEX = (
    "CREATE INDEX IF NOT EXISTS idx_history_owner ON agent_history_events"
    "(owner, agent_id, event_type, timestamp, session_id)"
)
_SCHEMA_3 = (
    # An event written by hand without its class gets it at once.
    f"""CREATE TRIGGER IF NOT EXISTS history_event_owned
    AFTER INSERT ON agent_history_events WHEN new.owner IS NULL
    BEGIN UPDATE agent_history_events SET owner = {owner_of("new.event_data", "new.session_id")}
        WHERE rowid = new.rowid;
    END""",
    # A change made by hand to what decides the class is followed.
    f"""CREATE TRIGGER IF NOT EXISTS history_event_owner
    AFTER UPDATE OF event_data, session_id ON agent_history_events
    BEGIN UPDATE agent_history_events SET owner = {owner_of("new.event_data", "new.session_id")}
        WHERE rowid = new.rowid;
    END""",
)


def _create_version_3(conn: sqlite3.Connection) -> None:
    """The owner column and its triggers. Existing events keep NULL (read from their JSON)
    until bulk.owner_batch reaches them, walking by rowid from a cursor in history_settings; the
    index is built when the last is done (built now, over a million events, it would add
    seconds to Home Assistant's start). Safe to run again, like version 2's step."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(agent_history_events)")}
    if "owner" not in columns:
        conn.execute("ALTER TABLE agent_history_events ADD COLUMN owner TEXT")
    for statement in _SCHEMA_3:
        conn.execute(statement)
    if conn.execute("SELECT 1 FROM agent_history_events LIMIT 1").fetchone() is None:
        conn.execute(OWNER_INDEX)
    else:
        conn.execute(
            "INSERT INTO history_settings (name, value) VALUES (?, '0') "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (OWNER_CURSOR,),
        )


type MigrationStep = Callable[[sqlite3.Connection], None]
# Step n takes a database from version n to n + 1; version 0 is an empty file.
MIGRATIONS: tuple[MigrationStep, ...] = (_create_version_1, _create_version_2, _create_version_3)
assert len(MIGRATIONS) == SCHEMA_VERSION


def migrate_schema(conn: sqlite3.Connection, steps: Sequence[MigrationStep]) -> int:
    """Bring the database to len(steps), one transaction per step; its version after."""
    version: int = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > len(steps):
        raise sqlite3.DatabaseError(
            f"history database schema version {version} is newer than this integration "
            f"knows ({len(steps)}); it was left as it is"
        )
    while version < len(steps):
        with write_transaction(conn):
            steps[version](conn)
            conn.execute(f"PRAGMA user_version = {version + 1}")
        _LOGGER.debug("History database migrated to schema version %d", version + 1)
        version += 1
    return version


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[None]:
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


def prepare_writer(conn: sqlite3.Connection) -> int:
    """Set the write connection's PRAGMAs, bring the schema up to date and check that the
    tables can be read; the schema version after."""
    if conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is None:
        # A new database: pages freed by purges can be handed back to the file system
        # (see reclaim_space). Only possible before the first table exists.
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if mode != "wal":
        _LOGGER.warning("History database journal is %s, not WAL", mode)
    conn.execute("PRAGMA synchronous = NORMAL")
    # A WAL grown by a large batch or purge is cut back after its next checkpoint.
    conn.execute(f"PRAGMA journal_size_limit = {_WAL_SIZE_LIMIT}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(f"PRAGMA analysis_limit = {_ANALYSIS_LIMIT}")
    version = migrate_schema(conn, MIGRATIONS)
    # Reads the last page of each table: a damaged tree fails here, not mid-turn.
    for table in ("agent_history_events", "history_snapshots", "snapshot_events"):
        conn.execute(f"SELECT max(rowid) FROM {table}").fetchone()
    # The planner's statistics, refreshed only where they are missing or out of date
    # (usually nothing to do): without them it guesses each index's selectivity.
    conn.execute(OPTIMIZE_AT_OPEN).fetchall()
    return version


def damaged_header(path: Path) -> bool:
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


def is_corruption(err: sqlite3.DatabaseError) -> bool:
    code = getattr(err, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _CORRUPTION_CODES
