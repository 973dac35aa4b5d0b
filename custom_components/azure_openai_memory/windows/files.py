"""An entry's windows file: its Store key, and changes to it while the entry is not loaded
(a removed person's conversations held or erased there too)."""

from collections.abc import Callable
from typing import Any

from homeassistant.core import HomeAssistant

from ..const import DOMAIN
from ..lib.windows.window import WINDOWS_VERSION, migrate_windows
from ..storage import DebouncedStore


def windows_store_key(entry_id: str) -> str:
    """The Store key of an entry's windows file."""
    return f"{DOMAIN}.windows.{entry_id}"


async def async_change_stored_windows(
    hass: HomeAssistant, entry_id: str, change: Callable[[dict[str, Any]], int]
) -> None:
    """Change the stored windows of an entry not loaded now (each agent's, in its stored
    form): a removed person's conversations are held (or erased) there too, so that a new
    person with the same id finds none of them when the entry is set up again."""
    data: dict[str, Any] = {}
    store = DebouncedStore(
        hass,
        windows_store_key(entry_id),
        lambda: data,
        version=WINDOWS_VERSION,
        migrate=migrate_windows,
    )
    data.update(await store.async_load())
    agents = data.get("agents")
    changed = 0
    if isinstance(agents, dict):
        changed = sum(change(agent) for agent in agents.values() if isinstance(agent, dict))
    if changed:
        store.async_schedule_save()
    await store.async_close()
