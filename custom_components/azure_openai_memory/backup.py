"""Home Assistant backups: every file of ours is copied whole and up to date.

Before the copy (async_pre_backup) every pending delayed write of every file is written
(memories, windows, summaries, each series and the series' index), and the history
commits what is queued and copies its log into the database, so that the copy needs no
`-wal` file. Then nothing of ours is written until the copy is taken
(async_post_backup, called by Home Assistant whether the backup succeeded, failed or was
cancelled): what is said and saved meanwhile waits in memory, where every read finds
it, and is written then. A hold never lasts longer than HOLD_AT_MOST: a backup that never
ends must not stop the memory for good.
"""

import logging
import time
import weakref

from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers.event import async_call_later

from .data import DATA_HISTORY
from .storage import async_hold_files, async_release_files

_LOGGER = logging.getLogger(__name__)

# The longest a backup holds the writes, in seconds; then they go on, backup or not.
HOLD_AT_MOST = 300.0


class _Hold:
    """One backup's hold of the writes: its bound, and when it began."""

    def __init__(self) -> None:
        self.cancel_bound: CALLBACK_TYPE | None = None
        self.since: float | None = None


_HOLDS: "weakref.WeakKeyDictionary[HomeAssistant, _Hold]" = weakref.WeakKeyDictionary()


async def async_pre_backup(hass: HomeAssistant) -> None:
    """Write what is pending, make the history database whole, and hold the writes."""
    hold = _HOLDS.setdefault(hass, _Hold())
    if hold.cancel_bound is not None:
        hold.cancel_bound()
    hold.since = time.monotonic()

    @callback
    def _bound_reached(_now: object) -> None:
        hold.cancel_bound = None
        _LOGGER.warning(
            "A backup held the memory's writes for %.0f s without ending; they go on now",
            HOLD_AT_MOST,
        )
        _release(hass, hold)

    # Set first: whatever happens below, the hold ends by this time.
    hold.cancel_bound = async_call_later(hass, HOLD_AT_MOST, _bound_reached)
    try:
        await async_hold_files(hass)
        if (history := hass.data.get(DATA_HISTORY)) is not None:
            await history.async_hold_writes()
    except RuntimeError as err:
        # The history closed meanwhile (Home Assistant stops): nothing more is written
        # to it, and the household's backup goes on.
        _LOGGER.debug("History not held for a backup: %s", err)
    except BaseException:
        _release(hass, hold)
        raise
    _LOGGER.debug("Writes held for a backup")


async def async_post_backup(hass: HomeAssistant) -> None:
    """The copy is taken (or the backup failed): write what waited, and go on."""
    if (hold := _HOLDS.get(hass)) is None:
        return
    _release(hass, hold)


@callback
def _release(hass: HomeAssistant, hold: _Hold) -> None:
    if hold.cancel_bound is not None:
        hold.cancel_bound()
        hold.cancel_bound = None
    if (history := hass.data.get(DATA_HISTORY)) is not None:
        history.async_release_writes()
    async_release_files(hass)
    if hold.since is not None:
        _LOGGER.debug("Writes held for %.3f s for a backup", time.monotonic() - hold.since)
        hold.since = None
