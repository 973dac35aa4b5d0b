"""Summary figures, each next to its target (issue 10).

One aggregation cycle (LLM excluded: every fold gets a ready-made text) for a group holding
a year of dailies, at 1x, 10x and 100x as many groups, against the seed's way of telling
"already aggregated" (scan every summary's aggregated_from: quadratic) in the same run: at
each scale one group's scan is timed and multiplied by the number of groups (at 100x the
whole scan would take minutes; every group's scan costs the same). The cycle's cost per
group is checked to stay flat (linear in the groups) rather than printed. Then building the
historical context of a turn (the data block, counted in tokens). Timings run with the
garbage collector collected first and off, so that a collection does not land in one scale.
"""

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
import gc
import statistics
import time
from typing import Any

from custom_components.azure_openai_memory.agent.context import build_past_context
from custom_components.azure_openai_memory.lib.summaries.book import (
    GroupSummary,
    PeriodType,
    SummaryBook,
    Written,
)
from custom_components.azure_openai_memory.lib.tokens import load_counter

START = date(2025, 1, 1)
NOW = datetime(2026, 1, 1, 4, tzinfo=UTC)
TEXT = Written(
    "Talked about the garden and the heating.", ["garden", "heating"], ["x"], ["Ann"], False
)


def year_of_dailies(groups: int) -> SummaryBook:
    book = SummaryBook()
    for g in range(groups):
        for n in range(365):
            day = START + timedelta(days=n)
            created = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=1)
            book.write_daily(f"group_{g}", day, TEXT, 10, "agent", created.isoformat())
    return book


def cycle(book: SummaryBook) -> int:
    """The cycle as summaries/keeper.py runs it, with the text ready (no LLM)."""
    book.update_decay_scores(NOW)
    folds = 0
    for group in book.groups():
        for kind in (PeriodType.DAILY, PeriodType.WEEKLY):
            for job in book.plan(group, kind, NOW.date()):
                parent = book.fold(job, TEXT, "agent", NOW.isoformat())
                if parent.period_type is PeriodType.MONTHLY:
                    book.note_era(parent, TEXT)
                folds += 1
    book.prune_expired()
    return folds


def seed_pending(book: SummaryBook, group: str) -> list[GroupSummary]:
    """The seed's get_summaries_to_aggregate: for each candidate, scan all summaries."""
    everything = list(book)
    return [
        s
        for s in book.of(group, PeriodType.DAILY)
        if not any(s.summary_id in other.aggregated_from for other in everything)
    ]


# The cycle's cost per group at 100x may be at most this many times that at 1x (linear).
LINEAR_TOLERANCE = 1.5


def timed(func: Callable[..., Any], *args: Any) -> float:
    """Milliseconds of one call, without a garbage collection in it."""
    gc.collect()
    gc.disable()
    try:
        started = time.perf_counter()
        func(*args)
        return (time.perf_counter() - started) * 1000
    finally:
        gc.enable()


def main() -> None:
    ok = True
    per_group: list[float] = []
    for scale in (1, 10, 100):
        book = year_of_dailies(scale)
        # The seed's pending-dailies scan of one group, times the groups.
        seed_ms = timed(seed_pending, book, "group_0") * scale
        ms = timed(cycle, book)
        per_group.append(ms / scale)
        line = f"cycle, year of dailies x{scale:<3} {ms:9.1f} ms ({ms / scale:6.2f} ms per group)"
        if scale == 1:
            ok &= ms <= 50
            line += f"  target <= 50 ms {'OK' if ms <= 50 else 'MISSED'}"
        line += f"  seed's scan alone {seed_ms:11.1f} ms (x{seed_ms / ms:.1f} the whole cycle)"
        print(line)
    growth = per_group[-1] / per_group[0]
    linear = growth <= LINEAR_TOLERANCE
    ok &= linear
    print(
        f"per-group cost at 100x vs 1x: x{growth:.2f}  target <= x{LINEAR_TOLERANCE} (linear) "
        f"{'OK' if linear else 'MISSED'}"
    )
    counter = load_counter("gpt-4", None)
    book = year_of_dailies(1)
    cycle(book)
    parts = book.context("group_0")
    samples = [
        timed(build_past_context, None, "group_0", parts, counter, 2000, 400) for _ in range(200)
    ]
    median = statistics.median(samples)
    ok &= median <= 1
    print(
        f"historical context for a turn: {median:.3f} ms  target <= 1 ms {'OK' if median <= 1 else 'MISSED'}"
    )
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
