"""Time-series accumulation: merge with deduplication, exact coverage, gaps.

Judging coverage by the oldest entry alone would call a range "full" when the store has a
hole in the middle. Here the windows a caller actually fetched are kept as
merged intervals, and a query answers from them: coverage, and the exact gaps to fetch.

Entries are kept as compact JSON text (one string each) with a sorted (time, id) index:
a parsed dict per entry would cost more than three times the file's size, while a
query parses only the entries it returns.

The series belong to the home, and so do their settings (SeriesSettings): one cap
per series and one retention for cleanup, kept by the store of all series. A series
may carry its own cap (max_entries, set by a merge call); without one it follows the
installation's setting, including later changes of it.
"""

from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, timedelta, tzinfo
from heapq import heapify, heappop, heappush
from itertools import pairwise
import math
import re
import sys
from typing import Any

import orjson

from ..errors import InputError
from ..times import EARLIEST, LATEST, TimeInputError, canonical_time, format_time, parse_time

MAX_ENTRIES_PER_CALL = 10_000
# Uncovered stretches shorter than this are not reported as gaps (see _gaps).
MIN_GAP_SECONDS = 1.0
# Fetched windows that never touch stay one interval each, and every merge, listing and
# stored file pays for all of them: beyond this many per series the two closest
# neighbours become one, and queries over the bridged stretch say coverage is approximate.
MAX_COVERAGE_INTERVALS = 1_000
# The defaults of the installation's series settings; const.py offers them as its
# RECOMMENDED_ values.
DEFAULT_MAX_ENTRIES = 10_000
DEFAULT_KEEP_DAYS = 90.0
# The version of a series' stored form; 2: max_entries is the series' own cap or null.
SERIES_VERSION = 2
# What one entry costs beyond its two strings (blob and id, measured with sys.getsizeof):
# its slots in the two dicts and the sorted list, the (time, id) tuple and the float.
# 130 to 165 bytes measured with tracemalloc on CPython 3.13, depending on how full the
# dicts' tables are; rounded up, since the budget should rather hold too little than
# too much (tests/lib/series/test_timeseries.py checks the estimate).
ENTRY_OVERHEAD = 180
KEY_PATTERN = re.compile(r"^[a-z0-9](?:[a-z0-9_]{0,126}[a-z0-9])?$")
_LAST_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)?\s*([a-z]+)\s*$")
_UNITS = {
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "week": 604800, "weeks": 604800,
}  # fmt: skip
_FIRST_BULK = 16


class SeriesError(InputError):
    """Bad input to a time series."""


@dataclass(frozen=True, slots=True)
class SeriesSettings:
    """The installation's series settings; series are the home's, not one entry's.

    max_entries caps every series that has no cap of its own (oldest entries go first);
    keep_days is what timeseries_cleanup keeps when a call names no number of days.
    """

    max_entries: int = DEFAULT_MAX_ENTRIES
    keep_days: float = DEFAULT_KEEP_DAYS

    def __post_init__(self) -> None:
        if (
            not isinstance(self.max_entries, int)
            or isinstance(self.max_entries, bool)
            or self.max_entries < 1
        ):
            raise ValueError(f"max_entries must be a whole number >= 1, not {self.max_entries!r}")
        if not isinstance(self.keep_days, int | float) or not (
            math.isfinite(self.keep_days) and self.keep_days > 0
        ):
            raise ValueError(f"keep_days must be a number > 0, not {self.keep_days!r}")

    def as_dict(self) -> dict[str, Any]:
        """The stored form."""
        return {"max_entries": self.max_entries, "keep_days": self.keep_days}

    @classmethod
    def from_dict(cls, data: Any, defaults: "SeriesSettings") -> "SeriesSettings":
        """The stored form back; what is missing or invalid falls back to defaults."""
        if not isinstance(data, dict):
            return defaults
        try:
            return cls(
                int(data.get("max_entries", defaults.max_entries)),
                float(data.get("keep_days", defaults.keep_days)),
            )
        except (TypeError, ValueError):
            return defaults


def validate_key(key: str) -> str:
    """A series key is a slug: it becomes part of a file name."""
    if not isinstance(key, str) or not KEY_PATTERN.match(key):
        raise SeriesError("invalid_key", key=key)
    return key


def parse_last(text: str) -> float:
    """'24h', '2 days', '1 week', 'week' -> seconds."""
    match = _LAST_PATTERN.match(text.lower()) if isinstance(text, str) else None
    if match is None or match.group(2) not in _UNITS:
        raise SeriesError("invalid_last", value=text)
    amount = float(match.group(1) or 1)
    if amount <= 0:
        raise SeriesError("invalid_last", value=text)
    return amount * _UNITS[match.group(2)]


def since(end: float, last: str) -> float:
    """The start of the range `last` long that ends at end; refused before the year 1."""
    start = end - parse_last(last)
    if not start >= EARLIEST:
        raise SeriesError("last_out_of_range", value=last)
    return start


def _start(interval: Sequence[float]) -> float:
    return interval[0]


def _end(interval: Sequence[float]) -> float:
    return interval[1]


def _add_interval(intervals: list[list[float]], start: float, end: float) -> int:
    """Insert [start, end] into sorted, disjoint intervals, merging what touches; its index.

    Two bisections find the run of intervals it touches, so a merge costs O(log n + k)
    steps for k intervals swallowed (the list shifts its tail in one block move), not a
    pass over every interval.
    """
    first = bisect_left(intervals, start, key=_end)  # the first one ending at or after start
    stop = bisect_right(intervals, end, lo=first, key=_start)  # the first starting after end
    if first < stop:
        start, end = min(start, intervals[first][0]), max(end, intervals[stop - 1][1])
    intervals[first:stop] = [[start, end]]
    return first


def _gap_after(intervals: Sequence[Sequence[float]], index: int) -> tuple[float, float, float]:
    """The gap between an interval and the next: (its length, where it starts, where it ends)."""
    left_end, right_start = intervals[index][1], intervals[index + 1][0]
    return right_start - left_end, left_end, right_start


def _gaps(
    intervals: Sequence[Sequence[float]], start: float, end: float
) -> list[tuple[float, float]]:
    """The parts of [start, end] no interval covers, ignoring slivers under MIN_GAP_SECONDS.

    A fetch that ended "now" and a query that ends "now" a moment later leave a gap of a
    few milliseconds that nothing could fill: it is not worth another API call.
    """
    gaps: list[tuple[float, float]] = []
    cursor = start
    for index in range(bisect_left(intervals, start, key=_end), len(intervals)):
        lo, hi = intervals[index]
        if lo > end:
            break
        if lo > cursor:
            gaps.append((cursor, lo))
        cursor = max(cursor, hi)
        if cursor >= end:
            break
    if cursor < end:
        gaps.append((cursor, end))
    return [(lo, hi) for lo, hi in gaps if hi - lo >= MIN_GAP_SECONDS]


def coverage_of(
    intervals: Sequence[Sequence[float]], has_entries: bool, start: float, end: float
) -> tuple[str, list[tuple[float, float]]]:
    """How much of [start, end] fetched windows cover ("full", "partial" or "none"), and
    the gaps: what timeseries_query answers, and what a listing shows of a series."""
    gaps = _gaps(intervals, start, end)
    if not has_entries or gaps == [(start, end)]:
        return "none", gaps
    return ("full" if not gaps else "partial"), gaps


@dataclass(slots=True)
class PreparedEntry:
    """A validated entry, ready to merge, already in its stored JSON form."""

    entry_id: str
    time: float
    entry: dict[str, Any]
    blob: str


@dataclass
class Series:
    """One accumulating series (a key such as kudos_givers_timeseries)."""

    key: str
    id_field: str = "id"
    timestamp_field: str = "timestamp"
    # The series' own cap; None follows the installation's (merge's default_max_entries).
    max_entries: int | None = None
    accumulated_since: str | None = None
    last_updated: str | None = None
    total_api_calls: int = 0
    total_fetched: int = 0
    duplicates_avoided: int = 0
    covered: list[list[float]] = field(default_factory=list)
    # The stretch within which gaps were bridged to keep MAX_COVERAGE_INTERVALS: there,
    # coverage may claim time that was never fetched.
    bridged: tuple[float, float] | None = None
    # Once the interval cap is reached: the gaps between neighbouring intervals, smallest
    # first, as _gap_after gives them; entries a later change outlived are skipped.
    _gap_heap: list[tuple[float, float, float]] | None = field(default=None, repr=False)
    _blobs: dict[str, str] = field(default_factory=dict, repr=False)
    _times: dict[str, float] = field(default_factory=dict, repr=False)
    _order: list[tuple[float, str]] = field(default_factory=list, repr=False)
    # sys.getsizeof of every blob and id, kept as entries come and go: the memory
    # estimate must be cheap enough to refresh after every merge.
    _text_bytes: int = field(default=0, repr=False)

    @property
    def entity(self) -> str:
        """The entity a series is about: the key without its _timeseries suffix."""
        return self.key.removesuffix("_timeseries")

    def __len__(self) -> int:
        return len(self._order)

    def memory_estimate(self) -> int:
        """Bytes the loaded series holds, roughly; what a memory budget counts."""
        return self._text_bytes + len(self._order) * ENTRY_OVERHEAD

    def cap(self, default_max_entries: int = DEFAULT_MAX_ENTRIES) -> int:
        """The cap in force: the series' own, else the installation's."""
        return default_max_entries if self.max_entries is None else self.max_entries

    def prepare(
        self,
        entries: Any,
        id_field: str,
        timestamp_field: str,
        default_tz: tzinfo,
        first_seen: str,
    ) -> list[PreparedEntry]:
        """Validate every entry before anything is written; raise naming the first bad one."""
        if not isinstance(entries, list):
            raise SeriesError("entries_not_list")
        if len(entries) > MAX_ENTRIES_PER_CALL:
            raise SeriesError("too_many_entries", count=len(entries), limit=MAX_ENTRIES_PER_CALL)
        if len(self) and (id_field, timestamp_field) != (self.id_field, self.timestamp_field):
            raise SeriesError(
                "field_mismatch", id_field=self.id_field, timestamp_field=self.timestamp_field
            )
        prepared = []
        for index, raw in enumerate(entries):
            if not isinstance(raw, dict):
                raise SeriesError("entry_not_object", index=index)
            entry_id = raw.get(id_field)
            stamp = raw.get(timestamp_field)
            for name, value in ((id_field, entry_id), (timestamp_field, stamp)):
                if value is None or value == "":
                    raise SeriesError("entry_missing_field", index=index, field=name)
            if type(entry_id) is not str and (
                not isinstance(entry_id, int) or isinstance(entry_id, bool)
            ):
                raise SeriesError("entry_bad_id", index=index, field=id_field)
            entry = dict(raw)
            moment = canonical_time(stamp)
            if moment is None:
                try:
                    moment = parse_time(stamp, default_tz, timestamp_field)
                except TimeInputError as err:
                    raise SeriesError(
                        "entry_bad_timestamp", index=index, field=timestamp_field
                    ) from err
                entry[timestamp_field] = format_time(moment)
            entry["first_seen"] = first_seen
            try:
                blob = orjson.dumps(entry).decode()
            except TypeError as err:
                raise SeriesError("entry_not_serializable", index=index) from err
            prepared.append(PreparedEntry(str(entry_id), moment, entry, blob))
        return prepared

    def merge(
        self,
        prepared: list[PreparedEntry],
        now: str,
        window: tuple[float, float] | None = None,
        fields: tuple[str, str] = ("id", "timestamp"),
        default_max_entries: int = DEFAULT_MAX_ENTRIES,
    ) -> dict[str, int]:
        """Deduplicate by id keeping the newest version; record what was fetched.

        default_max_entries is the installation's cap, for a series without its own.
        """
        if not self._order:
            self.id_field, self.timestamp_field = fields
        added = duplicates = updated = 0
        newest: dict[str, PreparedEntry] = {}
        for item in prepared:
            seen = newest.get(item.entry_id)
            if seen is not None:
                duplicates += 1
                if item.time <= seen.time:
                    continue
            newest[item.entry_id] = item
        new_keys: list[tuple[float, str]] = []
        blobs, times = self._blobs, self._times
        for entry_id, item in newest.items():
            old_time = times.get(entry_id)
            if old_time is None:
                blobs[entry_id] = item.blob
                times[entry_id] = item.time
                new_keys.append((item.time, entry_id))
                self._text_bytes += sys.getsizeof(item.blob) + sys.getsizeof(entry_id)
                added += 1
                continue
            duplicates += 1
            if item.time > old_time:
                # A newer version: it keeps the first_seen of the first one.
                first_seen = orjson.loads(blobs[entry_id]).get("first_seen")
                item.entry["first_seen"] = first_seen or item.entry["first_seen"]
                blob = orjson.dumps(item.entry).decode()
                self._text_bytes += sys.getsizeof(blob) - sys.getsizeof(blobs[entry_id])
                blobs[entry_id] = blob
                times[entry_id] = item.time
                self._remove_key((old_time, entry_id))
                new_keys.append((item.time, entry_id))
                updated += 1
        self._insert_keys(new_keys)

        if window is None and prepared:
            moments = [item.time for item in prepared]
            window = (min(moments), max(moments))
        if window is not None:
            self._cover(*window)
        evicted = self.enforce_cap(default_max_entries)

        self.accumulated_since = self.accumulated_since or now
        self.last_updated = now
        self.total_api_calls += 1
        self.total_fetched += len(prepared)
        self.duplicates_avoided += duplicates
        return {
            "added": added,
            "duplicates": duplicates,
            "updated": updated,
            "total_count": len(self),
            "evicted": evicted,
        }

    def _insert_keys(self, keys: list[tuple[float, str]]) -> None:
        keys.sort()
        if not keys:
            return
        if not self._order or keys[0] >= self._order[-1]:
            self._order.extend(keys)  # the usual case: what was fetched is newer
        elif len(keys) <= _FIRST_BULK:
            for key in keys:
                insort(self._order, key)
        else:
            # Two sorted runs: timsort merges them in linear time.
            self._order.extend(keys)
            self._order.sort()

    def _remove_key(self, key: tuple[float, str]) -> None:
        index = bisect_left(self._order, key)
        if index < len(self._order) and self._order[index] == key:
            del self._order[index]

    def _drop_oldest(self, count: int) -> None:
        """Forget the oldest entries; coverage up to and including their time goes too."""
        if count <= 0:
            return
        boundary = self._order[count - 1][0]
        self._forget(count)
        self._trim_coverage(math.nextafter(boundary, math.inf))

    def _forget(self, count: int) -> None:
        """Drop the count oldest entries (not their coverage)."""
        freed = 0
        for _, entry_id in self._order[:count]:
            freed += sys.getsizeof(self._blobs.pop(entry_id)) + sys.getsizeof(entry_id)
            del self._times[entry_id]
        del self._order[:count]
        self._text_bytes -= freed

    def _trim_coverage(self, start: float) -> None:
        """Nothing before start is covered any more.

        A new list, never the old one changed: a caller may hold the old one to compare.
        """
        covered = self.covered
        first = bisect_left(covered, start, key=_end)
        if first < len(covered) and covered[first][0] < start:
            self.covered = [[start, covered[first][1]], *covered[first + 1 :]]
        else:
            self.covered = covered[first:]
        if self.bridged is not None:
            lo, hi = self.bridged
            self.bridged = None if hi <= start else (max(lo, start), hi)

    def _cover(self, start: float, end: float) -> None:
        """Record [start, end] as fetched, within MAX_COVERAGE_INTERVALS."""
        covered = self.covered
        index = _add_interval(covered, start, end)
        if self._gap_heap is not None:
            for left in (index - 1, index):
                if 0 <= left < len(covered) - 1:
                    heappush(self._gap_heap, _gap_after(covered, left))
        if len(covered) > MAX_COVERAGE_INTERVALS:
            self._bridge()

    def _bridge(self) -> None:
        """Merge the closest neighbours until MAX_COVERAGE_INTERVALS intervals remain.

        The smallest gap claims the least unfetched time. A heap of the gaps finds it in
        O(log n): a gap whose two ends are no longer neighbours (split by a later fetch,
        swallowed, trimmed) is dropped when it comes up, and the heap is built afresh once
        such entries could outnumber the live ones. Gaps under MIN_GAP_SECONDS are never
        reported, so bridging them leaves coverage exact.
        """
        covered = self.covered
        heap = self._gap_heap
        while len(covered) > MAX_COVERAGE_INTERVALS:
            if not heap or len(heap) > 2 * len(covered) + 16:
                heap = [_gap_after(covered, i) for i in range(len(covered) - 1)]
                heapify(heap)
                self._gap_heap = heap
            size, left_end, right_start = heappop(heap)
            index = bisect_left(covered, left_end, key=_end)
            if (
                index + 1 >= len(covered)
                or covered[index][1] != left_end
                or covered[index + 1][0] != right_start
            ):
                continue  # outlived
            covered[index : index + 2] = [[covered[index][0], covered[index + 1][1]]]
            if size >= MIN_GAP_SECONDS:
                lo, hi = self.bridged or (left_end, right_start)
                self.bridged = (min(lo, left_end), max(hi, right_start))

    def enforce_cap(self, default_max_entries: int = DEFAULT_MAX_ENTRIES) -> int:
        """Drop the oldest entries beyond the cap in force; how many went.

        Also run when the installation's cap is lowered, so a series without its own
        cap shrinks at once rather than at its next merge.
        """
        excess = len(self) - self.cap(default_max_entries)
        self._drop_oldest(excess)
        return max(excess, 0)

    def query(self, start: float, end: float) -> dict[str, Any]:
        """Entries in [start, end] (newest first), coverage, gaps, and the state's range.

        The range is held to the calendar's (years 1 to 9999): a caller's "the last
        million weeks" means everything, and every gap must be a time an answer can show.
        """
        if start > end:
            raise SeriesError("start_after_end")
        start, end = min(max(start, EARLIEST), LATEST), min(max(end, EARLIEST), LATEST)
        lo = bisect_left(self._order, (start,))
        hi = bisect_right(self._order, end, key=lambda k: k[0])
        entries = [
            orjson.loads(self._blobs[entry_id]) for _, entry_id in reversed(self._order[lo:hi])
        ]
        coverage, gaps = coverage_of(self.covered, bool(self._order), start, end)
        if not self._order:
            reason = "No data in state"
        elif coverage == "full":
            reason = "Complete coverage from state"
        elif coverage == "none":
            reason = "Nothing in the requested range was ever fetched"
        else:
            reason = "Fetched windows leave gaps: " + ", ".join(
                f"{format_time(a)} to {format_time(b)}" for a, b in gaps
            )
        approximate = False
        if (bridged := self.bridged) is not None and bridged[0] < end and bridged[1] > start:
            approximate = True
            reason += (
                f" (approximate: to keep at most {MAX_COVERAGE_INTERVALS} fetched windows, "
                f"gaps between {format_time(bridged[0])} and {format_time(bridged[1])} "
                "were merged away and are not listed)"
            )
        return {
            "entries": entries,
            "count": len(entries),
            "coverage": coverage,
            "coverage_approximate": approximate,
            "needs_api_call": coverage != "full",
            "reason": reason,
            "gaps": [{"start": format_time(a), "end": format_time(b)} for a, b in gaps],
            "state_range": self.state_range(),
        }

    def entries_page(
        self, start: float, end: float, offset: int, limit: int
    ) -> tuple[list[Any], int]:
        """One page of the entries in [start, end], newest first, and how many there are:
        only the page's entries are parsed."""
        lo = bisect_left(self._order, (start,))
        hi = bisect_right(self._order, end, key=lambda k: k[0])
        first, last = max(hi - offset - limit, lo), hi - offset
        page = [
            orjson.loads(self._blobs[entry_id]) for _, entry_id in reversed(self._order[first:last])
        ]
        return page, max(hi - lo, 0)

    def counts(self, start: float, end: float, buckets: int) -> list[int]:
        """How many entries fall in each of `buckets` equal stretches of [start, end]
        (the last one includes end): a chart of the series over time."""
        if start > end:
            raise SeriesError("start_after_end")
        step = (end - start) / buckets
        edges = [bisect_left(self._order, (start + step * n,)) for n in range(buckets)]
        edges.append(bisect_right(self._order, end, key=lambda k: k[0]))
        return [b - a for a, b in pairwise(edges)]

    def state_range(self) -> dict[str, str | None]:
        """Oldest and newest entry times."""
        if not self._order:
            return {"oldest": None, "newest": None}
        return {"oldest": format_time(self._order[0][0]), "newest": format_time(self._order[-1][0])}

    def cleanup(self, keep_days: float, now: float) -> dict[str, Any]:
        """Forget entries older than keep_days; more days than the calendar holds keep all."""
        try:
            cutoff = max(now - timedelta(days=keep_days).total_seconds(), EARLIEST)
        except OverflowError:  # more days than a timedelta holds
            cutoff = EARLIEST
        old_count = len(self)
        self._forget(bisect_left(self._order, (cutoff,)))
        self._trim_coverage(cutoff)
        return {
            "removed": old_count - len(self),
            "kept": len(self),
            "cutoff_date": format_time(cutoff),
        }

    def summary(self) -> dict[str, Any]:
        """What timeseries_list shows of a key: kept in the index so listing loads nothing.

        covered is the windows fetched so far: an automation sees what it still has to
        fetch without querying (and so loading) every series.
        """
        return {
            "key": self.key,
            "count": len(self),
            **self.state_range(),
            "covered": [
                {"start": format_time(lo), "end": format_time(hi)} for lo, hi in self.covered
            ],
        }

    def as_dict(self) -> dict[str, Any]:
        """The stored shape (key, entity, entries, timestamps); entries newest first, each kept
        as its JSON text."""
        return {
            "entity": self.entity,
            "accumulated_since": self.accumulated_since,
            "last_updated": self.last_updated,
            "count": len(self),
            "id_field": self.id_field,
            "timestamp_field": self.timestamp_field,
            "max_entries": self.max_entries,  # null: the installation's cap applies
            "covered": [[format_time(lo), format_time(hi)] for lo, hi in self.covered],
            # null while coverage is exact; else where gaps were bridged (see _bridge)
            "coverage_bridged": (
                None if self.bridged is None else [format_time(t) for t in self.bridged]
            ),
            "metadata": {
                "total_api_calls": self.total_api_calls,
                "total_fetched": self.total_fetched,
                "duplicates_avoided": self.duplicates_avoided,
            },
            "entries": [self._blobs[entry_id] for _, entry_id in reversed(self._order)],
        }

    @classmethod
    def from_dict(cls, key: str, data: dict[str, Any]) -> "Series":
        """Rebuild from as_dict's output; blocking for big series, run it in an executor."""
        metadata = data.get("metadata", {})
        series = cls(
            key,
            id_field=data.get("id_field", "id"),
            timestamp_field=data.get("timestamp_field", "timestamp"),
            max_entries=data.get("max_entries"),
            accumulated_since=data.get("accumulated_since"),
            last_updated=data.get("last_updated"),
            total_api_calls=metadata.get("total_api_calls", 0),
            total_fetched=metadata.get("total_fetched", 0),
            duplicates_avoided=metadata.get("duplicates_avoided", 0),
            covered=[
                [parse_time(lo, UTC), parse_time(hi, UTC)] for lo, hi in data.get("covered", [])
            ],
        )
        if (bridged := data.get("coverage_bridged")) is not None:
            lo, hi = bridged
            series.bridged = (parse_time(lo, UTC), parse_time(hi, UTC))
        if len(series.covered) > MAX_COVERAGE_INTERVALS:
            series._bridge()  # stored before the cap existed
        order = []
        text_bytes = 0
        for blob in data.get("entries", []):
            entry = orjson.loads(blob)
            entry_id = str(entry[series.id_field])
            moment = parse_time(entry[series.timestamp_field], UTC)
            series._blobs[entry_id] = blob
            series._times[entry_id] = moment
            order.append((moment, entry_id))
            text_bytes += sys.getsizeof(blob) + sys.getsizeof(entry_id)
        order.sort()
        series._order = order
        series._text_bytes = text_bytes
        return series


def migrate_series(version: int, data: dict[str, Any]) -> dict[str, Any]:
    """A stored series from an older version, in SERIES_VERSION's form.

    Version 1 always wrote a cap; the default one cannot be told from an explicit
    10,000, and meant "the default" in practice: it becomes null, following the setting.
    """
    if version > SERIES_VERSION:
        raise ValueError(f"time series stored by a newer version ({version})")
    if version < 2 and data.get("max_entries") == DEFAULT_MAX_ENTRIES:
        data = {**data, "max_entries": None}
    return data


def _stem(word: str) -> str:
    """English plural to singular, roughly: activities -> activity, kudos -> kudo."""
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def matching_keys(keys: Iterable[str], text: str) -> list[str]:
    """Series whose entity words appear in text ('kudos' in 'who gave me kudos')."""
    stems = {_stem(word) for word in re.findall(r"[a-z0-9]+", text.lower())}
    return [
        key
        for key in keys
        if any(
            len(part) >= 3 and _stem(part) in stems
            for part in key.removesuffix("_timeseries").split("_")
        )
    ]
