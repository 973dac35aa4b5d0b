"""Summaries over a year and a half, without Home Assistant: counts carried."""

from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta

import pytest

from custom_components.azure_openai_memory.memory.summaries import (
    SUMMARIES_VERSION,
    GroupSummary,
    PeriodType,
    SummaryBook,
    Written,
    migrate_summaries,
    summary_id,
    week_start,
)

GROUP = "kitchen"
FIRST = date(2025, 9, 1)  # a Monday, the first of a month
LAST = date(2027, 2, 28)


def written(topics: list[str], *, shift: bool = False) -> Written:
    return Written(f"About {', '.join(topics)}.", topics, ["one"], ["Ann"], False, shift)


def messages_on(day: date) -> int:
    """Talk that varies from day to day, so that a lost month shows in a total."""
    return 5 + day.toordinal() % 7


def days(first: date, last: date) -> Iterator[date]:
    for n in range((last - first).days + 1):
        yield first + timedelta(days=n)


def talk_of_months(first_month: date, last_month: date) -> int:
    """The messages a run of monthlies holds: a month holds the weeks that begin in it."""
    return sum(
        messages_on(day)
        for day in days(FIRST, LAST + timedelta(days=7))
        if first_month <= week_start(day).replace(day=1) <= last_month
    )


def live_through(book: SummaryBook, first: date, last: date) -> Iterator[date]:
    """Talk every day from first to last, each summarised by the next morning's run, which
    then runs the keeper's cycle; yields each day once its run is done."""
    for day in days(first, last):
        following = day + timedelta(days=1)
        now = datetime.combine(following, time(3, 30), UTC)
        book.write_daily(GROUP, day, written(["garden"]), messages_on(day), "a", now.isoformat())
        book.update_decay_scores(now)
        for job in book.plan(GROUP, PeriodType.DAILY, following):
            book.fold(job, written(["garden"]), "a", now.isoformat())
        for job in book.plan(GROUP, PeriodType.WEEKLY, following):
            monthly = book.fold(job, written(["garden"]), "a", now.isoformat())
            book.note_era(monthly, written(["garden"]))
        book.prune_expired()
        yield day


def live(book: SummaryBook, first: date, last: date) -> None:
    for _ in live_through(book, first, last):
        pass


def era_of(book: SummaryBook) -> GroupSummary:
    (era,) = book.of(GROUP, PeriodType.ERA)
    return era


def test_an_era_keeps_counting_the_months_pruned_from_it() -> None:
    """A year and a half of one subject: the era counts every message of its months, also
    once its oldest monthlies are pruned, and its count only grows while talk goes on."""
    book = SummaryBook()
    counts = []
    for _ in live_through(book, FIRST, LAST):
        if book.of(GROUP, PeriodType.ERA):
            counts.append(era_of(book).message_count)
    era = era_of(book)
    # The oldest monthlies were pruned (about 395 days after they were written); the era
    # still spans their months and counts their talk.
    assert book.get(summary_id(GROUP, PeriodType.MONTHLY, "2025-09-01")) is None
    assert book.get(summary_id(GROUP, PeriodType.MONTHLY, "2025-10-01")) is None
    assert (era.period_start, era.period_end) == ("2025-09-01", "2026-12-31")
    assert era.message_count == talk_of_months(FIRST, date(2026, 12, 1))
    assert counts == sorted(counts)
    assert counts[0] < counts[-1]


def test_a_month_that_starts_a_new_era_takes_its_count_along() -> None:
    """September and October in one era; October written again on a new subject founds the
    next era: each era counts its own month, the talk is counted once."""
    book = SummaryBook()
    live(book, FIRST, date(2025, 12, 5))
    september = summary_id(GROUP, PeriodType.MONTHLY, "2025-09-01")
    october = summary_id(GROUP, PeriodType.MONTHLY, "2025-10-01")
    (first,) = book.of(GROUP, PeriodType.ERA)
    assert first.aggregated_from == [september, october]
    assert first.message_count == talk_of_months(FIRST, date(2025, 10, 1))
    monthly = book.get(october)
    assert monthly is not None
    assert book.note_era(monthly, written(["solar panels"], shift=True)) is True
    new, old = book.newest(GROUP, PeriodType.ERA, 10)
    assert (old.aggregated_from, new.aggregated_from) == ([september], [october])
    assert old.message_count == talk_of_months(FIRST, FIRST)
    assert new.message_count == talk_of_months(date(2025, 10, 1), date(2025, 10, 1))


def test_summaries_of_version_1_are_read_with_their_counts() -> None:
    """A file written before counts were carried: every summary keeps the count it has (the
    parts already pruned hold what the parts still kept do not), and counts on from it."""
    book = SummaryBook()
    live(book, FIRST, date(2025, 11, 5))  # September folded on 10-31
    stored = book.as_dict()
    for item in stored["summaries"]:
        del item["part_counts"]
    (era,) = (s for s in stored["summaries"] if s["period_type"] == "era")
    era["aggregated_from"].insert(0, "a monthly pruned since")
    era["message_count"] += 300
    loaded = SummaryBook.from_dict(migrate_summaries(1, stored))
    assert SUMMARIES_VERSION == 2
    again = era_of(loaded)
    assert again.message_count == era["message_count"]
    assert again.part_counts["a monthly pruned since"] == 300
    for summary in loaded:
        assert sum(summary.part_counts.values()) == (
            summary.message_count if summary.aggregated_from else 0
        )
    live(loaded, date(2025, 11, 6), date(2025, 12, 5))  # October folded on 12-01
    assert era_of(loaded).message_count == era["message_count"] + talk_of_months(
        date(2025, 10, 1), date(2025, 10, 1)
    )
    assert migrate_summaries(2, loaded.as_dict()) == loaded.as_dict()


def test_a_file_of_version_1_that_is_not_summaries_is_refused_before_it_is_rewritten() -> None:
    """Home Assistant writes a migrated file at once: one that cannot be read must be
    refused by the migration, so that it is set aside as it was."""
    for unusable in ({"summaries": "not a list"}, {"profiles": [1, 2]}, {"summaries": [{}]}):
        with pytest.raises(ValueError, match="not summaries"):
            migrate_summaries(1, unusable)
    with pytest.raises(ValueError, match="newer version"):
        migrate_summaries(3, {})
