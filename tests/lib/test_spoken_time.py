"""Spoken time ranges, read in the home's time zone: calendar words, spans up to now."""

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from custom_components.azure_openai_memory.lib.spoken_time import (
    EARLIEST,
    SpokenRange,
    spoken_range,
)

HOME = ZoneInfo("Europe/Amsterdam")
# Thursday 26 November 2026, 14:05:30 in the home (13:05:30 UTC).
NOW = datetime(2026, 11, 26, 14, 5, 30, tzinfo=HOME)
MICROSECOND = timedelta(microseconds=1)


def at(day: int, hour: int = 0, minute: int = 0, second: int = 0, month: int = 11) -> datetime:
    return datetime(2026, month, day, hour, minute, second, tzinfo=HOME)


def asked(text: str, now: datetime = NOW) -> SpokenRange:
    found = spoken_range(text, now.timestamp(), now.tzinfo or UTC)
    assert found is not None, text
    return found


def local(found: SpokenRange) -> tuple[datetime, datetime]:
    return (
        datetime.fromtimestamp(found.start, HOME),
        datetime.fromtimestamp(found.end, HOME),
    )


def until(start: datetime, next_start: datetime) -> tuple[datetime, datetime]:
    """A closed period: it ends a microsecond before the next begins."""
    return start, next_start - MICROSECOND


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("what was the temperature yesterday?", until(at(25), at(26))),
        ("How warm was it today", (at(26), NOW)),
        ("kudos this week", (at(23), NOW)),
        ("kudos last week", until(at(16), at(23))),
        ("kudos the previous week", (NOW - timedelta(days=7), NOW)),
        ("kudos in the last week", (NOW - timedelta(days=7), NOW)),
        ("kudos in the past week", (NOW - timedelta(days=7), NOW)),
        ("kudos in the last 2 days", (NOW - timedelta(days=2), NOW)),
        ("kudos in the last two days", (NOW - timedelta(days=2), NOW)),
        ("over the past twenty-four hours", (NOW - timedelta(hours=24), NOW)),
        ("the last couple of days", (NOW - timedelta(days=2), NOW)),
        ("the last few hours", (NOW - timedelta(hours=3), NOW)),
        ("the past hour", (NOW - timedelta(hours=1), NOW)),
        ("last 24h", (NOW - timedelta(hours=24), NOW)),
        ("last 24 hours", (NOW - timedelta(hours=24), NOW)),
        ("in the last 5 min", (NOW - timedelta(minutes=5), NOW)),
        ("the last 1.5 days", (NOW - timedelta(hours=36), NOW)),
        ("the last fortnight", (NOW - timedelta(days=14), NOW)),
        ("past month", (at(26, 14, 5, 30, month=10), NOW)),
        ("the past three months", (at(26, 14, 5, 30, month=8), NOW)),
        ("this month", (at(1), NOW)),
        ("last month", until(at(1, month=10), at(1))),
        ("this year", (datetime(2026, 1, 1, tzinfo=HOME), NOW)),
        ("last year", until(datetime(2025, 1, 1, tzinfo=HOME), datetime(2026, 1, 1, tzinfo=HOME))),
        ("2 days ago", until(at(24), at(25))),
        ("two days ago", until(at(24), at(25))),
        ("a day ago", until(at(25), at(26))),
        ("the day before yesterday", until(at(24), at(25))),
        ("three weeks ago", until(at(2), at(9))),
        ("a month ago", until(at(1, month=10), at(1))),
        ("this morning", until(at(26, 6), at(26, 12))),
        ("this afternoon", (at(26, 12), NOW)),
        ("yesterday evening", until(at(25, 18), at(26))),
        ("last night", until(at(25, 18), at(26, 6))),
        ("on Tuesday", until(at(24), at(25))),
        ("last monday", until(at(23), at(24))),
        # Today is Thursday: "Thursday" is last week's.
        ("what did we talk about on Thursday?", until(at(19), at(20))),
        ("last weekend", until(at(21), at(23))),
        ("in October", until(at(1, month=10), at(1))),
        ("in November", (at(1), NOW)),
        (
            "last november",
            until(datetime(2025, 11, 1, tzinfo=HOME), datetime(2025, 12, 1, tzinfo=HOME)),
        ),
        ("since October", (at(1, month=10), NOW)),
        ("on 2026-11-24", until(at(24), at(25))),
        ("in 2026-10", until(at(1, month=10), at(1))),
        # Every range named, together.
        ("yesterday and today", (at(25), NOW)),
    ],
)
def test_what_a_phrase_means(text: str, expected: tuple[datetime, datetime]) -> None:
    assert local(asked(text)) == expected


@pytest.mark.parametrize(
    ("word", "number"),
    [
        ("one", 1), ("two", 2), ("three", 3), ("four", 4), ("five", 5), ("six", 6),
        ("seven", 7), ("eight", 8), ("nine", 9), ("ten", 10), ("eleven", 11), ("twelve", 12),
        ("fourteen", 14), ("twenty", 20), ("thirty one", 31), ("a", 1), ("an", 1),
    ],
)  # fmt: skip
def test_number_words(word: str, number: int) -> None:
    unit = "hour" if word == "an" else "days"
    seconds = 3600 if word == "an" else 86400
    found = asked(f"the last {word} {unit}")
    assert found.end - found.start == number * seconds


@pytest.mark.parametrize(
    "text",
    [
        "turn on the kitchen light",
        "who gave me kudos in the last 0 days?",
        "kudos next monday",
        "kudos every monday",
        "may I ask about kudos",
        "the last song",
        "what do you remember about the past",
        # Still to come: nothing of it is stored yet.
        "this evening",
        "tonight",
        "on 2026-12-24",
        "on 2026-02-30",
    ],
)
def test_no_range(text: str) -> None:
    assert spoken_range(text, NOW.timestamp(), HOME) is None


def test_the_days_a_range_falls_on() -> None:
    """Local days, not UTC ones: last night spans two of them."""
    found = asked("last night")
    assert (found.first_day, found.last_day) == (date(2026, 11, 25), date(2026, 11, 26))
    found = asked("past week")
    assert (found.first_day, found.last_day) == (date(2026, 11, 19), date(2026, 11, 26))


def test_a_day_is_the_home_s_day() -> None:
    """At 00:30 on the 26th in Amsterdam it is still the 25th in UTC: the home's yesterday
    is the 25th, a UTC home's the 24th."""
    early = datetime(2026, 11, 26, 0, 30, tzinfo=HOME)
    assert local(asked("yesterday", early)) == until(at(25), at(26))
    in_utc = spoken_range("yesterday", early.timestamp(), UTC)
    assert in_utc is not None
    assert (in_utc.first_day, in_utc.start) == (
        date(2026, 11, 24),
        datetime(2026, 11, 24, tzinfo=UTC).timestamp(),
    )


def test_a_day_across_a_clock_change_has_its_own_length() -> None:
    """Yesterday was the 25-hour day the clocks went back (25 October 2026 in Amsterdam)."""
    found = asked("yesterday", datetime(2026, 10, 26, 9, 0, tzinfo=HOME))
    assert found.end - found.start == pytest.approx(25 * 3600, abs=1e-5)
    assert (found.first_day, found.last_day) == (date(2026, 10, 25), date(2026, 10, 25))


def test_a_month_back_from_the_31st() -> None:
    """The past month from 31 March starts on the last day of February."""
    found = asked("the past month", datetime(2026, 3, 31, 12, 0, tzinfo=HOME))
    assert datetime.fromtimestamp(found.start, HOME) == datetime(2026, 2, 28, 12, 0, tzinfo=HOME)


def test_further_back_than_the_calendar_is_everything() -> None:
    for text in ("the last 99999999999999 weeks", "the last 99999 years", "the last 30000 months"):
        found = asked(text)
        assert (found.start, found.end) == (EARLIEST, NOW.timestamp()), text
