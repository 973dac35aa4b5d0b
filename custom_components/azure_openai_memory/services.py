"""Service schemas and handlers: validate, call memory/, shape the response."""

from collections.abc import Callable, Coroutine
from typing import Any

from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant, ServiceCall, ServiceResponse, SupportsResponse
from homeassistant.exceptions import ServiceValidationError, Unauthorized
from homeassistant.helpers import config_validation as cv, entity_registry as er
import voluptuous as vol

from .const import DOMAIN

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

type Handler = Callable[[ServiceCall], Coroutine[Any, Any, ServiceResponse]]


def loaded_entry(hass: HomeAssistant, entry_id: str) -> Any:
    """The loaded entry a call names, or a translated validation error."""
    entry = hass.config_entries.async_get_entry(entry_id)
    if entry is None or entry.domain != DOMAIN:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="unknown_entry",
            translation_placeholders={"entry_id": entry_id},
        )
    if entry.state is not ConfigEntryState.LOADED:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="entry_not_loaded",
            translation_placeholders={"entry_id": entry_id},
        )
    return entry


def admin_only(hass: HomeAssistant, handler: Handler) -> Handler:
    """Destructive services: refuse callers who are not administrators."""

    async def checked(call: ServiceCall) -> ServiceResponse:
        if call.context.user_id:
            user = await hass.auth.async_get_user(call.context.user_id)
            if user is None or not user.is_admin:
                raise Unauthorized(context=call.context)
        return await handler(call)

    return checked


def _agent_names(hass: HomeAssistant, entry: Any) -> dict[str, str]:
    """Subentry id -> the agent's entity id (or title when it has none)."""
    registry = er.async_get(hass)
    return {
        sid: registry.async_get_entity_id("conversation", DOMAIN, sid) or sub.title
        for sid, sub in entry.subentries.items()
        if sid in entry.runtime_data.memories
    }


async def _async_conversation_stats(hass: HomeAssistant, call: ServiceCall) -> ServiceResponse:
    entry = loaded_entry(hass, call.data[ATTR_CONFIG_ENTRY])
    runtime = entry.runtime_data
    conversation_id = call.data.get(ATTR_CONVERSATION_ID)
    agents: dict[str, Any] = {}
    for sid, name in _agent_names(hass, entry).items():
        memory = runtime.memories[sid]
        ids = [conversation_id] if conversation_id else memory.get_all_conversations()
        agents[name] = {
            "memory": memory.totals(),
            "conversations": {
                cid: stats for cid in ids if (stats := memory.get_stats(cid)) is not None
            },
        }
    return {"statistics": runtime.stats.as_dict(), "agents": agents}


async def _async_conversation_reset(hass: HomeAssistant, call: ServiceCall) -> ServiceResponse:
    entry = loaded_entry(hass, call.data[ATTR_CONFIG_ENTRY])
    runtime = entry.runtime_data
    conversation_id = call.data.get(ATTR_CONVERSATION_ID)
    removed = sum(memory.reset(conversation_id) for memory in runtime.memories.values())
    if removed:
        runtime.windows_store.async_schedule_save()
    return {"reset": removed}


def async_register_services(hass: HomeAssistant) -> None:
    """Register every service of the integration."""

    async def stats(call: ServiceCall) -> ServiceResponse:
        return await _async_conversation_stats(hass, call)

    async def reset(call: ServiceCall) -> ServiceResponse:
        return await _async_conversation_reset(hass, call)

    hass.services.async_register(
        DOMAIN,
        SERVICE_CONVERSATION_STATS,
        stats,
        schema=CONVERSATION_SCHEMA,
        supports_response=SupportsResponse.ONLY,
    )
    hass.services.async_register(
        DOMAIN,
        SERVICE_CONVERSATION_RESET,
        admin_only(hass, reset),
        schema=CONVERSATION_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
