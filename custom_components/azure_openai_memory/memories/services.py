"""The memory services: save, search, patterns, export and import within the scopes the
caller may use; forget for administrators and for a person's own memories; cleanup for
administrators."""

from dataclasses import replace
from functools import partial
from typing import Any

from homeassistant.core import HomeAssistant, ServiceCall, ServiceResponse, SupportsResponse
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import config_validation as cv
from homeassistant.util.json import JSON_DECODE_EXCEPTIONS, json_loads
import voluptuous as vol

from ..const import LOGGER
from ..history.recorder import HistoryRecorder, record_service_call
from ..lib.memories import (
    HOUSEHOLD_SCOPE,
    Authority,
    ForgetResult,
    ImportResult,
    MemoryInputError,
    read_export,
)
from ..people.access import Access, access
from ..people.refusals import Refused, translated
from ..people.speakers import Speaker, async_caller, canonical_scope
from ..services import Handler, ServiceSpec, async_register
from .answers import archived_response, async_save, async_search_answer
from .provenance import service_provenance
from .store import Memories

SERVICE_MEMORY_SAVE = "memory_save"
SERVICE_MEMORY_SEARCH = "memory_search"
SERVICE_MEMORY_PATTERNS = "memory_patterns"
SERVICE_MEMORY_FORGET = "memory_forget"
SERVICE_MEMORY_CLEANUP_ARCHIVED = "memory_cleanup_archived"
SERVICE_MEMORY_EXPORT = "memory_export"
SERVICE_MEMORY_IMPORT = "memory_import"

# Content, types, tags, confidence, source and limit are checked by lib.memories, whose
# errors are translated; the schemas take what a YAML script may send.
MEMORY_SAVE_SCHEMA = vol.Schema(
    {
        vol.Required("content"): object,
        vol.Required("type"): cv.string,
        vol.Optional("tags", default=list): vol.All(cv.ensure_list, [object]),
        vol.Optional("confidence"): cv.string,
        vol.Optional("source", default="manual"): cv.string,
        vol.Optional("source_reference"): cv.string,
        vol.Optional("pinned"): cv.boolean,
        vol.Optional("scope"): cv.string,
        vol.Optional("authority"): vol.In([one.value for one in Authority]),
    }
)
MEMORY_SEARCH_SCHEMA = vol.Schema(
    {
        vol.Optional("query"): cv.string,
        vol.Optional("type"): cv.string,
        vol.Optional("tags", default=list): vol.All(cv.ensure_list, [object]),
        vol.Optional("limit", default=10): vol.Coerce(int),
        vol.Optional("include_archived", default=False): cv.boolean,
        vol.Optional("scope"): cv.string,
    }
)
MEMORY_FORGET_SCHEMA = vol.Schema(
    {
        vol.Optional("memory_id"): cv.string,
        vol.Optional("tag"): object,
        vol.Optional("erase", default=False): cv.boolean,
    }
)
MEMORY_CLEANUP_SCHEMA = vol.Schema(
    {vol.Optional("retention_days"): vol.All(vol.Coerce(float), vol.Range(min=0))}
)
MEMORY_EXPORT_SCHEMA = vol.Schema({vol.Optional("scopes"): vol.All(cv.ensure_list, [cv.string])})
MEMORY_IMPORT_SCHEMA = vol.Schema(
    {
        # The object memory_export answered (or that object as JSON text).
        vol.Required("export"): vol.Any(dict, cv.string),
        vol.Optional("dry_run", default=False): cv.boolean,
    }
)


async def _async_memory_forget(
    memories: Memories, call: ServiceCall, history: HistoryRecorder
) -> tuple[dict[str, Any], frozenset[str]]:
    """The answer, and the scopes of the memories that went."""
    data = call.data
    caller = await async_caller(memories.hass, call.context)
    rights = access(caller)
    if ("memory_id" in data) == ("tag" in data):
        raise translated(MemoryInputError("memory_forget_one"))
    scopes = rights.forget_scopes()
    if scopes is not None and not scopes:
        raise Refused(call.context, "memory_forget_not_yours")
    if scopes is not None and (memory_id := data.get("memory_id")) is not None:
        held = memories.store.get(memory_id) or (
            archived.memory
            if (archived := memories.store.get_archived(memory_id)) is not None
            else None
        )
        # One the caller may see but not forget (the household's) is refused as such;
        # another person's is unknown to them, as an id that names nothing is.
        if held is not None and rights.reads_memory(held) and held.scope not in scopes:
            raise Refused(call.context, "memory_forget_not_yours")
    try:
        result = memories.forget(
            data.get("memory_id"), data.get("tag"), erase=data["erase"], scopes=scopes
        )
    except MemoryInputError as err:
        raise translated(err) from err
    response: dict[str, Any] = {
        "archived": [archived_response(one) for one in result.archived],
        "erased": result.erased,
    }
    if data["erase"]:
        response["history_events_erased"] = await async_erase_history(history, result, caller)
    return response, result.scopes


async def async_erase_history(
    history: HistoryRecorder, result: ForgetResult, eraser: Speaker
) -> int | None:
    """The history's events that refer to erased memories go too, of those the eraser may
    read; None when the history cannot be reached (the memories are erased all the same;
    logged, for the user to act on)."""
    if not history.available:
        # Events recorded before it became unreadable may hold them: say so, not 0.
        LOGGER.error("The agent history is unavailable: erased memories may remain in it")
        return None
    try:
        return await history.async_erase_memories(result.erased, eraser)
    except (HomeAssistantError, RuntimeError) as err:
        LOGGER.error("Erased memories may remain in the agent history: %s", err)
        return None


def _import_response(result: ImportResult, rights: Access) -> dict[str, Any]:
    """What an import answers; of what the cap evicted, only what the caller may see, as a
    save answers."""
    evicted = [one for one in result.evicted if rights.reads_memory(one.memory)]
    return {
        "dry_run": result.dry_run,
        "added": result.added,
        "unchanged": result.unchanged,
        "conflicts": result.conflicts,
        "duplicates": result.duplicates,
        "evicted": [archived_response(one) for one in evicted],
    }


async def _async_memory_import(
    memories: Memories, call: ServiceCall, history: HistoryRecorder
) -> dict[str, Any]:
    """memory_import: the records of an export, in the scopes the caller may change; their
    scopes named as they are now; within the caps the caller may push out."""
    hass = memories.hass
    rights = access(await async_caller(hass, call.context), hass)
    raw = call.data["export"]
    try:
        records = read_export(json_loads(raw) if isinstance(raw, str) else raw)
    except JSON_DECODE_EXCEPTIONS as err:
        raise translated(MemoryInputError("memory_import_invalid", reason="not JSON")) from err
    except MemoryInputError as err:
        raise translated(err) from err
    records = records.rescoped(partial(canonical_scope, hass))
    if records.scopes:
        rights.export_scopes(call.context, sorted(records.scopes))
    try:
        result = await memories.async_import_records(
            records,
            dry_run=call.data["dry_run"],
            own=rights.owned_scopes(),
            push_out=rights.pushes_out,
        )
    except MemoryInputError as err:
        raise translated(err) from err
    if not result.dry_run:
        record_service_call(
            history,
            call,
            {"added": len(result.added), "conflicts": len(result.conflicts)},
            records.scopes,
        )
    return _import_response(result, rights)


async def _async_memory_cleanup(memories: Memories, call: ServiceCall) -> dict[str, Any]:
    deleted = memories.cleanup_archived(call.data.get("retention_days"))
    return {"deleted": len(deleted), "ids": deleted}


def async_register_memory_services(
    hass: HomeAssistant, memories: Memories, history: HistoryRecorder
) -> None:
    """memory_save, _search, _patterns; _forget and _cleanup_archived for administrators."""

    async def save(call: ServiceCall) -> ServiceResponse:
        caller = await async_caller(hass, call.context)
        rights = access(caller, hass)
        requested = call.data.get("scope")
        scope = (
            rights.named_scope(call.context, requested)
            if requested is not None
            else HOUSEHOLD_SCOPE
        )
        result = await async_save(
            memories,
            dict(call.data),
            scope=scope,
            provenance=service_provenance(hass, caller, call.context, call.data.get("authority")),
            visible=rights.memory_scopes(),
            push_out=rights.pushes_out(scope),
        )
        record_service_call(
            history,
            call,
            {"action": result["action"], "id": result["memory"]["id"]},
            (result["memory"]["scope"],),
        )
        return result

    async def search(call: ServiceCall) -> ServiceResponse:
        rights = access(await async_caller(hass, call.context), hass)
        scopes = rights.search_scopes(call.context, call.data.get("scope"))
        return await async_search_answer(memories, dict(call.data), scopes, rights)

    async def patterns(call: ServiceCall) -> ServiceResponse:
        scopes = access(await async_caller(hass, call.context)).memory_scopes()
        return {"patterns": [one.as_dict() for one in memories.store.patterns(scopes)]}

    async def export(call: ServiceCall) -> ServiceResponse:
        rights = access(await async_caller(hass, call.context), hass)
        scopes = rights.export_scopes(call.context, call.data.get("scopes"))
        return memories.store.export(scopes)

    async def import_(call: ServiceCall) -> ServiceResponse:
        return await _async_memory_import(memories, call, history)

    async def forget(call: ServiceCall) -> ServiceResponse:
        result, scopes = await _async_memory_forget(memories, call, history)
        if call.data["erase"]:
            # The record of an erasure names no erased memory: only how many went.
            record_service_call(
                history, call, {"erased": len(result["erased"]), "erase": True}, scopes
            )
        else:
            ids = [one["id"] for one in result["archived"]]
            record_service_call(history, call, {"ids": ids, "erase": False}, scopes)
        return result

    async def cleanup(call: ServiceCall) -> ServiceResponse:
        result = await _async_memory_cleanup(memories, call)
        record_service_call(history, call, dict(result))
        return result

    def once_loaded(handler: Handler) -> Handler:
        """The handler, once the stored memories are read (just after a start)."""

        async def handle(call: ServiceCall) -> ServiceResponse:
            await memories.async_loaded()
            return await handler(call)

        return handle

    specs = (
        ServiceSpec(SERVICE_MEMORY_SAVE, save, MEMORY_SAVE_SCHEMA, SupportsResponse.OPTIONAL),
        ServiceSpec(SERVICE_MEMORY_SEARCH, search, MEMORY_SEARCH_SCHEMA, SupportsResponse.ONLY),
        ServiceSpec(SERVICE_MEMORY_PATTERNS, patterns, vol.Schema({}), SupportsResponse.ONLY),
        ServiceSpec(SERVICE_MEMORY_FORGET, forget, MEMORY_FORGET_SCHEMA, SupportsResponse.OPTIONAL),
        ServiceSpec(SERVICE_MEMORY_EXPORT, export, MEMORY_EXPORT_SCHEMA, SupportsResponse.ONLY),
        ServiceSpec(
            SERVICE_MEMORY_IMPORT, import_, MEMORY_IMPORT_SCHEMA, SupportsResponse.OPTIONAL
        ),
        ServiceSpec(
            SERVICE_MEMORY_CLEANUP_ARCHIVED,
            cleanup,
            MEMORY_CLEANUP_SCHEMA,
            SupportsResponse.OPTIONAL,
            admin=True,
        ),
    )
    async_register(hass, [replace(spec, handler=once_loaded(spec.handler)) for spec in specs])
