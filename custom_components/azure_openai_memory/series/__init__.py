"""Time series: what automations fetched, merged per key, with exact coverage and gaps.

The series are the home's, not one Azure resource's: one store for the installation, set
up with the integration, and services that name no entry.
"""

from typing import Any

from homeassistant.core import HomeAssistant

from ..const import (
    CONF_TIMESERIES_KEEP_DAYS,
    CONF_TIMESERIES_MAX_ENTRIES,
    DOMAIN,
    LOGGER,
    RECOMMENDED_TIMESERIES_KEEP_DAYS,
    RECOMMENDED_TIMESERIES_MAX_ENTRIES,
)
from ..data import DATA_SERIES
from ..history.recorder import HistoryRecorder
from ..lib.series.store import SeriesSettings
from .services import async_register_series_services
from .store import SeriesStore
from .websocket import async_register_series_commands


async def async_setup_series(hass: HomeAssistant, history: HistoryRecorder) -> None:
    """Load the series' index (series load on first use) and register the services."""
    store = SeriesStore(
        hass,
        f"{DOMAIN}.timeseries",
        defaults=SeriesSettings(
            max_entries=RECOMMENDED_TIMESERIES_MAX_ENTRIES,
            keep_days=float(RECOMMENDED_TIMESERIES_KEEP_DAYS),
        ),
    )
    await store.async_load()
    hass.data[DATA_SERIES] = store
    async_register_series_services(hass, store, history)
    async_register_series_commands(hass, store)


SETTING_KEYS = (CONF_TIMESERIES_MAX_ENTRIES, CONF_TIMESERIES_KEEP_DAYS)


def async_take_options(hass: HomeAssistant, options: dict[str, Any]) -> None:
    """Series settings an old entry kept in its options move to the series' store.

    Pops them from options. With several entries the first one migrated gives its values,
    and a store that has settings of its own keeps them.
    """
    if hass.data[DATA_SERIES].settings_stored:
        for key in SETTING_KEYS:
            options.pop(key, None)
        return
    async_apply_options(hass, options)


def async_apply_options(hass: HomeAssistant, options: dict[str, Any]) -> None:
    """Series settings an options form handed over in an entry's options go to the store.

    Pops them from options: the store is where they are kept. Unlike the migration, a
    value handed over is the user's latest choice and replaces what the store has.
    """
    old = {key: options.pop(key) for key in SETTING_KEYS if key in options}
    if not old:
        return
    store = hass.data[DATA_SERIES]
    current = store.settings
    try:
        settings = SeriesSettings(
            max_entries=int(old.get(CONF_TIMESERIES_MAX_ENTRIES, current.max_entries)),
            keep_days=float(old.get(CONF_TIMESERIES_KEEP_DAYS, current.keep_days)),
        )
    except (TypeError, ValueError) as err:
        LOGGER.warning("Time series settings not carried over: %s", err)
    else:
        store.async_update_settings(settings)
