"""The Memory panel's summary commands: each group's strip, one summary, "summarise now".

Without an entry that writes them, summaries are extractive (no model): enough to see what
the panel is shown. Administrators read every group; a user who is not one reads what
summary_get shows them: the household's groups and their own person's.
"""

from datetime import date, datetime, timedelta

from freezegun.api import FrozenDateTimeFactory
from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.typing import (
    MockHAClientWebSocket,
    WebSocketGenerator,
)

from custom_components.azure_openai_memory.const import DOMAIN

from ..conftest import call
from ..panel_commands import answer, invalid, not_allowed, refused_as, translated

MONDAY = date(2026, 11, 16)


def local(day: date, hour: int) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=dt_util.get_default_time_zone())


@pytest.fixture
async def clients(
    hass: HomeAssistant,
    hass_ws_client: WebSocketGenerator,
    hass_read_only_access_token: str,
    freezer: FrozenDateTimeFactory,
) -> tuple[MockHAClientWebSocket, MockHAClientWebSocket]:
    """An administrator's connection and another user's, made before the clock moves to
    the Monday (a login checks its token's time once, when it connects)."""
    assert await async_setup_component(hass, DOMAIN, {})
    await hass.async_block_till_done(wait_background_tasks=True)
    admin = await hass_ws_client(hass)
    user = await hass_ws_client(hass, hass_read_only_access_token)
    freezer.move_to(local(MONDAY, 9))
    return admin, user


@pytest.fixture
def admin(clients: tuple[MockHAClientWebSocket, MockHAClientWebSocket]) -> MockHAClientWebSocket:
    return clients[0]


@pytest.fixture
def user(clients: tuple[MockHAClientWebSocket, MockHAClientWebSocket]) -> MockHAClientWebSocket:
    return clients[1]


async def talk(hass: HomeAssistant, text: str, device: str, person: str | None = None) -> None:
    """A question as the agent records it in the history: of a person, or of nobody known
    (null: a shared satellite's talk, the household's)."""
    data = {"direction": "in", "text": text, "device_id": device, "person_id": person}
    await call(
        hass,
        "history_record",
        {
            "event_type": "communication",
            "event_data": data,
            "agent_id": "conversation.azure",
            "session_id": f"s-{device}",
        },
    )


async def test_strips_of_each_group_and_one_summary_read_whole(
    hass: HomeAssistant, admin: MockHAClientWebSocket, freezer: FrozenDateTimeFactory
) -> None:
    for offset, text in enumerate(("Water the tomatoes.", "Prune the roses.", "Mow the lawn.")):
        freezer.move_to(local(MONDAY + timedelta(days=offset), 9))
        await talk(hass, text, "kitchen")
        if offset == 1:
            await talk(hass, "Charge the car.", "garage")
        ran = await answer(admin, "summaries/run")
        assert (ran["day"], ran["daily"]) == (
            (MONDAY + timedelta(days=offset)).isoformat(),
            2 if offset == 1 else 1,
        )
    listed = await answer(admin, "summaries/groups")
    assert listed["total"] == 2
    assert listed["group_mode"] == "device"
    garage, kitchen = listed["groups"]
    assert (garage["group_id"], kitchen["group_id"]) == ("garage", "kitchen")
    dailies = kitchen["strips"]["daily"]
    assert [s["period_start"] for s in dailies] == [
        (MONDAY + timedelta(days=n)).isoformat() for n in range(3)
    ]
    assert kitchen["strips"]["weekly"] == kitchen["strips"]["monthly"] == []
    assert all(s["extractive"] for s in dailies)
    assert "summary" not in dailies[0]  # a strip carries no text
    one = await answer(admin, "summaries/get", summary_id=dailies[1]["summary_id"])
    assert one["summary"]["summary"] == "Prune the roses."
    assert one["summary"]["message_count"] == 1
    as_service = await call(hass, "summary_get", {"group": "kitchen", "limit": 10})
    assert one["summary"] in as_service["summaries"]
    paged = await answer(admin, "summaries/groups", offset=1, limit=1)
    assert ([g["group_id"] for g in paged["groups"]], paged["total"]) == (["kitchen"], 2)
    assert await translated(admin, "summary_unknown", "summaries/get", summary_id="nope") == {
        "summary_id": "nope"
    }


async def test_a_named_day_and_no_future(
    hass: HomeAssistant, admin: MockHAClientWebSocket, freezer: FrozenDateTimeFactory
) -> None:
    await talk(hass, "Water the tomatoes.", "kitchen")
    freezer.move_to(local(MONDAY + timedelta(days=2), 9))
    ran = await answer(admin, "summaries/run", day=MONDAY.isoformat())
    assert (ran["day"], ran["daily"]) == (MONDAY.isoformat(), 1)
    tomorrow = (MONDAY + timedelta(days=3)).isoformat()
    assert await translated(admin, "day_in_future", "summaries/run", day=tomorrow) == {
        "day": tomorrow
    }
    assert "day" in await invalid(admin, "summaries/run", day="tomorrow")
    assert "summary_id" in await invalid(admin, "summaries/get")
    assert "limit" in await invalid(admin, "summaries/groups", limit=0)


async def test_a_user_reads_the_household_s_groups_but_may_not_summarise_now(
    hass: HomeAssistant, admin: MockHAClientWebSocket, user: MockHAClientWebSocket
) -> None:
    """A kitchen's talk is the household's; Anna's is hers. Summarising now runs over every
    person's talk and counts it: an administrator's to do, as summary_aggregate is."""
    await talk(hass, "Water the tomatoes.", "kitchen")
    await talk(hass, "Book the dentist.", "phone", "anna")
    await not_allowed(user, "summaries/run")
    assert (await answer(admin, "summaries/run"))["daily"] == 2
    listed = await answer(user, "summaries/groups")
    assert ([g["group_id"] for g in listed["groups"]], listed["total"]) == (["kitchen"], 1)
    (daily,) = listed["groups"][0]["strips"]["daily"]
    read = await answer(user, "summaries/get", summary_id=daily["summary_id"])
    assert read["summary"]["summary"] == "Water the tomatoes."
    everyone = await answer(admin, "summaries/groups")
    assert [g["group_id"] for g in everyone["groups"]] == ["kitchen", "person_anna"]
    (anna,) = everyone["groups"][1]["strips"]["daily"]
    error = await refused_as(
        user, "home_assistant_error", "summaries/get", summary_id=anna["summary_id"]
    )
    assert (error["translation_key"], error["translation_placeholders"]) == (
        "summary_unknown",
        {"summary_id": anna["summary_id"]},
    )
