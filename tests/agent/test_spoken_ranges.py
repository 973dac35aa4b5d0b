"""A question's spoken time range picks the stored entries its request carries, through the
stand-in: "yesterday" brings yesterday's entries of the series it names, and nothing else."""

from datetime import date, datetime, timedelta
import json
from typing import Any
from zoneinfo import ZoneInfo

from freezegun.api import FrozenDateTimeFactory
from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.const import DOMAIN

from ..azure_stub import AzureStub
from ..conftest import NO_TOOLS, converse


@pytest.fixture
def agent_options() -> dict[str, Any]:
    return dict(NO_TOOLS)


# Where the clock fixture puts the home.
HOME = ZoneInfo("Europe/Amsterdam")


def local(day: int, hour: int = 0, minute: int = 0, second: int = 0, month: int = 11) -> datetime:
    """A time in the home, 2026."""
    return datetime(2026, month, day, hour, minute, second, tzinfo=HOME)


# The clock fixture's now: Thursday 26 November 2026, 14:05:30 in the home.
NOW = (26, 14, 5, 30)


def readings() -> list[datetime]:
    """A reading every three hours (local time), from 10 October until now."""
    found = []
    day = date(2026, 10, 10)
    while day <= date(2026, 11, 26):
        for hour in range(0, 24, 3):
            moment = datetime(day.year, day.month, day.day, hour, tzinfo=HOME)
            if moment <= local(*NOW):
                found.append(moment)
        day += timedelta(days=1)
    return found


def reading_id(moment: datetime) -> str:
    return f"t{moment:%m%d%H}"


async def store_readings(hass: HomeAssistant) -> list[datetime]:
    """Temperature and humidity, fetched over the whole time: complete coverage."""
    moments = readings()
    for key, field in (("temperature_timeseries", "celsius"), ("humidity_timeseries", "percent")):
        await hass.services.async_call(
            DOMAIN,
            "timeseries_merge",
            {
                "key": key,
                "entries": [
                    {"id": reading_id(m), "timestamp": m.isoformat(), field: m.hour}
                    for m in moments
                ],
                "window_start": moments[0].isoformat(),
                "window_end": local(*NOW).isoformat(),
            },
            blocking=True,
        )
    return moments


def data_message(body: dict[str, Any]) -> str:
    """The turn's data message: the user message before the question."""
    *_rest, data, _question = body["messages"]
    assert data["role"] == "user"
    assert data["content"].startswith("Reference data from Home Assistant's storage")
    return str(data["content"])


def carried(data: str, key: str) -> tuple[int, list[str]]:
    """A series' block: the count its head gives, and the ids of the entries it shows."""
    head = f'<data source="timeseries" key="{key}" coverage="full" entries="'
    block = data[data.index(head) :]
    block = block[: block.index("</data>")]
    count = int(block[len(head) : block.index('"', len(head))])
    shown = [json.loads(line)["id"] for line in block.splitlines() if line.startswith("{")]
    return count, shown


# (question, first moment, end, whether the end is the next period's start (excluded)).
PHRASES = [
    ("What was the temperature yesterday?", local(25), local(26), True),
    ("How was the temperature today?", local(26), local(*NOW), False),
    ("Temperature this morning?", local(26, 6), local(26, 12), True),
    ("What was the temperature 2 days ago?", local(24), local(25), True),
    ("And the temperature on Tuesday?", local(24), local(25), True),
    ("Temperature this week", local(23), local(*NOW), False),
    ("How cold was the temperature last week", local(16), local(23), True),
    ("Temperature over the last two days", local(24, 14, 5, 30), local(*NOW), False),
    ("Temperature in the last 24h", local(25, 14, 5, 30), local(*NOW), False),
    ("Temperature in the last 24 hours", local(25, 14, 5, 30), local(*NOW), False),
    ("Temperature in the past month", local(26, 14, 5, 30, month=10), local(*NOW), False),
]


@pytest.mark.parametrize(
    ("question", "start", "end", "excluded"), PHRASES, ids=[p[0] for p in PHRASES]
)
async def test_a_spoken_range_brings_its_entries(
    hass: HomeAssistant,
    clock: FrozenDateTimeFactory,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    question: str,
    start: datetime,
    end: datetime,
    excluded: bool,
) -> None:
    moments = await store_readings(hass)
    expected = [
        reading_id(m)
        for m in reversed(moments)  # newest first, as the block shows them
        if start <= m and (m < end if excluded else m <= end)
    ]
    assert expected
    await converse(hass, loaded_entry, question, "c")
    (call,) = azure.calls("/chat/completions")
    data = data_message(call.body)
    count, shown = carried(data, "temperature_timeseries")
    assert count == len(expected)
    # Within the data budget the newest come first; what is left out is counted.
    assert shown == expected[: len(shown)]
    assert shown
    if len(shown) < count:
        assert f"({count - len(shown)} older entries not shown.)" in data
    assert "humidity_timeseries" not in data


async def test_a_short_range_brings_every_entry_and_a_question_without_one_none(
    hass: HomeAssistant,
    clock: FrozenDateTimeFactory,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """Yesterday's eight readings, exactly; with no range named, no stored data at all."""
    await store_readings(hass)
    await converse(hass, loaded_entry, "What was the temperature yesterday?", "c")
    count, shown = carried(
        data_message(azure.calls("/chat/completions")[0].body), "temperature_timeseries"
    )
    assert count == 8
    assert shown == [f"t1125{hour:02d}" for hour in (21, 18, 15, 12, 9, 6, 3, 0)]
    await converse(hass, loaded_entry, "What is the temperature?", "c2")
    messages = azure.calls("/chat/completions")[1].body["messages"]
    assert not any("Reference data" in m["content"] for m in messages)
