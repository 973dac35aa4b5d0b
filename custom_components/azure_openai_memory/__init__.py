"""Azure OpenAI Memory: an Assist conversation agent on Azure OpenAI that remembers.

Set-up and unload only. The home's stores (time series, history, memories, summaries)
are set up once with the integration and offered to every agent as the "Household memory"
LLM API (until the last entry unloads); each entry connects to its resource and loads its
agents' windows.
"""

from datetime import datetime
from pathlib import Path

from homeassistant.config_entries import (
    SIGNAL_CONFIG_ENTRY_CHANGED,
    ConfigEntry,
    ConfigEntryChange,
    ConfigEntryState,
)
from homeassistant.const import Platform
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import ConfigEntryAuthFailed, ConfigEntryNotReady
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.event import async_track_time_interval
from homeassistant.helpers.typing import ConfigType

from .azure.availability import async_clear_resolved_issues, async_remove_issues
from .azure.client import async_check_resource, async_create_client, async_release_client
from .azure.errors import API_ERRORS, ErrorKind, classify_error
from .compat import platforms
from .const import DOMAIN, MAINTENANCE_INTERVAL
from .data import (
    AzureOpenAIMemoryConfigEntry,
    Runtime,
    set_up_from,
    settings_from_entry_data,
)
from .history import async_apply_options as async_apply_history_options, async_setup_history
from .memories import (
    async_apply_options as async_apply_memory_options,
    async_setup_memories,
    async_use_embeddings,
)
from .panel import async_register_panel
from .people.household import async_register_household_api, async_unregister_household_api
from .people.identity import async_setup_identity, migrated_device_people
from .people.incognito import async_register_incognito_service
from .people.speakers import people_keys
from .series import (
    async_apply_options as async_apply_series_options,
    async_setup_series,
    async_take_options,
)
from .summaries import async_attach_writer, async_setup_summaries
from .title import is_untouched_title, resource_title
from .windows.encodings import async_fetch_encodings
from .windows.services import async_register_window_services
from .windows.store import async_load_windows, async_maintain, async_remove_windows
from .windows.websocket import async_register_window_commands

PLATFORMS: list[Platform] = platforms(Platform.CONVERSATION, Platform.SENSOR, Platform.SWITCH)
CONFIG_SCHEMA = cv.config_entry_only_config_schema(DOMAIN)
# Entries without an update listener (yet): not loaded, or still setting up.
_NOT_RUNNING = (
    ConfigEntryState.NOT_LOADED,
    ConfigEntryState.SETUP_IN_PROGRESS,
    ConfigEntryState.SETUP_ERROR,
    ConfigEntryState.SETUP_RETRY,
)


async def async_setup(hass: HomeAssistant, config: ConfigType) -> bool:
    """Set up the home's stores and their services, shared by every entry."""
    history = await async_setup_history(hass)
    await async_setup_series(hass, history)
    await async_setup_summaries(hass, history)
    await async_setup_memories(hass, history)
    async_register_window_services(hass, history)
    async_register_household_api(hass)
    async_register_window_commands(hass, history)
    await async_register_panel(hass)
    async_register_incognito_service(hass)
    await async_setup_identity(hass)

    @callback
    def _entry_changed(change: ConfigEntryChange, entry: ConfigEntry) -> None:
        """The home's settings saved in the options of an entry that is not loaded (its
        resource unreachable, say) apply now too; a loaded entry's update listener does it."""
        if (
            change is ConfigEntryChange.UPDATED
            and entry.domain == DOMAIN
            and entry.state in _NOT_RUNNING
            and (entry.version, entry.minor_version) >= (1, 2)  # migrated: see async_migrate_entry
        ):
            hass.async_create_task(
                _async_apply_home_options(hass, entry), f"{DOMAIN} home settings"
            )

    async_dispatcher_connect(hass, SIGNAL_CONFIG_ENTRY_CHANGED, _entry_changed)
    return True


async def async_migrate_entry(hass: HomeAssistant, entry: ConfigEntry) -> bool:
    """1.1 -> 1.2: the series settings move from the entry's options to the series' store.
    1.2 -> 1.3: the device map names people by their id, not their entity id (a device
    mapped to a person who is gone is unmapped)."""
    if entry.version > 1:
        return False  # written by a newer version of this integration
    if entry.minor_version < 2:
        options = dict(entry.options)
        async_take_options(hass, options)
        hass.config_entries.async_update_entry(entry, options=options, minor_version=2)
    if entry.minor_version < 3:
        options = migrated_device_people(entry.options, people_keys(hass))
        hass.config_entries.async_update_entry(entry, options=options, minor_version=3)
    return True


async def async_setup_entry(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> bool:
    """Connect to the resource and set up the agents."""
    # Back after the last entry's unload took it away; it needs no resource.
    async_register_household_api(hass)
    await _async_apply_home_options(hass, entry)
    settings = settings_from_entry_data(entry.data)
    client = await async_create_client(hass, settings)
    try:
        await async_check_resource(client)
    except API_ERRORS as err:
        await async_release_client(client)
        kind = classify_error(err)
        if kind is ErrorKind.INVALID_AUTH:
            raise ConfigEntryAuthFailed(
                translation_domain=DOMAIN, translation_key="invalid_auth"
            ) from err
        raise ConfigEntryNotReady(
            translation_domain=DOMAIN,
            translation_key="setup_failed",
            translation_placeholders={"reason": kind.value},
        ) from err

    cache_dir = Path(hass.config.path(DOMAIN, "tiktoken"))
    windows_store, windows = await async_load_windows(hass, entry, cache_dir)
    async_clear_resolved_issues(hass, entry)
    if is_untouched_title(entry.title, settings.endpoint) and entry.title != (
        title := resource_title(settings.endpoint)
    ):
        # Named after the resource before any device or entity id is made from it.
        hass.config_entries.async_update_entry(entry, title=title)
    entry.runtime_data = Runtime(
        settings,
        client,
        windows_store,
        windows,
        set_up_from=set_up_from(entry),
        token_cache_dir=cache_dir,
    )
    async_use_embeddings(hass, entry)
    await hass.config_entries.async_forward_entry_setups(entry, PLATFORMS)
    entry.async_on_unload(entry.add_update_listener(_async_entry_updated))
    async_fetch_encodings(hass, entry)

    @callback
    def _maintain(_now: datetime) -> None:
        async_maintain(entry.runtime_data)
        async_fetch_encodings(hass, entry)

    entry.async_on_unload(async_track_time_interval(hass, _maintain, MAINTENANCE_INTERVAL))
    async_attach_writer(hass, entry)
    return True


async def async_unload_entry(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> bool:
    """Unload the agents, then write their windows (which survive the reload).

    The store closes only once the platforms are gone: an entry whose platforms refused
    to unload stays loaded, and keeps saving.
    """
    if not await hass.config_entries.async_unload_platforms(entry, PLATFORMS):
        return False
    async_unregister_household_api(hass, entry)
    await entry.runtime_data.windows_store.async_close()
    await async_release_client(entry.runtime_data.client)
    return True


async def async_remove_entry(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> None:
    """The entry is deleted: its conversation windows go with it."""
    async_remove_issues(hass, entry)
    await async_remove_windows(hass, entry.entry_id)


async def _async_entry_updated(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> None:
    """Data, options or agents changed (no flow reloads): reload so every part sees them.

    Reauthenticate and reconfigure save the data and leave the reload of a loaded entry to
    this listener (Home Assistant 2026.12 refuses a flow's own reload beside one). The home's
    settings in the options go to their stores first; the options are then saved without
    them, and that update decides.
    """
    if await _async_apply_home_options(hass, entry):
        return
    if set_up_from(entry) != entry.runtime_data.set_up_from:
        await hass.config_entries.async_reload(entry.entry_id)


async def _async_apply_home_options(
    hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry
) -> bool:
    """Give the home's settings an options form returned to their stores; whether the
    options changed (that update calls the update listener again).

    The settings of the whole installation (series cap and keep days, the memories'
    MEMORY_CONFIG, the history's retention) are kept by their stores, the series' since
    config version 1.2, and every entry's form shows them from there. The form writes no
    store: it returns those the user changed among the entry's options. Taking them out
    here, at the entry's update and at its set-up (for an entry changed while not
    loaded), keeps each entry's option keys as they were, and leaves no copy in one entry
    that could later undo another entry's change. What a store cannot take now (the
    history database unavailable) stays in the options for the next attempt, so that no
    choice is lost.
    """
    options = dict(entry.options)
    async_apply_series_options(hass, options)
    async_apply_memory_options(hass, options)
    await async_apply_history_options(hass, options)
    return hass.config_entries.async_update_entry(entry, options=options)
