"""Azure OpenAI Memory: an Assist conversation agent on Azure OpenAI that remembers."""

from dataclasses import dataclass

from homeassistant.config_entries import ConfigEntry
from homeassistant.const import CONF_API_KEY, Platform
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import ConfigEntryAuthFailed, ConfigEntryNotReady
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.typing import ConfigType

from .const import (
    CONF_API_STYLE,
    CONF_API_VERSION,
    CONF_ENDPOINT,
    DOMAIN,
    RECOMMENDED_API_VERSION,
)
from .llm.client import (
    ResourceSettings,
    SDKClient,
    async_check_resource,
    async_create_client,
)
from .llm.errors import API_ERRORS, ErrorKind, classify_error

PLATFORMS: list[Platform] = []
CONFIG_SCHEMA = cv.config_entry_only_config_schema(DOMAIN)


@dataclass
class Runtime:
    """Everything one loaded entry owns; lives in entry.runtime_data."""

    settings: ResourceSettings
    client: SDKClient


type AzureOpenAIMemoryConfigEntry = ConfigEntry[Runtime]


def settings_from_entry_data(data: dict) -> ResourceSettings:  # type: ignore[type-arg]
    """Read the resource settings from config entry (or flow) data."""
    return ResourceSettings(
        endpoint=data[CONF_ENDPOINT],
        api_key=data[CONF_API_KEY],
        api_style=data[CONF_API_STYLE],
        api_version=data.get(CONF_API_VERSION) or RECOMMENDED_API_VERSION,
    )


async def async_setup(hass: HomeAssistant, config: ConfigType) -> bool:
    """Set up the integration (services come with their issues)."""
    return True


async def async_setup_entry(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> bool:
    """Connect to the resource and set up the agents."""
    settings = settings_from_entry_data(dict(entry.data))
    client = await async_create_client(hass, settings)
    try:
        await async_check_resource(client)
    except API_ERRORS as err:
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

    entry.runtime_data = Runtime(settings=settings, client=client)
    await hass.config_entries.async_forward_entry_setups(entry, PLATFORMS)
    entry.async_on_unload(entry.add_update_listener(_async_reload_on_update))
    return True


async def async_unload_entry(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> bool:
    """Unload the agents."""
    return await hass.config_entries.async_unload_platforms(entry, PLATFORMS)


async def _async_reload_on_update(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> None:
    """Options, subentries or data changed: reload so every part sees them."""
    await hass.config_entries.async_reload(entry.entry_id)
