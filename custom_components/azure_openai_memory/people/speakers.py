"""Who is speaking, and whose memories, history and summaries they may see.

A turn's person is the `person` entity linked to the request's Home Assistant user; else the
person the request's device (a voice satellite is a device) is mapped to in the options; else
nobody. A person reached through a device acts with the permissions of the user linked to
that person. A call without any user (automations, scripts) is Home Assistant's own system:
unrestricted, as it is for every other service of Home Assistant.

A person is known by their own id: the `person` collection's storage id (a YAML person's
configured `id`), which a person entity's state carries as attribute `id` and its entity
registry entry as `unique_id`. Never by the entity id, which a new person may get again.
What a removed person owned is held under a held id (HELD_PREFIX): no person has one, so
nobody is served it until an administrator erases it or hands it over (see identity.py).

Memories belong to the household (everyone) or to one person (`person:<person id>`).
An administrator sees everything; anyone else sees the household's and their own person's.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
import uuid

from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import ATTR_FRIENDLY_NAME, ATTR_ID
from homeassistant.core import Context, HomeAssistant, State, callback
from homeassistant.helpers import entity_registry as er
from homeassistant.util import slugify

from ..const import CONF_DEVICE_PEOPLE, DOMAIN
from ..lib.memories import HOUSEHOLD_SCOPE, PERSON_SCOPE_PREFIX

HOUSEHOLD = HOUSEHOLD_SCOPE
# The channel of a request that came without a device: the app, a dashboard, a service call.
APP_CHANNEL = "app"
PERSON_DOMAIN = "person"


# How the id of a removed person's held data begins. A person's id is a slug (letters,
# digits, "_") or a YAML id; neither takes this form, and a held id is never any person's.
HELD_PREFIX = "removed-"
# How every person's summary group begins, and how a held person's does: a person's group
# is "person_" and their id as a slug ("anna" -> "person_anna", as the entity id
# "person.anna" made it before).
PERSON_GROUP_PREFIX = "person_"
HELD_GROUP_PREFIX = "held_"
# The entity id form of a person, as data stored before people were keyed by their id.
PERSON_ENTITY_PREFIX = f"{PERSON_DOMAIN}."


def person_scope(person_id: str) -> str:
    """The private scope of a person ("anna" -> "person:anna")."""
    return f"{PERSON_SCOPE_PREFIX}{person_id}"


def scope_person(scope: str) -> str | None:
    """The person whose private scope this is ("person:anna" -> "anna"); None for the
    household's."""
    if scope.startswith(PERSON_SCOPE_PREFIX):
        return scope.removeprefix(PERSON_SCOPE_PREFIX)
    return None


def is_held(person_id: str) -> bool:
    """Whether an id is a removed person's held data, nobody's to be served."""
    return person_id.startswith(HELD_PREFIX)


def held_id(token: str) -> str:
    """The held id of a removed person's data (token: what tells it apart)."""
    return f"{HELD_PREFIX}{slugify(token)}"


def new_held_id(person_id: str) -> str:
    """A fresh held id for a person removed now: never one that was held before (a new
    person of the same name, removed later, is held apart)."""
    return held_id(f"{person_group(person_id)}_{uuid.uuid4().hex[:8]}")


def person_group(person_id: str) -> str:
    """The summaries' group of one person's talk ("anna" -> "person_anna"); a held
    person's is apart ("held_…"), so a new person's group is never a removed one's."""
    if is_held(person_id):
        return f"{HELD_GROUP_PREFIX}{slugify(person_id.removeprefix(HELD_PREFIX))}"
    return f"{PERSON_GROUP_PREFIX}{slugify(person_id)}"


def is_person_group(group: str) -> bool:
    """Whether a group is one person's talk, a held one's included (no device or user
    slug starts so)."""
    return group.startswith((PERSON_GROUP_PREFIX, HELD_GROUP_PREFIX))


@dataclass(frozen=True, slots=True)
class Speaker:
    """Who a turn or a call is for, and what they may see."""

    # The person's own id ("anna"), or None: nobody known.
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


SYSTEM = Speaker(system=True)


@callback
def person_of_user(hass: HomeAssistant, user_id: str) -> State | None:
    """The person entity linked to a Home Assistant user, if any."""
    for state in hass.states.async_all(PERSON_DOMAIN):
        if state.attributes.get("user_id") == user_id and person_id_of(state) is not None:
            return state
    return None


def person_id_of(state: State) -> str | None:
    """A person entity's person id (its `id` attribute); None when it has none."""
    value = state.attributes.get(ATTR_ID)
    if not isinstance(value, str) or not value or is_held(value):
        return None
    return value


@callback
def person_state(hass: HomeAssistant, person_id: str) -> State | None:
    """The person entity of a person id, if that person exists."""
    for state in hass.states.async_all(PERSON_DOMAIN):
        if person_id_of(state) == person_id:
            return state
    return None


@callback
def person_name(hass: HomeAssistant, person_id: str) -> str:
    """A person's name as Home Assistant shows it; the id itself when there is no such
    person (any more)."""
    state = person_state(hass, person_id)
    return _name(state) if state is not None else person_id


@callback
def person_ids_by_entity(hass: HomeAssistant) -> dict[str, str]:
    """Every person the entity registry knows: entity id -> person id."""
    return {
        entry.entity_id: entry.unique_id
        for entry in er.async_get(hass).entities.values()
        if entry.domain == PERSON_DOMAIN and entry.platform == PERSON_DOMAIN and entry.unique_id
    }


@callback
def person_id_of_entity(hass: HomeAssistant, entity_id: str) -> str | None:
    """The person id of a person entity id (as a form's entity selector gives it)."""
    return person_ids_by_entity(hass).get(entity_id)


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
    nobody (household only). `devices` maps device ids to person ids; a device mapped to a
    person who is gone, or by two loaded entries to different people, speaks for nobody."""
    channel = device_id or APP_CHANNEL
    if user_id is not None and (user := await hass.auth.async_get_user(user_id)) is not None:
        if user.system_generated:
            # Home Assistant's own users (the Supervisor, add-ons): the system when they are
            # administrators; one that is not (e.g. the read-only content user) is nobody.
            if user.is_admin:
                return Speaker(system=True, channel=channel)
            return Speaker(None, user.name, user_id, False, False, channel)
        if (state := person_of_user(hass, user_id)) is not None:
            return Speaker(
                person_id_of(state), _name(state), user_id, user.is_admin, False, channel
            )
        return Speaker(None, user.name, user_id, user.is_admin, False, channel)
    if (
        device_id is not None
        and (person_id := devices.get(device_id))
        and device_id not in conflicting_devices(hass)
        and (state := person_state(hass, person_id)) is not None
    ):
        linked = state.attributes.get("user_id")
        linked_id = linked if isinstance(linked, str) else None
        return Speaker(
            person_id,
            _name(state),
            linked_id,
            await _async_is_admin(hass, linked_id),
            False,
            channel,
        )
    return Speaker(channel=channel)


def device_people(options: Mapping[str, Any]) -> dict[str, str]:
    """An entry's "voice satellites and devices -> person" option: device id -> person
    id (an unmapped device speaks for nobody)."""
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


@callback
def loaded_device_maps(hass: HomeAssistant) -> list[dict[str, str]]:
    """The device maps of the loaded entries: a disabled or unloaded entry's map is not
    in force."""
    return [
        device_people(entry.options)
        for entry in hass.config_entries.async_entries(DOMAIN)
        if entry.state is ConfigEntryState.LOADED
    ]


@callback
def conflicting_devices(hass: HomeAssistant) -> dict[str, frozenset[str]]:
    """Devices two loaded entries map to different people: device id -> those people.
    A configuration error: such a device speaks for nobody until it is fixed."""
    people: dict[str, set[str]] = {}
    for mapped in loaded_device_maps(hass):
        for device, person in mapped.items():
            people.setdefault(device, set()).add(person)
    return {device: frozenset(ids) for device, ids in people.items() if len(ids) > 1}


@callback
def loaded_device_people(hass: HomeAssistant) -> dict[str, str]:
    """Device id -> person id as every loaded entry maps it, without the devices two of
    them map to different people."""
    conflicts = conflicting_devices(hass)
    merged: dict[str, str] = {}
    for mapped in loaded_device_maps(hass):
        merged |= {device: person for device, person in mapped.items() if device not in conflicts}
    return merged


@callback
def canonical_scope(hass: HomeAssistant, scope: str) -> str:
    """A scope as given in a call, in its stored form: a person's scope named by the
    person's entity id ("person:person.anna", the form of before) is that person's
    ("person:anna"); any other scope is returned as it is."""
    person = scope_person(scope)
    if person is None or not person.startswith(PERSON_ENTITY_PREFIX):
        return scope
    if (person_id := person_id_of_entity(hass, person)) is None:
        return scope
    return person_scope(person_id)


class PeopleKeys:
    """How people's keys stored before (or while a person was removed) become what they
    are now: a person's entity id becomes their id; a key of no person known (an entity id
    or id of a person removed since) becomes a held id, served to nobody; a current
    person's id and a held id stay.

    Made in the event loop from the entity registry, then pure: safe to use in any thread.
    `held` collects the held ids it gave, each with the key it came from.
    """

    def __init__(self, by_entity: Mapping[str, str]) -> None:
        self._by_entity = dict(by_entity)
        self._ids = frozenset(self._by_entity.values())
        self._groups = {person_group(person_id) for person_id in self._ids}
        self._by_old_group = {slugify(entity): pid for entity, pid in self._by_entity.items()}
        self.held: dict[str, str] = {}

    def __call__(self, key: str) -> str | None:
        """A person's new key for a stored one, or None when it stays. An entity id of
        another domain (an automation that said something) is no person's and stays."""
        if key in self._ids or is_held(key):
            return None
        if "." in key and not key.startswith(PERSON_ENTITY_PREFIX):
            return None
        if (person_id := self._by_entity.get(key)) is not None:
            return person_id
        return self._held(slugify(key) if "." in key else person_group(key), key)

    def group(self, group: str) -> str | None:
        """A summaries' group's new name, or None when it stays: a person's group named
        after their entity id becomes their id's; a person's group of nobody known now
        is held."""
        if not group.startswith(PERSON_GROUP_PREFIX) or group in self._groups:
            return None
        if (person_id := self._by_old_group.get(group)) is not None:
            return person_group(person_id)
        return person_group(self._held(group, group))

    def _held(self, token: str, key: str) -> str:
        held = held_id(token)
        self.held.setdefault(held, key)
        return held


@callback
def people_keys(hass: HomeAssistant) -> PeopleKeys:
    """PeopleKeys for the people the entity registry knows now."""
    return PeopleKeys(person_ids_by_entity(hass))
