"""Who is speaking, and whose memories, history and summaries they may see.

A turn's person is the `person` entity linked to the request's Home Assistant user; else the
person the request's device (a voice satellite is a device) is mapped to in the options; else
nobody. A person reached through a device acts with the permissions of the user linked to
that person. A call without any user (automations, scripts) is Home Assistant's own system:
unrestricted, as it is for every other service of Home Assistant.

Memories belong to the household (everyone) or to one person (`person:<person entity id>`).
An administrator sees everything; anyone else sees the household's and their own person's.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from homeassistant.const import ATTR_FRIENDLY_NAME
from homeassistant.core import Context, HomeAssistant, State, callback

from .const import CONF_DEVICE_PEOPLE
from .memory.facts import HOUSEHOLD_SCOPE, PERSON_SCOPE_PREFIX

HOUSEHOLD = HOUSEHOLD_SCOPE
# The channel of a request that came without a device: the app, a dashboard, a service call.
APP_CHANNEL = "app"
PERSON_DOMAIN = "person"


def person_scope(person_id: str) -> str:
    """The private scope of a person entity ("person.anna" -> "person:person.anna")."""
    return f"{PERSON_SCOPE_PREFIX}{person_id}"


def scope_person(scope: str) -> str | None:
    """The person whose private scope this is ("person:person.anna" -> "person.anna");
    None for the household's."""
    if scope.startswith(PERSON_SCOPE_PREFIX):
        return scope.removeprefix(PERSON_SCOPE_PREFIX)
    return None


@dataclass(frozen=True, slots=True)
class Speaker:
    """Who a turn or a call is for, and what they may see."""

    # The person entity ("person.anna"), or None: nobody known.
    person_id: str | None = None
    # The person's name as Home Assistant shows it.
    name: str | None = None
    # The user whose permissions apply: the request's, or the one linked to the mapped person.
    user_id: str | None = None
    is_admin: bool = False
    # No user at all (automations, scripts): unrestricted.
    system: bool = False
    # The satellite's or device's id, or "app".
    channel: str = APP_CHANNEL

    @property
    def scope(self) -> str | None:
        """The speaker's private scope, or None when nobody is known."""
        return person_scope(self.person_id) if self.person_id else None

    @property
    def turn_scopes(self) -> frozenset[str]:
        """What a conversation turn of this speaker may see: the household's memories and
        their own, never another person's, an administrator's turn included."""
        return frozenset(s for s in (HOUSEHOLD, self.scope) if s is not None)

    @property
    def sees_everything(self) -> bool:
        """Administrators and the system see every person's data."""
        return self.system or self.is_admin

    def visible_scopes(self) -> frozenset[str] | None:
        """The memory scopes this speaker may see; None means all of them."""
        if self.sees_everything:
            return None
        return frozenset(s for s in (HOUSEHOLD, self.scope) if s is not None)

    def may_see(self, scope: str) -> bool:
        """Whether a memory of this scope is this speaker's to see."""
        scopes = self.visible_scopes()
        return scopes is None or scope in scopes


SYSTEM = Speaker(system=True)


@callback
def person_of_user(hass: HomeAssistant, user_id: str) -> State | None:
    """The person entity linked to a Home Assistant user, if any."""
    for state in hass.states.async_all(PERSON_DOMAIN):
        if state.attributes.get("user_id") == user_id:
            return state
    return None


def _name(state: State) -> str:
    return str(state.attributes.get(ATTR_FRIENDLY_NAME) or state.object_id)


async def _async_is_admin(hass: HomeAssistant, user_id: str | None) -> bool:
    if user_id is None:
        return False
    user = await hass.auth.async_get_user(user_id)
    return user is not None and user.is_admin


async def async_speaker(
    hass: HomeAssistant,
    user_id: str | None,
    device_id: str | None,
    devices: Mapping[str, str],
) -> Speaker:
    """A turn's speaker: by the request's user, else by its device's mapped person, else
    nobody (household only). `devices` maps device ids to person entity ids."""
    channel = device_id or APP_CHANNEL
    if user_id is not None and (user := await hass.auth.async_get_user(user_id)) is not None:
        if user.system_generated:
            return Speaker(system=True, channel=channel)
        if (state := person_of_user(hass, user_id)) is not None:
            return Speaker(state.entity_id, _name(state), user_id, user.is_admin, False, channel)
        return Speaker(None, user.name, user_id, user.is_admin, False, channel)
    if device_id is not None and (person_id := devices.get(device_id)):
        state = hass.states.get(person_id)
        linked = state.attributes.get("user_id") if state is not None else None
        linked_id = linked if isinstance(linked, str) else None
        return Speaker(
            person_id,
            _name(state) if state is not None else person_id,
            linked_id,
            await _async_is_admin(hass, linked_id),
            False,
            channel,
        )
    return Speaker(channel=channel)


def device_people(options: Mapping[str, Any]) -> dict[str, str]:
    """An entry's "voice satellites and devices -> person" option: device id -> person
    entity id (an unmapped device speaks for nobody)."""
    mapped = options.get(CONF_DEVICE_PEOPLE) or {}
    if not isinstance(mapped, Mapping):
        return {}
    return {
        str(device): str(person)
        for device, person in mapped.items()
        if isinstance(device, str) and isinstance(person, str) and person
    }


async def async_caller(hass: HomeAssistant, context: Context) -> Speaker:
    """Who calls a service or a WebSocket command: the context's user, or the system."""
    if context.user_id is None:
        return SYSTEM
    return await async_speaker(hass, context.user_id, None, {})
