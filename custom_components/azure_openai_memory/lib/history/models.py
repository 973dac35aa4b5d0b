"""Agent history: the records (events, queries, snapshots, statistics) and their validation.

Everything here is pure Python: no database. store.py re-exports the public names, and
events.py encodes and decodes these records for SQLite.
"""

from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from enum import StrEnum
import math
import os
import re
import time
from typing import Any
import uuid

import orjson

from ..errors import InputError
from ..times import format_time


class HistoryEventType(StrEnum):
    """The eight kinds of event; the values are what services and the database use."""

    THOUGHT = "thought"
    ACTION = "action"
    TOOL_USE = "tool_use"
    STATE_CHANGE = "state_change"
    COMMUNICATION = "communication"
    DECISION = "decision"
    ERROR = "error"
    SYSTEM = "system"


MAX_EVENT_DATA_BYTES = 64 * 1024
MAX_QUERY_LIMIT = 10_000
# SQLite's largest integer: a larger offset could not even be asked for.
MAX_QUERY_OFFSET = 2**63 - 1

US_PER_SECOND = 1_000_000
_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS
_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class HistoryError(InputError):
    """Bad input to the history."""


def to_us(timestamp: float) -> int:
    """Epoch seconds as the stored integer microseconds."""
    if not isinstance(timestamp, int | float) or not math.isfinite(timestamp):
        raise ValueError(f"timestamp must be a finite number of seconds, not {timestamp!r}")
    return round(timestamp * US_PER_SECOND)


def from_us(micros: int) -> float:
    return micros / US_PER_SECOND


def event_type_of(value: object) -> HistoryEventType:
    if isinstance(value, HistoryEventType):
        return value
    if isinstance(value, str):
        with suppress(ValueError):
            return HistoryEventType(value.strip().lower())
    raise HistoryError("unknown_event_type", event_type=value)


def uuid_text(value: object, field: str) -> str:
    """The canonical text of a UUID (lower case, hyphens), so lookups match however typed."""
    if isinstance(value, str):
        if _CANONICAL_UUID.fullmatch(value):
            return value
        with suppress(ValueError):
            return str(uuid.UUID(value))
    raise HistoryError("invalid_event_id", field=field, value=value)


def _new_event_id(timestamp: float) -> str:
    """A UUID version 7 (RFC 9562) for an event at `timestamp`: 48 bits of Unix time in
    milliseconds, then random bits.

    Not version 4: the events' primary key is an index on this text, and random keys land
    on random pages of it. record_events of 10,000 into a history of 1,000,000 events ran
    at about 36,000 events/s with random ids against 125,000 with these (run
    benchmarks/bench_history.py with HISTORY_BENCH_RANDOM_IDS=1). Ids that grow with time
    are appended where the index ends. The time is the event's own, so importing old events
    stays local too. Any UUID is still accepted wherever an id is read.
    """
    millis = min(max(int(timestamp * 1000), 0), (1 << 48) - 1)
    rand = int.from_bytes(os.urandom(10))
    value = (
        (millis << 80)
        | (0x7 << 76)  # version
        | ((rand >> 62) & 0xFFF) << 64
        | (0b10 << 62)  # variant
        | (rand & ((1 << 62) - 1))
    )
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def optional_uuid(value: object, field: str) -> str | None:
    return None if value is None else uuid_text(value, field)


def encode_json(value: Any, field: str, limit: int | None = MAX_EVENT_DATA_BYTES) -> str:
    try:
        encoded = orjson.dumps(value, option=_JSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        raise HistoryError("event_data_not_json", field=field) from None
    if limit is not None and len(encoded) > limit:
        raise HistoryError("event_data_too_large", field=field, size=len(encoded), max=limit)
    return encoded.decode()


def optional_json(value: Any, field: str) -> str | None:
    return None if value is None else encode_json(value, field)


def decode_json(text: str | None) -> Any:
    """A stored JSON column; text written by hand that is not JSON comes back as text."""
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def optional_text(value: object, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{field} must be text, not {type(value).__name__}")


def agent_text(value: object) -> str:
    if isinstance(value, str):
        return value
    raise TypeError(f"agent_id must be text, not {type(value).__name__}")


def tags_of(values: Iterable[str]) -> tuple[str, ...]:
    tags = tuple(values)
    for tag in tags:
        if not isinstance(tag, str):
            raise TypeError(f"tags must be text, not {type(tag).__name__}")
    return tags


@dataclass(frozen=True, slots=True)
class AgentHistoryEvent:
    """One thing the agent did; `ref` is an optional reference (e.g. a commit hash)."""

    event_id: str
    agent_id: str
    timestamp: float
    event_type: HistoryEventType
    event_data: Any
    ref: str | None = None
    session_id: str | None = None
    parent_event_id: str | None = None
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        # Callers may hand a plain string type or a list of tags; keep the declared types.
        if type(self.event_type) is not HistoryEventType:
            object.__setattr__(self, "event_type", event_type_of(self.event_type))
        if type(self.tags) is not tuple:
            object.__setattr__(self, "tags", tuple(self.tags))

    @classmethod
    def new(
        cls,
        agent_id: str,
        event_type: HistoryEventType | str,
        event_data: Any,
        *,
        session_id: str | None = None,
        parent_event_id: str | None = None,
        tags: Iterable[str] = (),
        metadata: dict[str, Any] | None = None,
        ref: str | None = None,
        timestamp: float | None = None,
    ) -> "AgentHistoryEvent":
        """A validated event with a fresh id (see _new_event_id).

        The data is taken through JSON here, so the event holds its own copy in the form a
        read returns (string keys, lists), and the time is rounded to the microsecond that is
        stored: the event equals what a later query gives back.
        """
        kind = event_type_of(event_type)
        agent_text(agent_id)
        data = orjson.loads(encode_json(event_data, "event_data"))
        meta = None if metadata is None else orjson.loads(encode_json(metadata, "metadata"))
        when = from_us(to_us(time.time() if timestamp is None else timestamp))
        return cls(
            event_id=_new_event_id(when),
            agent_id=agent_id,
            timestamp=when,
            event_type=kind,
            event_data=data,
            ref=optional_text(ref, "ref"),
            session_id=optional_text(session_id, "session_id"),
            parent_event_id=optional_uuid(parent_event_id, "parent_event_id"),
            tags=tags_of(tags),
            metadata=meta,
        )

    def as_dict(self) -> dict[str, Any]:
        """The service shape: every field, time as ISO 8601 UTC."""
        return {
            "event_id": self.event_id,
            "agent_id": self.agent_id,
            "timestamp": format_time(self.timestamp),
            "event_type": self.event_type.value,
            "event_data": self.event_data,
            "session_id": self.session_id,
            "parent_event_id": self.parent_event_id,
            "tags": list(self.tags),
            "metadata": self.metadata,
            "ref": self.ref,
        }


def check_count(field: str, value: object, low: int, high: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise HistoryError(
            "history_limit_out_of_range", field=field, value=value, min=low, max=high
        )


# The key of an event's data that names whose talk it is part of: a person's id, or null
# for talk of nobody known. An event without it holds no one's words (the household's).
PERSON_KEY = "person_id"
# What a person's talk holds as its reader class (`owner`), before the person id.
OWNER_PERSON = "="


class NotVisible(Exception):
    """What a reader asked for by id is someone else's: refused, never shown in part."""


@dataclass(frozen=True, slots=True)
class Visibility:
    """What one reader may see of the history: their own person's talk and the household's
    events (automations, services, settings), which hold no one's words.

    Talk names its person in its events' data (PERSON_KEY; null for nobody known, whose
    talk only those who see everything read). Talk recorded before it named a person is
    told by who recorded it: a session of an agent whose id starts with talk_prefix. It is
    nobody's then.
    """

    person_id: str | None
    talk_prefix: str

    def where(self, row: str = "e", *, owners_known: bool = False) -> tuple[str, list[Any]]:
        """The condition (true or false, never NULL) on an events row, and its parameters.

        Answered from the row's reader class (`owner`, see schema.py) where it is
        known, from its JSON where it is not yet. owners_known: every row's is (then the
        condition is one the class's index answers alone)."""
        n, prefix = len(self.talk_prefix), self.talk_prefix
        readers = ["*"] if self.person_id is None else [OWNER_PERSON + self.person_id, "*"]
        marks = ", ".join("?" * len(readers))
        by_owner = (
            f"{row}.owner IN ({marks}) OR ({row}.owner = '~' AND substr({row}.agent_id, 1, ?) <> ?)"
        )
        if owners_known:
            return f"({by_owner})", [*readers, n, prefix]
        key = f"'$.{PERSON_KEY}'"
        by_json = (
            f"(json_type({row}.event_data, {key}) IS NULL AND NOT ({row}.session_id IS NOT NULL "
            f"AND substr({row}.agent_id, 1, ?) = ?))"
        )
        json_params: list[Any] = [n, prefix]
        if self.person_id is not None:
            by_json = f"(json_extract({row}.event_data, {key}) IS ? OR {by_json})"
            json_params.insert(0, self.person_id)
        return (
            f"(CASE WHEN {row}.owner IS NULL THEN {by_json} ELSE ({by_owner}) END)",
            [*json_params, *readers, n, prefix],
        )

    def classes(self, row: str = "e") -> list[tuple[str, list[Any]]]:
        """The reader classes this reader sees, each as a condition that the class's index
        answers alone; no row is in two, so a count is their counts' sum. Only for a
        database where every event's class is known."""
        seen: list[tuple[str, list[Any]]] = [(f"{row}.owner = '*'", [])]
        if self.person_id is not None:
            seen.insert(0, (f"{row}.owner = ?", [OWNER_PERSON + self.person_id]))
        prefix = self.talk_prefix
        if prefix and prefix.isascii():
            # Agents whose id does not start with the prefix, as two ranges of the index
            # (ids sort by code point): it reads none of the agents whose id does.
            after = prefix[:-1] + chr(ord(prefix[-1]) + 1)
            seen.append(
                (
                    f"{row}.owner = '~' AND ({row}.agent_id < ? OR {row}.agent_id >= ?)",
                    [prefix, after],
                )
            )
        elif prefix:
            seen.append(
                (
                    f"{row}.owner = '~' AND substr({row}.agent_id, 1, ?) <> ?",
                    [len(prefix), prefix],
                )
            )
        return seen


@dataclass(frozen=True, slots=True)
class HistoryQuery:
    """What query_events selects; validated here so a bad query never reaches the database.

    visibility: whose events the reader may see (None: every event).
    """

    agent_id: str | None = None
    session_id: str | None = None
    event_type: HistoryEventType | None = None
    tags: tuple[str, ...] = ()
    start_time: float | None = None
    end_time: float | None = None
    limit: int = 100
    offset: int = 0
    ascending: bool = False
    visibility: Visibility | None = None

    def __post_init__(self) -> None:
        if self.event_type is not None and type(self.event_type) is not HistoryEventType:
            object.__setattr__(self, "event_type", event_type_of(self.event_type))
        if type(self.tags) is not tuple:
            object.__setattr__(self, "tags", tags_of(self.tags))
        check_count("limit", self.limit, 1, MAX_QUERY_LIMIT)
        check_count("offset", self.offset, 0, MAX_QUERY_OFFSET)
        for value in (self.start_time, self.end_time):
            if value is not None:
                to_us(value)
        if (
            self.start_time is not None
            and self.end_time is not None
            and self.end_time < self.start_time
        ):
            raise HistoryError(
                "history_end_before_start",
                start_time=format_time(self.start_time),
                end_time=format_time(self.end_time),
            )


@dataclass(frozen=True, slots=True)
class HistorySnapshot:
    """A point in time of one agent: recent events plus its state (options, windows)."""

    snapshot_id: str
    agent_id: str
    timestamp: float
    events: tuple[AgentHistoryEvent, ...]
    ref: str | None = None
    description: str | None = None
    metadata: dict[str, Any] | None = None
    agent_state: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if type(self.events) is not tuple:
            object.__setattr__(self, "events", tuple(self.events))

    def as_dict(self) -> dict[str, Any]:
        """The service shape: events as theirs, time as ISO 8601 UTC."""
        return {
            "snapshot_id": self.snapshot_id,
            "agent_id": self.agent_id,
            "timestamp": format_time(self.timestamp),
            "events": [event.as_dict() for event in self.events],
            "ref": self.ref,
            "description": self.description,
            "metadata": self.metadata,
            "agent_state": self.agent_state,
        }


@dataclass(frozen=True, slots=True)
class HistoryStatistics:
    """Counts by type and agent; `refs` are the references seen, in the order first seen."""

    total_events: int
    events_by_type: dict[str, int]
    total_snapshots: int
    earliest_event: float | None
    latest_event: float | None
    unique_sessions: int
    refs: list[str]

    def as_dict(self) -> dict[str, Any]:
        """The service shape, times as ISO 8601 UTC."""
        return {
            "total_events": self.total_events,
            "events_by_type": dict(self.events_by_type),
            "total_snapshots": self.total_snapshots,
            "earliest_event": None
            if self.earliest_event is None
            else format_time(self.earliest_event),
            "latest_event": None if self.latest_event is None else format_time(self.latest_event),
            "unique_sessions": self.unique_sessions,
            "refs": list(self.refs),
        }


@dataclass(frozen=True, slots=True)
class ListedSnapshot:
    """A snapshot as a listing shows it: without its events and state, which can be large
    (read one snapshot whole by its id), but with how many events it holds."""

    snapshot_id: str
    agent_id: str
    timestamp: float
    event_count: int
    ref: str | None = None
    description: str | None = None
    metadata: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The service shape, time as ISO 8601 UTC."""
        return {
            "snapshot_id": self.snapshot_id,
            "agent_id": self.agent_id,
            "timestamp": format_time(self.timestamp),
            "event_count": self.event_count,
            "ref": self.ref,
            "description": self.description,
            "metadata": self.metadata,
        }


@dataclass(frozen=True, slots=True)
class HistoryPurge:
    """What a purge deleted: events, and snapshots (taken before the cut-off, or left
    without any of their events)."""

    events: int
    snapshots: int
