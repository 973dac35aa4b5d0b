"""What every service of the integration shares: registration, permissions, translated errors.

Each kind of memory registers its own services (timeseries, memories, history, summaries,
window); this module only holds the plumbing they have in common.
"""

from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any

from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant, ServiceCall, ServiceResponse, SupportsResponse
from homeassistant.exceptions import ServiceValidationError, Unauthorized
import voluptuous as vol

from .const import DOMAIN
from .data import AzureOpenAIMemoryConfigEntry
from .memory.errors import InputError

type Handler = Callable[[ServiceCall], Coroutine[Any, Any, ServiceResponse]]


@dataclass(frozen=True)
class ServiceSpec:
    """One service: its name, handler, schema, whether it answers, who may call it."""

    name: str
    handler: Handler
    schema: vol.Schema
    supports_response: SupportsResponse
    admin: bool = False


def async_register(hass: HomeAssistant, specs: Iterable[ServiceSpec]) -> None:
    """Register services of this domain; destructive ones for administrators only."""
    for spec in specs:
        handler = admin_only(hass, spec.handler) if spec.admin else spec.handler
        hass.services.async_register(
            DOMAIN,
            spec.name,
            handler,
            schema=spec.schema,
            supports_response=spec.supports_response,
        )


def admin_only(hass: HomeAssistant, handler: Handler) -> Handler:
    """Refuse callers who are not administrators; calls without a user (automations) pass."""

    async def checked(call: ServiceCall) -> ServiceResponse:
        if call.context.user_id:
            user = await hass.auth.async_get_user(call.context.user_id)
            if user is None or not user.is_admin:
                raise Unauthorized(context=call.context)
        return await handler(call)

    return checked


def translated(err: InputError) -> ServiceValidationError:
    """Bad input found by memory/, as a translated validation error."""
    return ServiceValidationError(
        translation_domain=DOMAIN,
        translation_key=err.key,
        translation_placeholders=err.placeholders,
    )


def loaded_entry(hass: HomeAssistant, entry_id: str) -> AzureOpenAIMemoryConfigEntry:
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
