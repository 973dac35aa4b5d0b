"""The conversation window: each agent's token-limited buffer of its conversations.

The windows belong to one entry (its agents), are kept in one Store file per entry that
survives reloads and restarts, expire when idle, and are read and reset by the
conversation_stats and conversation_reset services and by the Memory panel's commands.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from homeassistant.config_entries import ConfigEntry, ConfigSubentry
from homeassistant.core import (
    Context,
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
    callback,
)
from homeassistant.helpers import config_validation as cv
import voluptuous as vol

from .access import access
from .const import (
    CONF_CONTINUATION_MINUTES,
    CONF_CONVERSATION_IDLE_MINUTES,
    CONF_DEPLOYMENT,
    CONF_MAX_CONVERSATIONS,
    CONF_SLIDING_WINDOW_MAX_TOKENS,
    DOMAIN,
    LOGGER,
    RECOMMENDED_OPTIONS,
    RECOMMENDED_SLIDING_WINDOW_MAX_TOKENS,
    SUBENTRY_AGENT,
)
from .data import Runtime, agent_names
from .history.recorder import HistoryRecorder, record_service_call
from .identity import rekey_people
from .memory.errors import InputError
from .memory.timeseries import format_time
from .memory.tokens import load_counter
from .memory.window import (
    APART,
    WINDOWS_VERSION,
    AgentWindows,
    MessageEntry,
    WindowSettings,
    migrate_windows,
)
from .people import Speaker, async_caller
from .services import ServiceSpec, async_register, loaded_entry
from .storage import DebouncedStore
from .websocket import (
    PAGE_SCHEMA,
    CommandSpec,
    async_register_commands,
    ensure,
    page_of,
    record_change,
)
from .window_files import windows_store_key

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


def window_settings(entry: ConfigEntry, subentry: ConfigSubentry) -> WindowSettings:
    """An agent's window settings: its own size, the entry's retention."""
    options: dict[str, Any] = {**RECOMMENDED_OPTIONS, **entry.options}
    return WindowSettings(
        max_tokens=int(
            subentry.data.get(CONF_SLIDING_WINDOW_MAX_TOKENS, RECOMMENDED_SLIDING_WINDOW_MAX_TOKENS)
        ),
        max_conversations=int(options[CONF_MAX_CONVERSATIONS]),
        idle_seconds=float(options[CONF_CONVERSATION_IDLE_MINUTES]) * 60,
        continuation_seconds=float(options[CONF_CONTINUATION_MINUTES]) * 60,
    )


async def async_load_windows(
    hass: HomeAssistant, entry: ConfigEntry, cache_dir: Path
) -> tuple[DebouncedStore, dict[str, AgentWindows]]:
    """Every agent's windows as stored; what cannot be read is set aside, never fatal.

    Each agent counts tokens with the best encoding at hand locally now; the exact one is
    fetched in the background (encodings.py).
    """
    windows: dict[str, AgentWindows] = {}
    store = DebouncedStore(
        hass,
        windows_store_key(entry.entry_id),
        lambda: {"agents": {sid: w.as_dict() for sid, w in windows.items()}},
        version=WINDOWS_VERSION,
        migrate=migrate_windows,
    )
    stored = (await store.async_load()).get("agents", {})
    # JSON of another shape is set aside like an unreadable file, never fatal to the entry.
    unusable: str | None = None
    if not isinstance(stored, dict):
        unusable, stored = f"agents is {type(stored).__name__}, not an object", {}
    for subentry in entry.subentries.values():
        if subentry.subentry_type != SUBENTRY_AGENT:
            continue
        counter = await hass.async_add_executor_job(
            load_counter, subentry.data[CONF_DEPLOYMENT], cache_dir
        )
        agent = AgentWindows(counter, window_settings(entry, subentry))
        try:
            agent.load(stored.get(subentry.subentry_id, {}))
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            unusable = unusable or f"agent {subentry.subentry_id}: {err!r}"
            agent = AgentWindows(counter, window_settings(entry, subentry))
        windows[subentry.subentry_id] = agent
    if unusable is not None:
        await store.async_set_aside(unusable)
        store.async_schedule_save()  # the agents that could be read, in a new file
    # People are keyed by their own id: keys stored before are renamed (identity.py).
    if rekey_people(hass, lambda keys: sum(a.rename_people(keys) for a in windows.values())):
        store.async_schedule_save()
    return store, windows


async def async_remove_windows(hass: HomeAssistant, entry_id: str) -> None:
    """The entry is deleted: its windows file goes with it."""
    await DebouncedStore(hass, windows_store_key(entry_id), dict).async_remove()


@callback
def async_maintain(runtime: Runtime) -> None:
    """Expire idle conversations and warn (once per change) about the windows' health."""
    expired = sum(agent.expire_idle() for agent in runtime.windows.values())
    # An incognito conversation idle for the continuation time is over: what it added goes.
    for agent in runtime.windows.values():
        agent.end_incognito(agent.settings.continuation_seconds)
    if expired:
        LOGGER.debug("Expired %d idle conversations", expired)
        runtime.windows_store.async_schedule_save()
    health = frozenset(w for agent in runtime.windows.values() for w in agent.health())
    for warning in health - runtime.reported_health:
        LOGGER.warning("Conversation windows: %s", warning)
    runtime.reported_health = health


def _own_key(windows: AgentWindows, caller: Speaker, conversation_id: str) -> str:
    """The window a caller means by a conversation id: for those who see everything the
    window of that key; for anyone else their own window under that id (kept apart when
    someone else talked under it first), so that the id they use is the id they see."""
    if access(caller).sees_everything:
        return conversation_id
    return windows.window_for(conversation_id, caller.person_id)


def _shown_id(caller: Speaker, key: str) -> str:
    """A window's key as the caller is shown it: the id they used (not whether it was kept
    apart, which would tell that someone else talked under that id)."""
    if access(caller).sees_everything or caller.person_id is None:
        return key
    return key.removesuffix(f"{APART}{caller.person_id}")


def _whose(windows: AgentWindows, caller: Speaker) -> Callable[[str], bool]:
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
            [_own_key(windows, caller, conversation_id)]
            if conversation_id
            else windows.get_all_conversations()
        )
        shown = _whose(windows, caller)
        agents[name] = {
            "memory": windows.totals(),
            "conversations": {
                _shown_id(caller, cid): stats
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


# -- the Memory panel's commands ---------------------------------------------------------


CONVERSATIONS_LIST_SCHEMA = dict(PAGE_SCHEMA)
CONVERSATION_ID_SCHEMA: dict[Any, Any] = {
    vol.Required("entry_id"): str,
    vol.Required("subentry_id"): str,
    vol.Required("conversation_id"): str,
}
CONVERSATION_READ_SCHEMA: dict[Any, Any] = {**CONVERSATION_ID_SCHEMA, **PAGE_SCHEMA}
CONVERSATION_RESET_SCHEMA: dict[Any, Any] = {
    vol.Required("entry_id"): str,
    vol.Required("subentry_id"): str,
    vol.Optional("conversation_id"): str,
}


def _message_view(message: MessageEntry) -> dict[str, Any]:
    return {
        "role": message.role,
        "content": message.content,
        "timestamp": format_time(message.timestamp),
        "token_count": message.token_count,
        "tags": sorted(message.tags),
        "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in message.tool_calls],
        "tool_call_id": message.tool_call_id,
    }


def _agent_windows(hass: HomeAssistant, fields: dict[str, Any]) -> tuple[Runtime, AgentWindows]:
    entry = loaded_entry(hass, fields["entry_id"])
    windows = entry.runtime_data.windows.get(fields["subentry_id"])
    if windows is None:
        raise InputError("unknown_agent", agent=fields["subentry_id"])
    return entry.runtime_data, windows


class ConversationCommands:
    """The live windows of every loaded entry's agents, as the panel shows them: to each
    caller the conversations conversation_stats shows them (an administrator every one,
    anyone else their own person's), so pages and totals count only those; reading
    another's is refused, and reset is an administrator's, as conversation_reset."""

    def __init__(self, hass: HomeAssistant, history: HistoryRecorder) -> None:
        self.hass = hass
        self.history = history

    async def list(self, speaker: Speaker, fields: dict[str, Any], _: Context) -> Any:
        """Each agent with its figures and a page of the caller's conversations, latest
        first. The agent's totals are the ones its sensors show everyone."""
        offset, limit = page_of(fields)
        agents = []
        for entry in self.hass.config_entries.async_loaded_entries(DOMAIN):
            names = agent_names(self.hass, entry)
            for sid, name in names.items():
                windows = entry.runtime_data.windows[sid]
                shown = _whose(windows, speaker)
                latest = [c for c in reversed(windows.get_all_conversations()) if shown(c)]
                rows = []
                for cid in latest[offset : offset + limit]:
                    window = windows.windows[cid]
                    rows.append(
                        {
                            "conversation_id": _shown_id(speaker, cid),
                            **window.stats(),
                            "last_activity": format_time(window.last_activity),
                        }
                    )
                agents.append(
                    {
                        "entry_id": entry.entry_id,
                        "subentry_id": sid,
                        "agent_id": name,
                        "title": entry.subentries[sid].title,
                        "max_tokens": windows.settings.max_tokens,
                        "totals": windows.totals(),
                        "conversations": rows,
                        "total": len(latest),
                    }
                )
        return {"agents": agents}

    async def read(self, speaker: Speaker, fields: dict[str, Any], context: Context) -> Any:
        """A page of one conversation's messages, oldest first, and its figures."""
        offset, limit = page_of(fields)
        _runtime, windows = _agent_windows(self.hass, fields)
        window = windows.windows.get(_own_key(windows, speaker, fields["conversation_id"]))
        # Another person's conversation is, to the caller, one that does not exist.
        if window is None or not _whose(windows, speaker)(window.conversation_id):
            raise InputError("unknown_conversation", conversation_id=fields["conversation_id"])
        messages = window.messages()
        return {
            "conversation_id": _shown_id(speaker, window.conversation_id),
            **window.stats(),
            "last_activity": format_time(window.last_activity),
            "messages": [_message_view(m) for m in messages[offset : offset + limit]],
            "total": len(messages),
        }

    async def reset(self, speaker: Speaker, fields: dict[str, Any], context: Context) -> Any:
        """Forget one conversation of an agent, or all of them, as conversation_reset does
        (administrators only)."""
        ensure(access(speaker).sees_everything)
        runtime, windows = _agent_windows(self.hass, fields)
        removed = windows.reset(fields.get("conversation_id"))
        if removed:
            runtime.windows_store.async_schedule_save()
        record_change(
            self.history, SERVICE_CONVERSATION_RESET, context, {**fields, "reset": removed}
        )
        return {"reset": removed}


@callback
def async_register_window_commands(hass: HomeAssistant, history: HistoryRecorder) -> None:
    """conversations/list, /read, /reset."""
    commands = ConversationCommands(hass, history)
    async_register_commands(
        hass,
        (
            CommandSpec("conversations/list", commands.list, CONVERSATIONS_LIST_SCHEMA),
            CommandSpec("conversations/read", commands.read, CONVERSATION_READ_SCHEMA),
            CommandSpec("conversations/reset", commands.reset, CONVERSATION_RESET_SCHEMA),
        ),
    )
