"""Home Assistant Store adapters: versioned files, bounded delayed saves, flush on stop.

Store.async_delay_save is a trailing debounce (a steady stream of calls postpones the
write for ever) and calls its data function in an executor thread. So we debounce
ourselves with a maximum wait, build the snapshot in the event loop, and hand Store a
finished dict. A corrupt file is renamed by Store (`<key>.corrupt.<time>`, with a
Repairs issue) and that part starts empty.

A write whose result is known: Store logs a failed write and drops it. Ours learns the
outcome of every attempt (_VersionedStore); on a failure (no space, a read-only file
system, no permission) the data stays where it lives, in memory, and the file is written
again after RETRY_FIRST seconds, then twice as long each time up to RETRY_AT_MOST, with a
Repairs issue naming the file and the error that goes as soon as a write succeeds.
Stopping Home Assistant tries once more, and logs what could not be written.

Every live file of a Home Assistant is known here (its_files), so that a backup can write
what is pending in all of them and then hold their writes until it has copied them
(async_hold_files, async_release_files): a file replaced while the backup reads it would
be copied torn, or make the whole backup fail.
"""

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
import logging
import os
import shutil
import time
from typing import Any
import weakref

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
# A failed write is tried again after RETRY_FIRST seconds, then after twice as long each
# time, never more than RETRY_AT_MOST apart.
RETRY_FIRST = 5.0
RETRY_AT_MOST = 300.0
# The Repairs issue (strings.json "issues") for a file moved aside; its id is corrupt_<key>.
CORRUPT_FILE_ISSUE = "corrupt_file"
# The Repairs issue for a file that cannot be written; its id is write_failed_<key>.
WRITE_FAILED_ISSUE = "store_write_failed"
# Home Assistant's states in which no timer fires any more: a write is now or never.
_LAST_WRITES = (CoreState.final_write, CoreState.not_running)


@dataclass
class _Files:
    """The live files of one Home Assistant, and whether a backup holds their writes."""

    stores: "weakref.WeakSet[DebouncedStore]" = field(default_factory=weakref.WeakSet)
    held: bool = False
    released: asyncio.Event = field(default_factory=asyncio.Event)


_FILES: "weakref.WeakKeyDictionary[HomeAssistant, _Files]" = weakref.WeakKeyDictionary()


def its_files(hass: HomeAssistant) -> _Files:
    """The live files of this Home Assistant."""
    if (files := _FILES.get(hass)) is None:
        files = _FILES[hass] = _Files()
        files.released.set()
    return files


async def async_hold_files(hass: HomeAssistant) -> None:
    """Write every pending change of every file now, then hold further writes (the data
    stays in memory, where every read finds it) until async_release_files."""
    files = its_files(hass)
    files.held = True
    files.released.clear()
    # Held first, then written: no timer starts a write of its own meanwhile, so once
    # these are done nothing is being written.
    stores = list(files.stores)
    results = await asyncio.gather(
        *(store.async_flush(through_hold=True) for store in stores), return_exceptions=True
    )
    for store, result in zip(stores, results, strict=True):
        if isinstance(result, Exception):
            _LOGGER.error("%s could not be written before a backup: %r", store.path, result)


def backup_holds(hass: HomeAssistant) -> bool:
    """Whether a backup holds the files' writes now."""
    return its_files(hass).held


@callback
def async_release_files(hass: HomeAssistant) -> None:
    """Let the files be written again; what changed while they were held is written now."""
    files = its_files(hass)
    if not files.held:
        return
    files.held = False
    files.released.set()
    for store in list(files.stores):
        store.async_released()


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
        # Told the outcome of every write attempt: None, or what failed.
        self.on_written: Callable[[Exception | None], None] = lambda _err: None

    async def _async_write_data(self, *args: Any) -> None:
        """Store's write, whose outcome Store would only log: it is handed on instead."""
        try:
            await super()._async_write_data(*args)
        except (HomeAssistantError, OSError, TypeError, ValueError) as err:
            # WriteError (an OSError inside), SerializationError, a folder not made.
            self.on_written(err)
        else:
            self.on_written(None)

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
        self._store.on_written = self._async_written
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
        # The error of the last write while writes fail (None: the last one worked), and
        # the wait before the next attempt.
        self._failure: str | None = None
        self._retry_in = RETRY_FIRST
        self._files = its_files(hass)
        self._files.stores.add(self)

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
        if self._failure is not None and self._cancel_timer is not None:
            return  # the next attempt is already set, after its back-off
        if self._cancel_timer is not None:
            self._cancel_timer()
        wait = min(self._delay, max(0.0, self._dirty_since + self._max_wait - now))
        self._cancel_timer = async_call_later(self.hass, wait, self._async_timer_fired)

    async def _async_timer_fired(self, _now: Any) -> None:
        self._cancel_timer = None
        await self.async_flush()

    def _backup_holds(self) -> bool:
        """Whether a backup holds the writes now; never at Home Assistant's last writes."""
        return self._files.held and self.hass.state not in _LAST_WRITES

    async def async_flush(self, *, through_hold: bool = False) -> None:
        """Write now if anything changed (after a write under way, never beside it).

        While a backup holds the writes, the change stays pending and is written when it
        lets go (through_hold: the backup's own write before it starts holding). A
        closing store waits for that: nothing holds it afterwards.
        """
        if self._cancel_timer is not None:
            self._cancel_timer()
            self._cancel_timer = None
        if self._closed and not through_hold and self._backup_holds():
            await self._files.released.wait()
        async with self._writing:
            if self._dirty_since is None or self._held:
                return
            if not through_hold and self._backup_holds():
                return  # written by async_released
            self._dirty_since = None
            data = self._snapshot()
            if callable(data):
                # A large store's data is made in the executor from what it took in the loop.
                data = await self.hass.async_add_executor_job(data)
            # A failed attempt (see _async_written) marks the store dirty again.
            await self._store.async_save(data)

    @callback
    def async_released(self) -> None:
        """The backup let go: what changed while it held the writes is written now."""
        if self._dirty_since is None:
            return
        self._dirty_since = min(self._dirty_since, time.monotonic() - self._max_wait)
        if self._cancel_timer is not None:
            self._cancel_timer()
            self._cancel_timer = None
        self.async_schedule_save()  # due at once: its longest wait is over

    @callback
    def _async_written(self, err: Exception | None) -> None:
        """The outcome of a write attempt: a failure keeps the change pending and tries
        again after a back-off, with a Repairs issue; a success clears both."""
        issue_id = f"write_failed_{self._store.key}"
        if err is None:
            if self._failure is not None:
                _LOGGER.info("%s is written again", self.path)
                ir.async_delete_issue(self.hass, DOMAIN, issue_id)
            self._failure = None
            self._retry_in = RETRY_FIRST
            return
        error = str(err) or type(err).__name__
        if self.hass.state in (CoreState.stopping, *_LAST_WRITES) or self._closed:
            # That was the last attempt (Home Assistant stops, or the entry unloads):
            # what the file did not take is lost, and the log says so, once.
            _LOGGER.error(
                "%s could not be written as it closed (%s); what changed in it since it "
                "was last written is lost",
                self.path,
                error,
            )
            self._failure = error
            return
        if self._dirty_since is None:
            self._dirty_since = time.monotonic()
        if self._failure != error:
            _LOGGER.warning(
                "%s could not be written (%s); the data stays in memory and is written "
                "again in %.0f s",
                self.path,
                error,
                self._retry_in,
            )
            ir.async_create_issue(
                self.hass,
                DOMAIN,
                issue_id,
                is_fixable=False,
                is_persistent=False,
                severity=ir.IssueSeverity.ERROR,
                translation_key=WRITE_FAILED_ISSUE,
                translation_placeholders={"file": self.path, "error": error},
            )
        self._failure = error
        if self._cancel_timer is not None:
            self._cancel_timer()
        self._cancel_timer = async_call_later(self.hass, self._retry_in, self._async_timer_fired)
        self._retry_in = min(self._retry_in * 2, RETRY_AT_MOST)

    async def _async_final_write(self, _event: Event) -> None:
        self._cancel_final_write = None
        await self.async_flush()

    async def async_close(self) -> None:
        """Flush and stop listening (entry unload); a file that cannot be written is
        tried once more and what it held is logged as lost."""
        self._closed = True
        if self._cancel_final_write is not None:
            self._cancel_final_write()
            self._cancel_final_write = None
        await self.async_flush()
        if self._cancel_timer is not None:  # a retry after a failure: no more
            self._cancel_timer()
            self._cancel_timer = None
        self._files.stores.discard(self)

    async def async_remove(self) -> None:
        """Delete the file (entry removal)."""
        await self.async_close()
        await self._store.async_remove()
