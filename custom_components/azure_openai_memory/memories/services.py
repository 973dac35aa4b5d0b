"""The memory services: save, search, patterns, export and import within the scopes the
caller may use; forget for administrators and for a person's own memories; cleanup for
administrators."""

from dataclasses import replace
from typing import Any

from homeassistant.core import HomeAssistant, ServiceCall, ServiceResponse, SupportsResponse
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import config_validation as cv
from homeassistant.util.json import JSON_DECODE_EXCEPTIONS, json_loads
import voluptuous as vol

from ..const import LOGGER
from ..history.recorder import HistoryRecorder, record_service_call
from ..memory.facts import (
    HOUSEHOLD_SCOPE,
    Authority,
    FactError,
    ForgetResult,
    ImportResult,
    read_export,
)
from ..people import async_caller
from ..services import Handler, Refused, ServiceSpec, async_register, translated
from .answers import archived_response, async_save, async_search_answer
from .scopes import (
    export_scopes,
    forget_scopes,
    named_scope,
    search_scopes,
    service_provenance,
)
from .store import Memories

SERVICE_MEMORY_SAVE = "memory_save"
SERVICE_MEMORY_SEARCH = "memory_search"
SERVICE_MEMORY_PATTERNS = "memory_patterns"
SERVICE_MEMORY_FORGET = "memory_forget"
SERVICE_MEMORY_CLEANUP_ARCHIVED = "memory_cleanup_archived"
SERVICE_MEMORY_EXPORT = "memory_export"
SERVICE_MEMORY_IMPORT = "memory_import"

# Content, types, tags, confidence, source and limit are checked by memory.facts, whose
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
    scopes = forget_scopes(await async_caller(memories.hass, call.context), call.context)
    if ("memory_id" in data) == ("tag" in data):
        raise translated(FactError("memory_forget_one"))
    if scopes is not None and (memory_id := data.get("memory_id")) is not None:
        held = memories.facts.get(memory_id) or (
            archived.memory
            if (archived := memories.facts.get_archived(memory_id)) is not None
            else None
        )
        if held is not None and held.scope not in scopes:
            raise Refused(call.context, "memory_forget_not_yours")
    try:
        result = memories.forget(
            data.get("memory_id"), data.get("tag"), erase=data["erase"], scopes=scopes
        )
    except FactError as err:
        raise translated(err) from err
    response: dict[str, Any] = {
        "archived": [archived_response(one) for one in result.archived],
        "erased": result.erased,
    }
    if data["erase"]:
        response["history_events_erased"] = await async_erase_history(history, result)
    return response, result.scopes


async def async_erase_history(history: HistoryRecorder, result: ForgetResult) -> int | None:
    """The history's copies of erased memories go too; None when the history cannot be
    reached (the memories are erased all the same; logged, for the user to act on)."""
    if not history.available:
        # Events recorded before it became unreadable may hold them: say so, not 0.
        LOGGER.error("The agent history is unavailable: erased memories may remain in it")
        return None
    try:
        return await history.async_erase_memories(result.erased)
    except (HomeAssistantError, RuntimeError) as err:
        LOGGER.error("Erased memories may remain in the agent history: %s", err)
        return None


def _import_response(result: ImportResult, visible: frozenset[str] | None) -> dict[str, Any]:
    """What an import answers; of what the cap evicted, only the scopes the caller may see
    (None: all), as a save answers."""
    evicted = [one for one in result.evicted if visible is None or one.memory.scope in visible]
    return {
        "dry_run": result.dry_run,
        "added": result.added,
        "unchanged": result.unchanged,
        "conflicts": result.conflicts,
        "duplicates": result.duplicates,
        "evicted": [archived_response(one) for one in evicted],
    }


async def _async_memory_cleanup(memories: Memories, call: ServiceCall) -> dict[str, Any]:
    deleted = memories.cleanup_archived(call.data.get("retention_days"))
    return {"deleted": len(deleted), "ids": deleted}


def async_register_memory_services(
    hass: HomeAssistant, memories: Memories, history: HistoryRecorder
) -> None:
    """memory_save, _search, _patterns; _forget and _cleanup_archived for administrators."""

    async def save(call: ServiceCall) -> ServiceResponse:
        caller = await async_caller(hass, call.context)
        requested = call.data.get("scope")
        scope = (
            named_scope(caller, call.context, requested)
            if requested is not None
            else HOUSEHOLD_SCOPE
        )
        result = await async_save(
            memories,
            dict(call.data),
            scope=scope,
            provenance=service_provenance(hass, caller, call.context, call.data.get("authority")),
            visible=caller.visible_scopes(),
        )
        record_service_call(
            history,
            call,
            {"action": result["action"], "id": result["memory"]["id"]},
            (result["memory"]["scope"],),
        )
        return result

    async def search(call: ServiceCall) -> ServiceResponse:
        caller = await async_caller(hass, call.context)
        scopes = search_scopes(caller, call.context, call.data.get("scope"))
        return await async_search_answer(memories, dict(call.data), scopes)

    async def patterns(call: ServiceCall) -> ServiceResponse:
        scopes = (await async_caller(hass, call.context)).visible_scopes()
        return {"patterns": [one.as_dict() for one in memories.facts.patterns(scopes)]}

    async def export(call: ServiceCall) -> ServiceResponse:
        caller = await async_caller(hass, call.context)
        scopes = export_scopes(caller, call.context, call.data.get("scopes"))
        return memories.facts.export(scopes)

    async def import_(call: ServiceCall) -> ServiceResponse:
        caller = await async_caller(hass, call.context)
        raw = call.data["export"]
        try:
            records = read_export(json_loads(raw) if isinstance(raw, str) else raw)
        except JSON_DECODE_EXCEPTIONS as err:
            raise translated(FactError("memory_import_invalid", reason="not JSON")) from err
        except FactError as err:
            raise translated(err) from err
        if records.scopes:
            export_scopes(caller, call.context, sorted(records.scopes))
        result = await memories.async_import_records(records, dry_run=call.data["dry_run"])
        if not result.dry_run:
            record_service_call(
                history,
                call,
                {"added": len(result.added), "conflicts": len(result.conflicts)},
                records.scopes,
            )
        return _import_response(result, caller.visible_scopes())

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
