"""What every service of the integration shares: registration, permissions, translated errors.

Each kind of memory registers its own services (timeseries, memories, history, summaries,
window); this module only holds the plumbing they have in common.
"""

from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import (
    Context,
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
)
from homeassistant.exceptions import ServiceValidationError, Unauthorized
import voluptuous as vol

from .const import DOMAIN
from .data import AzureOpenAIMemoryConfigEntry
from .memory.errors import InputError

type Handler = Callable[[ServiceCall], Coroutine[Any, Any, ServiceResponse]]

# Characters of a value that a refusal quotes back; the rest is cut to an ellipsis, so a
# refusal of a 100,000-character value is short in the answer and in the log.
MAX_ECHOED = 60


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
    """Refuse callers who are not administrators; calls without a user (automations) pass."""

    async def checked(call: ServiceCall) -> ServiceResponse:
        if call.context.user_id:
            user = await hass.auth.async_get_user(call.context.user_id)
            if user is None or not user.is_admin:
                raise Unauthorized(context=call.context)
        return await handler(call)

    return checked


class Refused(Unauthorized):
    """A request for someone else's data (another person's memories, talk, summaries or
    figures): refused with a translated message that says what the caller may use
    instead (Home Assistant's own Unauthorized says only its class name), never answered
    with less than was asked for."""

    def __init__(self, context: Context, key: str, **placeholders: str) -> None:
        super().__init__(context=context)
        self.translation_domain = DOMAIN
        self.translation_key = key
        self.translation_placeholders = _echoed(placeholders)
        self.generate_message = True
        self.args = (key,)


def refusing(handler: Handler) -> Handler:
    """Bad input that memory/ found and the handler did not translate is translated here: a
    caller always gets a validation error, never an unknown error with a traceback."""

    async def checked(call: ServiceCall) -> ServiceResponse:
        try:
            return await handler(call)
        except InputError as err:
            raise translated(err) from err

    return checked


def _echoed(placeholders: Mapping[str, str]) -> dict[str, str]:
    return {
        name: value if len(value) <= MAX_ECHOED else value[:MAX_ECHOED] + "…"
        for name, value in placeholders.items()
    }


def translated(err: InputError) -> ServiceValidationError:
    """Bad input found by memory/, as a translated validation error; every value it quotes
    back is cut to MAX_ECHOED characters."""
    return ServiceValidationError(
        translation_domain=DOMAIN,
        translation_key=err.key,
        translation_placeholders=_echoed(err.placeholders),
    )


def loaded_entry(hass: HomeAssistant, entry_id: str) -> AzureOpenAIMemoryConfigEntry:
    """The loaded entry a call names, or a translated validation error."""
    entry = hass.config_entries.async_get_entry(entry_id)
    if entry is None or entry.domain != DOMAIN:
        raise translated(InputError("unknown_entry", entry_id=entry_id))
    if entry.state is not ConfigEntryState.LOADED:
        raise translated(InputError("entry_not_loaded", entry_id=entry_id))
    return entry
