"""Every time series of the home: one Store file per key, an index, a lock per key."""

import asyncio
from collections import OrderedDict
import logging
from typing import Any

from homeassistant.core import HomeAssistant, callback

from ..lib.series.store import SERIES_VERSION, Series, SeriesSettings, migrate_series
from ..storage import DebouncedStore, backup_holds

_LOGGER = logging.getLogger(__name__)

# What loaded time series may hold, estimated; the least recently used leave beyond it.
DEFAULT_MEMORY_BUDGET = 32 * 2**20
# 2: each key's summary and own cap, and the installation's series settings.
INDEX_VERSION = 2
# What timeseries_list reports of a series besides its key.
SUMMARY_FIELDS = ("count", "oldest", "newest", "covered")


def _migrate_index(version: int, data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 listed keys only; their summaries are unknown until first listed."""
    if version > INDEX_VERSION:
        raise ValueError(f"time series index stored by a newer version ({version})")
    if version < 2:
        return {"series": dict.fromkeys(data.get("keys", []))}
    return data


def _record(series: Series) -> dict[str, Any]:
    """What the index keeps of a series: its summary, and its own cap if it has one."""
    summary = series.summary()
    return {
        **{name: summary[name] for name in SUMMARY_FIELDS},
        "max_entries": series.max_entries,
    }


def _valid_record(record: Any) -> bool:
    return isinstance(record, dict) and all(
        name in record for name in (*SUMMARY_FIELDS, "max_entries")
    )


class SeriesStore:
    """Every time series: one Store file per key, an index that answers listing, a lock per key.

    A year of merges into a hundred series does not fit a small home server, so the
    index carries each series' summary (listing loads nothing) and loaded series leave
    memory least recently used first once their estimated size passes the memory
    budget. A series leaves only with its pending write on disk and while nobody holds
    its lock: eviction loses no write and pulls no series from under a caller; the next
    use reloads it.

    The series settings live here, not in an entry's options: the series are the
    home's. A lowered cap applies at once to every series without a cap of its own.
    """

    def __init__(
        self,
        hass: HomeAssistant,
        prefix: str,
        *,
        memory_budget: int = DEFAULT_MEMORY_BUDGET,
        defaults: SeriesSettings | None = None,
    ) -> None:
        self.hass = hass
        self._prefix = prefix
        self._budget = memory_budget
        self._defaults = defaults or SeriesSettings()
        self._settings = self._defaults
        self._settings_stored = False
        # key -> its index record; None while unknown (an index written by version 1).
        # Records are replaced, never changed in place: a snapshot may be being written.
        self._records: dict[str, dict[str, Any] | None] = {}
        self._series: OrderedDict[str, Series] = OrderedDict()  # least recent first
        self._sizes: dict[str, int] = {}
        self._resident = 0
        self._stores: dict[str, DebouncedStore] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._trimming: asyncio.Task[None] | None = None
        self._trim_again = False
        self._capping: asyncio.Task[None] | None = None
        self._index = DebouncedStore(
            hass, prefix, self._index_snapshot, version=INDEX_VERSION, migrate=_migrate_index
        )

    async def async_load(self) -> None:
        """Read the index; series themselves load on first use."""
        data = await self._index.async_load()
        series = data.get("series")
        if isinstance(series, dict):
            self._records = {
                key: record if _valid_record(record) else None for key, record in series.items()
            }
        if "settings" in data:
            self._settings = SeriesSettings.from_dict(data["settings"], self._defaults)
            self._settings_stored = True

    def _index_snapshot(self) -> dict[str, Any]:
        data: dict[str, Any] = {"series": dict(self._records)}
        if self._settings_stored:
            data["settings"] = self._settings.as_dict()
        return data

    @property
    def settings(self) -> SeriesSettings:
        """The installation's series settings."""
        return self._settings

    @property
    def settings_stored(self) -> bool:
        """Whether settings were ever saved here; False while only entry options had them."""
        return self._settings_stored

    @callback
    def async_update_settings(self, settings: SeriesSettings) -> None:
        """Keep new settings; a lowered cap trims every series without its own, soon."""
        if settings == self._settings and self._settings_stored:
            return
        lowered = settings.max_entries < self._settings.max_entries
        self._settings = settings
        self._settings_stored = True
        self._index.async_schedule_save()
        if lowered:
            self._capping = self.hass.async_create_task(
                self._async_apply_cap(), f"{self._prefix} apply max_entries"
            )

    async def _async_apply_cap(self) -> None:
        for key, record in list(self._records.items()):
            cap = self._settings.max_entries
            if record is not None and (record["max_entries"] is not None or record["count"] <= cap):
                continue
            async with self.lock(key):
                series = await self.async_get(key)
                if series is not None and series.max_entries is None and series.enforce_cap(cap):
                    self.async_changed(key)

    def known_keys(self) -> list[str]:
        """Every known key, sorted."""
        return sorted(self._records)

    def loaded_keys(self) -> list[str]:
        """Keys whose series is in memory, least recently used first."""
        return list(self._series)

    @property
    def memory_used(self) -> int:
        """Estimated bytes of the series in memory."""
        return self._resident

    def lock(self, key: str) -> asyncio.Lock:
        """Merges into one key run one at a time; none is lost."""
        return self._locks.setdefault(key, asyncio.Lock())

    def _store(self, key: str) -> DebouncedStore:
        if (store := self._stores.get(key)) is None:
            series = self._series
            store = self._stores[key] = DebouncedStore(
                self.hass,
                f"{self._prefix}.{key}",
                lambda: series[key].as_dict(),
                version=SERIES_VERSION,
                migrate=migrate_series,
            )
        return store

    async def async_get(self, key: str, create: bool = False) -> Series | None:
        """The series of a key, loaded from disk in the executor; call under its lock."""
        if (series := self._series.get(key)) is not None:
            self._series.move_to_end(key)
            return series
        if key not in self._records and not create:
            return None
        file = self._store(key)
        data = await file.async_load()
        try:
            series = await self.hass.async_add_executor_job(Series.from_dict, key, data)
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            # JSON, but not a series: kept aside like an unreadable file, the key starts empty.
            await file.async_set_aside(f"{type(err).__name__}: {err}")
            series = await self.hass.async_add_executor_job(Series.from_dict, key, {})
        self._series[key] = series
        self._account(key, series)
        if key in self._records:
            self._refresh_record(key, series)
            self._schedule_trim()
        else:
            self._schedule_trim(force=True)  # dropped unless a change records it
        return series

    async def async_summaries(self) -> list[dict[str, Any]]:
        """What timeseries_list reports of every series, from the index.

        Only a series the index has no summary of (an index from version 1) is loaded,
        once: its summary is kept from then on.
        """
        for key in [key for key, record in self._records.items() if record is None]:
            async with self.lock(key):
                if self._records.get(key, {}) is None:
                    await self.async_get(key)
        return [
            {"key": key, **{name: record[name] for name in SUMMARY_FIELDS}}
            for key, record in sorted(self._records.items())
            if record is not None
        ]

    @callback
    def async_changed(self, key: str) -> None:
        """A loaded series changed: save it and its index record soon; call under its lock."""
        series = self._series[key]
        self._refresh_record(key, series)
        self._account(key, series)
        self._store(key).async_schedule_save()
        self._schedule_trim()

    @callback
    def _refresh_record(self, key: str, series: Series) -> None:
        record = _record(series)
        if self._records.get(key) != record:
            self._records[key] = record
            self._index.async_schedule_save()

    @callback
    def _account(self, key: str, series: Series) -> None:
        size = series.memory_estimate()
        self._resident += size - self._sizes.get(key, 0)
        self._sizes[key] = size

    @callback
    def _schedule_trim(self, force: bool = False) -> None:
        """Trim soon: after the caller, who holds a lock now, has let go of it."""
        if not force and self._resident <= self._budget:
            return
        if self._trimming is not None and not self._trimming.done():
            self._trim_again = True
            return
        self._trimming = self.hass.async_create_task(
            self._async_trim(), f"{self._prefix} memory trim", eager_start=False
        )

    async def _async_trim(self) -> None:
        if backup_holds(self.hass):
            # An eviction writes its series first, which waits for the backup while the
            # series' lock is held: the next load or change after the backup trims.
            return
        self._trim_again = True
        while self._trim_again:
            self._trim_again = False
            # A series loaded but never recorded is one a merge refused: nothing to keep.
            for key in [key for key in self._series if key not in self._records]:
                # Checked again: an earlier eviction's write let other calls run.
                if key not in self._records and not self.lock(key).locked():
                    await self._async_evict(key)
            while self._resident > self._budget:
                victim = next((k for k in self._series if not self.lock(k).locked()), None)
                if victim is None:
                    break  # every loaded series is in use; the next load or change trims
                await self._async_evict(victim)

    async def _async_evict(self, key: str) -> None:
        """Write what is pending, then forget the series; it reloads on next use."""
        async with self.lock(key):  # free when called: taken at once, held while writing
            if (store := self._stores.get(key)) is not None:
                await store.async_close()
                del self._stores[key]
            if (series := self._series.pop(key, None)) is not None:
                self._resident -= self._sizes.pop(key)
                _LOGGER.debug(
                    "Time series %s left memory (%d entries, ~%d kB; %d kB still loaded)",
                    key,
                    len(series),
                    series.memory_estimate() // 1024,
                    self._resident // 1024,
                )

    async def async_flush(self) -> None:
        """Write everything pending now, and stay open."""
        for store in (*self._stores.values(), self._index):
            await store.async_flush()

    async def async_close(self) -> None:
        """Write everything pending."""
        for task in (self._capping, self._trimming):
            if task is not None:
                await task
        for store in (*self._stores.values(), self._index):
            await store.async_close()
