"""Time-series services end to end, with return_response: the seed's four scenarios and more."""

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.const import EVENT_HOMEASSISTANT_FINAL_WRITE
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import ServiceValidationError
from homeassistant.setup import async_setup_component
import pytest

from custom_components.azure_openai_memory.const import DOMAIN
from custom_components.azure_openai_memory.memory.timeseries import format_time
from custom_components.azure_openai_memory.storage import TimeseriesStore

DAY0 = datetime(2025, 10, 25, 10, 0, tzinfo=UTC)
KEY = "kudos_givers_timeseries"


def at(moment: datetime, hours_ago: float) -> str:
    return format_time((moment - timedelta(hours=hours_ago)).timestamp())


def kudos(n: int, moment: datetime, hours_ago: float) -> dict[str, Any]:
    return {"id": f"kudos_{n}", "athlete_name": f"athlete {n}", "timestamp": at(moment, hours_ago)}


@pytest.fixture
async def services(hass: HomeAssistant) -> None:
    """The integration, set up without any entry: time series need none."""
    assert await async_setup_component(hass, DOMAIN, {})


async def call(hass: HomeAssistant, service: str, **data: Any) -> dict[str, Any]:
    response = await hass.services.async_call(
        DOMAIN, f"timeseries_{service}", data, blocking=True, return_response=True
    )
    assert response is not None
    return dict(response)


async def fetch_last_24h(
    hass: HomeAssistant, moment: datetime, entries: list[dict[str, Any]]
) -> dict[str, Any]:
    return await call(
        hass,
        "merge",
        key=KEY,
        entries=entries,
        window_start=at(moment, 24),
        window_end=at(moment, 0),
    )


async def test_seed_scenarios(
    hass: HomeAssistant, services: None, freezer: FrozenDateTimeFactory
) -> None:
    """Initial accumulation, incremental update, answer from state, partial with gap fill."""
    # Test 1 - 10:00: 15 kudos from the last 24 hours.
    freezer.move_to(DAY0)
    first = [kudos(n, DAY0, 1 + n) for n in range(15)]
    result = await fetch_last_24h(hass, DAY0, first)
    assert result == {
        "success": True,
        "added": 15,
        "duplicates": 0,
        "updated": 0,
        "total_count": 15,
        "evicted": 0,
    }

    # Test 2 - 11:00, same instruction: 13 already known, 2 new.
    eleven = DAY0 + timedelta(hours=1)
    freezer.move_to(eleven)
    second = first[:13] + [kudos(100, eleven, 0.5), kudos(101, eleven, 0.2)]
    result = await fetch_last_24h(hass, eleven, second)
    assert (result["added"], result["duplicates"], result["total_count"]) == (2, 13, 17)

    # Next day, 10:00, the automation fetched again; then "who gave me kudos in 2 days?"
    day1 = DAY0 + timedelta(days=1)
    freezer.move_to(day1)
    await fetch_last_24h(hass, day1, [kudos(200, day1, 3)])
    answer = await call(hass, "query", key=KEY, last="2 days")
    assert answer["coverage"] == "full"
    assert answer["needs_api_call"] is False
    assert answer["gaps"] == []
    assert answer["count"] == 18
    assert answer["entries"][0]["id"] == "kudos_200"

    # Test 4 - "kudos from the last 7 days": partial, fetch only the gap, then full.
    week = await call(hass, "query", key=KEY, last="1 week")
    assert week["coverage"] == "partial"
    assert week["gaps"] == [{"start": at(day1, 7 * 24), "end": at(DAY0, 24)}]
    gap = week["gaps"][0]
    await call(
        hass,
        "merge",
        key=KEY,
        entries=[kudos(300, DAY0, 24 * 4)],
        window_start=gap["start"],
        window_end=gap["end"],
    )
    week = await call(hass, "query", key=KEY, last="1 week")
    assert (week["coverage"], week["count"], week["needs_api_call"]) == ("full", 19, False)

    listed = await call(hass, "list")
    assert listed == {
        "keys": [{"key": KEY, "count": 19, "oldest": at(DAY0, 96), "newest": at(day1, 3)}]
    }


async def test_middle_hole_through_services(
    hass: HomeAssistant, services: None, freezer: FrozenDateTimeFactory
) -> None:
    """Two fetched windows with a day between them: partial, with that day as the gap."""
    freezer.move_to(DAY0)
    await call(
        hass,
        "merge",
        key=KEY,
        entries=[kudos(1, DAY0, 60)],
        window_start=at(DAY0, 72),
        window_end=at(DAY0, 48),
    )
    await call(
        hass,
        "merge",
        key=KEY,
        entries=[kudos(2, DAY0, 5)],
        window_start=at(DAY0, 24),
        window_end=at(DAY0, 0),
    )
    result = await call(hass, "query", key=KEY, start_time=at(DAY0, 72), end_time=at(DAY0, 0))
    assert result["coverage"] == "partial"
    assert result["gaps"] == [{"start": at(DAY0, 48), "end": at(DAY0, 24)}]
    assert result["count"] == 2


async def test_naive_times_use_the_configured_zone(hass: HomeAssistant, services: None) -> None:
    """A time without offset is local time of the HA installation; stored in UTC."""
    await hass.config.async_set_time_zone("Europe/Berlin")
    await call(hass, "merge", key=KEY, entries=[{"id": "a", "timestamp": "2025-10-25T12:00:00"}])
    result = await call(
        hass, "query", key=KEY, start_time="2025-10-25T09:00:00Z", end_time=1761390000
    )
    assert result["entries"][0]["timestamp"] == "2025-10-25T10:00:00Z"


async def test_concurrent_merges_lose_nothing(hass: HomeAssistant, services: None) -> None:
    """200 merges at once into a new key: every entry arrives."""
    await asyncio.gather(
        *(
            call(hass, "merge", key=KEY, entries=[{"id": f"e{i}", "timestamp": 1761300000 + i}])
            for i in range(200)
        )
    )
    listed = await call(hass, "list")
    assert listed["keys"][0]["count"] == 200
    store = hass.data[f"{DOMAIN}_timeseries"]
    async with store.lock(KEY):
        series = await store.async_get(KEY)
    assert series.total_api_calls == 200


BAD_CALLS = [
    ({"key": "../x", "entries": []}, "merge", "invalid_key", {"key": "../x"}),
    ({"key": KEY, "entries": "nope"}, "merge", "entries_not_list", {}),
    (
        {"key": KEY, "entries": [{"timestamp": 1}]},
        "merge",
        "entry_missing_field",
        {"index": "0", "field": "id"},
    ),
    (
        {"key": KEY, "entries": [{"id": 1, "when": 1}], "timestamp_field": "when2"},
        "merge",
        "entry_missing_field",
        {"field": "when2"},
    ),
    (
        {"key": KEY, "entries": [{"id": 1, "timestamp": "never"}]},
        "merge",
        "entry_bad_timestamp",
        {"index": "0"},
    ),
    (
        {"key": KEY, "entries": [{"id": i, "timestamp": 1} for i in range(10_001)]},
        "merge",
        "too_many_entries",
        {},
    ),
    (
        {"key": KEY, "entries": [], "window_start": 10, "window_end": 5},
        "merge",
        "start_after_end",
        {},
    ),
    ({"key": KEY, "entries": [], "window_start": 10}, "merge", "window_incomplete", {}),
    ({"key": KEY, "start_time": 10, "end_time": 5}, "query", "start_after_end", {}),
    ({"key": KEY, "last": "ages"}, "query", "invalid_last", {}),
    ({"key": KEY}, "query", "range_required", {}),
    ({"key": KEY, "last": "1 day", "start_time": 5}, "query", "range_conflict", {}),
    (
        {"key": "unknown_timeseries", "last": "1 day"},
        "query",
        "unknown_series",
        {"key": "unknown_timeseries"},
    ),
    ({"key": "unknown_timeseries"}, "cleanup", "unknown_series", {}),
]


@pytest.mark.parametrize(("data", "service", "translation_key", "placeholders"), BAD_CALLS)
async def test_bad_input_is_translated_and_writes_nothing(
    hass: HomeAssistant,
    services: None,
    hass_storage: dict[str, Any],
    data: dict[str, Any],
    service: str,
    translation_key: str,
    placeholders: dict[str, str],
) -> None:
    """Every bad input: a ServiceValidationError naming field and index, no write."""
    if service == "query" and data["key"] == KEY:
        await call(hass, "merge", key=KEY, entries=[{"id": "kept", "timestamp": 1761300000}])
    await hass.async_block_till_done()
    before = {k: v for k, v in hass_storage.items() if k.startswith(f"{DOMAIN}.timeseries")}
    listed_before = await call(hass, "list")
    with pytest.raises(ServiceValidationError) as err:
        await call(hass, service, **data)
    assert err.value.translation_key == translation_key
    assert placeholders.items() <= (err.value.translation_placeholders or {}).items()
    assert await call(hass, "list") == listed_before
    store = hass.data[f"{DOMAIN}_timeseries"]
    await store.async_close()
    after = {k: v for k, v in hass_storage.items() if k.startswith(f"{DOMAIN}.timeseries")}
    assert after.keys() == before.keys() or not before
    assert all(k.endswith(("timeseries", KEY)) for k in after)


async def test_cleanup_defaults_and_admin(
    hass: HomeAssistant, services: None, freezer: FrozenDateTimeFactory
) -> None:
    """Cleanup keeps 90 days by default and reports what it removed."""
    freezer.move_to(DAY0)
    await call(hass, "merge", key=KEY, entries=[kudos(1, DAY0, 24 * 100), kudos(2, DAY0, 24)])
    result = await call(hass, "cleanup", key=KEY)
    assert (result["removed"], result["kept"]) == (1, 1)
    assert result["cutoff_date"] == at(DAY0, 24 * 90)
    result = await call(hass, "cleanup", key=KEY, keep_days=0.5)
    assert result["kept"] == 0


class TestRestart:
    """Real files: what was merged is there after a restart."""

    @pytest.fixture
    def hass_storage(self) -> dict[str, Any]:
        return {}

    @pytest.fixture(autouse=True)
    def config_dir(self, hass: HomeAssistant, tmp_path: Path) -> None:
        """Before the integration creates its stores."""
        hass.config.config_dir = str(tmp_path)

    async def test_restart_keeps_every_entry(
        self, hass: HomeAssistant, tmp_path: Path, services: None
    ) -> None:
        entries = [{"id": f"e{i}", "timestamp": 1761300000 + 60 * i, "n": i} for i in range(500)]
        await call(
            hass, "merge", key=KEY, entries=entries, window_start=1761300000, window_end=1761400000
        )
        before = await call(hass, "query", key=KEY, start_time=1761300000, end_time=1761400000)
        hass.bus.async_fire(EVENT_HOMEASSISTANT_FINAL_WRITE)
        await hass.async_block_till_done()
        assert (tmp_path / ".storage" / f"{DOMAIN}.timeseries.{KEY}").exists()

        fresh = TimeseriesStore(hass, f"{DOMAIN}.timeseries")
        await fresh.async_load()
        assert fresh.known_keys() == [KEY]
        async with fresh.lock(KEY):
            series = await fresh.async_get(KEY)
        assert series is not None
        assert len(series) == 500
        assert series.query(1761300000, 1761400000) == {
            k: v for k, v in before.items() if k != "success"
        }
