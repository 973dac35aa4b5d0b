"""What every service of the integration shares: registration, permissions, translated errors.

Each kind of data registers its own services (timeseries, memories, history, summaries,
window); this module only holds the plumbing they have in common.
"""

from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any

from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import (
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
)
from homeassistant.exceptions import Unauthorized
import voluptuous as vol

from .const import DOMAIN
from .data import AzureOpenAIMemoryConfigEntry
from .lib.errors import InputError
from .people.access import access
from .people.refusals import translated
from .people.speakers import async_caller

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
        handler = refusing(spec.handler)
        if spec.admin:
            handler = admin_only(hass, handler)
        hass.services.async_register(
            DOMAIN,
            spec.name,
            handler,
            schema=spec.schema,
            supports_response=spec.supports_response,
        )


def admin_only(hass: HomeAssistant, handler: Handler) -> Handler:
    """Refuse callers the access policy does not let change everything: anyone but
    administrators; calls without a user (automations) pass."""

    async def checked(call: ServiceCall) -> ServiceResponse:
        if not access(await async_caller(hass, call.context)).sees_everything:
            raise Unauthorized(context=call.context)
        return await handler(call)

    return checked


def refusing(handler: Handler) -> Handler:
    """Bad input that lib/ found and the handler did not translate is translated here: a
    caller always gets a validation error, never an unknown error with a traceback."""

    async def checked(call: ServiceCall) -> ServiceResponse:
        try:
            return await handler(call)
        except InputError as err:
            raise translated(err) from err

    return checked


def loaded_entry(hass: HomeAssistant, entry_id: str) -> AzureOpenAIMemoryConfigEntry:
    """The loaded entry a call names, or a translated validation error."""
    entry = hass.config_entries.async_get_entry(entry_id)
    if entry is None or entry.domain != DOMAIN:
        raise translated(InputError("unknown_entry", entry_id=entry_id))
    if entry.state is not ConfigEntryState.LOADED:
        raise translated(InputError("entry_not_loaded", entry_id=entry_id))
    return entry
