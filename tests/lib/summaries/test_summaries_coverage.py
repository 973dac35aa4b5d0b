"""Summaries over a year and a half, without Home Assistant: counts carried, the past covered."""

from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta

import pytest

from custom_components.azure_openai_memory.lib.summaries.book import (
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


def last_day_held(summary: GroupSummary) -> date:
    """A month (and an era of months) holds the weeks that begin in it, to their Sunday."""
    end = date.fromisoformat(summary.period_end)
    if summary.period_type in (PeriodType.MONTHLY, PeriodType.ERA):
        return week_start(end) + timedelta(days=6)
    return end


def first_day_not_held(cover: list[GroupSummary], first: date) -> date:
    """The first day from first on that no summary of the cover holds."""
    reach = first - timedelta(days=1)
    for summary in sorted(cover, key=lambda s: s.period_start):
        if date.fromisoformat(summary.period_start) > reach + timedelta(days=1):
            break
        reach = max(reach, last_day_held(summary))
    return reach + timedelta(days=1)


def test_the_past_a_turn_carries_has_no_hole_over_a_year_and_a_half() -> None:
    """Each morning, the coarsest summaries that hold every day talked about: an era for
    the months whose monthlies were pruned, monthlies, weeklies not in a monthly, dailies
    not in a weekly; newest first (the era last), none beside the summary it was folded
    into."""
    book = SummaryBook()
    for day in live_through(book, FIRST, LAST):
        cover = book.context(GROUP)
        assert first_day_not_held(cover, FIRST) == day + timedelta(days=1)
        ends = [s.period_end for s in cover if s.period_type is not PeriodType.ERA]
        assert ends == sorted(ends, reverse=True)
        assert [s.period_type for s in cover[len(ends) :]] in ([], [PeriodType.ERA])
        kept = {s.summary_id for s in cover}
        assert not any(s.aggregated_into in kept for s in cover)
    # On 2027-03-01: the week of 02-15 is folded, not yet its month.
    cover = book.context(GROUP)
    dailies = [s.period_start for s in cover if s.period_type is PeriodType.DAILY]
    assert dailies == [(LAST - timedelta(days=n)).isoformat() for n in range(7)]
    weeklies = [s.period_start for s in cover if s.period_type is PeriodType.WEEKLY]
    assert weeklies == [(date(2027, 2, 15) - timedelta(days=7 * n)).isoformat() for n in range(7)]
    # The monthlies of the last 13 months; the older ones were pruned: the era holds them.
    monthlies = [s.period_start for s in cover if s.period_type is PeriodType.MONTHLY]
    month, months = date(2026, 12, 1), []
    while month >= date(2025, 12, 1):
        months.append(month.isoformat())
        month = (month - timedelta(days=1)).replace(day=1)
    assert monthlies == months
    assert [s.period_type for s in cover][len(dailies) + len(weeklies) + len(monthlies) :] == [
        PeriodType.ERA
    ]


def test_a_file_of_version_1_that_is_not_summaries_is_refused_before_it_is_rewritten() -> None:
    """Home Assistant writes a migrated file at once: one that cannot be read must be
    refused by the migration, so that it is set aside as it was."""
    for unusable in ({"summaries": "not a list"}, {"profiles": [1, 2]}, {"summaries": [{}]}):
        with pytest.raises(ValueError, match="not summaries"):
            migrate_summaries(1, unusable)
    with pytest.raises(ValueError, match="newer version"):
        migrate_summaries(3, {})
