"""The Memory panel's conversation commands: conversations/list, /read, /reset."""

from typing import Any

from homeassistant.core import (
    Context,
    HomeAssistant,
    callback,
)
import voluptuous as vol

from ..const import (
    DOMAIN,
)
from ..data import Runtime, agent_names
from ..history.recorder import HistoryRecorder
from ..lib.errors import InputError
from ..lib.times import format_time
from ..lib.windows.window import (
    ConversationMemoryManager,
    MessageEntry,
)
from ..panel.commands import (
    PAGE_SCHEMA,
    CommandSpec,
    async_register_commands,
    ensure,
    page_of,
    record_change,
)
from ..people.access import access
from ..people.speakers import Speaker
from ..services import loaded_entry
from .services import SERVICE_CONVERSATION_RESET, own_key, shown_id, whose

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


def _agent_windows(
    hass: HomeAssistant, fields: dict[str, Any]
) -> tuple[Runtime, ConversationMemoryManager]:
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
                shown = whose(windows, speaker)
                latest = [c for c in reversed(windows.get_all_conversations()) if shown(c)]
                rows = []
                for cid in latest[offset : offset + limit]:
                    window = windows.windows[cid]
                    rows.append(
                        {
                            "conversation_id": shown_id(speaker, cid),
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
        window = windows.windows.get(own_key(windows, speaker, fields["conversation_id"]))
        # Another person's conversation is, to the caller, one that does not exist.
        if window is None or not whose(windows, speaker)(window.conversation_id):
            raise InputError("unknown_conversation", conversation_id=fields["conversation_id"])
        messages = window.messages()
        return {
            "conversation_id": shown_id(speaker, window.conversation_id),
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
