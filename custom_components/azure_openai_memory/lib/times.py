"""Times as the services take and answer them: ISO 8601 or epoch numbers in, UTC ISO 8601
with Z out. Every kind that reads or states a time (series, history, memories, windows)
uses these, so one input means the same time everywhere and every answer reads alike.
"""

from datetime import UTC, datetime, tzinfo
import math
import re
from typing import Any

from .errors import InputError

_NUMBER = re.compile(r"^[+-]?\d+(?:\.\d*)?$")
# Python 3.14 reads hour 24 ("T24:00:00", "T24Z", "T2400") as the next day's midnight,
# whatever character separates it from the date; earlier Pythons refuse it. It is refused on
# every Python, so one input means the same everywhere.
_HOUR_24 = re.compile(r"^(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4}-W\d{2}-\d|\d{4}W\d{3}).24")
# The canonical stored form: UTC, whole seconds, Z (what format_time writes).
_CANONICAL = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{6})?Z$")
# An epoch number this large or larger (either sign) is milliseconds. As seconds, 1e11 is
# the year 5138, which no fetched data means; as milliseconds it is 3 March 1973, older
# than what any API serves. So seconds up to the year 5138 and milliseconds from 1973 on
# both read right; microseconds land beyond the year 9999 and are refused.
MILLISECONDS_FROM = 1e11
# The first and last second a date can show: 0001-01-01T00:00:00Z, 9999-12-31T23:59:59Z.
EARLIEST = -62_135_596_800.0
LATEST = 253_402_300_799.0


class TimeInputError(InputError):
    """A value that is no time, or a time no date can show."""


def parse_time(value: Any, default_tz: tzinfo, what: str = "time") -> float:
    """ISO 8601 (offset or Z; naive means default_tz) or an epoch number -> epoch seconds.

    Epoch numbers of MILLISECONDS_FROM or more are milliseconds, as many APIs send them.
    A time no date can show (before the year 1, after 9999) is refused here, so that
    nothing downstream meets it only when formatting an answer.
    """
    moment = _epoch_seconds(value, default_tz)
    if moment is None or not EARLIEST <= moment <= LATEST:
        raise TimeInputError("invalid_time", field=what, value=value)
    return moment


def _epoch_seconds(value: Any, default_tz: tzinfo) -> float | None:
    """Any time parse_time accepts, unchecked for range; None when it is no time at all."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        if _NUMBER.match(text):
            return _epoch_number(float(text))
        if _HOUR_24.match(text):
            return None
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            return None
    if isinstance(value, int | float):
        try:
            return _epoch_number(float(value))
        except OverflowError:  # an int beyond any float
            return None
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=default_tz)
    return value.timestamp()


def _epoch_number(number: float) -> float | None:
    if not math.isfinite(number):
        return None
    return number / 1000 if abs(number) >= MILLISECONDS_FROM else number


def canonical_time(stamp: Any) -> float | None:
    """A timestamp already in the stored form, read fast; None for anything else.

    The pattern admits impossible dates (30 February, hour 24) and fractions past LATEST:
    those go the slow way, which refuses them.
    """
    if type(stamp) is not str or not _CANONICAL.match(stamp) or _HOUR_24.search(stamp):
        return None
    try:
        moment = datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None
    return moment if moment <= LATEST else None


def format_time(epoch: float) -> str:
    """Epoch seconds as UTC ISO 8601 with Z, as the services answer them."""
    text = datetime.fromtimestamp(epoch, UTC).isoformat()
    return text.replace("+00:00", "Z")
