"""The memories' WebSocket commands: what the Memory panel lists, searches and changes.

A list is a page of what a filter allows (never the whole store); with words to search
for, the same hybrid search as memory_search ranks them. Changes are a person's own
decisions: an edit supersedes without asking the model, pin and unpin never count as a
sighting. Who may see and do what is the access policy's (access.py) to say; a memory the
caller may not see is, to them, one that does not exist.
"""

from dataclasses import dataclass
from typing import Any, NoReturn

from homeassistant.core import Context, HomeAssistant, callback
from homeassistant.helpers import config_validation as cv
import voluptuous as vol

from ..history.recorder import HistoryRecorder
from ..lib.memories import (
    MAX_SEARCH_LIMIT,
    ArchivedMemory,
    Authority,
    Memory,
    MemoryConfidence,
    MemoryFilter,
    MemoryInputError,
    MemoryType,
    Origin,
    Provenance,
    active_page,
    archived_page,
    validate_tags,
)
from ..lib.times import format_time
from ..panel.commands import (
    PAGE_SCHEMA,
    CommandHandler,
    CommandSpec,
    async_register_commands,
    ensure,
    page_of,
    record_change,
)
from ..people.access import EDIT, ERASE, FORGET, PIN, RESTORE, Access, access
from ..people.speakers import Speaker
from .answers import archived_response, async_search, memory_response
from .services import async_erase_history
from .store import Memories

MAX_QUERY_LENGTH = 500


@dataclass(frozen=True, slots=True)
class MemoryRights:
    """What one caller may see and do with the memories a list shows: the access policy's
    answer, narrowed to the one scope a list names (None: all the caller may see)."""

    access: Access
    scope: str | None = None

    def sees(self, memory: Memory) -> bool:
        """Whether the caller may see this memory (and it is of the named scope)."""
        return self.access.reads_memory(memory) and self.scope in (None, memory.scope)

    def actions(self, memory: Memory, *, archived: bool = False) -> list[str]:
        """What the caller may do with this memory, active or archived."""
        return self.access.memory_actions(memory, archived=archived)


def memory_rights(speaker: Speaker, scope: str | None = None) -> MemoryRights:
    """The caller's rights over memories."""
    return MemoryRights(access(speaker), scope)


_TYPES = [kind.value for kind in MemoryType]
_CONFIDENCES = [level.value for level in MemoryConfidence]
LIST_SCHEMA: dict[Any, Any] = {
    vol.Optional("query"): vol.All(str, vol.Length(max=MAX_QUERY_LENGTH)),
    vol.Optional("memory_type"): vol.In(_TYPES),
    vol.Optional("tags", default=list): vol.All(cv.ensure_list, [str]),
    vol.Optional("min_confidence"): vol.In(_CONFIDENCES),
    vol.Optional("archived", default=False): bool,
    vol.Optional("scope"): str,
    **PAGE_SCHEMA,
}
ID_SCHEMA: dict[Any, Any] = {vol.Required("memory_id"): str}
EDIT_SCHEMA: dict[Any, Any] = {
    **ID_SCHEMA,
    vol.Required("content"): str,
    vol.Optional("tags"): [str],
}
PIN_SCHEMA: dict[Any, Any] = {**ID_SCHEMA, vol.Required("pinned"): bool}


def _row(rights: MemoryRights, memory: Memory, score: float | None = None) -> dict[str, Any]:
    row = {
        **memory_response(memory, rights.access),
        "archived": False,
        "actions": rights.actions(memory),
    }
    if score is not None:
        row["score"] = score
    return row


def _archived_row(memories: Memories, rights: MemoryRights, one: ArchivedMemory) -> dict[str, Any]:
    """An archived memory: what it was, why and when it went, and what replaced it (when
    the caller may see that one: a link is followed only as far as they may read)."""
    successor = one.superseded_by
    replacement = memories.store.get(successor) if successor else None
    if replacement is None and successor:
        gone = memories.store.get_archived(successor)
        replacement = gone.memory if gone is not None else None
    if replacement is not None and not rights.access.reads_memory(replacement):
        replacement = successor = None
    return {
        **memory_response(one.memory, rights.access),
        **archived_response(one),
        "superseded_by": successor,
        "content": one.original_content,
        "archived": True,
        "superseded_by_content": replacement.content if replacement is not None else None,
        "actions": rights.actions(one.memory, archived=True),
    }


class MemoryCommands:
    """The commands, bound to the installation's memories and history."""

    def __init__(self, memories: Memories, history: HistoryRecorder) -> None:
        self.memories = memories
        self.history = history

    async def list(
        self, speaker: Speaker, fields: dict[str, Any], context: Context
    ) -> dict[str, Any]:
        """A page of memories: searched by meaning and words with a query, else listed.
        A named scope narrows what the caller may see, as memory_search's does: another
        person's is refused, never answered with less."""
        policy = access(speaker, self.memories.hass)
        scope = policy.named_scope(context, fields["scope"]) if "scope" in fields else None
        rights = MemoryRights(policy, scope)
        offset, limit = page_of(fields)
        tags = validate_tags(fields["tags"])
        kind = MemoryType(fields["memory_type"]) if "memory_type" in fields else None
        least = MemoryConfidence(fields["min_confidence"]) if "min_confidence" in fields else None
        query = (fields.get("query") or "").strip()
        store = self.memories.store
        if fields["archived"]:
            wanted = MemoryFilter(kind, tags, least, query)
            archived = (one for one in store.archived() if rights.sees(one.memory))
            page, total = archived_page(archived, wanted, offset, limit)
            rows = [_archived_row(self.memories, rights, one) for one in page]
            return {"memories": rows, "total": total, "ranker": None}
        if not query:
            visible = (memory for memory in store if rights.sees(memory))
            listed, total = active_page(visible, MemoryFilter(kind, tags, least), offset, limit)
            return {
                "memories": [_row(rights, memory) for memory in listed],
                "total": total,
                "ranker": None,
            }
        # A search answers its best matches only, as memory_search does.
        found = await async_search(
            self.memories,
            {"query": query, "type": kind, "tags": tags, "limit": MAX_SEARCH_LIMIT},
            policy.memory_scopes() if scope is None else {scope},
        )
        wanted = MemoryFilter(None, (), least)
        matches = [
            (memory, score)
            for memory, score in found.memories
            if rights.sees(memory) and wanted.allows(memory)
        ]
        return {
            "memories": [_row(rights, m, score) for m, score in matches[offset : offset + limit]],
            "total": len(matches),
            "ranker": found.ranker,
        }

    def _active(self, rights: MemoryRights, memory_id: str, action: str) -> Memory:
        memory = self.memories.store.get(memory_id)
        if memory is None or not rights.sees(memory):
            # Unknown and not the caller's to see answer alike: nothing is given away.
            raise_unknown(memory_id)
        ensure(action in rights.actions(memory))
        return memory

    async def edit(self, speaker: Speaker, fields: dict[str, Any], context: Context) -> Any:
        """A person's correction: the old words go to the archive as "edited"."""
        rights = memory_rights(speaker)
        memory_id = fields["memory_id"]
        self._active(rights, memory_id, EDIT)
        # The corrected memory is the editor's word now, not the one who said the old.
        said = Provenance(
            Origin.SERVICE,
            said_by=speaker.person_id,
            channel=speaker.channel,
            authority=Authority.STATED,
        )
        result = await self.memories.async_edit(
            memory_id, fields["content"], fields.get("tags"), said
        )
        if result is None:
            memory = self.memories.store.get(memory_id)
            assert memory is not None
            return {"action": "unchanged", "memory": _row(rights, memory), "replaced": None}
        record_change(
            self.history,
            "memory_edit",
            context,
            {"id": memory_id, "action": result.action.value, "new_id": result.memory.id},
        )
        return {
            "action": result.action.value,
            "memory": _row(rights, result.memory),
            "replaced": {"id": memory_id, "content": result.archived.original_content}
            if result.archived
            else None,
        }

    async def pin(self, speaker: Speaker, fields: dict[str, Any], context: Context) -> Any:
        """Pinned: never pushed out by the cap, and shown (and offered) first."""
        rights = memory_rights(speaker)
        self._active(rights, fields["memory_id"], PIN)
        memory = self.memories.set_pinned(fields["memory_id"], fields["pinned"])
        record_change(
            self.history, "memory_pin", context, {"id": memory.id, "pinned": memory.pinned}
        )
        return {"memory": _row(rights, memory)}

    async def forget(self, speaker: Speaker, fields: dict[str, Any], context: Context) -> Any:
        """To the archive, as memory_forget does."""
        rights = memory_rights(speaker)
        self._active(rights, fields["memory_id"], FORGET)
        result = self.memories.forget(fields["memory_id"])
        record_change(
            self.history,
            "memory_forget",
            context,
            {"ids": [one.id for one in result.archived], "erase": False},
        )
        return {"archived": [archived_response(one) for one in result.archived]}

    async def erase(self, speaker: Speaker, fields: dict[str, Any], context: Context) -> Any:
        """Gone for good, with the history events that carried it (the remember and recall
        tool calls and memory service calls naming it)."""
        rights = memory_rights(speaker)
        memory_id = fields["memory_id"]
        store = self.memories.store
        memory = store.get(memory_id)
        archived = memory is None
        if memory is None:
            gone = store.get_archived(memory_id)
            if gone is None:
                raise_unknown(memory_id)
            memory = gone.memory
        if not rights.sees(memory):
            raise_unknown(memory_id)
        ensure(ERASE in rights.actions(memory, archived=archived))
        result = self.memories.forget(memory_id, erase=True)
        erased_events = await async_erase_history(self.history, result, speaker)
        # The record of an erasure names no erased memory: only how many went.
        record_change(
            self.history, "memory_forget", context, {"erased": len(result.erased), "erase": True}
        )
        return {"erased": result.erased, "history_events_erased": erased_events}

    async def restore(self, speaker: Speaker, fields: dict[str, Any], context: Context) -> Any:
        """An archived memory back in use."""
        rights = memory_rights(speaker)
        memory_id = fields["memory_id"]
        gone = self.memories.store.get_archived(memory_id)
        if gone is None or not rights.sees(gone.memory):
            raise_unknown(memory_id)
        ensure(RESTORE in rights.actions(gone.memory, archived=True))
        result = await self.memories.async_restore(
            memory_id, push_out=rights.access.pushes_out(gone.memory.scope)
        )
        record_change(self.history, "memory_restore", context, {"id": memory_id})
        return {
            "memory": _row(rights, result.memory),
            # A cap is the installation's: another person's memory it pushed out is not
            # the caller's to hear of.
            "evicted": [
                archived_response(one) for one in result.evicted if rights.sees(one.memory)
            ],
            "restored_at": format_time(result.memory.updated_at),
        }


def raise_unknown(memory_id: str) -> NoReturn:
    """Refuse an id that names no memory (translated as memory_forget's refusal is)."""
    raise MemoryInputError("memory_unknown", memory_id=memory_id)


@callback
def async_register_memory_commands(
    hass: HomeAssistant, memories: Memories, history: HistoryRecorder
) -> None:
    """memories/list, /edit, /pin, /forget, /erase, /restore."""
    commands = MemoryCommands(memories, history)

    def once_loaded(handler: CommandHandler) -> CommandHandler:
        """The command, once the stored memories are read (just after a start)."""

        async def handle(speaker: Speaker, fields: dict[str, Any], context: Context) -> Any:
            await memories.async_loaded()
            return await handler(speaker, fields, context)

        return handle

    async_register_commands(
        hass,
        (
            CommandSpec("memories/list", once_loaded(commands.list), LIST_SCHEMA),
            CommandSpec("memories/edit", once_loaded(commands.edit), EDIT_SCHEMA),
            CommandSpec("memories/pin", once_loaded(commands.pin), PIN_SCHEMA),
            CommandSpec("memories/forget", once_loaded(commands.forget), ID_SCHEMA),
            CommandSpec("memories/erase", once_loaded(commands.erase), ID_SCHEMA),
            CommandSpec("memories/restore", once_loaded(commands.restore), ID_SCHEMA),
        ),
    )
