"""Agent history: how one query reads its events (EventRead, the query planner).

SQLite's statistics are approximate (and absent until SQLite 3.46 analyses at open), so
the reads that matter name their index (INDEXED BY, CROSS JOIN) rather than leave the
choice to them. Once every event is indexed (schema version 2), a query is read in time
order from the index that narrows it most and its total is summed from the counters;
until then (EventRead.plain) it reads the events alone. Every page is ordered by
(timestamp, rowid): events that share a microsecond keep the order they were recorded in.
"""

from collections.abc import Callable
from dataclasses import dataclass
import sqlite3
from typing import Any

from .events import E_COLUMNS, EVENT_COLUMNS
from .models import HistoryQuery, Visibility, to_us
from .schema import day_of, day_start

# A type and agent with at most this many events are read whole and sorted by time; more
# are read in time order from the index that holds them most densely, until a page is full.
SORTED_AT_MOST = 5000
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
        if both <= SORTED_AT_MOST or both * both <= wanted * min(of_type, of_agent):
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
            f"SELECT {E_COLUMNS} FROM {self.source} {where} "
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
        columns = ", ".join(EVENT_COLUMNS.split(", "))
        order_by = f"ORDER BY timestamp {order}, rid {order}"
        if offset + limit <= PROBE_ROWS:
            probed = conn.execute(
                f"SELECT {columns} FROM (SELECT {E_COLUMNS}, e.owner, e.rowid AS rid "
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
                f"SELECT * FROM (SELECT {E_COLUMNS}, e.rowid AS rid FROM {read.source} "
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


def snapshot_visible(visibility: Visibility) -> tuple[str, list[Any]]:
    """The condition on a snapshots row `s`: the reader may see every event it holds."""
    term, params = visibility.where()
    return (
        "NOT EXISTS (SELECT 1 FROM snapshot_events x "
        "JOIN agent_history_events e ON e.event_id = x.event_id "
        f"WHERE x.snapshot_id = s.snapshot_id AND NOT {term})",
        params,
    )
