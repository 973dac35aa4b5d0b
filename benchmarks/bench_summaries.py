"""Summary figures, each next to its target (issue 10).

One aggregation cycle (LLM excluded: every fold gets a ready-made text) for a group holding
a year of dailies, at 1x, 10x and 100x as many groups, against the seed's way of telling
"already aggregated" (scan every summary's aggregated_from: quadratic) in the same run.
Then building the historical context of a turn (the data block, counted in tokens).
"""

from datetime import UTC, date, datetime, timedelta
import math
import statistics
import time

from custom_components.azure_openai_memory.context import build_past_context
from custom_components.azure_openai_memory.memory.summaries import (
    GroupSummary,
    PeriodType,
    SummaryBook,
    Written,
)
from custom_components.azure_openai_memory.memory.tokens import load_counter

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
    """The cycle as summarizing.py runs it, with the text ready (no LLM)."""
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


def timed(func, *args):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    func(*args)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    ok = True
    per_group: list[float] = []
    for scale in (1, 10, 100):
        book = year_of_dailies(scale)
        # The seed's pending-dailies scan of one group, times the groups (100x: too slow).
        seed_ms = timed(seed_pending, book, "group_0") * scale if scale <= 10 else float("nan")
        ms = timed(cycle, book)
        per_group.append(ms / scale)
        line = f"cycle, year of dailies x{scale:<3} {ms:9.1f} ms ({ms / scale:6.2f} ms per group)"
        if scale == 1:
            ok &= ms <= 50
            line += f"  target <= 50 ms {'OK' if ms <= 50 else 'MISSED'}"
        if not math.isnan(seed_ms):
            line += f"  seed's scan alone {seed_ms:9.1f} ms (x{seed_ms / ms:.1f} the whole cycle)"
        print(line)
    growth = per_group[-1] / per_group[0]
    print(f"per-group cost at 100x vs 1x: x{growth:.2f} (linear: about 1)")
    counter = load_counter("gpt-4", None)
    book = year_of_dailies(1)
    cycle(book)
    parts = book.context("group_0")
    samples = []
    for _ in range(200):
        started = time.perf_counter()
        build_past_context(None, "group_0", parts, counter, 2000, 400)
        samples.append((time.perf_counter() - started) * 1000)
    median = statistics.median(samples)
    ok &= median <= 1
    print(
        f"historical context for a turn: {median:.3f} ms  target <= 1 ms {'OK' if median <= 1 else 'MISSED'}"
    )
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
