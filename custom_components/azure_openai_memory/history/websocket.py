"""The history's WebSocket commands: the Memory panel's timeline, a turn's chain, statistics.

The timeline is a page of a query (by agent, type and local day), read in the executor
from the indexes, never the whole database; a turn is the question and everything that
followed from it (decision, tools, actions, answer). What each caller may read is what the
history services show them (visibility_of, applied by the store's queries): an
administrator everything, anyone else their own person's talk and the household's events,
so pages, totals and statistics count only that; another person's turn is refused.
"""

from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

from homeassistant.core import Context, HomeAssistant, callback
from homeassistant.util import dt as dt_util
import orjson
import voluptuous as vol

from ..const import DOMAIN
from ..data import agent_names
from ..lib.history.store import AgentHistoryEvent, HistoryEventType, HistoryQuery
from ..panel.commands import (
    PAGE_SCHEMA,
    CommandSpec,
    async_register_commands,
    calendar_day,
    page_of,
)
from ..people.speakers import Speaker
from .recorder import HistoryRecorder, visibility_of
from .services import async_visible_chain

# Bytes of an event's data a timeline row carries; a turn's events carry more. Longer
# data is cut (the history_query service reads it whole).
ROW_DATA_BYTES = 2048
TURN_DATA_BYTES = 16_384
# Events of one conversation after a question that are looked through for its turn.
MAX_TURN_EVENTS = 1000
# Of cut data, the characters of each text kept for the row's sentence, and the nested
# objects whose own texts are kept (a tool call's arguments and result).
BRIEF_CHARS = 300
BRIEF_NESTED = ("arguments", "result")


EVENTS_SCHEMA: dict[Any, Any] = {
    vol.Optional("agent_id"): vol.All(str, vol.Length(min=1, max=255)),
    vol.Optional("event_type"): vol.In([kind.value for kind in HistoryEventType]),
    vol.Optional("day"): calendar_day,
    # False: the page alone, its total null unless the page ends the list (the panel shows
    # the rows at once and asks again for the total).
    vol.Optional("count", default=True): bool,
    **PAGE_SCHEMA,
}
TURN_SCHEMA: dict[Any, Any] = {vol.Required("event_id"): str}
STATISTICS_SCHEMA: dict[Any, Any] = {
    vol.Optional("agent_id"): vol.All(str, vol.Length(min=1, max=255))
}


def in_turn(event: AgentHistoryEvent) -> bool:
    """Whether an event is part of a turn: a question, or what followed from one (a
    decision, a tool call, an action, an error, the answer). A change made by a service
    call or on the panel, or an incognito switch, belongs to none."""
    if event.parent_event_id is not None:
        return True
    return (
        event.event_type is HistoryEventType.COMMUNICATION
        and event.event_data.get("direction") == "in"
    )


def _brief(data: dict[str, Any]) -> dict[str, Any]:
    """Of data too long to send whole, its top-level words and numbers, each cut to
    BRIEF_CHARS, and a tool's arguments and result alike, so a row still reads as a
    sentence."""
    brief: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, str):
            brief[key] = value[:BRIEF_CHARS]
        elif value is None or isinstance(value, bool | int | float):
            brief[key] = value
        elif isinstance(value, dict) and key in BRIEF_NESTED:
            brief[key] = _brief(value)
    return brief


def event_row(event: AgentHistoryEvent, data_bytes: int) -> dict[str, Any]:
    """An event as the panel shows it: its data cut to data_bytes once encoded (with
    `brief`, what a sentence about it needs), and whether it belongs to a turn."""
    row = event.as_dict()
    encoded = orjson.dumps(event.event_data)
    if len(encoded) > data_bytes:
        row["event_data"] = {"truncated": encoded[:data_bytes].decode("utf-8", "ignore")}
        row["brief"] = _brief(event.event_data)
    row["in_turn"] = in_turn(event)
    return row


def _local_day(day: date) -> tuple[float, float]:
    """The first and last microsecond of a day in the home's time zone, as epoch seconds."""
    start = dt_util.start_of_local_day(day)
    end = dt_util.start_of_local_day(day + timedelta(days=1))
    return start.timestamp(), end.timestamp() - 1e-6


def turn_of(root: AgentHistoryEvent, following: list[AgentHistoryEvent]) -> list[AgentHistoryEvent]:
    """The root and every event descending from it, in the order they happened."""
    members = {root.event_id}
    turn = [root]
    changed = True
    rest = [event for event in following if event.event_id != root.event_id]
    while changed:
        changed = False
        for event in rest:
            if event.event_id not in members and event.parent_event_id in members:
                members.add(event.event_id)
                turn.append(event)
                changed = True
    turn.sort(key=lambda event: event.timestamp)
    return turn


class HistoryCommands:
    """The commands, bound to the installation's history."""

    def __init__(self, hass: HomeAssistant, history: HistoryRecorder) -> None:
        self.hass = hass
        self.history = history

    async def events(self, speaker: Speaker, fields: dict[str, Any], _: Context) -> Any:
        """A page of the timeline, newest first, and how many events the filter selects
        of those the caller may see (null when not asked to count and the page does not
        tell)."""
        offset, limit = page_of(fields)
        start = end = None
        if "day" in fields:
            start, end = _local_day(fields["day"])
        query = HistoryQuery(
            agent_id=fields.get("agent_id"),
            event_type=HistoryEventType(fields["event_type"]) if "event_type" in fields else None,
            start_time=start,
            end_time=end,
            limit=limit,
            offset=offset,
            visibility=visibility_of(speaker),
        )
        store = self.history.store
        read: Callable[[HistoryQuery], tuple[list[AgentHistoryEvent], int | None]] = (
            store.query_events if fields["count"] else store.query_page
        )
        events, total = await self.history.async_run(read, query)
        return {"events": [event_row(e, ROW_DATA_BYTES) for e in events], "total": total}

    async def turn(self, speaker: Speaker, fields: dict[str, Any], context: Context) -> Any:
        """The turn an event belongs to: from its question (the root of its chain) to the
        answer, each event with its parent, so the panel can show it as a tree; of it,
        what the caller may see (history_event_chain's rule)."""
        store = self.history.store
        chain = await async_visible_chain(self.history, speaker, context, fields["event_id"])
        root = chain[0]
        following: list[AgentHistoryEvent] = []
        if root.session_id is not None:
            query = HistoryQuery(
                session_id=root.session_id,
                start_time=root.timestamp,
                limit=MAX_TURN_EVENTS,
                ascending=True,
                visibility=visibility_of(speaker),
            )
            following, _total = await self.history.async_run(store.query_events, query)
        return {"events": [event_row(e, TURN_DATA_BYTES) for e in turn_of(root, following)]}

    async def statistics(self, speaker: Speaker, fields: dict[str, Any], _: Context) -> Any:
        """history_statistics' figures (of what the caller may see), and the agents the
        timeline can be filtered by."""
        store = self.history.store
        stats = await self.history.async_run(
            store.get_statistics, fields.get("agent_id"), visibility_of(speaker)
        )
        agents = sorted(
            {
                name
                for entry in self.hass.config_entries.async_loaded_entries(DOMAIN)
                for name in agent_names(self.hass, entry).values()
            }
        )
        return {**stats.as_dict(), "agents": agents}


@callback
def async_register_history_commands(hass: HomeAssistant, history: HistoryRecorder) -> None:
    """history/events, /turn, /statistics."""
    commands = HistoryCommands(hass, history)
    async_register_commands(
        hass,
        (
            CommandSpec("history/events", commands.events, EVENTS_SCHEMA),
            CommandSpec("history/turn", commands.turn, TURN_SCHEMA),
            CommandSpec("history/statistics", commands.statistics, STATISTICS_SCHEMA),
        ),
    )
