"""Which summaries tell of the days someone asks about ("what did we talk about last week?").

A day is told by its daily while that is kept; once pruned, by its week, then its month,
then its era. The finest summary that still holds a day tells of it, so an answer about
"Tuesday" reads Tuesday's own summary, not the month's.
"""

from collections.abc import Callable, Iterable
from datetime import date

from .book import GroupSummary, PeriodType, SummaryBook

_FINEST_FIRST = (PeriodType.DAILY, PeriodType.WEEKLY, PeriodType.MONTHLY, PeriodType.ERA)


def _days(summary: GroupSummary, first: date, last: date) -> Iterable[int]:
    """The days (ordinals) from first to last that summary covers."""
    start = max(first, date.fromisoformat(summary.period_start))
    end = min(last, date.fromisoformat(summary.period_end))
    return range(start.toordinal(), end.toordinal() + 1)


def talk_between(
    book: SummaryBook,
    group: str,
    first: date,
    last: date,
    shown: Callable[[GroupSummary], bool] | None = None,
) -> list[GroupSummary]:
    """The group's summaries (of those shown; None: all) that together tell of every day
    from first to last that any of them holds, each the finest one kept; oldest first."""
    told: set[int] = set()
    chosen: list[GroupSummary] = []
    for kind in _FINEST_FIRST:
        for summary in sorted(book.of(group, kind), key=lambda s: s.period_start):
            if shown is not None and not shown(summary):
                continue
            days = set(_days(summary, first, last))
            if days - told:
                chosen.append(summary)
                told |= days
    return sorted(chosen, key=lambda s: (s.period_start, s.period_end))
