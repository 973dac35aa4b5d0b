"""What every WebSocket command of the integration shares: who asks, paging, refusals.

Each kind of data registers its own commands (`azure_openai_memory/<kind>/<verb>`), as
it registers its services; this module only holds the plumbing they have in common. A
command answers for the caller of the connection, resolved as a service call's caller is
(people.async_caller), and decides with that Speaker what it shows and allows.
"""

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

from homeassistant.components import websocket_api
from homeassistant.components.websocket_api.connection import ActiveConnection
from homeassistant.components.websocket_api.const import (
    ERR_UNAUTHORIZED,
    WebSocketCommandHandler,
)
from homeassistant.components.websocket_api.decorators import async_response
from homeassistant.components.websocket_api.messages import BASE_COMMAND_MESSAGE_SCHEMA
from homeassistant.core import Context, HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
import voluptuous as vol

from ..const import DOMAIN
from ..lib.errors import InputError
from ..people.access import access
from ..people.refusals import Refused, translated
from ..people.speakers import Speaker, async_caller

if TYPE_CHECKING:
    from ..history.recorder import HistoryRecorder

type CommandHandler = Callable[[Speaker, dict[str, Any], Context], Awaitable[Any]]

# Rows one page may hold, and the furthest a page may start: a list is never sent whole.
MAX_PAGE_SIZE = 100
MAX_OFFSET = 1_000_000_000


def whole_number(value: Any) -> int:
    """A JSON integer (not a boolean, not a string of digits)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise vol.Invalid("expected a whole number")
    number: int = value
    return number


def calendar_day(value: Any) -> date:
    """A day as YYYY-MM-DD."""
    try:
        return date.fromisoformat(value)
    except (TypeError, ValueError):
        raise vol.Invalid("expected a day as YYYY-MM-DD") from None


PAGE_SCHEMA: dict[Any, Any] = {
    vol.Optional("offset", default=0): vol.All(whole_number, vol.Range(min=0, max=MAX_OFFSET)),
    vol.Optional("limit", default=50): vol.All(whole_number, vol.Range(min=1, max=MAX_PAGE_SIZE)),
}
# The session under which a change made on the panel is recorded: the connection's context.
PANEL_TAG = "panel"
NOT_ALLOWED = "not_allowed"


class NotAllowed(HomeAssistantError):
    """The caller may not see or do this; answered as `unauthorized`, with its translation."""

    def __init__(self) -> None:
        super().__init__(translation_domain=DOMAIN, translation_key=NOT_ALLOWED)


@dataclass(frozen=True)
class CommandSpec:
    """One command: its name after the domain, its handler and the fields it takes."""

    name: str
    handler: CommandHandler
    schema: Mapping[Any, Any] = field(default_factory=dict)


def command_type(name: str) -> str:
    """A command's full type, as a client sends it."""
    return f"{DOMAIN}/{name}"


@callback
def async_register_commands(hass: HomeAssistant, specs: Iterable[CommandSpec]) -> None:
    """Register commands of this domain: bad input and refusals come back translated."""
    for spec in specs:
        websocket_api.async_register_command(
            hass,
            command_type(spec.name),
            _answering(spec.handler),
            BASE_COMMAND_MESSAGE_SCHEMA.extend(
                {vol.Required("type"): command_type(spec.name), **spec.schema}
            ),
        )


def _answering(handler: CommandHandler) -> WebSocketCommandHandler:
    async def answer(
        hass: HomeAssistant, connection: ActiveConnection, msg: dict[str, Any]
    ) -> None:
        context = connection.context(msg)
        speaker = await async_caller(hass, context)
        fields = {k: v for k, v in msg.items() if k not in ("id", "type")}
        try:
            result = await handler(speaker, fields, context)
        except (NotAllowed, Refused) as err:
            connection.send_error(
                msg["id"],
                ERR_UNAUTHORIZED,
                str(err),
                translation_key=err.translation_key,
                translation_domain=DOMAIN,
                translation_placeholders=err.translation_placeholders,
            )
            return
        except InputError as err:
            raise translated(err) from err
        connection.send_result(msg["id"], result)

    return async_response(answer)


def record_change(
    history: "HistoryRecorder", name: str, context: Context, data: dict[str, Any]
) -> None:
    """A change made on the panel, in the history as the service of that name records it
    (so an erasure finds a memory's panel changes as it finds its service calls), as the
    talk of the caller's person."""
    history.record_call(name, context, data, tags=(PANEL_TAG,))


def page_of(fields: dict[str, Any]) -> tuple[int, int]:
    """A command's offset and limit (the schema gave both defaults)."""
    return int(fields["offset"]), int(fields["limit"])


def ensure(allowed: bool) -> None:
    """Refuse unless allowed."""
    if not allowed:
        raise NotAllowed


def speaker_view(speaker: Speaker) -> dict[str, Any]:
    """Who the panel answers for, as it shows it."""
    return {
        "name": speaker.name,
        "person_id": speaker.person_id,
        "is_admin": access(speaker).sees_everything,
    }
