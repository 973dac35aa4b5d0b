"""Summaries without Home Assistant: decay, the aggregation plan, eras, the extractive fallback."""

from datetime import UTC, date, datetime, timedelta
import math

import pytest

from custom_components.azure_openai_memory.lib.summaries.book import (
    DECAY_CONFIG,
    ERA_DRIFT_THRESHOLD,
    PeriodType,
    SummaryBook,
    SummaryError,
    Written,
    calculate_decay_score,
    extractive_summary,
    summary_id,
    topic_drift,
    validate_group,
)

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


def seed_decay(age_days: int, period_type: str) -> float:
    """The seed's formula, written out independently."""
    config = DECAY_CONFIG[period_type]
    if age_days < config["decay_start_days"]:
        return 1.0
    half_life = (config["max_age_days"] - config["decay_start_days"]) / 3
    return math.exp(-(math.log(2) / half_life) * (age_days - config["decay_start_days"]))


@pytest.mark.parametrize(
    ("period_type", "age", "expected"),
    [
        ("daily", 6, 1.0),
        ("daily", 7, 1.0),
        ("daily", 14, 0.125),
        ("weekly", 50, 0.5),
        ("monthly", 90, 1.0),
        ("monthly", 365, 0.125),
        ("era", 1000, 1.0),
    ],
)
def test_decay_follows_the_seed(period_type: str, age: int, expected: float) -> None:
    created = (NOW - timedelta(days=age, hours=1)).isoformat()
    assert calculate_decay_score(created, period_type, NOW) == pytest.approx(expected)
    if period_type != "era":
        assert calculate_decay_score(created, period_type, NOW) == pytest.approx(
            seed_decay(age, period_type)
        )


def written(topics: list[str], *, shift: bool = False, theme: str = "") -> Written:
    return Written(f"About {', '.join(topics)}.", topics, ["one"], ["Ann"], False, shift, theme)


def book_with_days(days: list[date], topics: list[str] | None = None) -> SummaryBook:
    book = SummaryBook()
    for day in days:
        book.write_daily(
            "kitchen", day, written(topics or ["garden"]), 10, "agent", NOW.isoformat()
        )
    return book


def test_plan_folds_closed_weeks_only_and_once() -> None:
    # Mon 2026-02-02 .. Sun 02-08: three days; Mon 02-09: one day; 02-16 week: two days, too new.
    days = [date(2026, 2, 2), date(2026, 2, 4), date(2026, 2, 8), date(2026, 2, 9)]
    days += [date(2026, 2, 16), date(2026, 2, 17)]
    book = book_with_days(days)
    jobs = book.plan("kitchen", PeriodType.DAILY, date(2026, 2, 20))
    assert [(j.period_start, j.period_end, len(j.children)) for j in jobs] == [
        ("2026-02-02", "2026-02-08", 3)
    ]
    weekly = book.fold(jobs[0], written(["garden"]), "agent", NOW.isoformat())
    assert weekly.summary_id == summary_id("kitchen", PeriodType.WEEKLY, "2026-02-02")
    assert weekly.aggregated_from == [c.summary_id for c in jobs[0].children]
    assert all(c.aggregated_into == weekly.summary_id for c in jobs[0].children)
    assert weekly.message_count == 30
    # Folded: the same day asks for nothing more, and a rerun would write the same id.
    assert book.plan("kitchen", PeriodType.DAILY, date(2026, 2, 20)) == []
    assert len(book.of("kitchen", PeriodType.WEEKLY)) == 1
    # The week of 02-09 closes when its Sunday is more than 7 days back; its one day folds
    # (a group that talks once a week keeps its past when the dailies are pruned).
    assert book.plan("kitchen", PeriodType.DAILY, date(2026, 2, 22)) == []
    (single,) = book.plan("kitchen", PeriodType.DAILY, date(2026, 2, 23))
    assert (single.period_start, [c.period_start for c in single.children]) == (
        "2026-02-09",
        ["2026-02-09"],
    )


def test_a_month_folds_once_its_last_day_is_thirty_days_back() -> None:
    book = book_with_days([date(2026, 2, 2), date(2026, 2, 9)])
    for job in book.plan("kitchen", PeriodType.DAILY, date(2026, 3, 1)):
        book.fold(job, written(["garden"]), "agent", NOW.isoformat())
    assert len(book.of("kitchen", PeriodType.WEEKLY)) == 2
    assert book.plan("kitchen", PeriodType.WEEKLY, date(2026, 3, 30)) == []
    (job,) = book.plan("kitchen", PeriodType.WEEKLY, date(2026, 3, 31))
    assert (job.period_start, job.period_end, len(job.children)) == (
        "2026-02-01",
        "2026-02-28",
        2,
    )


def test_a_refolded_week_keeps_the_parts_pruned_since_and_refreshes_its_month() -> None:
    book = book_with_days([date(2026, 2, 2), date(2026, 2, 3)])
    (job,) = book.plan("kitchen", PeriodType.DAILY, date(2026, 2, 20))
    assert book.earlier(job) is None
    first = book.fold(job, written(["garden"]), "agent", "2026-02-20T00:00:00+00:00")
    first.aggregated_into = "a monthly"
    for day in job.children:
        book.remove(day)  # pruned
    book.write_daily("kitchen", date(2026, 2, 7), written(["roses"]), 4, "agent", "")
    (late,) = book.plan("kitchen", PeriodType.DAILY, date(2026, 2, 21))
    assert [c.period_start for c in late.children] == ["2026-02-07"]
    assert book.earlier(late) is first  # the model is given what the pruned days said
    again = book.fold(late, written(["garden", "roses"]), "agent", "2026-02-21T00:00:00+00:00")
    assert again.message_count == 24
    assert again.aggregated_from == [*job_ids(job), *job_ids(late)]
    assert again.aggregated_into is None  # its month is written again on the next cycle


def job_ids(job: object) -> list[str]:
    return [c.summary_id for c in job.children]  # type: ignore[attr-defined]


def test_a_day_written_again_is_folded_into_its_week_again() -> None:
    book = book_with_days([date(2026, 2, 2), date(2026, 2, 3)])
    (job,) = book.plan("kitchen", PeriodType.DAILY, date(2026, 2, 20))
    book.fold(job, written(["garden"]), "agent", NOW.isoformat())
    book.write_daily("kitchen", date(2026, 2, 3), written(["roses"]), 30, "agent", "")
    (again,) = book.plan("kitchen", PeriodType.DAILY, date(2026, 2, 20))
    assert [c.period_start for c in again.children] == ["2026-02-02", "2026-02-03"]
    assert book.fold(again, written(["roses"]), "agent", "").message_count == 40


def test_a_late_day_extends_its_week_instead_of_duplicating_it() -> None:
    book = book_with_days([date(2026, 2, 2), date(2026, 2, 3)])
    (job,) = book.plan("kitchen", PeriodType.DAILY, date(2026, 2, 20))
    first = book.fold(job, written(["garden"]), "agent", "2026-02-20T00:00:00+00:00")
    book.write_daily("kitchen", date(2026, 2, 5), written(["roses"]), 4, "agent", NOW.isoformat())
    (again,) = book.plan("kitchen", PeriodType.DAILY, date(2026, 2, 21))
    assert len(again.children) == 3
    second = book.fold(again, written(["garden", "roses"]), "agent", "2026-02-21T00:00:00+00:00")
    assert second.summary_id == first.summary_id
    assert second.created_at == "2026-02-20T00:00:00+00:00"  # its age runs from the first write
    assert len(book.of("kitchen", PeriodType.WEEKLY)) == 1
    assert second.message_count == 24


def monthly_for(book: SummaryBook, month: date, topics: list[str], **kw: object) -> bool:
    weeks = [month + timedelta(days=7 * n) for n in range(2)]
    for start in weeks:
        for offset in (0, 1):
            book.write_daily("kitchen", start + timedelta(days=offset), written(topics), 5, "a", "")
    today = month + timedelta(days=70)
    for job in book.plan("kitchen", PeriodType.DAILY, today):
        book.fold(job, written(topics), "a", NOW.isoformat())
    (job,) = [
        j
        for j in book.plan("kitchen", PeriodType.WEEKLY, today)
        if j.period_start == month.replace(day=1).isoformat()
    ]
    text = written(topics, **kw)  # type: ignore[arg-type]
    monthly = book.fold(job, text, "a", NOW.isoformat())
    return book.note_era(monthly, text)


def test_eras_start_on_drift_or_when_the_model_says_so() -> None:
    book = SummaryBook()
    assert monthly_for(book, date(2026, 1, 5), ["garden planning", "tomato seeds"]) is True
    era = book.profiles["kitchen"].current_era
    assert era is not None
    assert era["started"] == "2026-01-05"  # the first day talked about
    assert era["key_topics"] == ["garden planning", "tomato seeds"]
    # Same subject, reworded: the era goes on, and its topics build up.
    reworded = ["gardening", "tomato seedlings", "watering plants"]
    assert monthly_for(book, date(2026, 2, 2), reworded) is False
    assert era["key_topics"] == ["garden planning", "tomato seeds", *reworded]
    # A new subject: a new era.
    assert monthly_for(book, date(2026, 3, 2), ["solar panels", "battery storage"]) is True
    assert book.profiles["kitchen"].current_era["started"] == "2026-03-02"  # type: ignore[index]
    # The model marks a shift though topics overlap.
    assert monthly_for(book, date(2026, 4, 6), ["solar panels"], shift=True, theme="Energy") is True
    eras = book.newest("kitchen", PeriodType.ERA, 10)
    assert [e.period_start for e in eras] == ["2026-04-06", "2026-03-02", "2026-01-05"]
    assert eras[2].period_end == "2026-02-28"
    assert len(eras[2].aggregated_from) == 2


def test_an_era_lasts_at_least_two_weeks() -> None:
    book = SummaryBook()
    # Talk begins in February's last week: the era starts on 02-23.
    assert monthly_for(book, date(2026, 2, 23), ["garden planning"]) is True
    assert book.profiles["kitchen"].current_era["started"] == "2026-02-23"  # type: ignore[index]
    # March begins 6 days later: too soon for a new era, however new the subject.
    assert monthly_for(book, date(2026, 3, 9), ["solar panels"]) is False
    assert book.profiles["kitchen"].current_era["started"] == "2026-02-23"  # type: ignore[index]
    assert monthly_for(book, date(2026, 4, 6), ["heat pump noise"]) is True


def test_an_old_month_written_again_does_not_start_an_era() -> None:
    book = SummaryBook()
    assert monthly_for(book, date(2026, 1, 5), ["garden planning"]) is True
    assert monthly_for(book, date(2026, 3, 2), ["solar panels"]) is True
    january = book.newest("kitchen", PeriodType.MONTHLY, 10)[-1]
    assert january.period_start == "2026-01-01"
    assert book.note_era(january, written(["heat pump noise"], shift=True)) is False
    assert book.profiles["kitchen"].current_era["started"] == "2026-03-02"  # type: ignore[index]
    assert len(book.of("kitchen", PeriodType.ERA)) == 2


def test_only_the_last_ten_eras_are_kept() -> None:
    book = SummaryBook()
    for n in range(12):
        month = date(2026 + n // 12, n % 12 + 1, 1)
        monday = month + timedelta(days=(7 - month.weekday()) % 7)
        assert monthly_for(book, monday, [f"subject{n} words{n}"]) is True
    eras = book.newest("kitchen", PeriodType.ERA, 100)
    assert len(eras) == DECAY_CONFIG["era"]["max_count"]
    assert eras[-1].period_start == "2026-03-02"


def test_decay_updates_in_place_and_prunes_below_a_tenth() -> None:
    book = SummaryBook()
    old = (NOW - timedelta(days=15)).isoformat()
    fresh = (NOW - timedelta(days=3)).isoformat()
    book.write_daily("hall", date(2026, 2, 14), written(["a"]), 1, "a", old)
    book.write_daily("hall", date(2026, 2, 26), written(["b"]), 1, "a", fresh)
    book.update_decay_scores(NOW)
    assert book.newest("hall", PeriodType.DAILY, 5)[1].decay_score == pytest.approx(
        seed_decay(15, "daily")
    )
    assert book.prune_expired() == 1
    assert [s.period_start for s in book.of("hall", PeriodType.DAILY)] == ["2026-02-26"]


def test_extractive_summary_keeps_the_weightiest_sentences_and_frequent_topics() -> None:
    texts = [
        "Water the tomatoes in the greenhouse tonight.",
        "Hi.",
        "The greenhouse tomatoes need more water when it is hot.",
        "What time is it?",
        "Close the greenhouse vents at sunset.",
    ]
    summary, topics, highlights = extractive_summary(texts, max_sentences=2, max_topics=3)
    assert topics == ["greenhouse", "water", "tomatoes"]  # ties: first seen first
    assert summary == (
        "Water the tomatoes in the greenhouse tonight. "
        "The greenhouse tomatoes need more water when it is hot."
    )
    assert highlights == summary.replace("tonight. ", "tonight.|").split("|")


def test_topic_drift_is_the_share_of_words_the_era_never_used() -> None:
    assert topic_drift(["garden planning"], ["garden planning"]) == 0.0
    assert topic_drift(["garden planning"], ["solar panels"]) == 1.0
    era = ["garden planning", "tomato seeds", "watering"]
    # Reworded, same household: gardening, tomato, seedlings, watering known; plants not.
    reworded = ["gardening", "tomato seedlings", "watering plants"]
    assert topic_drift(reworded, era) == pytest.approx(1 / 5)
    assert topic_drift(reworded, era) <= ERA_DRIFT_THRESHOLD
    # A change of life: solar, panels, battery, storage new; garden known.
    moved = ["solar panels", "battery storage", "garden"]
    assert topic_drift(moved, era) == pytest.approx(4 / 5)
    assert topic_drift(moved, era) > ERA_DRIFT_THRESHOLD


def test_the_book_survives_its_stored_form() -> None:
    book = book_with_days([date(2026, 2, 2), date(2026, 2, 3)])
    (job,) = book.plan("kitchen", PeriodType.DAILY, date(2026, 2, 20))
    book.fold(job, written(["garden"]), "agent", NOW.isoformat())
    book.summarised_through = "2026-02-19"
    again = SummaryBook.from_dict(book.as_dict())
    assert again.as_dict() == book.as_dict()


@pytest.mark.parametrize("bad", ["Kitchen", "a b", "", "../x", "x_", 3])
def test_group_ids_are_slugs(bad: object) -> None:
    with pytest.raises(SummaryError) as err:
        validate_group(bad)  # type: ignore[arg-type]
    assert err.value.key == "invalid_group"


def test_a_group_given_to_another_keeps_every_summary_and_link() -> None:
    """A user's group becomes their person's: every summary under its new id, the links
    between them (folded from, folded into, the era's founder) following."""
    book = SummaryBook()
    assert monthly_for(book, date(2026, 1, 5), ["garden planning", "tomato seeds"]) is True
    before = {(s.period_type, s.period_start): s.as_dict() for s in book}
    context = [(s.period_type, s.period_start) for s in book.context("kitchen")]
    profile = book.profile("kitchen").as_dict()

    assert book.move_group("kitchen", "person_ben") == len(before)
    assert book.groups() == ["person_ben"]
    after = {(s.period_type, s.period_start): s for s in book}
    assert after.keys() == before.keys()
    for key, summary in after.items():
        assert summary.summary_id == summary_id("person_ben", *key)
        old = before[key]
        for kept in ("summary", "topics", "highlights", "message_count", "created_at"):
            assert getattr(summary, kept) == old[kept]
        assert all(book.get(part) is not None for part in summary.aggregated_from)
        if old["aggregated_into"] is None:
            assert summary.aggregated_into is None
        else:
            assert summary.aggregated_into is not None
            assert book.get(summary.aggregated_into) is not None
        assert sum(summary.part_counts.values()) == sum(old["part_counts"].values())
    assert [(s.period_type, s.period_start) for s in book.context("person_ben")] == context
    moved = book.profile("person_ben").as_dict()
    assert moved["topic_evolution"] == profile["topic_evolution"]
    era = moved["current_era"]
    assert era is not None
    assert book.get(era["founded_by"]) is not None
    assert SummaryBook.from_dict(book.as_dict()).as_dict() == book.as_dict()


def test_a_day_both_groups_summarised_is_merged_nothing_lost() -> None:
    book = SummaryBook()
    day = date(2026, 2, 2)
    garden = Written("Asked about the garden.", ["garden"], ["seeds"], ["Ben"], False)
    bins = Written("Asked about the bins.", ["bins"], ["tuesday"], ["Ben"], False)
    book.write_daily("u1", day, garden, 4, "agent", NOW.isoformat())
    book.write_daily("person_ben", day, bins, 2, "agent", NOW.isoformat())
    book.move_group("u1", "person_ben")
    assert book.groups() == ["person_ben"]
    (daily,) = book.of("person_ben", PeriodType.DAILY)
    assert daily.summary == "Asked about the bins. Asked about the garden."
    assert (daily.topics, daily.highlights, daily.active_users) == (
        ["bins", "garden"],
        ["tuesday", "seeds"],
        ["Ben"],
    )
    assert daily.message_count == 6


def test_household_only_while_every_part_is() -> None:
    """A week is everyone's to read only when every day folded into it is; what was stored
    before the flag existed is not (it mixed everyone's talk)."""
    book = SummaryBook()
    said = Written("Talked about the bins.", ["bins"], [], [], False)
    monday = date(2026, 2, 2)
    book.write_daily("kitchen", monday, said, 2, "a", "x", household=True)
    book.write_daily("kitchen", monday + timedelta(days=1), said, 2, "a", "x", household=True)
    book.write_daily("hall", monday, said, 2, "a", "x", household=True)
    book.write_daily("hall", monday + timedelta(days=1), said, 2, "a", "x")
    today = monday + timedelta(days=20)
    (kitchen_week,) = book.plan("kitchen", PeriodType.DAILY, today)
    (hall_week,) = book.plan("hall", PeriodType.DAILY, today)
    assert book.fold(kitchen_week, said, "a", "x").household
    assert not book.fold(hall_week, said, "a", "x").household
    assert book.profile("kitchen").household
    assert not book.profile("hall").household
    stored = book.as_dict()
    for item in stored["summaries"]:
        del item["household"]
    for profile in stored["profiles"].values():
        del profile["household"]
    before = SummaryBook.from_dict(stored)
    assert not any(s.household for s in before)
    assert not before.profile("kitchen").household


def test_the_past_of_what_a_reader_may_see() -> None:
    """A week the reader may not see counts as gone: the days folded into it that they may
    see are carried instead, so none of their days is lost."""
    book = SummaryBook()
    said = Written("Talked about the bins.", ["bins"], [], [], False)
    monday = date(2026, 2, 2)
    book.write_daily("hall", monday, said, 2, "a", "x", household=True)
    book.write_daily("hall", monday + timedelta(days=1), said, 2, "a", "x")
    (job,) = book.plan("hall", PeriodType.DAILY, monday + timedelta(days=20))
    week = book.fold(job, said, "a", "x")
    assert [s.summary_id for s in book.context("hall")] == [week.summary_id]
    shown = [s.period_start for s in book.context("hall", lambda s: s.household)]
    assert shown == [monday.isoformat()]
