"""How a call is refused: another person's data (Refused), and bad input found by lib/
(translated), each with a translated message that quotes back at most MAX_ECHOED
characters of a value."""

from collections.abc import Mapping

from homeassistant.core import Context
from homeassistant.exceptions import ServiceValidationError, Unauthorized

from ..const import DOMAIN
from ..lib.errors import InputError

# Characters of a value that a refusal quotes back; the rest is cut to an ellipsis, so a
# refusal of a 100,000-character value is short in the answer and in the log.
MAX_ECHOED = 60


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


def _echoed(placeholders: Mapping[str, str]) -> dict[str, str]:
    return {
        name: value if len(value) <= MAX_ECHOED else value[:MAX_ECHOED] + "…"
        for name, value in placeholders.items()
    }


def translated(err: InputError) -> ServiceValidationError:
    """Bad input found by lib/, as a translated validation error; every value it quotes
    back is cut to MAX_ECHOED characters."""
    return ServiceValidationError(
        translation_domain=DOMAIN,
        translation_key=err.key,
        translation_placeholders=_echoed(err.placeholders),
    )
