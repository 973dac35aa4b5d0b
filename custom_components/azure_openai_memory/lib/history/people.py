"""Agent history: what it holds of people, changed in place: their keys renamed, their talk
erased, and the events that carried a memory they asked to be forgotten.

The talk of a person names them in its data (PERSON_KEY) and its reader class (`owner`).
When a person's key changes (their entity id of before becomes their id; a removed
person's talk is held; held talk is handed over), both follow, in one transaction.
An erasure deletes whole events, in one transaction; the triggers keep the side tables in
step and the foreign keys unlink children and snapshots. Every function here runs on the
writer thread, with the write connection.
"""

from collections.abc import Callable, Iterable
import sqlite3
from typing import Any, Final

from .models import OWNER_PERSON, HistoryEventType, Visibility
from .schema import PERSON_PATH, write_transaction

# Texts (or ids) per statement, well under SQLite's limit on bound parameters.
_NEEDLES_PER_QUERY = 400
# The fields of the memories' events that refer to one memory by its id, and those that
# list memory ids: what an erasure of a memory finds its events by.
MEMORY_REFERENCES: Final = frozenset({"id", "memory_id", "new_id", "existing", "superseded_by"})
MEMORY_REFERENCE_LISTS: Final = frozenset({"ids", "erased", "added", "unchanged", "conflicts"})

_NAMED_PERSON = (
    f"SELECT DISTINCT json_extract(event_data, {PERSON_PATH}) FROM agent_history_events "
    f"WHERE owner IS NULL AND json_valid(event_data) AND json_type(event_data, {PERSON_PATH}) "
    "= 'text'"
)


def history_people(conn: sqlite3.Connection) -> set[str]:
    """Every person key the events name: from the reader classes (the classes' index
    answers where it is built), and from the data of events whose class is not known yet."""
    keys = {
        row[0][len(OWNER_PERSON) :]
        for row in conn.execute(
            "SELECT DISTINCT owner FROM agent_history_events WHERE substr(owner, 1, ?) = ?",
            (len(OWNER_PERSON), OWNER_PERSON),
        )
    }
    keys.update(row[0] for row in conn.execute(_NAMED_PERSON) if isinstance(row[0], str))
    return keys


def rename_people(conn: sqlite3.Connection, renamed: Callable[[str], str | None]) -> dict[str, str]:
    """Every event of a person whose key changes names their new key (`renamed`: a key's
    new key, or None when it stays), in its data and its reader class; nothing else of
    an event changes. One transaction; the keys that changed, old -> new."""
    with write_transaction(conn):
        mapping = {key: new for key in history_people(conn) if (new := renamed(key)) is not None}
        for old, new in sorted(mapping.items()):
            conn.execute(
                f"UPDATE agent_history_events SET event_data = json_set(event_data, {PERSON_PATH}, "
                "?) WHERE owner = ? OR (owner IS NULL AND json_valid(event_data) AND "
                f"json_extract(event_data, {PERSON_PATH}) = ?)",
                (new, OWNER_PERSON + old, old),
            )
    return mapping


def delete_person_events(conn: sqlite3.Connection, person: str) -> int:
    """Delete every event of one person's talk (for an erasure); how many went. The
    triggers keep the side tables in step; the foreign keys unlink children and
    snapshots."""
    with write_transaction(conn):
        cursor = conn.execute(
            "DELETE FROM agent_history_events WHERE owner = ? OR (owner IS NULL AND "
            f"json_valid(event_data) AND json_extract(event_data, {PERSON_PATH}) = ?)",
            (OWNER_PERSON + person, person),
        )
    return cursor.rowcount


def delete_memory_events(
    conn: sqlite3.Connection,
    memory_ids: Iterable[str],
    tools: Iterable[str],
    service_prefix: str,
    visibility: Visibility | None,
    *,
    owners_known: bool,
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
    seen: str = "1"
    seen_args: list[Any] = []
    if visibility is not None:
        seen, seen_args = visibility.where("e", owners_known=owners_known)
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
            conn.execute(f"DELETE FROM agent_history_events WHERE event_id IN ({marks})", chunk)
    return len(doomed)
