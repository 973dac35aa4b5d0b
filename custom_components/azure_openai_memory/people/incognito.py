"""Incognito: an agent answers as always, and nothing of the talk outlives the conversation.

While an agent's incognito is on, its turns are answered normally and a follow-up in the
same conversation sees what was said (the conversation's window keeps it in memory), but:
the window is never written to disk (storage keeps what it held before), and what the
incognito turns added is dropped when incognito ends or the conversation has been idle for
the continuation time; no history event is recorded, so no summary is written of those
turns; and the remember tool refuses politely. The forget tool works as always: it only
keeps less, and what is kept is the user's to decide (the archive keeps what went, as
after any forget). Turning it on is itself recorded: one history event, without content.

The switch's state as a turn begins decides that turn, and that turn only: a turn begun
incognito keeps nothing, also when incognito ends while it runs (what it said goes with
what the incognito turns added); a turn begun with incognito off is kept like any other.

The switch lives in memory only: a restart of Home Assistant or a reload of the entry turns
it off (and the windows come back as they were stored, without the incognito turns).
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import (
    CALLBACK_TYPE,
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
    callback,
)
from homeassistant.helpers import config_validation as cv, entity_registry as er, llm
from homeassistant.helpers.event import async_track_point_in_utc_time
from homeassistant.util import dt as dt_util
from homeassistant.util.json import JsonObjectType
import voluptuous as vol

from ..compat import IntegrationTool
from ..const import (
    CONF_HISTORY_RECORDING,
    DOMAIN,
    MAX_INCOGNITO_MINUTES,
    RECOMMENDED_HISTORY_RECORDING,
    TOOL_REMEMBER,
)
from ..data import DATA_HISTORY, AzureOpenAIMemoryConfigEntry, Runtime, agent_names
from ..lib.errors import InputError
from ..lib.history.store import HistoryEventType
from ..services import ServiceSpec, async_register
from .refusals import translated

SERVICE_INCOGNITO = "incognito"
ATTR_MINUTES = "minutes"
# The incognito switch's unique id is its agent's (the subentry id) with this after it.
SWITCH_SUFFIX = "_incognito"
INCOGNITO_TAG = "incognito"

INCOGNITO_SCHEMA = vol.Schema(
    {
        vol.Required("entity_id"): cv.entity_id,
        vol.Required(ATTR_MINUTES): vol.All(
            vol.Coerce(float), vol.Range(min=1, max=MAX_INCOGNITO_MINUTES)
        ),
    }
)


@dataclass
class Incognito:
    """One agent's incognito: off, on, or on until a time; whoever shows it listens."""

    on: bool = False
    until: datetime | None = None
    cancel_timer: CALLBACK_TYPE | None = None
    listeners: list[Callable[[], None]] = field(default_factory=list)
    # How many times it came on: a turn tells the incognito it began in from a later one.
    times_on: int = 0

    def stop_timer(self) -> None:
        """No end is scheduled any more."""
        if self.cancel_timer is not None:
            self.cancel_timer()
            self.cancel_timer = None

    def changed(self) -> None:
        """Tell whoever shows it."""
        for listener in list(self.listeners):
            listener()


def incognito_of(runtime: Runtime, subentry_id: str) -> Incognito:
    """An agent's incognito (off until set)."""
    if (state := runtime.incognito.get(subentry_id)) is None:
        state = runtime.incognito[subentry_id] = Incognito()
    return state


def is_incognito(runtime: Runtime, subentry_id: str) -> bool:
    """Whether the agent's turns are incognito now."""
    state = runtime.incognito.get(subentry_id)
    return state is not None and state.on


def incognito_lasts(runtime: Runtime, subentry_id: str) -> Callable[[], bool]:
    """Taken as a turn is set up, before its request: whether the incognito on then still
    lasts, asked as the turn ends (always False when it was off). A turn begun incognito
    whose incognito has ended since (or ended and came on again) keeps nothing."""
    state = incognito_of(runtime, subentry_id)
    if not state.on:
        return lambda: False
    began = state.times_on
    return lambda: state.on and state.times_on == began


@callback
def async_turn_on(
    hass: HomeAssistant,
    entry: AzureOpenAIMemoryConfigEntry,
    subentry_id: str,
    minutes: float | None = None,
) -> Incognito:
    """Incognito on, until turned off or (with minutes) for that long.

    Going from off to on is recorded: one event, without content (when the entry records).
    An incognito already on is only ever made longer: anyone may call for incognito (it
    only keeps less), so no call may end sooner what someone else turned on.
    """
    state = incognito_of(entry.runtime_data, subentry_id)
    if state.on:
        ends = dt_util.utcnow() + timedelta(minutes=minutes) if minutes is not None else None
        if state.until is None or (ends is not None and ends <= state.until):
            return state
    state.stop_timer()
    was_on, state.on = state.on, True
    if not was_on:
        state.times_on += 1
    state.until = None
    if minutes is not None:
        state.until = dt_util.utcnow() + timedelta(minutes=minutes)

        @callback
        def _ends(_now: datetime) -> None:
            state.cancel_timer = None
            async_turn_off(entry, subentry_id)

        state.cancel_timer = async_track_point_in_utc_time(hass, _ends, state.until)
    if not was_on:
        _record_turned_on(hass, entry, subentry_id, minutes)
    state.changed()
    return state


@callback
def async_turn_off(entry: AzureOpenAIMemoryConfigEntry, subentry_id: str) -> None:
    """Incognito off: what the incognito turns added to the agent's windows goes."""
    runtime = entry.runtime_data
    state = incognito_of(runtime, subentry_id)
    state.stop_timer()
    state.on, state.until = False, None
    if (windows := runtime.windows.get(subentry_id)) is not None:
        windows.end_incognito()
    state.changed()


@callback
def async_stop_timers(runtime: Runtime) -> None:
    """The entry unloads: no end of incognito fires for a runtime that is gone."""
    for state in runtime.incognito.values():
        state.stop_timer()


def _record_turned_on(
    hass: HomeAssistant,
    entry: AzureOpenAIMemoryConfigEntry,
    subentry_id: str,
    minutes: float | None,
) -> None:
    if not entry.options.get(CONF_HISTORY_RECORDING, RECOMMENDED_HISTORY_RECORDING):
        return
    if (recorder := hass.data.get(DATA_HISTORY)) is None:
        return
    agent_id = agent_names(hass, entry).get(subentry_id)
    if agent_id is None:
        return
    recorder.record(
        agent_id,
        HistoryEventType.STATE_CHANGE,
        {"incognito": True, "minutes": minutes},
        tags=(INCOGNITO_TAG,),
    )


class IncognitoRemember(IntegrationTool):
    """The remember tool while incognito: offered as always, it saves nothing and says so,
    so the model can tell the user instead of pretending."""

    integration = DOMAIN

    def __init__(self, tool: llm.Tool) -> None:
        """The same name, description and parameters as the tool it stands in for."""
        self.name = tool.name
        self.description = tool.description
        self.parameters = tool.parameters

    async def async_answer(
        self, hass: HomeAssistant, tool_input: llm.ToolInput, llm_context: llm.LLMContext
    ) -> JsonObjectType:
        """Nothing is saved."""
        return {
            "saved": False,
            "error": "incognito",
            "message": (
                "Incognito is on for this conversation: nothing said in it is remembered. "
                "Tell the user that this was not saved, and that they can ask again once "
                "incognito is off."
            ),
        }


@callback
def async_refuse_remember(chat_log: conversation.ChatLog) -> None:
    """The turn's remember tool (if it has one) refuses: the turn is incognito."""
    if chat_log.llm_api is None:
        return
    chat_log.llm_api.tools = [
        IncognitoRemember(tool) if tool.name == TOOL_REMEMBER else tool
        for tool in chat_log.llm_api.tools
    ]


def _agent_of(hass: HomeAssistant, entity_id: str) -> tuple[AzureOpenAIMemoryConfigEntry, str]:
    """The loaded entry and subentry of an agent, by its conversation entity or its
    incognito switch; else a translated validation error."""
    found = er.async_get(hass).async_get(entity_id)
    if found is not None and found.platform == DOMAIN and found.config_entry_id is not None:
        subentry_id = found.unique_id
        if found.domain == "switch" and subentry_id.endswith(SWITCH_SUFFIX):
            subentry_id = subentry_id.removesuffix(SWITCH_SUFFIX)
        elif found.domain != "conversation":
            subentry_id = ""
        entry = hass.config_entries.async_get_entry(found.config_entry_id)
        if (
            entry is not None
            and entry.domain == DOMAIN
            and entry.state is ConfigEntryState.LOADED
            and subentry_id in entry.runtime_data.windows
        ):
            return entry, subentry_id
    raise translated(InputError("incognito_unknown_agent", entity_id=entity_id))


async def _async_incognito(hass: HomeAssistant, call: ServiceCall) -> ServiceResponse:
    entry, subentry_id = _agent_of(hass, call.data["entity_id"])
    state = async_turn_on(hass, entry, subentry_id, call.data[ATTR_MINUTES])
    until = state.until
    return {
        "agent": agent_names(hass, entry).get(subentry_id, ""),
        "until": until.isoformat() if until is not None else None,
    }


def async_register_incognito_service(hass: HomeAssistant) -> None:
    """incognito: an agent's incognito on for the next minutes (anyone may: it only keeps
    less)."""

    async def incognito(call: ServiceCall) -> ServiceResponse:
        return await _async_incognito(hass, call)

    async_register(
        hass,
        (ServiceSpec(SERVICE_INCOGNITO, incognito, INCOGNITO_SCHEMA, SupportsResponse.OPTIONAL),),
    )


def attributes(state: Incognito) -> dict[str, Any]:
    """What the switch shows besides on and off: when incognito ends by itself."""
    return {"until": state.until.isoformat() if state.until is not None else None}
