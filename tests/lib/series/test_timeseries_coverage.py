"""Coverage stays small: at most MAX_COVERAGE_INTERVALS intervals a series, exact below it.

Fetch windows that never touch (an hourly automation fetching the last half hour) would
otherwise leave one interval each: 8,760 a year, each paid for by every later merge.
Beyond the cap the closest neighbours merge; a query over such a stretch says so.
"""

from datetime import UTC, datetime
import json
import random
from typing import Any

import pytest

from custom_components.azure_openai_memory.lib.series.store import (
    MAX_COVERAGE_INTERVALS,
    MIN_GAP_SECONDS,
    Series,
    SeriesError,
    coverage_of,
)
from custom_components.azure_openai_memory.lib.times import format_time

YEAR0 = datetime(2025, 1, 1, tzinfo=UTC).timestamp()
HOUR = 3600.0
NOW = format_time(YEAR0 + 366 * 86400)


def fetch(series: Series, n: int, start: float, end: float) -> None:
    """What one automation run merges: one entry, and the window it fetched."""
    entry = {"id": f"e{n}", "timestamp": format_time(start)}
    prepared = series.prepare([entry], "id", "timestamp", UTC, NOW)
    series.merge(prepared, NOW, (start, end))


def hourly(series: Series, hours: int) -> list[tuple[float, float]]:
    """Every hour, the first half hour fetched: windows that never touch."""
    windows = [(YEAR0 + h * HOUR, YEAR0 + h * HOUR + HOUR / 2) for h in range(hours)]
    for n, (start, end) in enumerate(windows):
        fetch(series, n, start, end)
    return windows


def covered_by(intervals: list[list[float]], start: float, end: float) -> bool:
    return any(lo <= start and end <= hi for lo, hi in intervals)


def exact_union(windows: list[tuple[float, float]]) -> list[list[float]]:
    """Sorted union of windows, touching ones joined: what coverage is without a cap."""
    union: list[list[float]] = []
    for start, end in sorted(windows):
        if union and start <= union[-1][1]:
            union[-1][1] = max(union[-1][1], end)
        else:
            union.append([start, end])
    return union


def test_a_year_of_hourly_windows_keeps_at_most_the_cap() -> None:
    series = Series("meter_timeseries")
    windows = hourly(series, 8_760)
    assert len(series.covered) == MAX_COVERAGE_INTERVALS
    # Nothing fetched is ever reported missing: every window lies inside one interval.
    assert all(covered_by(series.covered, start, end) for start, end in windows)
    assert series.covered == sorted(series.covered)
    assert all(a[1] < b[0] for a, b in zip(series.covered, series.covered[1:], strict=False))

    year = series.query(YEAR0, YEAR0 + 8_760 * HOUR)
    assert year["coverage"] == "partial"
    assert year["coverage_approximate"] is True
    assert "approximate" in year["reason"]
    # The gaps still reported are real ones, half an hour each; fewer than the 8,760 true ones.
    assert 0 < len(year["gaps"]) < 8_760
    half_hours = {(format_time(s + HOUR / 2), format_time(s + HOUR)) for s, _ in windows}
    assert {(g["start"], g["end"]) for g in year["gaps"]} <= half_hours | {
        (format_time(YEAR0 + 8_759.5 * HOUR), format_time(YEAR0 + 8_760 * HOUR))
    }
    assert len(series) == 8_760  # the entries themselves are all kept


def test_below_the_cap_gaps_are_exact() -> None:
    series = Series("meter_timeseries")
    windows = hourly(series, MAX_COVERAGE_INTERVALS)
    assert series.covered == [[start, end] for start, end in windows]
    assert series.bridged is None
    day = series.query(YEAR0, YEAR0 + 24 * HOUR)
    assert day["coverage_approximate"] is False
    assert "approximate" not in day["reason"]
    assert day["gaps"] == [
        {"start": format_time(YEAR0 + (h + 0.5) * HOUR), "end": format_time(YEAR0 + (h + 1) * HOUR)}
        for h in range(24)
    ]
    # The next disjoint window passes the cap: two neighbours merge.
    fetch(series, 10_000, YEAR0 + 2_000 * HOUR, YEAR0 + 2_001 * HOUR)
    assert len(series.covered) == MAX_COVERAGE_INTERVALS
    assert series.bridged is not None


def test_the_closest_neighbours_merge_and_only_their_stretch_is_approximate() -> None:
    """Windows an hour apart, except one pair ten minutes apart: that gap is bridged."""
    series = Series("meter_timeseries")
    starts = [YEAR0 + h * 2 * HOUR for h in range(MAX_COVERAGE_INTERVALS)]
    close = YEAR0 + 500 * 2 * HOUR + HOUR + 600  # ten minutes after window 500 ends
    for n, start in enumerate(starts):
        fetch(series, n, start, start + HOUR)
    assert series.bridged is None
    fetch(series, -1, close, close + 1_800)
    assert len(series.covered) == MAX_COVERAGE_INTERVALS
    assert series.bridged == (starts[500] + HOUR, close)
    assert [starts[500], close + 1_800] in series.covered
    around = series.query(starts[500], close + 1_800)
    assert (around["coverage"], around["coverage_approximate"], around["gaps"]) == (
        "full",
        True,
        [],
    )
    elsewhere = series.query(starts[0], starts[3])
    assert elsewhere["coverage_approximate"] is False
    assert len(elsewhere["gaps"]) == 3


def test_bridging_a_sliver_leaves_coverage_exact() -> None:
    """A gap shorter than MIN_GAP_SECONDS is never reported, so merging it hides nothing."""
    series = Series("meter_timeseries")
    for n in range(MAX_COVERAGE_INTERVALS):
        fetch(series, n, YEAR0 + n * 2 * HOUR, YEAR0 + n * 2 * HOUR + HOUR)
    sliver = YEAR0 + HOUR + MIN_GAP_SECONDS / 2
    fetch(series, -1, sliver, sliver + 60)
    assert len(series.covered) == MAX_COVERAGE_INTERVALS
    assert series.covered[0] == [YEAR0, sliver + 60]
    assert series.bridged is None
    assert series.query(YEAR0, YEAR0 + 10 * HOUR)["coverage_approximate"] is False


def naive_add(covered: list[list[float]], start: float, end: float) -> list[list[float]]:
    """The same rule by brute force: rebuild the union, merge the smallest gap by a scan."""
    covered = exact_union([(lo, hi) for lo, hi in covered] + [(start, end)])
    while len(covered) > MAX_COVERAGE_INTERVALS:
        i = min(
            range(len(covered) - 1),
            key=lambda i: (covered[i + 1][0] - covered[i][1], covered[i][1]),
        )
        covered[i : i + 2] = [[covered[i][0], covered[i + 1][1]]]
    return covered


def test_random_windows_match_brute_force() -> None:
    """Overlapping, disjoint and out-of-order windows, and cleanups trimming the front:
    the heap merges what a scan for the smallest gap merges."""
    rng = random.Random(7)
    series = Series("meter_timeseries")
    naive: list[list[float]] = []
    most = 0
    for n in range(2_000):
        start = YEAR0 + rng.randrange(0, 20_000) * 600 + rng.choice([0, 0.25, 30])
        end = start + rng.choice([0, 60, 300, 1_200, 7_200])
        most = max(most, len(exact_union([(lo, hi) for lo, hi in naive] + [(start, end)])))
        fetch(series, n, start, end)
        naive = naive_add(naive, start, end)
        if n in (1_300, 1_700):
            cutoff = YEAR0 + rng.randrange(0, 5_000) * 600 + 10
            series.cleanup(1, cutoff + 86400)
            naive = [[max(lo, cutoff), hi] for lo, hi in naive if hi >= cutoff]
        assert series.covered == naive
    assert most > MAX_COVERAGE_INTERVALS  # the cap was reached, and held
    assert len(series.covered) == MAX_COVERAGE_INTERVALS


def test_the_cap_and_its_flag_survive_storage() -> None:
    series = Series("meter_timeseries")
    hourly(series, 1_500)
    stored = json.loads(json.dumps(series.as_dict()))
    assert len(stored["covered"]) == MAX_COVERAGE_INTERVALS
    assert series.bridged is not None  # 1,500 windows: past the cap, some gaps were bridged
    assert stored["coverage_bridged"] == [format_time(t) for t in series.bridged]
    restored = Series.from_dict("meter_timeseries", stored)
    assert restored.covered == series.covered
    assert restored.bridged == series.bridged
    span = (YEAR0, YEAR0 + 1_500 * HOUR)
    assert restored.query(*span) == series.query(*span)
    # Merging on after a reload bridges as before.
    fetch(restored, 99_999, YEAR0 + 2_000 * HOUR, YEAR0 + 2_001 * HOUR)
    assert len(restored.covered) == MAX_COVERAGE_INTERVALS


def test_a_file_from_before_the_cap_loads_within_it() -> None:
    """Stored intervals beyond the cap (written by an earlier version) are bridged on load."""
    exact = [[YEAR0 + h * HOUR, YEAR0 + h * HOUR + HOUR / 2] for h in range(3_000)]
    stored: dict[str, Any] = {
        "covered": [[format_time(lo), format_time(hi)] for lo, hi in exact],
        "entries": [],
    }
    series = Series.from_dict("meter_timeseries", stored)
    assert len(series.covered) == MAX_COVERAGE_INTERVALS
    assert series.bridged is not None
    assert series.query(YEAR0, YEAR0 + 3_000 * HOUR)["coverage_approximate"] is True
    exact_file = Series.from_dict("meter_timeseries", {"covered": stored["covered"][:10]})
    assert exact_file.bridged is None
    assert exact_file.as_dict()["coverage_bridged"] is None


def test_cleanup_past_the_bridged_stretch_makes_coverage_exact_again() -> None:
    series = Series("meter_timeseries")
    hourly(series, 1_200)
    assert series.bridged is not None
    bridged_end = series.bridged[1]
    before = series.covered
    series.cleanup(1, bridged_end + 86400)
    assert series.covered is not before  # a new list: callers compare the old one to it
    assert series.bridged is None
    late = series.query(bridged_end, YEAR0 + 1_200 * HOUR)
    assert late["coverage_approximate"] is False


def test_a_page_of_entries_and_their_counts_over_time() -> None:
    """The panel's view of a series: a page, newest first, and a chart of counts."""
    series = Series("garden_timeseries")
    entries = [{"id": str(n), "timestamp": f"2025-10-01T{n:02d}:00:00Z"} for n in range(10)]
    prepared = series.prepare(entries, "id", "timestamp", UTC, "2025-10-02T00:00:00Z")
    series.merge(prepared, "2025-10-02T00:00:00Z", None)
    start = datetime(2025, 10, 1, tzinfo=UTC).timestamp()
    end = start + 10 * 3600
    page, total = series.entries_page(start, end, 2, 3)
    assert total == 10
    assert [e["id"] for e in page] == ["7", "6", "5"]
    assert [e["id"] for e in series.entries_page(start, end, 9, 5)[0]] == ["0"]
    assert series.entries_page(start, end, 10, 5) == ([], 10)
    assert series.counts(start, end, 5) == [2, 2, 2, 2, 2]
    assert series.counts(start, start + 3600, 1) == [2]  # the end is included
    with pytest.raises(SeriesError):
        series.counts(end, start, 2)


def test_coverage_of_is_what_a_query_reports() -> None:
    covered = [[0.0, 100.0], [200.0, 300.0]]
    assert coverage_of(covered, True, 0, 300) == ("partial", [(100.0, 200.0)])
    assert coverage_of(covered, True, 0, 100) == ("full", [])
    assert coverage_of(covered, False, 0, 100) == ("none", [])
    assert coverage_of(covered, True, 120, 180) == ("none", [(120, 180)])
