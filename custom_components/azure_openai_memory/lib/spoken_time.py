"""Time ranges as people say them: "yesterday", "last week", "the past two days", "2 days ago"
(and as Germans, French, Dutch, Spanish and Italians say them: spoken_languages).

A question names its range in words; these become times in the home's time zone, which the
caller passes in. Calendar words (today, yesterday, this week, last month, a weekday, a
month's name, "3 days ago", a date) mean those local days, weeks (Monday first), months
and years; "the last/past N units" mean a span that ends now. "Last week" is the calendar
week before this one, while "the last week" and "the past week" are the seven days up to
now. Every range ends now at the latest: what has not happened yet was not stored.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
import re

from .spoken_languages import in_english

# The calendar's first moment, as the stored series hold it: "the last million weeks"
# starts there.
EARLIEST = datetime(1, 1, 1, tzinfo=UTC).timestamp()

_SMALL = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19,
}  # fmt: skip
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
_VAGUE = {"a": 1, "an": 1, "couple": 2, "few": 3}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = (
    "january", "february", "march", "april", "may", "june", "july",
    "august", "september", "october", "november", "december",
)  # fmt: skip
# Parts of a day: from and to (local hours; 24 is midnight after).
_PARTS = {"morning": (6, 12), "afternoon": (12, 18), "evening": (18, 24), "night": (18, 24)}
_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}
# A unit's short forms, said after digits only ("24h", "5 min").
_SHORT_UNITS = {
    "s": "second", "sec": "second", "secs": "second",
    "m": "minute", "min": "minute", "mins": "minute",
    "h": "hour", "hr": "hour", "hrs": "hour",
    "d": "day", "w": "week", "wk": "week", "wks": "week", "yr": "year", "yrs": "year",
}  # fmt: skip
_UNIT_NAMES = ("second", "minute", "hour", "day", "week", "fortnight", "month", "year")
_UNITS = {
    **_SHORT_UNITS,
    **{name: name for name in _UNIT_NAMES},
    **{f"{name}s": name for name in _UNIT_NAMES},
}


def _alternatives(words: Iterable[str]) -> str:
    """Longest first, so that "fourteen" is not read as "four"."""
    return "|".join(sorted(words, key=len, reverse=True))


_NUMBER = (
    rf"\d+(?:\.\d+)?|(?:{_alternatives(_TENS)})(?:[\s-](?:{_alternatives(_SMALL)}))?"
    rf"|{_alternatives(_SMALL)}|(?:a\s+)?couple(?:\s+of)?|(?:a\s+)?few|an?"
)
_ROLLING = re.compile(
    rf"\b(?P<the>the\s+)?(?P<which>last|past|previous)\s+"
    rf"(?:(?P<digits>\d+(?:\.\d+)?)\s*(?P<short>{_alternatives(_SHORT_UNITS)})"
    rf"|(?:(?P<n>{_NUMBER})\s+)?(?P<unit>{_alternatives(_UNITS.keys() - _SHORT_UNITS.keys())}))\b"
)
_AGO = re.compile(rf"\b(?P<n>{_NUMBER})\s+(?P<unit>days?|weeks?|months?|years?)\s+ago\b")
_THIS = re.compile(r"\bthis\s+(?P<unit>week|month|year)\b")
_DAY = re.compile(
    r"\b(?:(?P<before>the\s+day\s+before\s+yesterday)|(?P<yesterday>yesterday)|(?P<today>today)"
    r"|(?P<tonight>tonight)|last\s+(?P<last_night>night)|this\s+(?P<this>morning|afternoon|evening))"
    r"(?:\s+(?P<part>morning|afternoon|evening|night))?\b"
)
_WEEKDAY = re.compile(
    rf"\b(?:(?P<mod>next|every|coming|last|on|past)\s+)?(?P<day>{'|'.join(_WEEKDAYS)})\b"
)
_WEEKEND = re.compile(r"\b(?P<mod>last|past|this)\s+weekend\b")
_MONTH = re.compile(
    rf"\b(?P<mod>in|during|last|past|since)\s+(?P<month>{'|'.join(_MONTHS)})"
    r"(?:\s+(?P<year>\d{4}))?\b"
)
_ISO = re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{2})(?:-(?P<d>\d{2}))?\b")


@dataclass(frozen=True)
class SpokenRange:
    """[start, end] in epoch seconds, both included, and the local days they fall on."""

    start: float
    end: float
    first_day: date
    last_day: date


def _amount(words: str | None) -> float:
    """A number as said: "2", "1.5", "two", "twenty-four", "a", "a couple of", "few"."""
    if not words:
        return 1.0
    words = re.sub(r"\s+", " ", words.replace("-", " ")).removeprefix("a ")
    first, _, rest = words.partition(" ")
    if first in _VAGUE:
        return float(_VAGUE[first])
    if first in _TENS:
        return float(_TENS[first] + _SMALL.get(rest, 0))
    if first in _SMALL:
        return float(_SMALL[first])
    return float(words)


class _Clock:
    """Now in the home's zone, and the local calendar's boundaries around it."""

    def __init__(self, now: float, tz: tzinfo) -> None:
        self.now = now
        self.tz = tz
        self.local = datetime.fromtimestamp(now, tz)
        self.today = self.local.date()

    def at(self, day: date, hour: int = 0) -> float:
        """A local day's hour (24: the next midnight) as epoch seconds."""
        if hour == 24:
            day, hour = day + timedelta(days=1), 0
        return datetime.combine(day, time(hour), tzinfo=self.tz).timestamp()

    def days(self, first: date, last: date) -> tuple[float, float]:
        """From the first day's midnight to the end of the last day."""
        return self.at(first), self.at(last + timedelta(days=1))

    def months_back(self, months: int) -> datetime:
        """This moment, so many calendar months earlier (the day held to the month's end)."""
        year, month = divmod(self.local.year * 12 + self.local.month - 1 - months, 12)
        last = _month(year, month + 1)[1].day
        return self.local.replace(year=year, month=month + 1, day=min(self.local.day, last))


def _month(year: int, month: int) -> tuple[date, date]:
    """A month's first and last day."""
    following = date(year + month // 12, month % 12 + 1, 1)
    return date(year, month, 1), following - timedelta(days=1)


def _calendar(clock: _Clock, unit: str, back: int) -> tuple[float, float]:
    """The week, month or year so many before this one (0: this one)."""
    today = clock.today
    if unit == "day":
        day = today - timedelta(days=back)
        return clock.days(day, day)
    if unit == "week":
        monday = today - timedelta(days=today.weekday() + 7 * back)
        return clock.days(monday, monday + timedelta(days=6))
    if unit == "month":
        year, month = divmod(today.year * 12 + today.month - 1 - back, 12)
        return clock.days(*_month(year, month + 1))
    year = today.year - back
    return clock.days(date(year, 1, 1), date(year, 12, 31))


def _rolling(clock: _Clock, match: re.Match[str]) -> tuple[float, float] | None:
    said = match["digits"] or match["n"]
    amount = _amount(said)
    unit = _UNITS[match["short"] or match["unit"]]
    if amount <= 0:
        return None
    # "Last week" is a calendar week; "the last week" and "the past week" are seven days.
    calendar = unit in ("week", "month", "year") and match["which"] in ("last", "previous")
    if calendar and not (said or match["the"]):
        return _calendar(clock, unit, 1)
    if unit == "fortnight":
        unit, amount = "week", amount * 2
    if unit in _SECONDS:
        return clock.now - amount * _SECONDS[unit], clock.now
    months = amount * (12 if unit == "year" else 1)
    if months != int(months):
        return clock.now - months * 30.436875 * 86400, clock.now
    return clock.months_back(int(months)).timestamp(), clock.now


def _ago(clock: _Clock, match: re.Match[str]) -> tuple[float, float] | None:
    amount = _amount(match["n"])
    if amount <= 0 or amount != int(amount):
        return None
    return _calendar(clock, _UNITS[match["unit"]], int(amount))


def _this(clock: _Clock, match: re.Match[str]) -> tuple[float, float] | None:
    return _calendar(clock, match["unit"], 0)


def _day(clock: _Clock, match: re.Match[str]) -> tuple[float, float] | None:
    today = clock.today
    if match["last_night"]:
        return clock.at(today - timedelta(days=1), 18), clock.at(today, 6)
    if match["tonight"]:
        return clock.at(today, 18), clock.at(today, 24)
    if match["this"]:
        return clock.at(today, _PARTS[match["this"]][0]), clock.at(today, _PARTS[match["this"]][1])
    back = 2 if match["before"] else 1 if match["yesterday"] else 0
    day = today - timedelta(days=back)
    if (part := match["part"]) is None:
        return clock.days(day, day)
    if part == "night" and back:
        return clock.at(day, 18), clock.at(day + timedelta(days=1), 6)
    return clock.at(day, _PARTS[part][0]), clock.at(day, _PARTS[part][1])


def _weekday(clock: _Clock, match: re.Match[str]) -> tuple[float, float] | None:
    if match["mod"] in ("next", "every", "coming"):
        return None
    back = (clock.today.weekday() - _WEEKDAYS.index(match["day"])) % 7 or 7
    day = clock.today - timedelta(days=back)
    return clock.days(day, day)


def _weekend(clock: _Clock, match: re.Match[str]) -> tuple[float, float] | None:
    """This week's Saturday and Sunday, or the last ones before today."""
    sunday = clock.today + timedelta(days=6 - clock.today.weekday())
    if match["mod"] != "this":
        sunday = clock.today - timedelta(days=(clock.today.weekday() - 6) % 7 or 7)
    return clock.days(sunday - timedelta(days=1), sunday)


def _named_month(clock: _Clock, match: re.Match[str]) -> tuple[float, float] | None:
    month = _MONTHS.index(match["month"]) + 1
    today = clock.today
    if match["year"]:
        year = int(match["year"])
    else:
        later = month > today.month or (month == today.month and match["mod"] == "last")
        year = today.year - 1 if later else today.year
    if year < 1:
        return None
    start, end = clock.days(*_month(year, month))
    return (start, clock.now) if match["mod"] == "since" else (start, end)


def _iso(clock: _Clock, match: re.Match[str]) -> tuple[float, float] | None:
    year, month = int(match["y"]), int(match["m"])
    try:
        if match["d"] is None:
            return clock.days(*_month(year, month))
        day = date(year, month, int(match["d"]))
    except ValueError:
        return None
    return clock.days(day, day)


type _Reader = Callable[[_Clock, re.Match[str]], tuple[float, float] | None]
_READERS: tuple[tuple[re.Pattern[str], _Reader], ...] = (
    (_ROLLING, _rolling),
    (_AGO, _ago),
    (_THIS, _this),
    (_DAY, _day),
    (_WEEKDAY, _weekday),
    (_WEEKEND, _weekend),
    (_MONTH, _named_month),
    (_ISO, _iso),
)


def _local_day(epoch: float, tz: tzinfo) -> date:
    try:
        return datetime.fromtimestamp(epoch, tz).date()
    except (OverflowError, ValueError, OSError):
        return date.min


def spoken_range(
    text: str, now: float, tz: tzinfo, language: str | None = None
) -> SpokenRange | None:
    """The time range text names (every one it names, together), None when it names none.

    now is epoch seconds and tz the home's time zone; language is the turn's (German,
    French, Dutch, Spanish and Italian are read by the same rules, and English words in
    them too; None: English). A closed period ends a microsecond before the next one
    begins; a range in the future is no range.
    """
    clock = _Clock(now, tz)
    lowered = in_english(text.lower().replace("\u2019", "'"), language)
    found: list[tuple[int, int, float, float]] = []
    for pattern, read in _READERS:
        for match in pattern.finditer(lowered):
            try:
                span = read(clock, match)
            except (OverflowError, ValueError):
                # Further back than the calendar goes: from its first day.
                span = (EARLIEST, now)
            if span is not None:
                found.append((match.start(), match.end(), *span))
    # Words inside longer words that named a range ("yesterday" in "yesterday morning").
    kept = [
        one
        for one in found
        if not any(
            o[0] <= one[0] and one[1] <= o[1] and o[1] - o[0] > one[1] - one[0] for o in found
        )
    ]
    spans = [
        (max(start, EARLIEST), now if end >= now else end - 1e-6)
        for _, _, start, end in kept
        if start < now
    ]
    if not spans:
        return None
    start = min(s for s, _ in spans)
    end = max(e for _, e in spans)
    return SpokenRange(start, end, _local_day(start, tz), _local_day(end, tz))
