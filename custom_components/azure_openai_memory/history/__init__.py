"""The agent's history: an event-sourced audit trail of what it did, in SQLite.

One database for the installation, opened with the integration, purged daily past its
retention, closed at Home Assistant's final write.
"""

from datetime import timedelta
from typing import Any

from homeassistant.const import EVENT_HOMEASSISTANT_FINAL_WRITE
from homeassistant.core import Event, HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers.event import async_track_time_interval
from homeassistant.util import dt as dt_util

from ..const import CONF_HISTORY_RETENTION_DAYS, DOMAIN, LOGGER
from ..data import DATA_HISTORY
from .recorder import HistoryRecorder
from .services import async_register_history_services
from .websocket import async_register_history_commands

PURGE_INTERVAL = timedelta(days=1)


async def async_setup_history(hass: HomeAssistant) -> HistoryRecorder:
    """Open the database (in the executor), purge now and daily, register the services."""
    history = hass.data[DATA_HISTORY] = await HistoryRecorder.async_open(hass)

    async def _async_close(_event: Event) -> None:
        await history.async_close()

    hass.bus.async_listen_once(EVENT_HOMEASSISTANT_FINAL_WRITE, _async_close)

    async def _async_purge(_now: Any = None) -> None:
        await history.async_purge(dt_util.utcnow().timestamp())

    async_track_time_interval(hass, _async_purge, PURGE_INTERVAL, cancel_on_shutdown=True)
    hass.async_create_background_task(_async_purge(), f"{DOMAIN} history purge")
    async_register_history_services(hass, history)
    async_register_history_commands(hass, history)
    return history


async def async_apply_options(hass: HomeAssistant, options: dict[str, Any]) -> None:
    """The retention an options form handed over in an entry's options goes to the database.

    Pops it from options: the database keeps it, for every entry. A database that cannot
    take it now leaves it in options, so that the entry's next set-up tries again and the
    choice is not lost.
    """
    if CONF_HISTORY_RETENTION_DAYS not in options:
        return
    days = options.pop(CONF_HISTORY_RETENTION_DAYS)
    try:
        await hass.data[DATA_HISTORY].async_set_retention_days(float(days))
    except (TypeError, ValueError) as err:
        LOGGER.warning("History retention not carried over: %s", err)
    except HomeAssistantError as err:
        LOGGER.warning("History retention not saved now; tried again at the next reload: %s", err)
        options[CONF_HISTORY_RETENTION_DAYS] = days
