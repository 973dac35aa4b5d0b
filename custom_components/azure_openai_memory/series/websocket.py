"""The series' WebSocket commands: each key's coverage and gaps, and its entries over time.

A listing reads the index only (no series is loaded): count, oldest and newest, the
windows fetched, and the gaps between them from the first fetch until now, found by the
same rule timeseries_query answers with. A series opened shows a page of its entries and
how many fall in each stretch of its range (a small chart), parsing only the page. Who may
read the series is the access policy's to say (access.py).
"""

from typing import Any

from homeassistant.core import Context, HomeAssistant, callback
from homeassistant.util import dt as dt_util
import voluptuous as vol

from ..lib.series.store import SeriesError, coverage_of, validate_key
from ..lib.times import format_time, parse_time
from ..panel.commands import (
    PAGE_SCHEMA,
    CommandSpec,
    async_register_commands,
    ensure,
    page_of,
    whole_number,
)
from ..people.access import access
from ..people.speakers import Speaker
from .store import SeriesStore

# Stretches a series' chart is split into, by default and at most.
DEFAULT_BUCKETS = 48
MAX_BUCKETS = 500
# What a series without any fetched window shows: the last day.
DEFAULT_SPAN = 86400.0


LIST_SCHEMA = dict(PAGE_SCHEMA)
ENTRIES_SCHEMA: dict[Any, Any] = {
    vol.Required("key"): str,
    vol.Optional("start_time"): vol.Any(str, int, float),
    vol.Optional("end_time"): vol.Any(str, int, float),
    vol.Optional("buckets", default=DEFAULT_BUCKETS): vol.All(
        whole_number, vol.Range(min=1, max=MAX_BUCKETS)
    ),
    **PAGE_SCHEMA,
}


def _as_stated(moment: float) -> float:
    """A time as an answer states it and a caller sends it back (to the microsecond)."""
    return parse_time(format_time(moment), dt_util.UTC)


def _span(covered: list[list[float]], oldest: float | None, now: float) -> tuple[float, float]:
    """From the first fetched window (or the oldest entry) until now."""
    firsts = [t for t in (covered[0][0] if covered else None, oldest) if t is not None]
    start = min(firsts) if firsts else now - DEFAULT_SPAN
    return _as_stated(min(start, now)), _as_stated(now)


def coverage_view(
    covered: list[list[float]], count: int, start: float, end: float
) -> dict[str, Any]:
    """Coverage and gaps of [start, end], as timeseries_query reports them."""
    coverage, gaps = coverage_of(covered, count > 0, start, end)
    return {
        "range": {"start": format_time(start), "end": format_time(end)},
        "coverage": coverage,
        "gaps": [{"start": format_time(a), "end": format_time(b)} for a, b in gaps],
    }


class SeriesCommands:
    """The commands, bound to the installation's series."""

    def __init__(self, store: SeriesStore) -> None:
        self.store = store

    async def list(self, speaker: Speaker, fields: dict[str, Any], _: Context) -> Any:
        """A page of keys with count, oldest, newest, fetched windows and gaps until now."""
        ensure(access(speaker).reads_series())
        offset, limit = page_of(fields)
        summaries = await self.store.async_summaries()
        now = dt_util.utcnow().timestamp()
        utc = dt_util.UTC
        shown = []
        for summary in summaries[offset : offset + limit]:
            covered = [
                [parse_time(w["start"], utc), parse_time(w["end"], utc)] for w in summary["covered"]
            ]
            oldest = parse_time(summary["oldest"], utc) if summary["oldest"] else None
            start, end = _span(covered, oldest, now)
            shown.append(
                {
                    **summary,
                    **coverage_view(covered, summary["count"], start, end),
                }
            )
        return {"series": shown, "total": len(summaries)}

    async def entries(self, speaker: Speaker, fields: dict[str, Any], _: Context) -> Any:
        """A page of a series' entries (newest first) in a range, its coverage and gaps
        there, and how many entries fall in each of `buckets` stretches of it."""
        ensure(access(speaker).reads_series())
        offset, limit = page_of(fields)
        key = validate_key(fields["key"])
        tz = dt_util.get_default_time_zone()
        async with self.store.lock(key):
            series = await self.store.async_get(key)
            if series is None:
                raise SeriesError("unknown_series", key=key)
            now = dt_util.utcnow().timestamp()
            oldest = series.state_range()["oldest"]
            start, end = _span(series.covered, parse_time(oldest, tz) if oldest else None, now)
            if "start_time" in fields:
                start = parse_time(fields["start_time"], tz, "start_time")
            if "end_time" in fields:
                end = parse_time(fields["end_time"], tz, "end_time")
            if start > end:
                raise SeriesError("start_after_end")
            entries, total = series.entries_page(start, end, offset, limit)
            bridged = series.bridged
            return {
                "key": key,
                "entries": entries,
                "total": total,
                "count": len(series),
                **series.state_range(),
                **coverage_view(series.covered, len(series), start, end),
                "coverage_approximate": bridged is not None
                and bridged[0] < end
                and bridged[1] > start,
                "counts": series.counts(start, end, fields["buckets"]),
                "timestamp_field": series.timestamp_field,
                "id_field": series.id_field,
            }


@callback
def async_register_series_commands(hass: HomeAssistant, store: SeriesStore) -> None:
    """series/list, series/entries."""
    commands = SeriesCommands(store)
    async_register_commands(
        hass,
        (
            CommandSpec("series/list", commands.list, LIST_SCHEMA),
            CommandSpec("series/entries", commands.entries, ENTRIES_SCHEMA),
        ),
    )
