"""Time-series figures, each next to its target (issues 4 and 7).

One series: the reference is the naive merge (rebuild a dict of every entry, sort all
by timestamp) run on the same data in the same process.

Coverage of a year of hourly fetch windows that never touch: the reference is the
merge that rebuilds the whole interval list each time, run on the same windows.

A year on a small home server: 100 series of 10,000 entries (about 220 MB of Store
files) behind the real SeriesStore on a real HomeAssistant object and real files.
Listing answers from the index; merging into and querying every series once stays
within the memory budget, because loaded series leave memory least recently used first.
"""

import asyncio
from datetime import UTC, datetime
import gc
from pathlib import Path
import statistics
import tempfile
import time
import tracemalloc
from typing import Any

from homeassistant.core import HomeAssistant
import orjson

from custom_components.azure_openai_memory.lib.series.store import (
    DEFAULT_MAX_ENTRIES,
    MAX_COVERAGE_INTERVALS,
    Series,
)
from custom_components.azure_openai_memory.lib.times import format_time
from custom_components.azure_openai_memory.series.store import (
    DEFAULT_MEMORY_BUDGET,
    SeriesStore,
)

START = datetime(2025, 1, 1, tzinfo=UTC).timestamp()
SIZE = 100_000
SPAN_DAYS = 100
SERIES = 100
SERIES_SIZE = 10_000
PREFIX = "azure_openai_memory.timeseries"


def entry(i: int) -> dict[str, Any]:
    return {
        "id": f"kudos_activity{i}_athlete{i * 7 % 1000}",
        "athlete_id": str(i * 7 % 1000),
        "athlete_name": f"Athlete {i % 1000}",
        "activity_id": str(i),
        "timestamp": format_time(START + i * SPAN_DAYS * 86400 / SIZE),
    }


def seed_merge(state: dict[str, Any], new_entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The naive merge: rebuild a dict of every entry and sort them all."""
    entries_by_id = {e["id"]: e for e in state["entries"]}
    duplicates = 0
    for new_entry in new_entries:
        entry_id = new_entry["id"]
        if entry_id in entries_by_id:
            if new_entry["timestamp"] > entries_by_id[entry_id]["timestamp"]:
                entries_by_id[entry_id] = new_entry
            duplicates += 1
        else:
            entries_by_id[entry_id] = new_entry
    state["entries"] = sorted(entries_by_id.values(), key=lambda e: e["timestamp"], reverse=True)
    state["count"] = len(entries_by_id)
    return {"added": len(new_entries) - duplicates, "duplicates": duplicates}


def batch(round_: int) -> list[dict[str, Any]]:
    """1,000 entries: 500 already stored, 500 new (and recent)."""
    old = [entry(i) for i in range(round_ * 500, round_ * 500 + 500)]
    new = [entry(SIZE + round_ * 500 + i) for i in range(500)]
    return old + new


def merge_ours(series: Series, entries: list[dict[str, Any]]) -> None:
    now = format_time(time.time())
    prepared = series.prepare(entries, "id", "timestamp", UTC, now)
    series.merge(prepared, now, None, ("id", "timestamp"))


def report(name: str, value: float, unit: str, target: str, ok: bool) -> bool:
    print(f"{name:<58} {value:>10.2f} {unit:<4} target {target:<14} {'OK' if ok else 'MISSED'}")
    return ok


def one_series() -> list[bool]:
    """Merge, query and load figures of one series of 100,000 entries."""
    base = [entry(i) for i in range(SIZE)]
    series = Series("kudos_givers_timeseries", max_entries=1_000_000)
    merge_ours(series, base[:10_000])
    for first in range(10_000, SIZE, 10_000):
        merge_ours(series, base[first : first + 10_000])
    seed_state = {"entries": list(reversed(base)), "count": SIZE}
    results = []

    rounds = [batch(r) for r in range(15)]
    ours, seeds = [], []
    for entries in rounds:
        gc.collect()
        start = time.perf_counter()
        merge_ours(series, entries)
        ours.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        seed_merge(seed_state, entries)
        seeds.append((time.perf_counter() - start) * 1000)
    ours_ms, seed_ms = statistics.median(ours), statistics.median(seeds)
    print(f"series of {len(series):,} entries; naive merge median {seed_ms:.1f} ms\n")
    results.append(
        report(
            "merge 1,000 (half duplicates) into 100,000, median",
            ours_ms,
            "ms",
            "<= 20 ms",
            ours_ms <= 20,
        )
    )
    results.append(
        report(
            "speed-up over the naive merge",
            seed_ms / ours_ms,
            "x",
            ">= 10x",
            seed_ms / ours_ms >= 10,
        )
    )

    day = 86400
    samples = []
    for d in range(0, 95, 3):
        start = time.perf_counter()
        result = series.query(START + d * day, START + (d + 1) * day)
        samples.append((time.perf_counter() - start) * 1000)
    query_ms = statistics.median(samples)
    print(f"\none-day query returns {result['count']} entries")
    results.append(
        report("query one day out of 100,000, median", query_ms, "ms", "<= 2 ms", query_ms <= 2)
    )

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "series.json"
        path.write_bytes(orjson.dumps({"version": 1, "data": series.as_dict()}))
        size = path.stat().st_size
        del series, seed_state, base, rounds
        gc.collect()
        tracemalloc.start()
        text = path.read_bytes()
        data = orjson.loads(text)["data"]
        del text
        loaded = Series.from_dict("kudos_givers_timeseries", data)
        del data
        gc.collect()
        current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    print(
        f"\nfile {size / 2**20:.1f} MB for {len(loaded):,} entries; held {current / 2**20:.1f} MB after load"
    )
    results.append(
        report(
            "peak memory loading the series / its JSON file",
            peak / size,
            "x",
            "<= 3x",
            peak / size <= 3,
        )
    )
    return results


def rebuild_intervals(intervals: list[list[float]], start: float, end: float) -> None:
    """The merge without a cap or bisection: one pass rebuilding every interval."""
    merged: list[list[float]] = []
    placed = False
    for lo, hi in intervals:
        if hi < start:
            merged.append([lo, hi])
        elif lo > end:
            if not placed:
                merged.append([start, end])
                placed = True
            merged.append([lo, hi])
        else:
            start, end = min(lo, start), max(hi, end)
    if not placed:
        merged.append([start, end])
    intervals[:] = merged


def coverage_of_a_year() -> list[bool]:
    """8,760 hourly windows, each the first half hour: none touches the one before."""
    hour = 3600.0
    windows = [(START + h * hour, START + h * hour + hour / 2) for h in range(8_760)]
    now = format_time(time.time())
    series = Series("meter_timeseries")
    ours, old = [], []
    gc.collect()
    for window in windows:
        start = time.perf_counter()
        series.merge([], now, window)
        ours.append(time.perf_counter() - start)
    reference: list[list[float]] = []
    for window in windows:
        start = time.perf_counter()
        rebuild_intervals(reference, *window)
        old.append(time.perf_counter() - start)
    assert len(reference) == len(windows)
    last = slice(-1_000, None)  # where the old pass is longest: 7,760 to 8,760 intervals
    ours_us, old_us = statistics.median(ours[last]) * 1e6, statistics.median(old[last]) * 1e6
    print(
        f"\n8,760 disjoint windows: {len(series.covered):,} intervals kept "
        f"(cap {MAX_COVERAGE_INTERVALS:,}), rebuilding the list kept {len(reference):,}; "
        f"total {sum(ours) * 1000:.0f} ms, rebuilding {sum(old) * 1000:.0f} ms; "
        f"per merge over the last 1,000 {ours_us:.1f} us, rebuilding {old_us:.0f} us"
    )
    return [
        report(
            "coverage of 8,760 disjoint windows, total",
            sum(ours) * 1000,
            "ms",
            "<= 500 ms",
            sum(ours) <= 0.5 and len(series.covered) <= MAX_COVERAGE_INTERVALS,
        ),
        report(
            "per merge, speed-up over rebuilding the list",
            old_us / ours_us,
            "x",
            ">= 10x",
            old_us / ours_us >= 10,
        ),
    ]


def series_entry(i: int) -> dict[str, Any]:
    """Entry i of a 10,000-entry series spread over SPAN_DAYS."""
    return {**entry(i), "timestamp": format_time(START + i * SPAN_DAYS * 86400 / SERIES_SIZE)}


def write_version_1_files(storage: Path, keys: list[str]) -> int:
    """The Store files version 1 wrote (index of keys only, a cap in every series)."""
    storage.mkdir(parents=True)
    now = format_time(time.time())
    total = 0
    for key in keys:
        series = Series(key)
        entries = [series_entry(i) for i in range(SERIES_SIZE)]
        series.merge(series.prepare(entries, "id", "timestamp", UTC, now), now)
        data = {**series.as_dict(), "max_entries": DEFAULT_MAX_ENTRIES}
        wrapped = {"version": 1, "minor_version": 1, "key": f"{PREFIX}.{key}", "data": data}
        total += (storage / f"{PREFIX}.{key}").write_bytes(orjson.dumps(wrapped))
    index = {"version": 1, "minor_version": 1, "key": PREFIX, "data": {"keys": keys}}
    (storage / PREFIX).write_bytes(orjson.dumps(index))
    return total


def store_batch(round_: int) -> list[dict[str, Any]]:
    """1,000 entries for one series: 500 it holds, 500 newer ones."""
    old = [series_entry(i) for i in range(round_ * 500, round_ * 500 + 500)]
    new = [series_entry(SERIES_SIZE + round_ * 500 + i) for i in range(500)]
    return old + new


async def merge_and_query(store: SeriesStore, key: str, entries: list[dict[str, Any]]) -> None:
    """What timeseries_merge and then timeseries_query (one day) do."""
    now = format_time(time.time())
    async with store.lock(key):
        series = await store.async_get(key, create=True)
        assert series is not None
        prepared = series.prepare(entries, "id", "timestamp", UTC, now)
        series.merge(prepared, now, None, ("id", "timestamp"), store.settings.max_entries)
        store.async_changed(key)
    async with store.lock(key):
        series = await store.async_get(key)
        assert series is not None
        series.query(START + 50 * 86400, START + 51 * 86400)


def rss_mb() -> float:
    """Resident memory now (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def restart(hass: HomeAssistant, store: SeriesStore | None) -> SeriesStore:
    if store is not None:
        await store.async_close()
    fresh = SeriesStore(hass, PREFIX)
    await fresh.async_load()
    return fresh


async def async_home_server(config_dir: str) -> list[bool]:
    """Set-up, listing and memory with 100 series of 10,000 entries on disk."""
    hass = HomeAssistant(config_dir)
    keys = [f"series_{n:03d}_timeseries" for n in range(SERIES)]
    size = await hass.async_add_executor_job(
        write_version_1_files, Path(config_dir) / ".storage", keys
    )
    print(f"\n{SERIES} series of {SERIES_SIZE:,} entries: {size / 2**20:.0f} MB of Store files")
    results = []

    start = time.perf_counter()
    store = await restart(hass, None)
    upgrade_list = await store.async_summaries()
    await hass.async_block_till_done()
    upgrade_s = time.perf_counter() - start
    assert len(upgrade_list) == SERIES
    print(f"first list after the upgrade (loads each series once, one-off): {upgrade_s:.1f} s")

    start = time.perf_counter()
    store = await restart(hass, store)
    setup_ms = (time.perf_counter() - start) * 1000
    samples = []
    for _ in range(20):
        start = time.perf_counter()
        listed = await store.async_summaries()
        samples.append((time.perf_counter() - start) * 1000)
    assert listed == upgrade_list
    assert store.loaded_keys() == []
    list_ms = statistics.median(samples)
    print(f"set-up (read the index) {setup_ms:.1f} ms")
    results.append(
        report("timeseries_list of 100 series, median", list_ms, "ms", "<= 200 ms", list_ms <= 200)
    )

    timed = []
    for key in keys:
        start = time.perf_counter()
        await merge_and_query(store, key, store_batch(0))
        timed.append((time.perf_counter() - start) * 1000)
    await hass.async_block_till_done()
    print(
        f"merge 1,000 + query one day per series, loading it from disk: median "
        f"{statistics.median(timed):.0f} ms, max {max(timed):.0f} ms"
    )

    store = await restart(hass, store)
    batches = {key: store_batch(1) for key in keys}
    gc.collect()
    rss_before = rss_mb()
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    for key in keys:
        await merge_and_query(store, key, batches[key])
    await hass.async_block_till_done()
    gc.collect()
    after, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    added_mb = (after - before) / 2**20
    print(
        f"{len(store.loaded_keys())} series still loaded, estimated "
        f"{store.memory_used / 2**20:.1f} MB (budget {DEFAULT_MEMORY_BUDGET / 2**20:.0f} MB); "
        f"traced peak {(peak - before) / 2**20:.0f} MB; "
        f"resident memory {rss_mb() - rss_before:+.0f} MB"
    )
    results.append(
        report(
            "memory added after merge + query into every series once",
            added_mb,
            "MB",
            "<= 50 MB",
            added_mb <= 50,
        )
    )
    await store.async_close()
    await hass.async_block_till_done()
    await hass.async_stop(force=True)
    return results


def main() -> int:
    results = one_series()
    results += coverage_of_a_year()
    with tempfile.TemporaryDirectory() as config_dir:
        results += asyncio.run(async_home_server(config_dir))
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
