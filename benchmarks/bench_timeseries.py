"""Time-series figures, each next to its target (issue 4).

The reference is the seed's merge (rebuild a dict of every entry, sort all by timestamp)
run on the same data in the same process.
"""

from datetime import UTC, datetime
import gc
from pathlib import Path
import statistics
import tempfile
import time
import tracemalloc
from typing import Any

import orjson

from custom_components.azure_openai_memory.memory.timeseries import TimeSeries, format_time

START = datetime(2025, 1, 1, tzinfo=UTC).timestamp()
SIZE = 100_000
SPAN_DAYS = 100


def entry(i: int) -> dict[str, Any]:
    return {
        "id": f"kudos_activity{i}_athlete{i * 7 % 1000}",
        "athlete_id": str(i * 7 % 1000),
        "athlete_name": f"Athlete {i % 1000}",
        "activity_id": str(i),
        "timestamp": format_time(START + i * SPAN_DAYS * 86400 / SIZE),
    }


def seed_merge(state: dict[str, Any], new_entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The seed's merge_timeseries_state, minus loadState/saveState."""
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


def merge_ours(series: TimeSeries, entries: list[dict[str, Any]]) -> None:
    now = format_time(time.time())
    prepared = series.prepare(entries, "id", "timestamp", UTC, now)
    series.merge(prepared, now, None, ("id", "timestamp"))


def report(name: str, value: float, unit: str, target: str, ok: bool) -> bool:
    print(f"{name:<58} {value:>10.2f} {unit:<4} target {target:<14} {'OK' if ok else 'MISSED'}")
    return ok


def main() -> int:
    base = [entry(i) for i in range(SIZE)]
    series = TimeSeries("kudos_givers_timeseries", max_entries=1_000_000)
    merge_ours(series, base[:10_000])
    for start in range(10_000, SIZE, 10_000):
        merge_ours(series, base[start : start + 10_000])
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
    print(f"series of {len(series):,} entries; seed merge median {seed_ms:.1f} ms\n")
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
            "speed-up over the seed's merge",
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
        loaded = TimeSeries.from_dict("kudos_givers_timeseries", data)
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
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
