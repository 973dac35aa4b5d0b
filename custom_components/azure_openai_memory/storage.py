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
import os
import shutil
import time
from typing import Any

from homeassistant.const import EVENT_HOMEASSISTANT_FINAL_WRITE
from homeassistant.core import CALLBACK_TYPE, CoreState, Event, HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.event import async_call_later
from homeassistant.helpers.storage import Store
from homeassistant.util import dt as dt_util

from .const import DOMAIN

_LOGGER = logging.getLogger(__name__)

SAVE_DELAY = 10.0
MAX_SAVE_WAIT = 30.0
# The Repairs issue (strings.json "issues") for a file moved aside; its id is corrupt_<key>.
CORRUPT_FILE_ISSUE = "corrupt_file"


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
    """One JSON file, written at most every SAVE_DELAY and never later than MAX_SAVE_WAIT.

    snapshot gives the data in the event loop, or a function that makes it in the
    executor (for data too large to make in the loop).
    """

    def __init__(
        self,
        hass: HomeAssistant,
        key: str,
        snapshot: Callable[[], dict[str, Any] | Callable[[], dict[str, Any]]],
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
        # Held: never written (what is in memory was not read from the file).
        self._held = False
        # One write at a time: a flush waits for the one under way, then sees what is left.
        self._writing = asyncio.Lock()

    @property
    def path(self) -> str:
        """Where the file lives."""
        return str(self._store.path)

    async def async_load(self) -> dict[str, Any]:
        """The stored data, or an empty dict when there is none (or it was corrupt)."""
        if self._cancel_final_write is None:
            # A time series is loaded again after each eviction: one listener is enough.
            self._cancel_final_write = self.hass.bus.async_listen_once(
                EVENT_HOMEASSISTANT_FINAL_WRITE, self._async_final_write
            )
        try:
            data = await self._store.async_load()
        except (HomeAssistantError, OSError, KeyError, TypeError, ValueError) as err:
            # Store renames a file that is not JSON itself; this is one it could not use.
            await self.async_set_aside(str(err) or type(err).__name__)
            return {}
        if data is not None and not isinstance(data, dict):
            await self.async_set_aside(f"expected an object, found {type(data).__name__}")
            return {}
        return data or {}

    async def async_set_aside(self, reason: str) -> None:
        """Move an unreadable file aside (never delete it), say so in Repairs, start empty."""
        path = self.path
        moved_to = f"{path}.corrupt.{dt_util.utcnow().strftime('%Y%m%dT%H%M%S')}"
        try:
            await self.hass.async_add_executor_job(os.replace, path, moved_to)
        except OSError as err:
            moved_to = f"(could not be moved: {err.strerror or err})"
        _LOGGER.error(
            "%s could not be read (%s); kept as %s, starting empty", path, reason, moved_to
        )
        ir.async_create_issue(
            self.hass,
            DOMAIN,
            f"corrupt_{self._store.key}",
            is_fixable=False,
            is_persistent=False,
            severity=ir.IssueSeverity.ERROR,
            translation_key=CORRUPT_FILE_ISSUE,
            translation_placeholders={"file": path, "moved_to": moved_to, "error": reason},
        )

    async def async_keep_copy(self, reason: str) -> str:
        """Copy the file aside (it stays in use): part of it could not be read, and the
        next save would write it without that part. Returns where the copy went."""
        path = self.path
        copy_to = f"{path}.corrupt.{dt_util.utcnow().strftime('%Y%m%dT%H%M%S')}"
        try:
            await self.hass.async_add_executor_job(shutil.copy2, path, copy_to)
        except OSError as err:
            copy_to = f"(could not be copied: {err.strerror or err})"
        _LOGGER.warning("%s: %s; the whole file was kept as %s", path, reason, copy_to)
        return copy_to

    @callback
    def async_hold(self) -> None:
        """Never write the file: the data it would be written from was not read from it
        (a stop while it was being read), so writing would replace it with less."""
        self._held = True
        self._dirty_since = None

    @callback
    def async_schedule_save(self) -> None:
        """Note a change; the write follows after a quiet spell, or at the latest max_wait."""
        if self._closed or self._held:
            # A late answer finishing after unload: the reloaded entry owns the file now.
            return
        if self.hass.state in (CoreState.final_write, CoreState.not_running):
            # A change made after Home Assistant's final write (work that ended during the
            # stop) is written at once: no timer would fire any more.
            self._dirty_since = time.monotonic()
            self.hass.async_create_task(self.async_flush(), f"{DOMAIN} late write")
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
        """Write now if anything changed (after a write under way, never beside it)."""
        if self._cancel_timer is not None:
            self._cancel_timer()
            self._cancel_timer = None
        async with self._writing:
            if self._dirty_since is None or self._held:
                return
            self._dirty_since = None
            data = self._snapshot()
            if callable(data):
                # A large store's data is made in the executor from what it took in the loop.
                data = await self.hass.async_add_executor_job(data)
            await self._store.async_save(data)

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
