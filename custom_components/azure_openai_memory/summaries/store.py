"""The installation's summaries and group profiles, in one versioned Store file."""

from homeassistant.core import HomeAssistant, callback

from ..lib.summaries.book import SUMMARIES_VERSION, SummaryBook, migrate_summaries
from ..storage import DebouncedStore


class SummaryStore:
    """The installation's summaries and group profiles: one versioned file.

    A cycle changes many summaries at once; each change schedules the save, which the
    bounded debounce turns into one write. The book is replaced only on load.
    """

    def __init__(self, hass: HomeAssistant, key: str) -> None:
        self.book = SummaryBook()
        self._file = DebouncedStore(
            hass,
            key,
            lambda: self.book.as_dict(),
            version=SUMMARIES_VERSION,
            migrate=migrate_summaries,
        )

    async def async_load(self) -> None:
        """Read the file; an unusable one is set aside (kept) and the book starts empty."""
        data = await self._file.async_load()
        try:
            self.book = SummaryBook.from_dict(data)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            await self._file.async_set_aside(str(err) or type(err).__name__)
            self.book = SummaryBook()

    @callback
    def async_changed(self) -> None:
        """Something changed: write soon (at the latest MAX_SAVE_WAIT from now)."""
        self._file.async_schedule_save()

    async def async_flush(self) -> None:
        """Write now what is pending."""
        await self._file.async_flush()

    async def async_close(self) -> None:
        """Write what is pending and stop listening for the final write."""
        await self._file.async_close()
