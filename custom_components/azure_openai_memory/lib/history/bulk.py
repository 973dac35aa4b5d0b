"""Agent history: many events at once, set by set rather than by the triggers row by row.

A statement per side table for a whole batch (see schema.py for the tables): the events
are first put in temp.indexing (the write connection's own). A purge takes its events out
of the side tables before deleting them, so the triggers find them no longer indexed and
stand aside; a large insert stops the insert trigger and indexes what it added after.

The events of an upgraded database are indexed (version 2) and given their reader class
(version 3) the same way, a batch per transaction, walking from a cursor kept in
history_settings: one deleted meanwhile is simply not found, one written meanwhile is
indexed by the triggers already and skipped.
"""

from collections.abc import Callable, Sequence
import sqlite3
from typing import Any

import orjson

from .schema import (
    INDEX_CURSOR,
    OWNER_CURSOR,
    OWNER_INDEX,
    day_sql,
    indexed_sql,
    owner_of,
    text_values,
    write_transaction,
)

_BULK_TABLES = (
    """CREATE TEMP TABLE IF NOT EXISTS indexing (
        event_id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, timestamp INTEGER NOT NULL,
        event_type TEXT NOT NULL, tags TEXT, session_id TEXT)""",
    """CREATE TEMP TABLE IF NOT EXISTS tagging (
        tag TEXT NOT NULL, timestamp INTEGER NOT NULL, event_id TEXT NOT NULL,
        PRIMARY KEY (tag, timestamp, event_id)) WITHOUT ROWID""",
)
_FILL_INDEXING = (
    "INSERT INTO temp.indexing (event_id, agent_id, timestamp, event_type, tags, session_id) "
    "SELECT e.event_id, e.agent_id, e.timestamp, e.event_type, e.tags, e.session_id "
)
_FILL_TAGGING = (
    "INSERT OR IGNORE INTO temp.tagging (tag, timestamp, event_id) "
    f"SELECT j.value, b.timestamp, b.event_id FROM temp.indexing b, {text_values('b.tags')} "
    "WHERE j.type = 'text'"
)
_SESSIONS_OF_BATCH = "SELECT DISTINCT agent_id, session_id FROM temp.indexing"
_ADD_BATCH = (
    "INSERT INTO history_event_types (event_type, timestamp, event_id) "
    "SELECT event_type, timestamp, event_id FROM temp.indexing",
    "INSERT INTO history_event_tags (tag, timestamp, event_id) "
    "SELECT tag, timestamp, event_id FROM temp.tagging",
    "INSERT INTO history_tag_counts (tag, day, events) "
    f"SELECT tag, {day_sql('timestamp')}, COUNT(*) FROM temp.tagging WHERE true GROUP BY 1, 2 "
    "ON CONFLICT DO UPDATE SET events = events + excluded.events",
    "INSERT INTO history_counts (day, agent_id, event_type, events) "
    f"SELECT {day_sql('timestamp')}, agent_id, event_type, COUNT(*) FROM temp.indexing "
    "WHERE true GROUP BY 1, 2, 3 ON CONFLICT DO UPDATE SET events = events + excluded.events",
    "INSERT INTO history_totals (agent_id, event_type, events) "
    "SELECT agent_id, event_type, COUNT(*) FROM temp.indexing "
    "WHERE true GROUP BY 1, 2 ON CONFLICT DO UPDATE SET events = events + excluded.events",
    "INSERT INTO history_sessions (session_id, events) "
    "SELECT session_id, COUNT(*) FROM temp.indexing WHERE session_id IS NOT NULL "
    "GROUP BY 1 ON CONFLICT DO UPDATE SET events = events + excluded.events",
    "INSERT INTO history_agent_session_counts (agent_id, sessions) "
    f"SELECT agent_id, COUNT(*) FROM ({_SESSIONS_OF_BATCH} b WHERE session_id IS NOT NULL "
    "AND NOT EXISTS (SELECT 1 FROM history_agent_sessions a "
    "WHERE a.agent_id = b.agent_id AND a.session_id = b.session_id)) WHERE true GROUP BY 1 "
    "ON CONFLICT DO UPDATE SET sessions = sessions + excluded.sessions",
    "INSERT INTO history_agent_sessions (agent_id, session_id, events) "
    "SELECT agent_id, session_id, COUNT(*) FROM temp.indexing WHERE session_id IS NOT NULL "
    "GROUP BY 1, 2 ON CONFLICT DO UPDATE SET events = events + excluded.events",
)
_TAKE_OUT_BATCH = (
    "DELETE FROM history_event_types WHERE (event_type, timestamp, event_id) IN "
    "(SELECT event_type, timestamp, event_id FROM temp.indexing)",
    "DELETE FROM history_event_tags WHERE (tag, timestamp, event_id) IN "
    "(SELECT tag, timestamp, event_id FROM temp.tagging)",
    "UPDATE history_tag_counts AS c SET events = c.events - d.n "
    f"FROM (SELECT tag, {day_sql('timestamp')} AS day, COUNT(*) AS n FROM temp.tagging "
    "GROUP BY 1, 2) AS d WHERE c.tag = d.tag AND c.day = d.day",
    "DELETE FROM history_tag_counts WHERE events <= 0",
    "UPDATE history_counts AS c SET events = c.events - d.n "
    f"FROM (SELECT {day_sql('timestamp')} AS day, agent_id, event_type, COUNT(*) AS n "
    "FROM temp.indexing GROUP BY 1, 2, 3) AS d "
    "WHERE c.day = d.day AND c.agent_id = d.agent_id AND c.event_type = d.event_type",
    "DELETE FROM history_counts WHERE events <= 0 AND day BETWEEN "
    f"(SELECT MIN({day_sql('timestamp')}) FROM temp.indexing) "
    f"AND (SELECT MAX({day_sql('timestamp')}) FROM temp.indexing)",
    "UPDATE history_totals AS c SET events = c.events - d.n "
    "FROM (SELECT agent_id, event_type, COUNT(*) AS n FROM temp.indexing GROUP BY 1, 2) AS d "
    "WHERE c.agent_id = d.agent_id AND c.event_type = d.event_type",
    "DELETE FROM history_totals WHERE events <= 0",
    "UPDATE history_sessions AS c SET events = c.events - d.n "
    "FROM (SELECT session_id, COUNT(*) AS n FROM temp.indexing "
    "WHERE session_id IS NOT NULL GROUP BY 1) AS d WHERE c.session_id = d.session_id",
    "DELETE FROM history_sessions WHERE events <= 0 "
    "AND session_id IN (SELECT session_id FROM temp.indexing)",
    "UPDATE history_agent_sessions AS c SET events = c.events - d.n "
    "FROM (SELECT agent_id, session_id, COUNT(*) AS n FROM temp.indexing "
    "WHERE session_id IS NOT NULL GROUP BY 1, 2) AS d "
    "WHERE c.agent_id = d.agent_id AND c.session_id = d.session_id",
    "UPDATE history_agent_session_counts AS c SET sessions = c.sessions - d.n "
    "FROM (SELECT agent_id, COUNT(*) AS n FROM history_agent_sessions "
    f"WHERE events <= 0 AND (agent_id, session_id) IN ({_SESSIONS_OF_BATCH}) "
    "GROUP BY 1) AS d WHERE c.agent_id = d.agent_id",
    "DELETE FROM history_agent_session_counts WHERE sessions <= 0",
    "DELETE FROM history_agent_sessions WHERE events <= 0 "
    f"AND (agent_id, session_id) IN ({_SESSIONS_OF_BATCH})",
)


def _begin_bulk(conn: sqlite3.Connection) -> None:
    for statement in _BULK_TABLES:
        conn.execute(statement)
    conn.execute("DELETE FROM temp.indexing")
    conn.execute("DELETE FROM temp.tagging")


def _end_bulk(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM temp.indexing")
    conn.execute("DELETE FROM temp.tagging")


def take_out_of_index(conn: sqlite3.Connection, events: str, params: Sequence[Any]) -> None:
    """Inside the caller's transaction: take the indexed events that `events` (a FROM
    and WHERE over `agent_history_events e`) selects out of the side tables and counters,
    before the caller deletes them."""
    _begin_bulk(conn)
    conn.execute(f"{_FILL_INDEXING} {events} AND {indexed_sql('e')}", params)
    conn.execute(_FILL_TAGGING)
    for statement in _TAKE_OUT_BATCH:
        conn.execute(statement)
    _end_bulk(conn)


def insert_in_bulk(conn: sqlite3.Connection, insert: Callable[[], object]) -> None:
    """Inside the caller's transaction: run `insert`, which adds events, with the insert
    trigger standing aside, then index what it added set by set (many times faster than
    the trigger row by row). The new events are those after the largest rowid before:
    the caller holds the write lock, so nobody else adds any meanwhile."""
    before = conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM agent_history_events")
    last = before.fetchone()[0]
    conn.execute("INSERT INTO history_bulk_insert (running) VALUES (1)")
    insert()
    conn.execute("DELETE FROM history_bulk_insert")
    _begin_bulk(conn)
    conn.execute(
        f"{_FILL_INDEXING} FROM agent_history_events e WHERE e.rowid > ? AND NOT {indexed_sql('e')}",
        (last,),
    )
    conn.execute(_FILL_TAGGING)
    for statement in _ADD_BATCH:
        conn.execute(statement)
    _end_bulk(conn)


def index_pending(conn: sqlite3.Connection) -> bool:
    """Whether events stored before version 2 are still to be indexed."""
    found = conn.execute("SELECT 1 FROM history_settings WHERE name = ?", (INDEX_CURSOR,))
    return found.fetchone() is not None


def index_batch(conn: sqlite3.Connection, limit: int) -> bool:
    """Index up to `limit` more of the events stored before version 2, in one transaction;
    True once none is left (the cursor is gone).

    Events are taken in id order after the cursor. Those written since the upgrade are
    indexed by the triggers already and skipped here; one deleted meanwhile is simply not
    found, so every event is counted once whatever happens between two batches.
    """
    with write_transaction(conn):
        found = conn.execute(
            "SELECT value FROM history_settings WHERE name = ?", (INDEX_CURSOR,)
        ).fetchone()
        if found is None:
            return True
        cursor = orjson.loads(found[0])
        last = conn.execute(
            "SELECT max(event_id) FROM (SELECT event_id FROM agent_history_events "
            "WHERE event_id > ? ORDER BY event_id LIMIT ?)",
            (cursor, limit),
        ).fetchone()[0]
        if last is None:
            conn.execute("DELETE FROM history_settings WHERE name = ?", (INDEX_CURSOR,))
            return True
        _begin_bulk(conn)
        conn.execute(
            f"{_FILL_INDEXING} FROM agent_history_events e "
            f"WHERE e.event_id > ? AND e.event_id <= ? AND NOT {indexed_sql('e')}",
            (cursor, last),
        )
        conn.execute(_FILL_TAGGING)
        for statement in _ADD_BATCH:
            conn.execute(statement)
        _end_bulk(conn)
        conn.execute(
            "UPDATE history_settings SET value = ? WHERE name = ?",
            (orjson.dumps(last).decode(), INDEX_CURSOR),
        )
    return False


def owner_pending(conn: sqlite3.Connection) -> bool:
    """Whether events stored before version 3 are still to get their reader class."""
    found = conn.execute("SELECT 1 FROM history_settings WHERE name = ?", (OWNER_CURSOR,))
    return found.fetchone() is not None


def owner_batch(conn: sqlite3.Connection, limit: int) -> bool:
    """Give up to `limit` more of the events stored before version 3 their reader class, in
    one transaction, in rowid order after the cursor; True once none is left (the cursor
    is gone and the index built). Events written since have theirs and are skipped."""
    with write_transaction(conn):
        found = conn.execute(
            "SELECT value FROM history_settings WHERE name = ?", (OWNER_CURSOR,)
        ).fetchone()
        if found is None:
            return True
        cursor = int(found[0])
        last = conn.execute(
            "SELECT max(rowid) FROM (SELECT rowid FROM agent_history_events "
            "WHERE rowid > ? ORDER BY rowid LIMIT ?)",
            (cursor, limit),
        ).fetchone()[0]
        if last is None:
            conn.execute(OWNER_INDEX)
            conn.execute("DELETE FROM history_settings WHERE name = ?", (OWNER_CURSOR,))
            return True
        conn.execute(
            f"UPDATE agent_history_events SET owner = {owner_of('event_data', 'session_id')} "
            "WHERE rowid > ? AND rowid <= ? AND owner IS NULL",
            (cursor, last),
        )
        conn.execute(
            "UPDATE history_settings SET value = ? WHERE name = ?", (str(last), OWNER_CURSOR)
        )
    return False
