"""The conversation_stats and conversation_reset services, and which conversations a
caller is shown (an administrator every one, anyone else their own person's)."""

from collections.abc import Callable
from typing import Any

from homeassistant.core import (
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
)
from homeassistant.helpers import config_validation as cv
import voluptuous as vol

from ..data import agent_names
from ..history.recorder import HistoryRecorder, record_service_call
from ..lib.windows.window import (
    APART,
    ConversationMemoryManager,
)
from ..people.access import access
from ..people.speakers import Speaker, async_caller
from ..services import ServiceSpec, async_register, loaded_entry

ATTR_CONFIG_ENTRY = "config_entry_id"
ATTR_CONVERSATION_ID = "conversation_id"
SERVICE_CONVERSATION_STATS = "conversation_stats"
SERVICE_CONVERSATION_RESET = "conversation_reset"

CONVERSATION_SCHEMA = vol.Schema(
    {
        vol.Required(ATTR_CONFIG_ENTRY): cv.string,
        vol.Optional(ATTR_CONVERSATION_ID): cv.string,
    }
)


def own_key(windows: ConversationMemoryManager, caller: Speaker, conversation_id: str) -> str:
    """The window a caller means by a conversation id: for those who see everything the
    window of that key; for anyone else their own window under that id (kept apart when
    someone else talked under it first), so that the id they use is the id they see."""
    if access(caller).sees_everything:
        return conversation_id
    return windows.window_for(conversation_id, caller.person_id)


def shown_id(caller: Speaker, key: str) -> str:
    """A window's key as the caller is shown it: the id they used (not whether it was kept
    apart, which would tell that someone else talked under that id)."""
    if access(caller).sees_everything or caller.person_id is None:
        return key
    return key.removesuffix(f"{APART}{caller.person_id}")


def whose(windows: ConversationMemoryManager, caller: Speaker) -> Callable[[str], bool]:
    """Whether a conversation's figures are the caller's to see: every one for those who
    see everything, else their own person's."""
    rights = access(caller)
    return lambda cid: rights.reads_window(windows.person_of(cid))


async def _async_conversation_stats(hass: HomeAssistant, call: ServiceCall) -> ServiceResponse:
    """Each agent's conversations with their figures and person; a caller who is not an
    administrator gets their own person's only: another's, asked by id, is shown as an
    unknown one is (nothing), since a conversation id can be a client's choice and must not
    tell whether someone talked under it. The entry's totals are the ones its sensors show
    everyone."""
    entry = loaded_entry(hass, call.data[ATTR_CONFIG_ENTRY])
    runtime = entry.runtime_data
    conversation_id = call.data.get(ATTR_CONVERSATION_ID)
    caller = await async_caller(hass, call.context)
    names = agent_names(hass, entry)
    agents: dict[str, Any] = {}
    for sid, name in names.items():
        windows = runtime.windows[sid]
        ids = (
            [own_key(windows, caller, conversation_id)]
            if conversation_id
            else windows.get_all_conversations()
        )
        shown = whose(windows, caller)
        agents[name] = {
            "memory": windows.totals(),
            "conversations": {
                shown_id(caller, cid): stats
                for cid in ids
                if shown(cid) and (stats := windows.get_stats(cid)) is not None
            },
        }
    return {"statistics": runtime.stats.as_dict(), "agents": agents}


async def _async_conversation_reset(hass: HomeAssistant, call: ServiceCall) -> ServiceResponse:
    entry = loaded_entry(hass, call.data[ATTR_CONFIG_ENTRY])
    runtime = entry.runtime_data
    conversation_id = call.data.get(ATTR_CONVERSATION_ID)
    removed = sum(agent.reset(conversation_id) for agent in runtime.windows.values())
    if removed:
        runtime.windows_store.async_schedule_save()
    return {"reset": removed}


def async_register_window_services(hass: HomeAssistant, history: HistoryRecorder) -> None:
    """conversation_stats, and conversation_reset (administrators; recorded)."""

    async def stats(call: ServiceCall) -> ServiceResponse:
        return await _async_conversation_stats(hass, call)

    async def reset(call: ServiceCall) -> ServiceResponse:
        result = await _async_conversation_reset(hass, call)
        record_service_call(history, call, {**call.data, **(result or {})})
        return result

    async_register(
        hass,
        (
            ServiceSpec(
                SERVICE_CONVERSATION_STATS, stats, CONVERSATION_SCHEMA, SupportsResponse.ONLY
            ),
            ServiceSpec(
                SERVICE_CONVERSATION_RESET,
                reset,
                CONVERSATION_SCHEMA,
                SupportsResponse.OPTIONAL,
                admin=True,
            ),
        ),
    )
