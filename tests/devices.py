"""The integration's devices, found the way every supported Home Assistant allows.

2026.10 refuses device_registry.async_get_device (identifiers are unique per config entry
only); a config entry's own devices are listed on every version.
"""

from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr

from custom_components.azure_openai_memory.const import DOMAIN


def entry_device(hass: HomeAssistant, entry_id: str, identifier: str) -> dr.DeviceEntry | None:
    """The entry's device with the identifier (DOMAIN, identifier), if it has one."""
    devices = dr.async_entries_for_config_entry(dr.async_get(hass), entry_id)
    return next((d for d in devices if (DOMAIN, identifier) in d.identifiers), None)
