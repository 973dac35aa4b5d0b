"""The Memory panel's series commands: coverage and gaps as timeseries_query reports them,
and a page of a series' entries with their counts over time. Every user reads the series."""

from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.typing import (
    MockHAClientWebSocket,
    WebSocketGenerator,
)

from custom_components.azure_openai_memory.const import DOMAIN

from ..conftest import call
from ..panel_commands import answer, invalid, translated

DAY = 86400


@pytest.fixture
async def user(
    hass: HomeAssistant, hass_ws_client: WebSocketGenerator, hass_read_only_access_token: str
) -> MockHAClientWebSocket:
    """A user who is not an administrator: the series are theirs to read too."""
    assert await async_setup_component(hass, DOMAIN, {})
    return await hass_ws_client(hass, hass_read_only_access_token)


def stamp(day: int, hour: int = 0) -> str:
    return f"2026-11-{day:02d}T{hour:02d}:00:00Z"


async def merge(hass: HomeAssistant, key: str, first: int, last: int) -> None:
    """A fetch of days first..last (inclusive), one entry an hour."""
    entries = [
        {"id": f"{day}-{hour}", "timestamp": stamp(day, hour), "kudos": hour}
        for day in range(first, last + 1)
        for hour in range(24)
    ]
    await call(
        hass,
        "timeseries_merge",
        {
            "key": key,
            "entries": entries,
            "window_start": stamp(first),
            "window_end": f"2026-11-{last:02d}T23:59:59Z",
        },
    )


async def test_a_listing_shows_the_gaps_timeseries_query_reports(
    hass: HomeAssistant, user: MockHAClientWebSocket
) -> None:
    await merge(hass, "kudos_timeseries", 1, 3)
    await merge(hass, "kudos_timeseries", 6, 7)  # days 4 and 5 were never fetched
    await merge(hass, "steps_timeseries", 2, 2)
    await merge(hass, "weather_timeseries", 1, 1)
    listed = await answer(user, "series/list", limit=2)
    assert listed["total"] == 3
    kudos, steps = listed["series"]
    assert (kudos["key"], kudos["count"]) == ("kudos_timeseries", 5 * 24)
    assert (kudos["oldest"], kudos["newest"]) == (stamp(1), stamp(7, 23))
    assert kudos["range"]["start"] == stamp(1)
    assert kudos["coverage"] == "partial"
    assert kudos["gaps"][0] == {"start": "2026-11-03T23:59:59Z", "end": stamp(6)}
    assert len(kudos["covered"]) == 2
    for shown in (kudos, steps):
        queried = await call(
            hass,
            "timeseries_query",
            {
                "key": shown["key"],
                "start_time": shown["range"]["start"],
                "end_time": shown["range"]["end"],
            },
        )
        assert (shown["coverage"], shown["gaps"]) == (queried["coverage"], queried["gaps"])
    rest = await answer(user, "series/list", offset=2)
    assert [s["key"] for s in rest["series"]] == ["weather_timeseries"]


async def test_entries_are_paged_newest_first_with_their_counts(
    hass: HomeAssistant, user: MockHAClientWebSocket
) -> None:
    await merge(hass, "kudos_timeseries", 1, 3)
    await merge(hass, "kudos_timeseries", 6, 7)
    fields: dict[str, Any] = {"key": "kudos_timeseries", "start_time": stamp(1), "buckets": 7}
    fields["end_time"] = stamp(8)
    first = await answer(user, "series/entries", limit=5, **fields)
    assert first["total"] == 120
    assert [e["id"] for e in first["entries"]] == ["7-23", "7-22", "7-21", "7-20", "7-19"]
    assert first["counts"] == [24, 24, 24, 0, 0, 24, 24]
    assert sum(first["counts"]) == first["total"]
    assert first["coverage"] == "partial"
    assert first["gaps"] == [
        {"start": "2026-11-03T23:59:59Z", "end": stamp(6)},
        {"start": "2026-11-07T23:59:59Z", "end": stamp(8)},
    ]
    assert first["coverage_approximate"] is False
    queried = await call(
        hass,
        "timeseries_query",
        {"key": "kudos_timeseries", "start_time": stamp(1), "end_time": stamp(8)},
    )
    assert first["gaps"] == queried["gaps"]
    assert [e["id"] for e in queried["entries"][5:8]] == [
        e["id"]
        for e in (await answer(user, "series/entries", offset=5, limit=3, **fields))["entries"]
    ]
    last = await answer(user, "series/entries", offset=118, limit=50, **fields)
    assert [e["id"] for e in last["entries"]] == ["1-1", "1-0"]
    # Without a range: from the first fetch until now.
    whole = await answer(user, "series/entries", key="kudos_timeseries", limit=1)
    assert whole["range"]["start"] == stamp(1)
    assert whole["total"] == 120


async def test_bad_keys_and_ranges(hass: HomeAssistant, user: MockHAClientWebSocket) -> None:
    await merge(hass, "kudos_timeseries", 1, 1)
    assert await translated(user, "invalid_key", "series/entries", key="../etc") == {
        "key": "../etc"
    }
    assert await translated(user, "unknown_series", "series/entries", key="nothing_here") == {
        "key": "nothing_here"
    }
    assert (
        await translated(
            user,
            "start_after_end",
            "series/entries",
            key="kudos_timeseries",
            start_time=stamp(2),
            end_time=stamp(1),
        )
        == {}
    )
    placeholders = await translated(
        user, "invalid_time", "series/entries", key="kudos_timeseries", start_time="soon"
    )
    assert placeholders == {"field": "start_time", "value": "soon"}
    assert "buckets" in await invalid(user, "series/entries", key="kudos_timeseries", buckets=0)
    assert "key" in await invalid(user, "series/entries")
    assert "offset" in await invalid(user, "series/list", offset="1")
