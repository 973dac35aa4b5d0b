"""Agent history: the statistics of one agent or of all, in the caller's read transaction.

No figure reads the events themselves where the side tables answer: counts come from the
counters (schema.py), times and references from indexes; until an upgraded database is
indexed, counts come from the indexes of the events. What one reader may see is counted
from the events, class by class from the reader classes' index once every class is known
(the counters count everyone's).
"""

import sqlite3

from .models import HistoryEventType, HistoryStatistics, Visibility, from_us
from .planner import snapshot_visible
from .schema import REF_COLUMN


def statistics(
    conn: sqlite3.Connection,
    agent_id: str | None,
    visibility: Visibility | None,
    *,
    indexed: bool,
    owners_known: bool,
) -> HistoryStatistics:
    """The statistics of one agent, or of all (agent_id None).

    Counts come from the counters (see schema.py), times and references from
    indexes, so no figure reads the events themselves. Until an upgraded database is
    indexed, the counts are taken from the indexes of the events, as version 1 did.
    With a visibility, every figure is of what the reader may see, counted from the
    events (the counters count everyone's).
    """
    if visibility is not None:
        return _visible_statistics(conn, agent_id, visibility, owners_known=owners_known)
    where, params = ("WHERE agent_id = ?", (agent_id,)) if agent_id is not None else ("", ())
    # The unary + keeps SQLite on the references' index: few events carry one, and the
    # agent's own index would read all of that agent's events.
    refs_where = "WHERE +agent_id = ? AND" if agent_id is not None else "WHERE"
    if indexed:
        counts = f"SELECT event_type, SUM(events) FROM history_totals {where} "
        sessions_sql = (
            "SELECT COALESCE(SUM(sessions), 0) FROM history_agent_session_counts WHERE agent_id = ?"
            if agent_id is not None
            else "SELECT COUNT(*) FROM history_sessions"
        )
    else:
        counts = f"SELECT event_type, COUNT(*) FROM agent_history_events {where} "
        sessions_sql = f"SELECT COUNT(DISTINCT session_id) FROM agent_history_events {where}"
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
            f"SELECT {REF_COLUMN} FROM agent_history_events "
            f"{refs_where} {REF_COLUMN} IS NOT NULL "
            f"GROUP BY {REF_COLUMN} ORDER BY MIN(timestamp), {REF_COLUMN}",
            params,
        )
    ]
    snapshots = conn.execute(f"SELECT COUNT(*) FROM history_snapshots {where}", params).fetchone()[
        0
    ]
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
    conn: sqlite3.Connection, agent_id: str | None, visibility: Visibility, *, owners_known: bool
) -> HistoryStatistics:
    seen, seen_params = visibility.where(owners_known=owners_known)
    terms, params = [seen], list(seen_params)
    if agent_id is not None:
        terms.insert(0, "e.agent_id = ?")
        params.insert(0, agent_id)
    where = "WHERE " + " AND ".join(terms)
    snapshot_term, snapshot_params = snapshot_visible(visibility)
    snapshot_terms = [snapshot_term]
    if agent_id is not None:
        snapshot_terms.insert(0, "s.agent_id = ?")
        snapshot_params.insert(0, agent_id)
    # Every class known: the events seen, class by class, from the classes' index alone.
    events, events_params = f"agent_history_events e {where}", params
    if owners_known:
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
            f"SELECT {REF_COLUMN} FROM agent_history_events e "
            f"INDEXED BY idx_history_git_commit {where} "
            f"AND {REF_COLUMN} IS NOT NULL "
            f"GROUP BY {REF_COLUMN} ORDER BY MIN(timestamp), {REF_COLUMN}",
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
