"""The history services: record, query, statistics, snapshot, snapshots, event chain, purge.

Bad input is found by lib/history (and parse_time) and raised as their errors, which the
shared registration (services.async_register) translates.

A caller who is not an administrator reads their own person's talk and the household's
events only (visibility_of): the store's queries select just those, so pages and totals
count what they may see; asking by id for another's event or snapshot is refused.
"""

from collections.abc import Callable, Coroutine
from typing import Any
from uuid import uuid4

from homeassistant.core import (
    Context,
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
)
from homeassistant.helpers import config_validation as cv
from homeassistant.util import dt as dt_util
import voluptuous as vol

from ..const import DOMAIN
from ..data import agent_names
from ..lib.history.store import (
    PERSON_KEY,
    AgentHistoryEvent,
    HistoryError,
    HistoryQuery,
    HistorySnapshot,
    NotVisible,
)
from ..lib.series.store import SeriesError
from ..lib.times import format_time, parse_time
from ..people.access import access
from ..people.refusals import Refused
from ..people.speakers import SYSTEM, Speaker, async_caller
from ..services import Handler, ServiceSpec, async_register
from .recorder import HistoryRecorder, visibility_of

SERVICE_HISTORY_RECORD = "history_record"
SERVICE_HISTORY_QUERY = "history_query"
SERVICE_HISTORY_STATISTICS = "history_statistics"
SERVICE_HISTORY_SNAPSHOT = "history_snapshot"
SERVICE_HISTORY_SNAPSHOTS = "history_snapshots"
SERVICE_HISTORY_EVENT_CHAIN = "history_event_chain"
SERVICE_HISTORY_PURGE = "history_purge"
# The conversations (most recent) whose statistics a snapshot keeps.
SNAPSHOT_CONVERSATIONS = 20
# Who recorded an event that an automation adds without saying.
DEFAULT_HISTORY_AGENT = "automation"
# Where the data of a user's event that is not an object is kept (history_record).
VALUE_KEY = "value"

# Event types, limits and ids are checked by lib/history, whose errors are translated.
HISTORY_RECORD_SCHEMA = vol.Schema(
    {
        vol.Required("event_type"): cv.string,
        vol.Required("event_data"): object,
        vol.Optional("agent_id", default=DEFAULT_HISTORY_AGENT): cv.string,
        vol.Optional("session_id"): cv.string,
        vol.Optional("parent_event_id"): cv.string,
        vol.Optional("tags", default=list): vol.All(cv.ensure_list, [cv.string]),
        vol.Optional("metadata"): dict,
        vol.Optional("ref"): cv.string,
    }
)
HISTORY_QUERY_SCHEMA = vol.Schema(
    {
        vol.Optional("agent_id"): cv.string,
        vol.Optional("session_id"): cv.string,
        vol.Optional("event_type"): cv.string,
        vol.Optional("tags", default=list): vol.All(cv.ensure_list, [cv.string]),
        vol.Optional("start_time"): object,
        vol.Optional("end_time"): object,
        vol.Optional("limit", default=100): vol.Coerce(int),
        vol.Optional("offset", default=0): vol.Coerce(int),
        vol.Optional("ascending", default=False): cv.boolean,
    }
)
HISTORY_STATISTICS_SCHEMA = vol.Schema({vol.Optional("agent_id"): cv.string})
HISTORY_SNAPSHOT_SCHEMA = vol.Schema(
    {
        vol.Optional("agent_id"): cv.string,
        vol.Optional("snapshot_id"): cv.string,
        vol.Optional("description"): cv.string,
        vol.Optional("ref"): cv.string,
        vol.Optional("metadata"): dict,
        vol.Optional("limit", default=100): vol.Coerce(int),
    }
)
HISTORY_SNAPSHOTS_SCHEMA = vol.Schema(
    {
        vol.Optional("agent_id"): cv.string,
        vol.Optional("limit", default=100): vol.Coerce(int),
        vol.Optional("offset", default=0): vol.Coerce(int),
    }
)
HISTORY_EVENT_CHAIN_SCHEMA = vol.Schema({vol.Required("event_id"): cv.string})
HISTORY_PURGE_SCHEMA = vol.Schema(
    {vol.Optional("keep_days"): vol.All(vol.Coerce(float), vol.Range(min=0))}
)


# Times a person could mean: years 1 to 9999.
_EARLIEST, _LATEST = -62_135_596_800.0, 253_402_300_799.0


def _history_time(data: dict[str, Any], name: str) -> float | None:
    if name not in data:
        return None
    moment = parse_time(data[name], dt_util.get_default_time_zone(), name)
    if not _EARLIEST <= moment <= _LATEST:
        raise SeriesError("invalid_time", field=name, value=data[name])
    return moment


def _agent_state(
    hass: HomeAssistant, agent_id: str, caller: Speaker = SYSTEM
) -> dict[str, Any] | None:
    """One of our agents, by entity id: its options and its windows' statistics (of the
    conversations the caller may see)."""
    for entry in hass.config_entries.async_loaded_entries(DOMAIN):
        for sid, name in agent_names(hass, entry).items():
            if name != agent_id:
                continue
            windows = entry.runtime_data.windows[sid]
            recent = [
                cid
                for cid in windows.get_all_conversations()
                if access(caller).reads_window(windows.person_of(cid))
            ][-SNAPSHOT_CONVERSATIONS:]
            return {
                # The prompt can be long and says nothing of the agent's state: left out.
                "options": {k: v for k, v in entry.subentries[sid].data.items() if k != "prompt"},
                "memory": windows.totals(),
                "conversations": {cid: windows.get_stats(cid) for cid in recent},
                "statistics": entry.runtime_data.stats.as_dict(),
            }
    return None


async def _async_history_record(recorder: HistoryRecorder, call: ServiceCall) -> ServiceResponse:
    """Record an event; one recorded by a user who is not an administrator is their own
    person's (and may follow only an event they may see).

    Whose an event is, is written in its data (PERSON_KEY), so such a user's data of any
    other shape than an object (a list, a string, a number) is kept whole under `value`:
    their script's event is recorded as it always was, and is theirs like any other. The
    person it names can only be their own.
    """
    data = call.data
    event_data = data["event_data"]
    caller = await async_caller(recorder.hass, call.context)
    if (visibility := visibility_of(caller)) is not None:
        if not isinstance(event_data, dict):
            event_data = {VALUE_KEY: event_data}
        named = event_data.get(PERSON_KEY, caller.person_id)
        if named != caller.person_id:
            raise Refused(call.context, "history_person_not_yours", person_id=str(named))
        event_data = {**event_data, PERSON_KEY: caller.person_id}
        if (parent := data.get("parent_event_id")) is not None:
            seen = await recorder.async_run(recorder.store.is_visible, parent, visibility)
            if seen is not True:
                # A parent must be an event the caller may read (and written already):
                # another person's is, to them, one that does not exist.
                raise HistoryError("unknown_event", field="parent_event_id", event_id=parent)
    event = AgentHistoryEvent.new(
        data["agent_id"],
        data["event_type"],
        event_data,
        session_id=data.get("session_id"),
        parent_event_id=data.get("parent_event_id"),
        tags=tuple(data["tags"]),
        metadata=data.get("metadata"),
        ref=data.get("ref"),
    )
    await recorder.async_run(recorder.store.record_event, event)
    recorder.async_announce(event)
    return {"event": event.as_dict()}


async def _async_history_query(recorder: HistoryRecorder, call: ServiceCall) -> ServiceResponse:
    data = dict(call.data)
    caller = await async_caller(recorder.hass, call.context)
    query = HistoryQuery(
        agent_id=data.get("agent_id"),
        session_id=data.get("session_id"),
        event_type=data.get("event_type"),
        tags=tuple(data["tags"]),
        start_time=_history_time(data, "start_time"),
        end_time=_history_time(data, "end_time"),
        limit=data["limit"],
        offset=data["offset"],
        ascending=data["ascending"],
        visibility=visibility_of(caller),
    )
    events, total = await recorder.async_run(recorder.store.query_events, query)
    return {"events": [event.as_dict() for event in events], "total": total}


async def _async_history_statistics(
    recorder: HistoryRecorder, call: ServiceCall
) -> ServiceResponse:
    """Counts of what the caller may see (for an administrator: of everything)."""
    caller = await async_caller(recorder.hass, call.context)
    stats = await recorder.async_run(
        recorder.store.get_statistics, call.data.get("agent_id"), visibility_of(caller)
    )
    return stats.as_dict()


async def _async_read_snapshot(
    recorder: HistoryRecorder, call: ServiceCall, caller: Speaker, snapshot_id: str
) -> ServiceResponse:
    try:
        stored = await recorder.async_run(
            recorder.store.get_snapshot, snapshot_id, visibility_of(caller)
        )
    except HistoryError as err:
        if err.key != "invalid_event_id":
            raise
        raise HistoryError("invalid_snapshot_id", value=snapshot_id) from err
    except NotVisible as err:
        # Another person's snapshot is, to the caller, one that does not exist.
        raise HistoryError("unknown_snapshot", snapshot_id=snapshot_id) from err
    if stored is None:
        raise HistoryError("unknown_snapshot", snapshot_id=snapshot_id)
    shown = stored.as_dict()
    state = shown.get("agent_state")
    if not access(caller).sees_everything and isinstance(state, dict):
        # Taken by someone who sees everything: the figures of others' conversations stay out.
        conversations = state.get("conversations")
        if isinstance(conversations, dict):
            state["conversations"] = {
                cid: stats
                for cid, stats in conversations.items()
                if isinstance(stats, dict)
                and caller.person_id is not None
                and stats.get(PERSON_KEY) == caller.person_id
            }
    return {"snapshot": shown}


async def _async_history_snapshot(
    hass: HomeAssistant, recorder: HistoryRecorder, call: ServiceCall
) -> ServiceResponse:
    """Read a snapshot, or take one of what the caller may see."""
    data = call.data
    store = recorder.store
    caller = await async_caller(hass, call.context)
    if snapshot_id := data.get("snapshot_id"):
        return await _async_read_snapshot(recorder, call, caller, snapshot_id)
    agent_id = data.get("agent_id")
    if not agent_id:
        raise HistoryError("snapshot_needs_agent")
    query = HistoryQuery(agent_id=agent_id, limit=data["limit"], visibility=visibility_of(caller))
    events, _total = await recorder.async_run(store.query_events, query)
    snapshot = HistorySnapshot(
        snapshot_id=str(uuid4()),
        agent_id=agent_id,
        timestamp=dt_util.utcnow().timestamp(),
        events=tuple(reversed(events)),  # the newest `limit`, oldest first as stored
        ref=data.get("ref"),
        description=data.get("description"),
        metadata=data.get("metadata"),
        agent_state=_agent_state(hass, agent_id, caller),
    )
    await recorder.async_run(store.create_snapshot, snapshot)
    return {"snapshot": snapshot.as_dict()}


async def _async_history_snapshots(recorder: HistoryRecorder, call: ServiceCall) -> ServiceResponse:
    """The snapshots kept, newest first, without their events (history_snapshot with a
    snapshot_id reads one whole)."""
    data = call.data
    caller = await async_caller(recorder.hass, call.context)
    listed, total = await recorder.async_run(
        recorder.store.query_snapshots,
        data.get("agent_id"),
        data["limit"],
        data["offset"],
        visibility_of(caller),
    )
    return {"snapshots": [snapshot.as_dict() for snapshot in listed], "total": total}


async def async_visible_chain(
    recorder: HistoryRecorder, caller: Speaker, context: Context, event_id: str
) -> list[AgentHistoryEvent]:
    """An event's chain as the caller may see it; another person's event is refused."""
    try:
        return await recorder.async_run(
            recorder.store.get_event_chain, event_id, visibility_of(caller)
        )
    except NotVisible as err:
        # Another person's event is, to the caller, one that does not exist.
        raise HistoryError("unknown_event", event_id=event_id) from err


async def _async_history_event_chain(
    recorder: HistoryRecorder, call: ServiceCall
) -> ServiceResponse:
    caller = await async_caller(recorder.hass, call.context)
    chain = await async_visible_chain(recorder, caller, call.context, call.data["event_id"])
    return {"events": [event.as_dict() for event in chain]}


async def _async_history_purge(recorder: HistoryRecorder, call: ServiceCall) -> ServiceResponse:
    purged, cutoff = await recorder.async_delete_older_than(
        call.data.get("keep_days"), dt_util.utcnow().timestamp()
    )
    return {
        "deleted": purged.events,
        "deleted_snapshots": purged.snapshots,
        "cutoff": format_time(cutoff),
    }


def async_register_history_services(hass: HomeAssistant, recorder: HistoryRecorder) -> None:
    """The history services; purge for administrators only."""

    def bound(
        handler: Callable[[HistoryRecorder, ServiceCall], Coroutine[Any, Any, ServiceResponse]],
    ) -> Handler:
        async def call_handler(call: ServiceCall) -> ServiceResponse:
            return await handler(recorder, call)

        return call_handler

    async def snapshot(call: ServiceCall) -> ServiceResponse:
        return await _async_history_snapshot(hass, recorder, call)

    async_register(
        hass,
        (
            ServiceSpec(
                SERVICE_HISTORY_RECORD,
                bound(_async_history_record),
                HISTORY_RECORD_SCHEMA,
                SupportsResponse.OPTIONAL,
            ),
            ServiceSpec(
                SERVICE_HISTORY_QUERY,
                bound(_async_history_query),
                HISTORY_QUERY_SCHEMA,
                SupportsResponse.ONLY,
            ),
            ServiceSpec(
                SERVICE_HISTORY_STATISTICS,
                bound(_async_history_statistics),
                HISTORY_STATISTICS_SCHEMA,
                SupportsResponse.ONLY,
            ),
            ServiceSpec(
                SERVICE_HISTORY_SNAPSHOT,
                snapshot,
                HISTORY_SNAPSHOT_SCHEMA,
                SupportsResponse.OPTIONAL,
            ),
            ServiceSpec(
                SERVICE_HISTORY_SNAPSHOTS,
                bound(_async_history_snapshots),
                HISTORY_SNAPSHOTS_SCHEMA,
                SupportsResponse.ONLY,
            ),
            ServiceSpec(
                SERVICE_HISTORY_EVENT_CHAIN,
                bound(_async_history_event_chain),
                HISTORY_EVENT_CHAIN_SCHEMA,
                SupportsResponse.ONLY,
            ),
            ServiceSpec(
                SERVICE_HISTORY_PURGE,
                bound(_async_history_purge),
                HISTORY_PURGE_SCHEMA,
                SupportsResponse.OPTIONAL,
                admin=True,
            ),
        ),
    )
