"""Which summaries tell of the asked days: the finest kept for each day, oldest first."""

from datetime import date

from custom_components.azure_openai_memory.lib.summaries.book import (
    GroupSummary,
    PeriodType,
    SummaryBook,
    summary_id,
)
from custom_components.azure_openai_memory.lib.summaries.days import talk_between

GROUP = "kitchen"


def put(book: SummaryBook, kind: PeriodType, start: str, end: str) -> None:
    book.put(
        GroupSummary(
            summary_id(GROUP, kind, start), "a", GROUP, kind, start, end, f"{kind} {start}"
        )
    )


def told(book: SummaryBook, first: date, last: date) -> list[tuple[str, str]]:
    return [(s.period_type.value, s.period_start) for s in talk_between(book, GROUP, first, last)]


def test_each_day_by_the_finest_summary_kept() -> None:
    book = SummaryBook()
    put(book, PeriodType.ERA, "2025-01-01", "2026-08-31")
    put(book, PeriodType.MONTHLY, "2026-08-01", "2026-08-31")
    put(book, PeriodType.MONTHLY, "2026-09-01", "2026-09-30")
    put(book, PeriodType.WEEKLY, "2026-09-28", "2026-10-04")
    put(book, PeriodType.DAILY, "2026-10-03", "2026-10-03")
    put(book, PeriodType.DAILY, "2026-10-04", "2026-10-04")
    # The last days of September are held by their month and their week: the week tells.
    assert told(book, date(2026, 9, 29), date(2026, 10, 4)) == [
        ("weekly", "2026-09-28"),
        ("daily", "2026-10-03"),
        ("daily", "2026-10-04"),
    ]
    assert told(book, date(2026, 10, 3), date(2026, 10, 3)) == [("daily", "2026-10-03")]
    # July has lost its monthly: only the era holds it.
    assert told(book, date(2026, 7, 1), date(2026, 8, 31)) == [
        ("era", "2025-01-01"),
        ("monthly", "2026-08-01"),
    ]
    assert told(book, date(2026, 10, 5), date(2026, 10, 9)) == []
    assert talk_between(book, "bedroom", date.min, date.max) == []
