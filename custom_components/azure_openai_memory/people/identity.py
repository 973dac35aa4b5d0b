"""People's keys across the home's stores: memories, summaries, history, windows and device
maps all name a person by their own id (see speakers.py).

* At load, what was stored before (a person's entity id) becomes the person's id, and what
  names no person the entity registry knows (a person removed while this integration was
  not running) is held under a held id. Each store does it as it loads; it changes nothing
  a second time.
* When a person is removed (their entity leaves the entity registry: the person deleted,
  or a YAML person taken out of the configuration), everything of theirs is held under a
  new held id at once, and devices mapped to them are unmapped: a new person who gets the
  same id or entity id is served none of it, and no device speaks as them.
* Held data is served to no turn and no person (no person has a held id; administrators
  see it, to decide) and deleted by no one until an
  administrator decides, in a Repairs issue per held person (repairs.py): erase it, or
  hand it over to another person.
* Two loaded entries mapping one device to different people is a configuration error,
  shown in Repairs: that device speaks for nobody until it is fixed (speakers.py).
"""

from collections.abc import Callable, Mapping
import logging
from typing import Any

from homeassistant.config_entries import (
    SIGNAL_CONFIG_ENTRY_CHANGED,
    ConfigEntry,
    ConfigEntryState,
)
from homeassistant.const import ATTR_FRIENDLY_NAME, EVENT_STATE_CHANGED
from homeassistant.core import Event, HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import device_registry as dr, entity_registry as er, issue_registry as ir
from homeassistant.helpers.dispatcher import async_dispatcher_connect

from ..const import CONF_DEVICE_PEOPLE, DOMAIN
from ..data import DATA_HISTORY, DATA_MEMORIES, DATA_SUMMARIES
from ..lib.windows.window import drop_stored_person, rename_stored_people
from ..windows.files import async_change_stored_windows
from .speakers import (
    PERSON_ENTITY_PREFIX,
    PeopleKeys,
    conflicting_devices,
    device_people,
    is_held,
    new_held_id,
    people_keys,
    person_group,
    person_ids_by_entity,
    person_name,
    person_scope,
)

_LOGGER = logging.getLogger(__name__)

# A Repairs issue per held person: its id is this and the held id.
ISSUE_HELD = "person_data_held"
# The Repairs issue of devices two loaded entries map to different people.
ISSUE_DEVICE_CONFLICT = "device_mapped_twice"


def held_issue_id(held: str) -> str:
    """The Repairs issue of one held person's data."""
    return f"{ISSUE_HELD}_{held}"


@callback
def rekey_people(hass: HomeAssistant, rename: Callable[[PeopleKeys], int]) -> int:
    """Let a store that just loaded rename the people's keys it holds (`rename`, given the
    PeopleKeys of now, answers how many records changed); a held person it met gets their
    Repairs issue. How many records changed."""
    keys = people_keys(hass)
    changed = rename(keys)
    async_note_held(hass, keys.held)
    return changed


@callback
def async_note_held(hass: HomeAssistant, held: Mapping[str, str]) -> None:
    """A Repairs issue for each held person (held id -> the key their data had)."""
    for held_id, key in held.items():
        name = key.removeprefix(PERSON_ENTITY_PREFIX) if "." in key else key
        _async_held_issue(hass, held_id, name)


@callback
def _async_held_issue(hass: HomeAssistant, held: str, name: str) -> None:
    ir.async_create_issue(
        hass,
        DOMAIN,
        held_issue_id(held),
        is_fixable=True,
        is_persistent=True,
        severity=ir.IssueSeverity.WARNING,
        translation_key=ISSUE_HELD,
        translation_placeholders={"name": name},
        data={"held_id": held, "name": name},
    )


def migrated_device_people(
    options: Mapping[str, Any], keys: Callable[[str], str | None]
) -> dict[str, Any]:
    """An entry's options with its device map keyed by person ids: a person's entity id
    becomes their id; a device mapped by entity id to no person known any more is
    unmapped. A map already keyed by ids stays as it is."""
    mapped = device_people(options)
    if not mapped:
        return dict(options)
    devices: dict[str, str] = {}
    for device, person in mapped.items():
        new = (keys(person) or person) if person.startswith(PERSON_ENTITY_PREFIX) else person
        if not is_held(new):
            devices[device] = new
    result = {key: value for key, value in options.items() if key != CONF_DEVICE_PEOPLE}
    if devices:
        result[CONF_DEVICE_PEOPLE] = devices
    return result


async def async_setup_identity(hass: HomeAssistant) -> None:
    """Once the home's stores are set up: their people's keys as they are now, and the
    listeners that hold a removed person's data and report device maps in conflict.
    (The memories and the windows, read later, do the same as they load.)"""
    keys = people_keys(hass)
    hass.data[DATA_SUMMARIES].async_rename_groups(keys.group)
    history = hass.data[DATA_HISTORY]
    if history.available:
        try:
            await history.async_rename_people(keys)
        except HomeAssistantError as err:
            _LOGGER.warning("People's history not renamed now; tried at the next start: %s", err)
    async_note_held(hass, keys.held)
    _async_track_people(hass)
    _async_track_device_maps(hass)


@callback
def _async_track_people(hass: HomeAssistant) -> None:
    """Hold what a person owned when their entity leaves the entity registry."""
    known: dict[str, str] = person_ids_by_entity(hass)
    names: dict[str, str] = {entity: person_name(hass, pid) for entity, pid in known.items()}

    @callback
    def _registry_changed(event: Event[er.EventEntityRegistryUpdatedData]) -> None:
        entity_id = event.data["entity_id"]
        if event.data["action"] == "update" and "old_entity_id" in event.data:
            old = event.data["old_entity_id"]
            if old in known:
                known[entity_id] = known.pop(old)
                names[entity_id] = names.pop(old, known[entity_id])
            return
        if event.data["action"] == "create":
            if (person_id := person_ids_by_entity(hass).get(entity_id)) is not None:
                known[entity_id] = person_id
            return
        if event.data["action"] != "remove" or (person_id := known.pop(entity_id, None)) is None:
            return
        name = names.pop(entity_id, None) or person_id
        hass.async_create_task(
            async_hold_person(hass, person_id, name), f"{DOMAIN} hold {person_id}'s data"
        )

    @callback
    def _person_named(event: Event[Any]) -> None:
        state = event.data.get("new_state")
        if state is not None and state.entity_id in known:
            names[state.entity_id] = str(state.attributes.get(ATTR_FRIENDLY_NAME) or state.name)

    @callback
    def _is_person(data: Mapping[str, Any]) -> bool:
        return str(data["entity_id"]).startswith(PERSON_ENTITY_PREFIX)

    hass.bus.async_listen(er.EVENT_ENTITY_REGISTRY_UPDATED, _registry_changed)
    hass.bus.async_listen(EVENT_STATE_CHANGED, _person_named, event_filter=_is_person)


@callback
def _async_track_device_maps(hass: HomeAssistant) -> None:
    """The device-conflict issue follows every change of an entry of ours (loaded,
    unloaded, options saved)."""

    @callback
    def _entry_changed(_change: Any, entry: ConfigEntry) -> None:
        if entry.domain == DOMAIN:
            async_check_device_maps(hass)

    async_dispatcher_connect(hass, SIGNAL_CONFIG_ENTRY_CHANGED, _entry_changed)
    async_check_device_maps(hass)


@callback
def async_check_device_maps(hass: HomeAssistant) -> None:
    """The Repairs issue of devices two loaded entries map to different people: there
    while there are any, gone when there are none."""
    conflicts = conflicting_devices(hass)
    if not conflicts:
        ir.async_delete_issue(hass, DOMAIN, ISSUE_DEVICE_CONFLICT)
        return
    devices = dr.async_get(hass)
    lines = []
    for device_id, people in sorted(conflicts.items()):
        device = devices.async_get(device_id)
        device_name = (device.name_by_user or device.name) if device is not None else None
        names = ", ".join(sorted(person_name(hass, person) for person in people))
        lines.append(f"{device_name or device_id} ({names})")
    ir.async_create_issue(
        hass,
        DOMAIN,
        ISSUE_DEVICE_CONFLICT,
        is_fixable=False,
        severity=ir.IssueSeverity.ERROR,
        translation_key=ISSUE_DEVICE_CONFLICT,
        translation_placeholders={"devices": "; ".join(lines)},
    )


async def async_hold_person(hass: HomeAssistant, person_id: str, name: str) -> str:
    """A person was removed: everything of theirs is held under a new held id, devices
    mapped to them are unmapped, and a Repairs issue asks what becomes of it. The held id."""
    held = new_held_id(person_id)
    _LOGGER.info("%s was removed; their private data is held until an administrator decides", name)
    for entry in hass.config_entries.async_entries(DOMAIN):
        mapped = device_people(entry.options)
        if any(person == person_id for person in mapped.values()):
            kept = {device: person for device, person in mapped.items() if person != person_id}
            options = {k: v for k, v in entry.options.items() if k != CONF_DEVICE_PEOPLE}
            if kept:
                options[CONF_DEVICE_PEOPLE] = kept
            hass.config_entries.async_update_entry(entry, options=options)
    _async_held_issue(hass, held, name)
    await async_move_person(hass, person_id, held)
    return held


@callback
def _unloaded_entries(hass: HomeAssistant) -> list[str]:
    """The ids of this integration's entries whose windows are on disk only now."""
    return [
        entry.entry_id
        for entry in hass.config_entries.async_entries(DOMAIN)
        if entry.state is not ConfigEntryState.LOADED
    ]


async def async_move_person(hass: HomeAssistant, old: str, new: str) -> None:
    """Everything of person key `old` becomes `new`'s, in every store: memories (scope and
    who said them), summaries, history, the loaded entries' windows."""
    renamed = {old: new}.get
    memories = hass.data[DATA_MEMORIES]

    @callback
    def _memories() -> None:
        if memories.store.rename_people(renamed):
            memories.async_changed()

    memories.async_when_loaded(_memories)
    groups = {person_group(old): person_group(new)}
    hass.data[DATA_SUMMARIES].async_rename_groups(groups.get)
    for entry in hass.config_entries.async_loaded_entries(DOMAIN):
        if sum(agent.rename_people(renamed) for agent in entry.runtime_data.windows.values()):
            entry.runtime_data.windows_store.async_schedule_save()
    for entry_id in _unloaded_entries(hass):
        await async_change_stored_windows(
            hass, entry_id, lambda agent: rename_stored_people(agent, renamed)
        )
    history = hass.data[DATA_HISTORY]
    if history.available:
        await history.async_rename_people(renamed)


async def async_erase_person(hass: HomeAssistant, person: str) -> None:
    """Delete everything of a (held) person's: their private memories, active and
    archived, their summaries, their talk in the history and their conversations."""
    memories = hass.data[DATA_MEMORIES]
    await memories.async_loaded()
    scope = person_scope(person)
    for memory_id in memories.store.scope_ids(scope):
        memories.forget(memory_id, erase=True, scopes=[scope])
    hass.data[DATA_SUMMARIES].async_drop_group(person_group(person))
    for entry in hass.config_entries.async_loaded_entries(DOMAIN):
        if sum(agent.drop_person(person) for agent in entry.runtime_data.windows.values()):
            entry.runtime_data.windows_store.async_schedule_save()
    for entry_id in _unloaded_entries(hass):
        await async_change_stored_windows(
            hass, entry_id, lambda agent: drop_stored_person(agent, person)
        )
    history = hass.data[DATA_HISTORY]
    if history.available:
        await history.async_delete_person(person)


def held_of_issue(data: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """The held id and name a held person's Repairs issue was made with."""
    if not data:
        return None
    held, name = data.get("held_id"), data.get("name")
    if not isinstance(held, str) or not is_held(held) or not isinstance(name, str):
        return None
    return held, name
