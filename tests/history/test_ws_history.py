"""The Memory panel's history commands: a paged timeline, a turn's chain, statistics.

Administrators read the whole history; a user who is not one reads what history_query
shows them: their own person's talk and the household's events (tests/people/test_ws_privacy.py
has two people).
"""

from datetime import timedelta
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.core import HomeAssistant
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_mock_service
from pytest_homeassistant_custom_component.typing import (
    MockHAClientWebSocket,
    WebSocketGenerator,
)

from custom_components.azure_openai_memory.const import DOMAIN

from ..conftest import agent_entity_id, call, converse
from ..panel_commands import answer, invalid, refused_as, translated


@pytest.fixture
async def admin(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, hass_ws_client: WebSocketGenerator
) -> MockHAClientWebSocket:
    # The purge at start-up has run: the events a test records at other times all stay.
    await hass.async_block_till_done(wait_background_tasks=True)
    return await hass_ws_client(hass)


async def record(hass: HomeAssistant, n: int, **data: Any) -> str:
    recorded = await call(
        hass,
        "history_record",
        {"event_type": "system", "event_data": {"n": n}, "agent_id": "automation", **data},
    )
    return str(recorded["event"]["event_id"])


async def test_the_timeline_is_paged_and_filtered(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    hass_ws_client: WebSocketGenerator,
    freezer: FrozenDateTimeFactory,
) -> None:
    await hass.async_block_till_done(wait_background_tasks=True)
    now = dt_util.utcnow()
    await hass.config.async_set_time_zone("Europe/Amsterdam")
    freezer.move_to("2026-11-24 22:30:00+00:00")  # 23:30 on the 24th in Amsterdam
    late = [await record(hass, n) for n in range(3)]
    freezer.move_to("2026-11-24 23:30:00+00:00")  # 00:30 on the 25th
    ids = [await record(hass, n) for n in range(120)]
    await record(hass, 0, event_type="error", agent_id="conversation.other")
    # Connected once the clock is back, with a token of now: a connection open across the
    # clock's jump of an hour is closed by the server's heartbeat (2026.10's aiohttp).
    freezer.move_to(now)
    admin = await hass_ws_client(hass)

    first = await answer(admin, "history/events", agent_id="automation", limit=100)
    assert first["total"] == 123
    assert [e["event_id"] for e in first["events"]] == list(reversed(ids))[:100]
    second = await answer(admin, "history/events", agent_id="automation", offset=100, limit=100)
    assert [e["event_id"] for e in second["events"]] == [
        *reversed(ids[:20]),
        *reversed(late),
    ]
    assert second["total"] == 123
    errors = await answer(admin, "history/events", event_type="error")
    assert [e["agent_id"] for e in errors["events"]] == ["conversation.other"]
    tenth = await answer(admin, "history/events", day="2026-11-24")
    assert sorted(e["event_id"] for e in tenth["events"]) == sorted(late)
    assert tenth["total"] == 3
    assert (await answer(admin, "history/events", day="2026-11-25", limit=1))["total"] == 121
    assert (await answer(admin, "history/events", day="2026-11-26"))["events"] == []

    # Uncounted (the panel's first request): the same page; the total only when it ends there.
    uncounted = await answer(admin, "history/events", agent_id="automation", limit=100, count=False)
    assert uncounted["events"] == first["events"]
    assert uncounted["total"] is None
    last = await answer(
        admin, "history/events", agent_id="automation", offset=100, limit=100, count=False
    )
    assert (last["events"], last["total"]) == (second["events"], 123)
    empty = await answer(admin, "history/events", day="2026-11-26", count=False)
    assert (empty["events"], empty["total"]) == ([], 0)


async def test_a_row_carries_a_cut_of_long_data(
    hass: HomeAssistant, admin: MockHAClientWebSocket
) -> None:
    await record(hass, 0, event_data={"text": "x" * 10_000})
    (row,) = (await answer(admin, "history/events", agent_id="automation"))["events"]
    assert set(row["event_data"]) == {"truncated"}
    assert len(row["event_data"]["truncated"]) == 2048
    whole = await call(hass, "history_query", {"agent_id": "automation"})
    assert whole["events"][0]["event_data"] == {"text": "x" * 10_000}


async def test_a_turn_is_its_question_and_all_that_followed(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, admin: MockHAClientWebSocket
) -> None:
    hass.states.async_set("light.kitchen", "off", {"friendly_name": "Kitchen"})
    async_mock_service(hass, "light", "turn_on")
    await converse(hass, loaded_entry, "turn on the kitchen", "local")
    await converse(hass, loaded_entry, "turn on the kitchen", "local")
    timeline = await answer(admin, "history/events", agent_id=agent_entity_id(hass, loaded_entry))
    assert timeline["total"] == 8
    newest_answer = timeline["events"][0]
    action = next(e for e in timeline["events"] if e["event_type"] == "action")
    turn = await answer(admin, "history/turn", event_id=action["event_id"])
    events = turn["events"]
    assert [e["event_type"] for e in events] == [
        "communication",
        "decision",
        "action",
        "communication",
    ]
    assert events[-1]["event_id"] == newest_answer["event_id"]
    parents = {e["event_id"]: e["parent_event_id"] for e in events}
    assert parents[events[1]["event_id"]] == events[0]["event_id"]
    assert parents[events[2]["event_id"]] == parents[events[3]["event_id"]] == events[1]["event_id"]
    # The earlier turn of the same conversation is not part of it.
    assert {e["event_id"] for e in events}.isdisjoint(e["event_id"] for e in timeline["events"][4:])
    assert await translated(admin, "invalid_event_id", "history/turn", event_id="not-an-id") == {
        "field": "event_id",
        "value": "not-an-id",
    }
    unknown = "3f2b9c4e-1d2a-4b8e-9f00-0c1d2e3f4a5b"
    assert await translated(admin, "unknown_event", "history/turn", event_id=unknown) == {
        "event_id": unknown
    }


async def test_statistics_and_the_agents_to_filter_by(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, admin: MockHAClientWebSocket
) -> None:
    await record(hass, 1)
    await record(hass, 2, event_type="error")
    stats = await answer(admin, "history/statistics")
    assert stats["total_events"] == 2
    assert stats["events_by_type"]["error"] == 1
    assert stats["agents"] == [agent_entity_id(hass, loaded_entry)]
    mine = await answer(admin, "history/statistics", agent_id="nobody")
    assert mine["total_events"] == 0
    same = await call(hass, "history_statistics", {})
    assert {k: v for k, v in stats.items() if k != "agents"} == same


async def test_a_user_without_a_person_reads_the_household_s_events(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    admin: MockHAClientWebSocket,
    user: MockHAClientWebSocket,
) -> None:
    """An automation's event is the household's; talk of nobody known is an
    administrator's to read."""
    event_id = await record(hass, 1)
    await converse(hass, loaded_entry, "Where are my keys?", "nobody-talk")
    seen = await answer(user, "history/events")
    assert ([e["event_id"] for e in seen["events"]], seen["total"]) == ([event_id], 1)
    assert [
        e["event_id"] for e in (await answer(user, "history/turn", event_id=event_id))["events"]
    ] == [event_id]
    assert (await answer(user, "history/statistics"))["total_events"] == 1
    everything = await answer(admin, "history/events")
    assert everything["total"] > 1
    (question,) = [e for e in everything["events"] if e["session_id"] == "nobody-talk"][-1:]
    assert question["event_data"]["text"] == "Where are my keys?"
    error = await refused_as(
        user, "home_assistant_error", "history/turn", event_id=question["event_id"]
    )
    assert (error["translation_domain"], error["translation_key"]) == (DOMAIN, "unknown_event")


async def test_schema_errors(hass: HomeAssistant, admin: MockHAClientWebSocket) -> None:
    assert "event_type" in await invalid(admin, "history/events", event_type="chat")
    assert "day" in await invalid(admin, "history/events", day="yesterday")
    assert "day" in await invalid(admin, "history/events", day=20260310)
    assert "limit" in await invalid(admin, "history/events", limit=1000)
    assert "agent_id" in await invalid(admin, "history/events", agent_id="")
    assert "count" in await invalid(admin, "history/events", count="no")
    assert "event_id" in await invalid(admin, "history/turn")
    today = dt_util.now().date()
    assert (await answer(admin, "history/events", day=today.isoformat()))["total"] == 0
    tomorrow = (today + timedelta(days=1)).isoformat()
    assert (await answer(admin, "history/events", day=tomorrow))["total"] == 0
