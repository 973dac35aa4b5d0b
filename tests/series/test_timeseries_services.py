"""Time-series services end to end, with return_response: the seed's four scenarios and more."""

import asyncio
import copy
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.auth.const import GROUP_ID_ADMIN, GROUP_ID_USER
from homeassistant.const import EVENT_HOMEASSISTANT_FINAL_WRITE
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import ServiceValidationError, Unauthorized
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.const import (
    CONF_TIMESERIES_KEEP_DAYS,
    CONF_TIMESERIES_MAX_ENTRIES,
    DOMAIN,
    RECOMMENDED_OPTIONS,
)
from custom_components.azure_openai_memory.series.store import SeriesStore

from ..conftest import Restart, family, options_shown, saves_fall_due, stored, submit_options

DAY0 = datetime(2025, 10, 25, 10, 0, tzinfo=UTC)
KEY = "kudos_givers_timeseries"
INDEX = f"{DOMAIN}.timeseries"
T0 = 1761300000


def format_time(epoch: float) -> str:
    """Epoch seconds as the services write times: UTC ISO 8601 with Z."""
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


def at(moment: datetime, hours_ago: float) -> str:
    return format_time((moment - timedelta(hours=hours_ago)).timestamp())


def kudos(n: int, moment: datetime, hours_ago: float) -> dict[str, Any]:
    return {"id": f"kudos_{n}", "athlete_name": f"athlete {n}", "timestamp": at(moment, hours_ago)}


@pytest.fixture
def settings_entry(hass: HomeAssistant) -> MockConfigEntry:
    """An entry whose options form sets the installation's series settings (not set up)."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        unique_id="https://other.openai.azure.com",
        data={},
        options=dict(RECOMMENDED_OPTIONS),
        minor_version=2,
    )
    entry.add_to_hass(hass)
    return entry


async def set_series_settings(
    hass: HomeAssistant, entry: MockConfigEntry, max_entries: int, keep_days: float
) -> None:
    """The installation's series settings, saved in the options form."""
    await submit_options(
        hass,
        entry,
        **{CONF_TIMESERIES_MAX_ENTRIES: max_entries, CONF_TIMESERIES_KEEP_DAYS: keep_days},
    )


async def series_settings_shown(hass: HomeAssistant, entry: MockConfigEntry) -> tuple[int, float]:
    shown = await options_shown(hass, entry)
    return shown[CONF_TIMESERIES_MAX_ENTRIES], shown[CONF_TIMESERIES_KEEP_DAYS]


def final_write_listeners(hass: HomeAssistant) -> int:
    """Files listening for Home Assistant's final write; a loaded series is one of them."""
    return hass.bus.async_listeners().get(EVENT_HOMEASSISTANT_FINAL_WRITE, 0)


call = family("timeseries")


def numbered(count: int, start: int = 0) -> list[dict[str, Any]]:
    """Entries one minute apart from T0, each naming its number."""
    return [
        {"id": f"e{i}", "timestamp": format_time(T0 + 60 * i), "n": i} for i in range(start, count)
    ]


def stored_series(hass_storage: dict[str, Any]) -> dict[str, Any]:
    """The index and series files, as written."""
    return {k: v for k, v in hass_storage.items() if k.startswith(INDEX)}


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
        "keys": [
            {
                "key": KEY,
                "count": 19,
                "oldest": at(DAY0, 96),
                "newest": at(day1, 3),
                "covered": [{"start": at(day1, 7 * 24), "end": at(day1, 0)}],
            }
        ]
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


async def test_concurrent_merges_lose_nothing(
    hass: HomeAssistant, services: None, hass_storage: dict[str, Any]
) -> None:
    """200 merges at once into a new key: every entry arrives."""
    await asyncio.gather(
        *(
            call(hass, "merge", key=KEY, entries=[{"id": f"e{i}", "timestamp": 1761300000 + i}])
            for i in range(200)
        )
    )
    listed = await call(hass, "list")
    assert listed["keys"][0]["count"] == 200
    file = await stored(hass, hass_storage, f"{INDEX}.{KEY}")
    assert file is not None
    assert file["data"]["metadata"]["total_api_calls"] == 200


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
    await saves_fall_due(hass)
    before = copy.deepcopy(stored_series(hass_storage))
    assert bool(before) is (service == "query" and data["key"] == KEY)
    listeners = final_write_listeners(hass)
    listed_before = await call(hass, "list")
    with pytest.raises(ServiceValidationError) as err:
        await call(hass, service, **data)
    assert err.value.translation_key == translation_key
    assert err.value.translation_placeholders is not None
    assert placeholders.items() <= err.value.translation_placeholders.items()
    assert await call(hass, "list") == listed_before
    await hass.async_block_till_done()
    # A refused merge into a new key leaves nothing loaded either (no file kept open).
    assert final_write_listeners(hass) == listeners
    await hass.async_stop()
    assert stored_series(hass_storage) == before


async def test_cleanup_defaults_and_admin(
    hass: HomeAssistant, services: None, freezer: FrozenDateTimeFactory
) -> None:
    """Cleanup keeps 90 days by default, is refused to a non-admin, and says what it removed."""
    freezer.move_to(DAY0)
    await call(hass, "merge", key=KEY, entries=[kudos(1, DAY0, 24 * 100), kudos(2, DAY0, 24)])
    # The first user becomes the owner; the second is a plain user.
    admin = await hass.auth.async_create_user("Admin", group_ids=[GROUP_ID_ADMIN])
    member = await hass.auth.async_create_user("Household member", group_ids=[GROUP_ID_USER])
    assert (admin.is_admin, member.is_admin) == (True, False)
    with pytest.raises(Unauthorized):
        await call(hass, "cleanup", context=Context(user_id=member.id), key=KEY, keep_days=0.5)
    kept = await call(hass, "query", key=KEY, last="200 days")
    assert [e["id"] for e in kept["entries"]] == ["kudos_2", "kudos_1"]

    result = await call(hass, "cleanup", context=Context(user_id=admin.id), key=KEY)
    assert (result["removed"], result["kept"]) == (1, 1)
    assert result["cutoff_date"] == at(DAY0, 24 * 90)
    result = await call(hass, "cleanup", key=KEY, keep_days=0.5)
    assert result["kept"] == 0


async def test_cleanup_default_is_the_installation_setting(
    hass: HomeAssistant,
    services: None,
    settings_entry: MockConfigEntry,
    freezer: FrozenDateTimeFactory,
) -> None:
    """Without keep_days, cleanup keeps what the series settings say, not an entry's options."""
    freezer.move_to(DAY0)
    entries = [kudos(n, DAY0, 24 * days) for n, days in enumerate((1, 20, 40))]
    await call(hass, "merge", key=KEY, entries=entries)
    await set_series_settings(hass, settings_entry, 10_000, 30)
    result = await call(hass, "cleanup", key=KEY)
    assert (result["removed"], result["kept"]) == (1, 2)
    assert result["cutoff_date"] == at(DAY0, 24 * 30)
    listed = await call(hass, "list")
    assert listed["keys"][0]["oldest"] == at(DAY0, 24 * 20)


async def test_lowered_cap_applies_to_series_without_their_own(
    hass: HomeAssistant,
    services: None,
    settings_entry: MockConfigEntry,
    hass_storage: dict[str, Any],
    restart: Restart,
) -> None:
    """The installation's cap is read by every merge; lowering it trims the series that
    follow it at once, and leaves a series with its own cap (from a merge call) alone."""
    await set_series_settings(hass, settings_entry, 300, 90)
    followed = await call(hass, "merge", key="follows_timeseries", entries=numbered(400))
    assert (followed["total_count"], followed["evicted"]) == (300, 100)
    own = await call(hass, "merge", key="own_timeseries", entries=numbered(400), max_entries=350)
    assert (own["total_count"], own["evicted"]) == (350, 50)

    await set_series_settings(hass, settings_entry, 200, 90)
    listed = {s["key"]: s for s in (await call(hass, "list"))["keys"]}
    assert listed["follows_timeseries"]["count"] == 200
    assert listed["follows_timeseries"]["oldest"] == format_time(T0 + 200 * 60)
    assert listed["own_timeseries"]["count"] == 350
    # The override is kept: a later merge without max_entries still caps at 350.
    again = await call(hass, "merge", key="own_timeseries", entries=numbered(500))
    assert again["total_count"] == 350

    await saves_fall_due(hass)
    assert hass_storage[INDEX]["data"]["settings"] == {"max_entries": 200, "keep_days": 90}
    hass = await restart()
    entry = hass.config_entries.async_get_entry(settings_entry.entry_id)
    assert isinstance(entry, MockConfigEntry)
    assert await series_settings_shown(hass, entry) == (200, 90)
    again = await call(hass, "merge", key="follows_timeseries", entries=numbered(600, 400))
    assert again["total_count"] == 200


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
        self, hass: HomeAssistant, tmp_path: Path, services: None, restart: Restart
    ) -> None:
        entries = [{"id": f"e{i}", "timestamp": 1761300000 + 60 * i, "n": i} for i in range(500)]
        await call(
            hass, "merge", key=KEY, entries=entries, window_start=1761300000, window_end=1761400000
        )
        before = await call(hass, "query", key=KEY, start_time=1761300000, end_time=1761400000)
        hass.bus.async_fire(EVENT_HOMEASSISTANT_FINAL_WRITE)
        await hass.async_block_till_done()
        assert (tmp_path / ".storage" / f"{DOMAIN}.timeseries.{KEY}").exists()

        hass = await restart()
        assert [s["key"] for s in (await call(hass, "list"))["keys"]] == [KEY]
        after = await call(hass, "query", key=KEY, start_time=1761300000, end_time=1761400000)
        assert after["count"] == 500
        assert after == before


async def test_list_answers_from_the_index_without_loading(
    hass: HomeAssistant, services: None, restart: Restart
) -> None:
    """After a restart, listing reports every series as before and loads none of them
    (a loaded series keeps its file listening for the final write)."""
    for n, key in enumerate(("a_timeseries", "b_timeseries", "c_timeseries")):
        await call(
            hass,
            "merge",
            key=key,
            entries=numbered(10 * (n + 1)),
            window_start=T0 - 3600,
            window_end=T0 + 3600,
        )
    listed = await call(hass, "list")
    assert [(s["key"], s["count"]) for s in listed["keys"]] == [
        ("a_timeseries", 10),
        ("b_timeseries", 20),
        ("c_timeseries", 30),
    ]
    assert listed["keys"][2]["newest"] == format_time(T0 + 29 * 60)
    assert listed["keys"][2]["covered"] == [
        {"start": format_time(T0 - 3600), "end": format_time(T0 + 3600)}
    ]

    hass = await restart()
    listeners = final_write_listeners(hass)
    assert await call(hass, "list") == listed
    assert final_write_listeners(hass) == listeners
    await call(hass, "query", key="a_timeseries", start_time=T0, end_time=T0 + 3600)
    assert final_write_listeners(hass) == listeners + 1  # what loading one does


# A SeriesStore with a memory budget of the test's choosing: the budget is not a setting,
# so these two build the store themselves and merge through its own methods.


async def merge_into(store: SeriesStore, key: str, entries: list[dict[str, Any]]) -> None:
    """What timeseries_merge does to a store, without a window."""
    async with store.lock(key):
        series = await store.async_get(key, create=True)
        assert series is not None
        now = format_time(dt_util.utcnow().timestamp())
        series.merge(series.prepare(entries, "id", "timestamp", UTC, now), now)
        store.async_changed(key)


async def query(store: SeriesStore, key: str) -> list[dict[str, Any]]:
    async with store.lock(key):
        series = await store.async_get(key)
        assert series is not None
        return list(series.query(T0, T0 + 3600)["entries"])


async def test_eviction_under_a_tiny_budget_keeps_every_write(
    hass: HomeAssistant, freezer: FrozenDateTimeFactory
) -> None:
    """With room for about one series, merges into ten keys, twice each, interleaved:
    series leave memory as others come, and every entry is there when queried, before
    and after a restart."""
    freezer.move_to(DAY0)
    probe = SeriesStore(hass, "probe")
    await probe.async_load()
    await merge_into(probe, "x", [{**e, "key": 0} for e in numbered(60)])
    one_series = probe.memory_used
    await probe.async_close()
    store = SeriesStore(hass, INDEX, memory_budget=one_series + one_series // 2)
    await store.async_load()
    keys = [f"series_{n}_timeseries" for n in range(10)]
    for round_ in range(2):
        for n, key in enumerate(keys):
            first = round_ * 30
            await merge_into(store, key, [{**e, "key": n} for e in numbered(first + 30, first)])
    await hass.async_block_till_done()
    assert 1 <= len(store.loaded_keys()) <= 2
    assert store.memory_used <= one_series + one_series // 2

    now = format_time(DAY0.timestamp())
    expected = {
        key: [{**e, "key": n, "first_seen": now} for e in reversed(numbered(60))]
        for n, key in enumerate(keys)
    }
    assert {key: await query(store, key) for key in keys} == expected
    await hass.async_block_till_done()
    assert len(store.loaded_keys()) <= 2
    await store.async_close()
    fresh = SeriesStore(hass, INDEX, memory_budget=one_series)
    await fresh.async_load()
    assert {key: await query(fresh, key) for key in keys} == expected
    await fresh.async_close()


async def test_a_series_in_use_is_not_evicted(hass: HomeAssistant) -> None:
    """While its lock is held a series stays loaded, however far over budget; it leaves
    once released, with its pending write on disk."""
    store = SeriesStore(hass, INDEX, memory_budget=1)
    await store.async_load()
    await merge_into(store, "held_timeseries", numbered(5))
    async with store.lock("held_timeseries"):
        held = await store.async_get("held_timeseries")
        assert held is not None
        await merge_into(store, "other_timeseries", numbered(5))
        await hass.async_block_till_done()
        assert store.loaded_keys() == ["held_timeseries"]
        assert len(held.query(T0, T0 + 3600)["entries"]) == 5
    await merge_into(store, "third_timeseries", numbered(3))
    await hass.async_block_till_done()
    assert store.loaded_keys() == []
    assert len(await query(store, "held_timeseries")) == 5
    await store.async_close()


async def test_index_of_version_1_migrates(
    hass: HomeAssistant,
    hass_storage: dict[str, Any],
    services: None,
    settings_entry: MockConfigEntry,
    restart: Restart,
) -> None:
    """An index listing keys only: the first list loads each series once and keeps its
    summary; a cap written by version 1 (always 10,000) follows the setting from then on."""
    await call(
        hass, "merge", key=KEY, entries=numbered(250), window_start=T0 - 60, window_end=T0 + 1800
    )
    await hass.async_stop()
    # As version 1 stored them: the index lists keys only, the series always has a cap.
    hass_storage[INDEX] = {"version": 1, "key": INDEX, "data": {"keys": [KEY]}}
    series = hass_storage[f"{INDEX}.{KEY}"]
    series["version"] = 1
    series["data"]["max_entries"] = 10_000

    hass = await restart()
    listeners = final_write_listeners(hass)
    expected = {
        "key": KEY,
        "count": 250,
        "oldest": format_time(T0),
        "newest": format_time(T0 + 249 * 60),
        "covered": [{"start": format_time(T0 - 60), "end": format_time(T0 + 1800)}],
    }
    assert await call(hass, "list") == {"keys": [expected]}
    await saves_fall_due(hass)
    index = hass_storage[INDEX]
    assert index["version"] == 2
    assert index["data"]["series"][KEY] == {
        **{k: v for k, v in expected.items() if k != "key"},
        "max_entries": None,
    }
    assert final_write_listeners(hass) == listeners + 1  # the one series listed, loaded once

    hass = await restart()
    listeners = final_write_listeners(hass)
    assert await call(hass, "list") == {"keys": [expected]}
    assert final_write_listeners(hass) == listeners  # its summary is in the index now
    entry = hass.config_entries.async_get_entry(settings_entry.entry_id)
    assert isinstance(entry, MockConfigEntry)
    await set_series_settings(hass, entry, 200, 90)
    assert (await call(hass, "list"))["keys"][0]["count"] == 200


async def test_fetched_up_to_now_is_full_when_queried_up_to_now(
    hass: HomeAssistant, services: None
) -> None:
    """README's automation: merge what was fetched until now, then ask for the last 24 hours."""
    now = dt_util.utcnow()
    await call(
        hass,
        "merge",
        key=KEY,
        entries=[{"id": "k1", "timestamp": (now - timedelta(hours=2)).isoformat()}],
        window_start=(now - timedelta(hours=24)).isoformat(),
        window_end=now.isoformat(),
    )
    stored = await call(hass, "query", key=KEY, last="24h")
    assert (stored["coverage"], stored["needs_api_call"], stored["gaps"]) == ("full", False, [])
    # A real hole of a few seconds is still one.
    fetched_until = now - timedelta(seconds=5)
    await call(
        hass,
        "merge",
        key="other_timeseries",
        entries=[{"id": "k1", "timestamp": (now - timedelta(hours=2)).isoformat()}],
        window_start=(now - timedelta(hours=24)).isoformat(),
        window_end=fetched_until.isoformat(),
    )
    stored = await call(hass, "query", key="other_timeseries", last="24h")
    assert stored["coverage"] == "partial"
    (gap,) = stored["gaps"]
    assert gap["start"] == format_time(fetched_until.timestamp())
