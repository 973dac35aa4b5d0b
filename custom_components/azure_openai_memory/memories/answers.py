"""What saving and searching memories answer: one shape for the services and the tools."""

from collections.abc import Iterable
from typing import Any

from ..lib.memories import (
    HOUSEHOLD_SCOPE,
    MIN_SIMILARITY,
    ArchivedMemory,
    Memory,
    MemoryInputError,
    Provenance,
    SearchResult,
)
from ..lib.times import format_time
from ..people.access import Access
from ..people.refusals import translated
from .store import Memories

# What a memory's provenance says of where it was said, shown only to those who may see it
# (Access.sees_where_said).
WHERE_SAID = ("conversation_id", "history_event_id", "channel")


def memory_response(memory: Memory, rights: Access | None = None) -> dict[str, Any]:
    """A memory as the services and tools report it: times in ISO 8601; where it was said
    only when `rights` (None: the saver's own answer) allow it."""
    shown = {
        **memory.as_dict(),
        "created_at": format_time(memory.created_at),
        "updated_at": format_time(memory.updated_at),
    }
    provenance = shown.get("provenance")
    if rights is not None and provenance is not None and not rights.sees_where_said(memory):
        shown["provenance"] = {**provenance, **dict.fromkeys(WHERE_SAID)}
    return shown


def archived_response(archived: ArchivedMemory) -> dict[str, Any]:
    """An archived memory: when and why it went, what replaced it, and what it was."""
    return {
        "id": archived.id,
        "original_content": archived.original_content,
        "superseded_by": archived.superseded_by,
        "archived_at": format_time(archived.archived_at),
        "reason": archived.reason,
        "type": archived.memory.type.value,
        "tags": list(archived.memory.tags),
        "scope": archived.memory.scope,
    }


def gone_response(archived: ArchivedMemory) -> dict[str, str]:
    """What a save took out of use, as the one who saved it is told: id and words."""
    return {"id": archived.id, "content": archived.original_content}


async def async_save(
    memories: Memories,
    data: dict[str, Any],
    source: str | None = None,
    *,
    scope: str = HOUSEHOLD_SCOPE,
    provenance: Provenance | None = None,
    visible: frozenset[str] | None = None,
    push_out: bool = True,
) -> dict[str, Any]:
    """memory_save, and the agent's remember tool (source: conversation).

    One shape for both (and the panel): `action`, the `memory` saved, what it `replaced`
    (to the archive) and what the type's cap `evicted`, each with id and content, so the
    one who saved can say "I replaced …" or "I made room by archiving …". `archived` is
    the replaced record in full, as memory_save answered before `replaced` existed.
    What the cap evicted is told only of the scopes the saver may see (`visible`, None:
    all). push_out False (the saver may not push out the scope's memories, see Access):
    a save that would is refused instead, naming the cap.
    """
    try:
        result = await memories.async_save(
            data["content"],
            data["type"],
            data.get("tags", ()),
            confidence=data.get("confidence"),
            source=source or data.get("source", "manual"),
            source_reference=data.get("source_reference"),
            pinned=data.get("pinned"),
            scope=scope,
            provenance=provenance,
            push_out=push_out,
        )
    except MemoryInputError as err:
        raise translated(err) from err
    evicted = [one for one in result.evicted if visible is None or one.memory.scope in visible]
    return {
        "action": result.action.value,
        "memory": memory_response(result.memory),
        "replaced": gone_response(result.archived) if result.archived else None,
        "archived": archived_response(result.archived) if result.archived else None,
        "evicted": [{**archived_response(one), **gone_response(one)} for one in evicted],
    }


async def async_search(
    memories: Memories,
    data: dict[str, Any],
    scopes: Iterable[str] | None = None,
    *,
    min_similarity: float = MIN_SIMILARITY,
) -> SearchResult:
    """What memory_search and the agent's recall and forget tools find, of these scopes
    (None: all); translated errors."""
    try:
        return await memories.async_search(
            data.get("query"),
            memory_type=data.get("type"),
            tags=data.get("tags") or None,
            limit=int(data.get("limit", 10)),
            include_archived=bool(data.get("include_archived", False)),
            scopes=scopes,
            min_similarity=min_similarity,
        )
    except MemoryInputError as err:
        raise translated(err) from err


async def async_search_answer(
    memories: Memories, data: dict[str, Any], scopes: Iterable[str] | None, rights: Access
) -> dict[str, Any]:
    """memory_search's response: each memory with its scope and provenance (as much of it
    as the caller may see)."""
    result = await async_search(memories, data, scopes)
    return {
        "memories": [
            {**memory_response(m, rights), "score": score} for m, score in result.memories
        ],
        "ranker": result.ranker,
    }
