"""Each agent's incognito switch (see incognito.py): on, its talk outlives no conversation."""

from typing import Any

from homeassistant.components.switch import SwitchEntity
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import EntityCategory
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import device_registry as dr

from .compat import AddConfigEntryEntitiesCallback
from .const import DOMAIN, SUBENTRY_AGENT
from .data import AzureOpenAIMemoryConfigEntry
from .people.incognito import (
    SWITCH_SUFFIX,
    async_stop_timers,
    async_turn_off,
    async_turn_on,
    attributes,
    incognito_of,
)

# The switch only sets a flag in memory; nothing is sent anywhere.
PARALLEL_UPDATES = 0


async def async_setup_entry(
    hass: HomeAssistant,
    entry: AzureOpenAIMemoryConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """One incognito switch per agent subentry, on the agent's device."""
    runtime = entry.runtime_data
    entry.async_on_unload(lambda: async_stop_timers(runtime))
    for subentry in entry.subentries.values():
        if subentry.subentry_type == SUBENTRY_AGENT:
            async_add_entities(
                [IncognitoSwitch(entry, subentry)], config_subentry_id=subentry.subentry_id
            )


class IncognitoSwitch(SwitchEntity):
    """On: the agent's turns are answered, and nothing of them is kept past the talk."""

    _attr_has_entity_name = True
    _attr_translation_key = "incognito"
    _attr_should_poll = False
    # A setting of the agent: not exposed to Assist unless the user exposes it, so it
    # costs no request anything.
    _attr_entity_category = EntityCategory.CONFIG

    def __init__(self, entry: AzureOpenAIMemoryConfigEntry, subentry: ConfigSubentry) -> None:
        """On the agent's device; off until turned on (a restart turns it off)."""
        self.entry = entry
        self.subentry_id = subentry.subentry_id
        self._attr_unique_id = f"{subentry.subentry_id}{SWITCH_SUFFIX}"
        self._attr_device_info = dr.DeviceInfo(identifiers={(DOMAIN, subentry.subentry_id)})

    @property
    def is_on(self) -> bool:
        """Whether the agent's turns are incognito now."""
        return incognito_of(self.entry.runtime_data, self.subentry_id).on

    @property
    def extra_state_attributes(self) -> dict[str, Any]:
        """When incognito ends by itself (set by the incognito service), else None."""
        return attributes(incognito_of(self.entry.runtime_data, self.subentry_id))

    async def async_added_to_hass(self) -> None:
        """Follow the agent's incognito, however it is changed."""
        state = incognito_of(self.entry.runtime_data, self.subentry_id)
        state.listeners.append(self.async_write_ha_state)

        @callback
        def _stop_following() -> None:
            state.listeners.remove(self.async_write_ha_state)

        self.async_on_remove(_stop_following)

    async def async_turn_on(self, **kwargs: Any) -> None:
        """Incognito until turned off."""
        async_turn_on(self.hass, self.entry, self.subentry_id)

    async def async_turn_off(self, **kwargs: Any) -> None:
        """Incognito ends; what it added to the conversations goes."""
        async_turn_off(self.entry, self.subentry_id)
