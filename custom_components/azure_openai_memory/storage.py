"""Home Assistant Store adapters: versioned files, bounded delayed saves, flush on stop.

Store.async_delay_save is a trailing debounce (a steady stream of calls postpones the
write for ever) and calls its data function in an executor thread. So we debounce
ourselves with a maximum wait, build the snapshot in the event loop, and hand Store a
finished dict. A corrupt file is renamed by Store (`<key>.corrupt.<time>`, with a
Repairs issue) and that part starts empty.
"""

import asyncio
from collections.abc import Callable
import logging
import time
from typing import Any

from homeassistant.const import EVENT_HOMEASSISTANT_FINAL_WRITE
from homeassistant.core import CALLBACK_TYPE, Event, HomeAssistant, callback
from homeassistant.helpers.event import async_call_later
from homeassistant.helpers.storage import Store

from .memory.timeseries import TimeSeries

_LOGGER = logging.getLogger(__name__)

SAVE_DELAY = 10.0
MAX_SAVE_WAIT = 30.0


class _VersionedStore(Store[dict[str, Any]]):
    """A Store whose migrations live with the data they migrate."""

    def __init__(
        self,
        hass: HomeAssistant,
        version: int,
        key: str,
        migrate: Callable[[int, dict[str, Any]], dict[str, Any]] | None,
    ) -> None:
        super().__init__(hass, version, key, private=True, atomic_writes=True)
        self._migrate = migrate

    async def _async_migrate_func(
        self, old_major_version: int, old_minor_version: int, old_data: dict[str, Any]
    ) -> dict[str, Any]:
        if self._migrate is None:
            raise NotImplementedError
        return self._migrate(old_major_version, old_data)


class DebouncedStore:
    """One JSON file, written at most every SAVE_DELAY and never later than MAX_SAVE_WAIT."""

    def __init__(
        self,
        hass: HomeAssistant,
        key: str,
        snapshot: Callable[[], dict[str, Any]],
        *,
        version: int = 1,
        migrate: Callable[[int, dict[str, Any]], dict[str, Any]] | None = None,
        delay: float = SAVE_DELAY,
        max_wait: float = MAX_SAVE_WAIT,
    ) -> None:
        self.hass = hass
        self._store = _VersionedStore(hass, version, key, migrate)
        self._snapshot = snapshot
        self._delay = delay
        self._max_wait = max_wait
        self._dirty_since: float | None = None
        self._cancel_timer: CALLBACK_TYPE | None = None
        self._cancel_final_write: CALLBACK_TYPE | None = None
        self._closed = False

    @property
    def path(self) -> str:
        """Where the file lives."""
        return str(self._store.path)

    async def async_load(self) -> dict[str, Any]:
        """The stored data, or an empty dict when there is none (or it was corrupt)."""
        self._cancel_final_write = self.hass.bus.async_listen_once(
            EVENT_HOMEASSISTANT_FINAL_WRITE, self._async_final_write
        )
        return await self._store.async_load() or {}

    @callback
    def async_schedule_save(self) -> None:
        """Note a change; the write follows after a quiet spell, or at the latest max_wait."""
        if self._closed:
            # A late answer finishing after unload: the reloaded entry owns the file now.
            return
        now = time.monotonic()
        if self._dirty_since is None:
            self._dirty_since = now
        if self._cancel_timer is not None:
            self._cancel_timer()
        wait = min(self._delay, max(0.0, self._dirty_since + self._max_wait - now))
        self._cancel_timer = async_call_later(self.hass, wait, self._async_timer_fired)

    async def _async_timer_fired(self, _now: Any) -> None:
        self._cancel_timer = None
        await self.async_flush()

    async def async_flush(self) -> None:
        """Write now if anything changed."""
        if self._cancel_timer is not None:
            self._cancel_timer()
            self._cancel_timer = None
        if self._dirty_since is None:
            return
        self._dirty_since = None
        await self._store.async_save(self._snapshot())

    async def _async_final_write(self, _event: Event) -> None:
        self._cancel_final_write = None
        await self.async_flush()

    async def async_close(self) -> None:
        """Flush and stop listening (entry unload)."""
        self._closed = True
        if self._cancel_final_write is not None:
            self._cancel_final_write()
            self._cancel_final_write = None
        await self.async_flush()

    async def async_remove(self) -> None:
        """Delete the file (entry removal)."""
        await self.async_close()
        await self._store.async_remove()


class TimeseriesStore:
    """Every time series: one Store file per key, an index of keys, a lock per key."""

    def __init__(self, hass: HomeAssistant, prefix: str) -> None:
        self.hass = hass
        self._prefix = prefix
        self._keys: set[str] = set()
        self._series: dict[str, TimeSeries] = {}
        self._stores: dict[str, DebouncedStore] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._index = DebouncedStore(hass, prefix, lambda: {"keys": sorted(self._keys)})

    async def async_load(self) -> None:
        """Read the index; series themselves load on first use."""
        self._keys = set((await self._index.async_load()).get("keys", []))

    def known_keys(self) -> list[str]:
        """Every known key, sorted."""
        return sorted(self._keys)

    def lock(self, key: str) -> asyncio.Lock:
        """Merges into one key run one at a time; none is lost."""
        return self._locks.setdefault(key, asyncio.Lock())

    def _store(self, key: str) -> DebouncedStore:
        if (store := self._stores.get(key)) is None:
            series = self._series
            store = self._stores[key] = DebouncedStore(
                self.hass, f"{self._prefix}.{key}", lambda: series[key].as_dict()
            )
        return store

    async def async_get(self, key: str, create: bool = False) -> TimeSeries | None:
        """The series of a key, loaded from disk in the executor; call under its lock."""
        if (series := self._series.get(key)) is not None:
            return series
        if key not in self._keys and not create:
            return None
        data = await self._store(key).async_load()
        series = await self.hass.async_add_executor_job(TimeSeries.from_dict, key, data)
        self._series[key] = series
        return series

    @callback
    def async_changed(self, key: str) -> None:
        """A series changed: save it (and the index, for a new key) soon."""
        if key not in self._keys:
            self._keys.add(key)
            self._index.async_schedule_save()
        self._store(key).async_schedule_save()

    async def async_close(self) -> None:
        """Write everything pending."""
        for store in (*self._stores.values(), self._index):
            await store.async_close()
