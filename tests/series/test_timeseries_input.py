"""Every time a service takes is read or refused with a translated message; nothing half-done.

Times enter as entry timestamps, window_start/window_end, start_time/end_time, last, and the
history query's start_time/end_time. Epoch milliseconds (what many APIs send) are read as
such; what no date can hold (1e300, the year 57786, 30 February, 24:00) is refused naming
the field and the entry, and the series stays as it was.
"""

from datetime import UTC, datetime
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.exceptions import ServiceValidationError
import pytest

from custom_components.azure_openai_memory.const import DOMAIN
from custom_components.azure_openai_memory.lib.series.store import Series
from custom_components.azure_openai_memory.lib.spoken_time import EARLIEST, spoken_range
from custom_components.azure_openai_memory.lib.times import format_time

KEY = "kudos_timeseries"
T0 = 1761300000  # 2025-10-24T10:00:00Z
T0_TEXT = "2025-10-24T10:00:00Z"
# A refusal quotes a value back cut to this many characters, with "…" after.
ECHOED = 60


def echoed(value: Any) -> str:
    """A value as a refusal quotes it back."""
    text = str(value)
    return text if len(text) <= ECHOED else text[:ECHOED] + "…"


MS = 1000

# What no date between the years 1 and 9999 can be, in every spelling that reaches parse_time.
NOT_A_TIME: dict[str, Any] = {
    "1e300": 1e300,  # OverflowError from datetime before
    "10**400": 10**400,  # too big for a float at all
    "-10**30": -(10**30),
    "microseconds": T0 * MS * MS,  # the year 57,786 even when read as milliseconds
    "400 digits": "1" + "0" * 400,  # overflows a float to infinity
    "30 February": "2025-02-30T10:00:00Z",  # the canonical form, an impossible day
    "hour 24": "2025-10-24T24:00:00Z",  # the canonical form, hour 24
    # Hour 24 as Python 3.14 would read it (earlier Pythons refuse every one of these).
    "hour 24 basic": "20251024T240000Z",
    "hour 24 alone": "2025-10-24T24Z",
    "hour 24 hhmm": "2025-10-24T2400Z",
    "hour 24 after _": "2025-10-24_24:00:00Z",
    "hour 24 after x": "2025-10-24x24:00Z",
    "30 February +00:00": "2025-02-30T10:00:00+00:00",
    "year 10000 in UTC": "9999-12-31T23:59:59-05:00",
    "year 0": "0000-06-01T00:00:00Z",
    "words": "yesterday",
}
NOT_A_TIME_PARAMS = [pytest.param(value, id=name) for name, value in NOT_A_TIME.items()]


async def call(hass: HomeAssistant, service: str, **data: Any) -> dict[str, Any]:
    response = await hass.services.async_call(
        DOMAIN, service, data, blocking=True, return_response=True
    )
    assert response is not None
    return dict(response)


async def refused(hass: HomeAssistant, service: str, **data: Any) -> ServiceValidationError:
    with pytest.raises(ServiceValidationError) as caught:
        await call(hass, service, **data)
    assert caught.value.translation_domain == DOMAIN
    return caught.value


def kudos(n: int, stamp: Any) -> dict[str, Any]:
    return {"id": f"k{n}", "timestamp": stamp}


async def seeded(hass: HomeAssistant) -> dict[str, Any]:
    """One series with one entry and one fetched window; what listing shows of it."""
    await call(
        hass,
        "timeseries_merge",
        key=KEY,
        entries=[kudos(0, T0_TEXT)],
        window_start=T0 - 3600,
        window_end=T0 + 3600,
    )
    listed = await call(hass, "timeseries_list")
    assert [s["key"] for s in listed["keys"]] == [KEY]
    return dict(listed["keys"][0])


async def unchanged(hass: HomeAssistant, before: dict[str, Any]) -> None:
    """The series, its entries and its coverage are as they were before the refused call."""
    assert (await call(hass, "timeseries_list"))["keys"] == [before]
    answer = await call(hass, "timeseries_query", key=KEY, start_time=T0 - 7200, end_time=T0 + 7200)
    assert [e["id"] for e in answer["entries"]] == ["k0"]


@pytest.mark.parametrize("stamp", NOT_A_TIME_PARAMS)
async def test_entry_timestamp_refused_naming_entry_and_field(
    hass: HomeAssistant, services: None, stamp: Any
) -> None:
    """A bad timestamp in the second entry: the first one is not written either."""
    err = await refused(
        hass,
        "timeseries_merge",
        key=KEY,
        entries=[kudos(1, T0_TEXT), kudos(2, stamp)],
        timestamp_field="timestamp",
    )
    assert err.translation_key == "entry_bad_timestamp"
    assert err.translation_placeholders == {"index": "1", "field": "timestamp"}
    assert (await call(hass, "timeseries_list"))["keys"] == []


async def test_entry_timestamp_refused_on_an_existing_series(
    hass: HomeAssistant, services: None
) -> None:
    before = await seeded(hass)
    for stamp in ("2025-02-30T10:00:00Z", "2025-10-24T24:00:00Z", 1e300, T0 * MS * MS):
        err = await refused(
            hass,
            "timeseries_merge",
            key=KEY,
            entries=[kudos(0, T0 + 60), kudos(5, stamp)],
        )
        assert (err.translation_key, err.translation_placeholders) == (
            "entry_bad_timestamp",
            {"index": "1", "field": "timestamp"},
        )
        await unchanged(hass, before)


@pytest.mark.parametrize("field", ["window_start", "window_end"])
@pytest.mark.parametrize("value", NOT_A_TIME_PARAMS)
async def test_window_refused_naming_the_field(
    hass: HomeAssistant, services: None, field: str, value: Any
) -> None:
    before = await seeded(hass)
    window = {"window_start": T0 - 60, "window_end": T0 + 60, field: value}
    err = await refused(hass, "timeseries_merge", key=KEY, entries=[kudos(9, T0_TEXT)], **window)
    assert err.translation_key == "invalid_time"
    assert err.translation_placeholders == {"field": field, "value": echoed(value)}
    await unchanged(hass, before)


@pytest.mark.parametrize("field", ["start_time", "end_time"])
@pytest.mark.parametrize("value", NOT_A_TIME_PARAMS)
async def test_query_range_refused_naming_the_field(
    hass: HomeAssistant, services: None, field: str, value: Any
) -> None:
    before = await seeded(hass)
    err = await refused(hass, "timeseries_query", key=KEY, **{"start_time": T0 - 60, field: value})
    assert err.translation_key == "invalid_time"
    assert err.translation_placeholders == {"field": field, "value": echoed(value)}
    with_last = await refused(hass, "timeseries_query", key=KEY, last="1 day", end_time=value)
    assert (with_last.translation_key, with_last.translation_placeholders) == (
        "invalid_time",
        {"field": "end_time", "value": echoed(value)},
    )
    await unchanged(hass, before)


@pytest.mark.parametrize(
    ("last", "key"),
    [
        ("1000000 weeks", "last_out_of_range"),  # back past the year 1
        pytest.param("9" * 400 + " days", "last_out_of_range", id="infinite days"),
        ("0 days", "invalid_last"),
        ("a fortnight", "invalid_last"),
    ],
)
async def test_last_refused(hass: HomeAssistant, services: None, last: str, key: str) -> None:
    before = await seeded(hass)
    err = await refused(hass, "timeseries_query", key=KEY, last=last)
    assert (err.translation_key, err.translation_placeholders) == (key, {"value": echoed(last)})
    await unchanged(hass, before)


async def test_last_reaching_far_back_but_within_the_calendar_is_answered(
    hass: HomeAssistant, services: None
) -> None:
    await seeded(hass)
    answer = await call(hass, "timeseries_query", key=KEY, last="100000 weeks")
    assert [e["id"] for e in answer["entries"]] == ["k0"]
    assert answer["coverage"] == "partial"


async def test_epoch_milliseconds_are_read_as_milliseconds(
    hass: HomeAssistant, services: None
) -> None:
    """A number of 1e11 or more is milliseconds, in entries, windows and query ranges alike."""
    merged = await call(
        hass,
        "timeseries_merge",
        key=KEY,
        entries=[kudos(1, T0 * MS), kudos(2, str((T0 + 60) * MS)), kudos(3, (T0 + 120) * MS + 500)],
        window_start=(T0 - 3600) * MS,
        window_end=str((T0 + 3600) * MS),
    )
    assert merged["added"] == 3
    listed = await call(hass, "timeseries_list")
    assert listed["keys"] == [
        {
            "key": KEY,
            "count": 3,
            "oldest": T0_TEXT,
            "newest": "2025-10-24T10:02:00.500000Z",
            "covered": [{"start": format_time(T0 - 3600), "end": format_time(T0 + 3600)}],
        }
    ]
    # The same instants in seconds: the same entries, deduplicated, and full coverage.
    again = await call(hass, "timeseries_merge", key=KEY, entries=[kudos(1, T0), kudos(2, T0 + 60)])
    assert (again["added"], again["duplicates"], again["updated"]) == (0, 2, 0)
    answer = await call(
        hass, "timeseries_query", key=KEY, start_time=(T0 - 60) * MS, end_time=(T0 + 60) * MS
    )
    assert (answer["coverage"], [e["id"] for e in answer["entries"]]) == ("full", ["k2", "k1"])
    assert answer["entries"][1]["timestamp"] == T0_TEXT
    # Just below the threshold a number is still seconds: the year 5138.
    late = await call(hass, "timeseries_merge", key="late_timeseries", entries=[kudos(1, 99e9)])
    assert late["added"] == 1
    (late_series,) = [
        s for s in (await call(hass, "timeseries_list"))["keys"] if s["key"] == "late_timeseries"
    ]
    assert late_series["newest"].startswith("5107-")


async def test_the_calendar_edges_are_times(hass: HomeAssistant, services: None) -> None:
    """The first and last second a date can show are kept and shown as given."""
    first, last = "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"
    merged = await call(
        hass, "timeseries_merge", key=KEY, entries=[kudos(1, first), kudos(2, last)]
    )
    assert merged["added"] == 2
    answer = await call(hass, "timeseries_query", key=KEY, start_time=first, end_time=last)
    assert [e["timestamp"] for e in answer["entries"]] == [last, first]
    assert answer["coverage"] == "full"


async def test_cleanup_with_more_days_than_the_calendar_keeps_everything(
    hass: HomeAssistant, services: None
) -> None:
    before = await seeded(hass)
    for keep_days in (1e6, 1e300):
        result = await call(hass, "timeseries_cleanup", key=KEY, keep_days=keep_days)
        assert (result["removed"], result["kept"]) == (0, 1)
        assert result["cutoff_date"] == "0001-01-01T00:00:00Z"
    await unchanged(hass, before)


def test_ranges_a_question_names_never_break_the_answer() -> None:
    """What a conversation turn asks the series for: a zero range is none, a huge one is all."""
    assert spoken_range("who gave kudos in the last 0 days?", T0, UTC) is None
    everything = spoken_range("kudos in the last 99999999999999 weeks", T0, UTC)
    assert everything is not None
    assert (everything.start, everything.end) == (EARLIEST, T0)
    answer = Series(KEY).query(everything.start, everything.end)
    assert answer["gaps"] == [{"start": "0001-01-01T00:00:00Z", "end": T0_TEXT}]


# -- the history query reads times the same way ----------------------------------------


async def test_history_query_refuses_what_is_not_a_time(
    hass: HomeAssistant, services: None
) -> None:
    await call(hass, "history_record", event_type="action", event_data={"n": 1})
    for field in ("start_time", "end_time"):
        for value in NOT_A_TIME.values():
            err = await refused(hass, "history_query", **{field: value})
            assert (err.translation_key, err.translation_placeholders) == (
                "invalid_time",
                {"field": field, "value": echoed(value)},
            )
    assert (await call(hass, "history_statistics"))["total_events"] == 1


async def test_history_query_reads_epoch_milliseconds(hass: HomeAssistant, services: None) -> None:
    recorded = await call(hass, "history_record", event_type="action", event_data={"n": 1})
    moment = datetime.fromisoformat(recorded["event"]["timestamp"]).timestamp()
    ids = [recorded["event"]["event_id"]]

    async def found(**query: Any) -> list[str]:
        return [e["event_id"] for e in (await call(hass, "history_query", **query))["events"]]

    assert await found(start_time=int((moment - 60) * MS), end_time=int((moment + 60) * MS)) == ids
    assert await found(start_time=int((moment + 60) * MS)) == []
    assert await found(end_time=str(int((moment - 60) * MS))) == []
