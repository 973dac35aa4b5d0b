"""Series: merge, exact coverage with gaps, cap, cleanup, parsing, storage shape."""

from datetime import UTC, datetime, timedelta, timezone
import gc
import json
import tracemalloc
from typing import Any

import orjson
import pytest

from custom_components.azure_openai_memory.lib.series.store import (
    DEFAULT_MAX_ENTRIES,
    MAX_ENTRIES_PER_CALL,
    SERIES_VERSION,
    Series,
    SeriesError,
    SeriesSettings,
    matching_keys,
    migrate_series,
    parse_last,
    validate_key,
)
from custom_components.azure_openai_memory.lib.times import TimeInputError, format_time, parse_time

NOW = datetime(2025, 10, 25, 11, 0, tzinfo=UTC).timestamp()
HOUR = 3600.0


def kudos(name: str, hours_ago: float, activity: int = 1) -> dict[str, Any]:
    return {
        "id": f"kudos_{activity}_{name}",
        "athlete_name": name,
        "timestamp": format_time(NOW - hours_ago * HOUR),
    }


def merge(
    series: Series, entries: list[Any], window: tuple[float, float] | None = None, **kw: Any
) -> dict[str, int]:
    prepared = series.prepare(
        entries,
        kw.get("id_field", "id"),
        kw.get("timestamp_field", "timestamp"),
        UTC,
        format_time(NOW),
    )
    return series.merge(
        prepared,
        format_time(NOW),
        window,
        (kw.get("id_field", "id"), kw.get("timestamp_field", "timestamp")),
    )


def test_merge_deduplicates_and_keeps_newest() -> None:
    series = Series("kudos_givers_timeseries")
    first = merge(series, [kudos("alice", 1.5), kudos("bob", 3), kudos("charlie", 23)])
    assert first == {"added": 3, "duplicates": 0, "updated": 0, "total_count": 3, "evicted": 0}
    newer_bob = {**kudos("bob", 0.5), "note": "edited"}
    second = merge(
        series, [kudos("alice", 1.5), newer_bob, kudos("charlie", 23), kudos("diana", 0.5)]
    )
    assert second == {"added": 1, "duplicates": 3, "updated": 1, "total_count": 4, "evicted": 0}
    entries = series.query(NOW - 24 * HOUR, NOW)["entries"]
    bob = next(e for e in entries if e["athlete_name"] == "bob")
    assert bob["note"] == "edited"
    assert bob["first_seen"] == format_time(NOW)
    # Newest first; bob and diana share a time and then sort by id, descending.
    assert [e["athlete_name"] for e in entries] == ["diana", "bob", "alice", "charlie"]
    assert series.duplicates_avoided == 3
    assert (series.total_api_calls, series.total_fetched) == (2, 7)
    assert series.entity == "kudos_givers"


def test_duplicates_within_one_call() -> None:
    series = Series("x")
    result = merge(series, [kudos("a", 2), kudos("a", 1), kudos("a", 3)])
    assert result["added"] == 1
    assert result["duplicates"] == 2
    (entry,) = series.query(NOW - 10 * HOUR, NOW)["entries"]
    assert entry["timestamp"] == format_time(NOW - HOUR)


def test_older_version_does_not_replace() -> None:
    series = Series("x")
    merge(series, [{**kudos("a", 1), "v": 2}])
    result = merge(series, [{**kudos("a", 5), "v": 1}])
    assert (result["duplicates"], result["updated"]) == (1, 0)
    assert series.query(NOW - 10 * HOUR, NOW)["entries"][0]["v"] == 2


def test_query_orders_newest_first_and_filters_range() -> None:
    series = Series("x")
    merge(series, [kudos(str(i), i) for i in range(48)], (NOW - 48 * HOUR, NOW))
    result = series.query(NOW - 10.5 * HOUR, NOW - 2.5 * HOUR)
    assert [e["athlete_name"] for e in result["entries"]] == [str(i) for i in range(3, 11)]
    assert result["count"] == 8
    assert result["coverage"] == "full"
    assert result["needs_api_call"] is False
    assert result["gaps"] == []
    assert result["state_range"] == {
        "oldest": format_time(NOW - 47 * HOUR),
        "newest": format_time(NOW),
    }


def test_middle_hole_is_partial_with_the_right_gap() -> None:
    """The seed would say 'full' (the oldest entry is old enough); the hole says otherwise."""
    series = Series("x")
    merge(series, [kudos("old", 70)], (NOW - 72 * HOUR, NOW - 48 * HOUR))
    merge(series, [kudos("new", 5)], (NOW - 24 * HOUR, NOW))
    result = series.query(NOW - 72 * HOUR, NOW)
    assert result["coverage"] == "partial"
    assert result["needs_api_call"] is True
    assert result["gaps"] == [
        {"start": format_time(NOW - 48 * HOUR), "end": format_time(NOW - 24 * HOUR)}
    ]
    assert "gaps" in result["reason"]
    merge(series, [], (NOW - 48 * HOUR, NOW - 24 * HOUR))  # fetched the gap: nothing there
    assert series.query(NOW - 72 * HOUR, NOW)["coverage"] == "full"
    assert series.covered == [[NOW - 72 * HOUR, NOW]]


def test_coverage_none_and_empty_store() -> None:
    series = Series("x")
    empty = series.query(NOW - HOUR, NOW)
    assert (empty["coverage"], empty["reason"], empty["needs_api_call"]) == (
        "none",
        "No data in state",
        True,
    )
    merge(series, [kudos("a", 1)], (NOW - 2 * HOUR, NOW))
    far = series.query(NOW - 100 * HOUR, NOW - 50 * HOUR)
    assert far["coverage"] == "none"
    assert far["gaps"] == [
        {"start": format_time(NOW - 100 * HOUR), "end": format_time(NOW - 50 * HOUR)}
    ]


def test_merge_without_window_covers_its_entries_span() -> None:
    series = Series("x")
    merge(series, [kudos("a", 10), kudos("b", 2)])
    assert series.covered == [[NOW - 10 * HOUR, NOW - 2 * HOUR]]
    assert series.query(NOW - 9 * HOUR, NOW - 3 * HOUR)["coverage"] == "full"
    assert series.query(NOW - 9 * HOUR, NOW)["coverage"] == "partial"


def test_cap_evicts_oldest_and_shrinks_coverage() -> None:
    series = Series("x", max_entries=5)
    result = merge(series, [kudos(str(i), i) for i in range(8)], (NOW - 10 * HOUR, NOW))
    assert (result["evicted"], result["total_count"]) == (3, 5)
    assert series.state_range()["oldest"] == format_time(NOW - 4 * HOUR)
    old = series.query(NOW - 10 * HOUR, NOW)
    assert old["coverage"] == "partial"  # the evicted range is no longer covered
    assert old["gaps"][0]["start"] == format_time(NOW - 10 * HOUR)
    assert series.query(NOW - 4 * HOUR, NOW)["coverage"] == "full"


def test_cleanup_removes_old_entries_and_coverage() -> None:
    series = Series("x")
    merge(series, [kudos("recent", 24), kudos("old", 24 * 100)], (NOW - 24 * 101 * HOUR, NOW))
    result = series.cleanup(90, NOW)
    assert (result["removed"], result["kept"]) == (1, 1)
    assert result["cutoff_date"] == format_time(NOW - 90 * 24 * HOUR)
    assert series.covered[0][0] == NOW - 90 * 24 * HOUR


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2025-10-25T11:00:00Z", NOW),
        ("2025-10-25T13:00:00+02:00", NOW),
        ("2025-10-25T12:00:00", NOW),  # naive: the configured zone, here UTC+1
        (NOW, NOW),
        (int(NOW), NOW),
        (str(int(NOW)), NOW),
    ],
)
def test_parse_time(value: Any, expected: float) -> None:
    assert parse_time(value, timezone(timedelta(hours=1))) == expected


@pytest.mark.parametrize("value", ["yesterday", "", None, True, [], float("nan")])
def test_parse_time_rejects(value: Any) -> None:
    with pytest.raises(TimeInputError) as err:
        parse_time(value, UTC, "start_time")
    assert err.value.key == "invalid_time"
    assert err.value.placeholders["field"] == "start_time"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("24h", 86400),
        ("2 days", 172800),
        ("1 week", 604800),
        ("week", 604800),
        ("90 minutes", 5400),
    ],
)
def test_parse_last(text: str, seconds: float) -> None:
    assert parse_last(text) == seconds


@pytest.mark.parametrize("text", ["forever", "0 days", "2 fortnights", ""])
def test_parse_last_rejects(text: str) -> None:
    with pytest.raises(SeriesError):
        parse_last(text)


@pytest.mark.parametrize("key", ["../x", "Kudos", "a b", "", "x" * 200, "_x", "x/y"])
def test_keys_are_slugs(key: str) -> None:
    with pytest.raises(SeriesError) as err:
        validate_key(key)
    assert err.value.key == "invalid_key"


def test_good_key() -> None:
    assert validate_key("kudos_givers_timeseries") == "kudos_givers_timeseries"


BAD_ENTRIES = [
    ({"id": 1}, "entries_not_list", {}),
    ([kudos("a", 1), "text"], "entry_not_object", {"index": "1"}),
    (
        [kudos("a", 1), {"timestamp": "2025-01-01T00:00:00Z"}],
        "entry_missing_field",
        {"index": "1", "field": "id"},
    ),
    ([{"id": "x"}], "entry_missing_field", {"index": "0", "field": "timestamp"}),
    (
        [{"id": "x", "timestamp": "soon"}],
        "entry_bad_timestamp",
        {"index": "0", "field": "timestamp"},
    ),
    ([{"id": ["x"], "timestamp": NOW}], "entry_bad_id", {"index": "0", "field": "id"}),
    ([{"id": "x", "timestamp": NOW, "tags": {1, 2}}], "entry_not_serializable", {"index": "0"}),
    (
        [kudos("a", 1)] * (MAX_ENTRIES_PER_CALL + 1),
        "too_many_entries",
        {"count": str(MAX_ENTRIES_PER_CALL + 1)},
    ),
]


@pytest.mark.parametrize(("entries", "key", "placeholders"), BAD_ENTRIES)
def test_bad_entries_write_nothing(entries: Any, key: str, placeholders: dict[str, str]) -> None:
    series = Series("x")
    merge(series, [kudos("kept", 1)])
    before = json.dumps(series.as_dict())
    with pytest.raises(SeriesError) as err:
        merge(series, entries)
    assert err.value.key == key
    assert placeholders.items() <= err.value.placeholders.items()
    assert json.dumps(series.as_dict()) == before


def test_field_mismatch_rejected() -> None:
    series = Series("x")
    merge(series, [kudos("a", 1)])
    with pytest.raises(SeriesError) as err:
        merge(series, [{"uid": "1", "timestamp": NOW}], id_field="uid")
    assert err.value.key == "field_mismatch"


def test_custom_fields_and_round_trip() -> None:
    series = Series("activities_timeseries")
    merge(
        series,
        [{"uid": 7, "at": NOW - HOUR, "km": 5.2}],
        (NOW - 2 * HOUR, NOW),
        id_field="uid",
        timestamp_field="at",
    )
    stored = json.loads(json.dumps(series.as_dict()))
    assert stored["entity"] == "activities"
    assert stored["count"] == 1
    assert stored["metadata"] == {"total_api_calls": 1, "total_fetched": 1, "duplicates_avoided": 0}
    restored = Series.from_dict("activities_timeseries", stored)
    assert restored.query(NOW - 2 * HOUR, NOW) == series.query(NOW - 2 * HOUR, NOW)
    (entry,) = restored.query(NOW - 2 * HOUR, NOW)["entries"]
    assert entry == {
        "uid": 7,
        "at": format_time(NOW - HOUR),
        "km": 5.2,
        "first_seen": format_time(NOW),
    }


def test_matching_keys() -> None:
    keys = ["kudos_givers_timeseries", "activities_timeseries", "comments_timeseries"]
    assert matching_keys(keys, "Who gave me kudos in the last 2 days?") == [
        "kudos_givers_timeseries"
    ]
    assert matching_keys(keys, "How many activity did I log?") == ["activities_timeseries"]
    assert matching_keys(keys, "What's the weather?") == []


def test_cap_is_the_series_own_else_the_installation_default() -> None:
    """A series without its own cap follows the cap a merge passes; its own one wins."""
    follows, own = Series("follows"), Series("own", max_entries=6)
    entries = [kudos(str(i), i) for i in range(10)]
    assert merge_with_cap(follows, entries, 4)["total_count"] == 4
    assert merge_with_cap(own, entries, 4)["total_count"] == 6
    # The default lowered later: the one that follows shrinks, the other keeps its cap.
    assert (follows.enforce_cap(2), own.enforce_cap(2)) == (2, 0)
    assert [e["athlete_name"] for e in follows.query(NOW - 10 * HOUR, NOW)["entries"]] == [
        "0",
        "1",
    ]
    assert len(own) == 6


def merge_with_cap(series: Series, entries: list[Any], cap: int) -> dict[str, int]:
    now = format_time(NOW)
    prepared = series.prepare(entries, "id", "timestamp", UTC, now)
    return series.merge(prepared, now, None, ("id", "timestamp"), cap)


def test_settings_validate_and_fall_back() -> None:
    assert SeriesSettings() == SeriesSettings(DEFAULT_MAX_ENTRIES, 90.0)
    for bad in ({"max_entries": 0}, {"max_entries": True}, {"keep_days": 0}, {"keep_days": -1}):
        with pytest.raises(ValueError):
            SeriesSettings(**bad)
    defaults = SeriesSettings(500, 30)
    stored = SeriesSettings(20, 7.5).as_dict()
    assert SeriesSettings.from_dict(stored, defaults) == SeriesSettings(20, 7.5)
    assert SeriesSettings.from_dict({"keep_days": 2}, defaults) == SeriesSettings(500, 2)
    assert SeriesSettings.from_dict({"max_entries": "x"}, defaults) == defaults
    assert SeriesSettings.from_dict(None, defaults) == defaults


def test_version_1_default_cap_becomes_the_setting() -> None:
    """Version 1 wrote 10,000 when nobody had chosen a cap; any other number was chosen."""
    assert SERIES_VERSION == 2
    assert migrate_series(1, {"max_entries": DEFAULT_MAX_ENTRIES})["max_entries"] is None
    assert migrate_series(1, {"max_entries": 500})["max_entries"] == 500
    with pytest.raises(ValueError):
        migrate_series(SERIES_VERSION + 1, {})
    restored = Series.from_dict("x", migrate_series(1, {"max_entries": DEFAULT_MAX_ENTRIES}))
    assert restored.max_entries is None
    assert Series.from_dict("x", Series("x", max_entries=7).as_dict()).max_entries == 7


def test_summary_carries_the_covered_windows() -> None:
    series = Series("x")
    merge(series, [kudos("a", 70)], (NOW - 72 * HOUR, NOW - 48 * HOUR))
    merge(series, [kudos("b", 5)], (NOW - 24 * HOUR, NOW))
    assert series.summary() == {
        "key": "x",
        "count": 2,
        "oldest": format_time(NOW - 70 * HOUR),
        "newest": format_time(NOW - 5 * HOUR),
        "covered": [
            {"start": format_time(NOW - 72 * HOUR), "end": format_time(NOW - 48 * HOUR)},
            {"start": format_time(NOW - 24 * HOUR), "end": format_time(NOW)},
        ],
    }


def bench_like(i: int) -> dict[str, Any]:
    return {
        "id": f"kudos_activity{i}_athlete{i * 7 % 1000}",
        "athlete_name": f"Athlete {i % 1000}",
        "activity_id": str(i),
        "timestamp": format_time(NOW - i * 60),
    }


def test_memory_estimate_is_kept_through_changes() -> None:
    """Merges, newer versions, the cap and cleanup keep the running estimate exact:
    it equals the estimate of the same series loaded afresh."""
    series = Series("x")
    merge_with_cap(series, [bench_like(i) for i in range(300)], 250)
    merge_with_cap(series, [{**bench_like(i), "note": "longer " * i} for i in range(20)], 250)
    series.cleanup(3 / 24, NOW)
    assert 0 < len(series) < 250
    fresh = Series.from_dict("x", json.loads(json.dumps(series.as_dict())))
    assert series.memory_estimate() == fresh.memory_estimate()
    series.cleanup(1e-9, NOW + 10 * HOUR)
    assert (len(series), series.memory_estimate()) == (0, 0)


def test_memory_estimate_is_close_to_what_a_loaded_series_holds() -> None:
    """The memory budget counts estimates: a loaded series' estimate is within 25 % of
    what tracemalloc sees it hold."""
    source = Series("x")
    merge_with_cap(source, [bench_like(i) for i in range(MAX_ENTRIES_PER_CALL)], 10**6)
    merge_with_cap(source, [bench_like(i) for i in range(MAX_ENTRIES_PER_CALL, 20_000)], 10**6)
    text = orjson.dumps(source.as_dict())
    # orjson (3.10) holds far more on the first load of a process than on any later one:
    # load once before measuring, as a running HA has.
    Series.from_dict("warm_up", {"entries": [orjson.dumps(bench_like(0)).decode()]})
    del source
    gc.collect()
    tracemalloc.start()
    try:
        loaded = Series.from_dict("x", orjson.loads(text))
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(loaded) == 20_000
    assert 0.85 <= loaded.memory_estimate() / held <= 1.25
