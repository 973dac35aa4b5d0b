"""Summaries when things go wrong: downtime, the history or the model away, long days."""

from datetime import date, timedelta
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.const import EVENT_HOMEASSISTANT_STOP
from homeassistant.core import HomeAssistant
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed

from custom_components.azure_openai_memory.const import CONF_CONTEXT_LIMIT, CONF_SUMMARIES, DOMAIN

from ..azure_stub import AzureStub, Reply
from ..conftest import (
    NO_TOOLS,
    TEST_ENCODING,
    Restart,
    agent_memory,
    call,
    count_tokens,
    history_schema_version,
    stored,
)
from .test_summaries import (
    DEVICE,
    START,
    _kind,
    asked_with,
    get,
    local,
    record_said,
    set_up,
    summariser,
    talk,
)

SUMMARIES_KEY = f"{DOMAIN}.summaries"
# What a summary request says when the day's talk was shortened to fit.
SHORTENED_NOTE = (
    "The day was too long to send whole: its earliest messages are left out, "
    "the latest are all here."
)
NO_COUNTS = {"daily": 0, "weekly": 0, "monthly": 0, "pruned": 0, "eras": 0}


def asked(azure: AzureStub, kind: str) -> int:
    """How many summaries of this kind the model was asked for."""
    return sum(1 for c in azure.calls("/chat/completions") if c.body and _kind(c.body) == kind)


def folds_fail(body: dict[str, Any]) -> Reply:
    """The model writes days, but fails on weeks and months."""
    if _kind(body) in ("weekly_summary", "monthly_summary"):
        return Reply.failure(500, "InternalServerError", "The server had an error.")
    return summariser(body)


async def daily_run(hass: HomeAssistant, freezer: FrozenDateTimeFactory, day: date) -> None:
    """The 03:30 run of day.

    After a start at 03:30 the run is due within the next half second. Fired here, on its
    own, it does not fire together with the pending saves (stored_book): there, whether its
    own change put off the save being fired depended on how soon the executor answered.
    """
    freezer.move_to(local(day, 3, 30))
    async_fire_time_changed(hass, dt_util.utcnow())
    await hass.async_block_till_done(wait_background_tasks=True)


async def stored_book(hass: HomeAssistant, hass_storage: dict[str, Any]) -> dict[str, Any]:
    """The summaries file's data (summaries, profiles, summarised_through), once saved."""
    file = await stored(hass, hass_storage, SUMMARIES_KEY)
    assert file is not None
    return dict(file["data"])


async def test_talk_while_down_is_summarised_once_per_day_on_return(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    freezer: FrozenDateTimeFactory,
    hass_storage: dict[str, Any],
) -> None:
    """Three weeks down: every day talked on gets exactly one daily, none is skipped."""
    freezer.move_to(local(START, 9))
    await set_up(hass, config_entry)
    azure.responder = summariser
    await talk(hass, "Tomato seedlings need light.", "s0")
    assert await hass.config_entries.async_unload(config_entry.entry_id)
    await hass.async_block_till_done()
    for n in (1, 2, 9):
        freezer.move_to(local(START + timedelta(days=n), 10))
        await talk(hass, "Tomato seedlings need light.", f"s{n}")
    freezer.move_to(local(START + timedelta(days=21), 12))
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)
    dailies = await get(hass, period_type="daily")
    assert [s["period_start"] for s in dailies] == [
        (START + timedelta(days=n)).isoformat() for n in (9, 2, 1, 0)
    ]
    assert all(s["message_count"] == 2 and not s["extractive"] for s in dailies)
    assert asked(azure, "daily_summary") == 4
    # Both closed weeks folded once each (the week of day 9 closed on day 18).
    assert [s["period_start"] for s in await get(hass, period_type="weekly")] == [
        "2026-01-12",
        "2026-01-05",
    ]
    assert asked(azure, "weekly_summary") == 2
    book = await stored_book(hass, hass_storage)
    assert book["summarised_through"] == (START + timedelta(days=20)).isoformat()
    # Running again asks nothing more.
    requests = len(azure.calls("/chat/completions"))
    assert await call(hass, "summary_aggregate") == NO_COUNTS
    assert len(azure.calls("/chat/completions")) == requests


async def test_talk_while_summaries_were_off_is_summarised_when_they_are_on(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    freezer: FrozenDateTimeFactory,
) -> None:
    freezer.move_to(local(START, 9))
    await set_up(hass, config_entry)
    azure.responder = summariser
    hass.config_entries.async_update_entry(
        config_entry, options={**config_entry.options, CONF_SUMMARIES: False}
    )
    await hass.async_block_till_done(wait_background_tasks=True)
    await talk(hass, "Tomato seedlings need light.", "s0")
    await daily_run(hass, freezer, START + timedelta(days=1))
    assert await get(hass) == []
    freezer.move_to(local(START + timedelta(days=16), 12))
    hass.config_entries.async_update_entry(
        config_entry, options={**config_entry.options, CONF_SUMMARIES: True}
    )
    await hass.async_block_till_done(wait_background_tasks=True)
    assert [(s["period_type"], s["period_start"]) for s in await get(hass)] == [
        ("weekly", START.isoformat()),
        ("daily", START.isoformat()),
    ]


async def test_the_history_unavailable_at_run_time_delays_the_day_and_loses_nothing(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    freezer: FrozenDateTimeFactory,
    hass_storage: dict[str, Any],
    restart: Restart,
) -> None:
    """Started with a history it cannot open, the run waits; the next start catches up."""
    freezer.move_to(local(START, 9))
    await set_up(hass, config_entry)
    azure.responder = summariser
    await talk(hass, "Tomato seedlings need light.", "s0")
    await hass.async_stop()
    history_schema_version(hass, 99)
    freezer.move_to(local(START + timedelta(days=1), 3, 30))
    hass = await restart()
    await hass.async_block_till_done(wait_background_tasks=True)
    await daily_run(hass, freezer, START + timedelta(days=1))  # due just after the start
    assert await get(hass) == []
    book = await stored_book(hass, hass_storage)
    assert book["summarised_through"] == (START - timedelta(days=1)).isoformat()
    assert asked(azure, "daily_summary") == 0
    await hass.async_stop()
    history_schema_version(hass, 1)
    freezer.move_to(local(START + timedelta(days=2), 3, 30))
    hass = await restart()
    await hass.async_block_till_done(wait_background_tasks=True)
    await daily_run(hass, freezer, START + timedelta(days=2))
    (daily,) = await get(hass)
    assert (daily["period_start"], daily["message_count"]) == (START.isoformat(), 2)
    book = await stored_book(hass, hass_storage)
    assert book["summarised_through"] == (START + timedelta(days=1)).isoformat()
    assert asked(azure, "daily_summary") == 1


async def test_weeks_and_months_written_without_the_model_are_rewritten_by_it(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    freezer: FrozenDateTimeFactory,
    hass_storage: dict[str, Any],
) -> None:
    freezer.move_to(local(START, 9))
    await set_up(hass, config_entry)
    azure.responder = folds_fail
    for n in range(7):
        await daily_run(hass, freezer, START + timedelta(days=n))
        freezer.move_to(local(START + timedelta(days=n), 10))
        await talk(hass, "Water the tomato plants. The tomato plants look dry.", f"s{n}")
    # The week closes on 01-19 (its Sunday 7 days back): written without the model.
    await daily_run(hass, freezer, date(2026, 1, 19))
    (weekly,) = await get(hass, period_type="weekly")
    assert (weekly["extractive"], weekly["message_count"]) == (True, 14)
    assert weekly["summary"].startswith("Talked about garden and tomatoes.")
    assert asked(azure, "weekly_summary") == 1
    # The model is back the next day, before the days are pruned: the week is rewritten.
    azure.responder = summariser
    await daily_run(hass, freezer, date(2026, 1, 20))
    (weekly_again,) = await get(hass, period_type="weekly")
    assert weekly_again["summary_id"] == weekly["summary_id"]
    assert (weekly_again["extractive"], weekly_again["summary"]) == (
        False,
        "Talked about garden and tomatoes.",
    )
    assert weekly_again["message_count"] == 14
    # January closes on 03-03 (its last day 30 days back): the model fails, then is back.
    azure.responder = folds_fail
    await daily_run(hass, freezer, date(2026, 3, 3))
    (monthly,) = await get(hass, period_type="monthly")
    assert (monthly["extractive"], monthly["message_count"]) == (True, 14)
    assert monthly["aggregated_from"] == [weekly["summary_id"]]
    assert len(await get(hass, period_type="era")) == 1
    azure.responder = summariser
    await daily_run(hass, freezer, date(2026, 3, 4))
    (monthly_again,) = await get(hass, period_type="monthly")
    assert (monthly_again["extractive"], monthly_again["message_count"]) == (False, 14)
    assert monthly_again["aggregated_from"] == [weekly["summary_id"]]
    assert asked(azure, "weekly_summary") == 2
    assert asked(azure, "monthly_summary") == 2
    (era,) = await get(hass, period_type="era")
    assert (era["extractive"], era["period_start"]) == (False, START.isoformat())
    book = await stored_book(hass, hass_storage)
    assert [s["rewrite_pending"] for s in book["summaries"]] == [False] * len(book["summaries"])


async def test_summaries_that_cannot_be_rewritten_do_not_hold_up_those_that_can(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    freezer: FrozenDateTimeFactory,
    hass_storage: dict[str, Any],
) -> None:
    day = START + timedelta(days=29)
    freezer.move_to(local(day, 9))
    # Ten weeks written without the model, whose days were pruned long ago.
    old_weeks = []
    for k in range(10):
        start = (START - timedelta(days=7 * (k + 1))).isoformat()
        old_weeks.append(
            {
                "summary_id": f"old-week-{k}",
                "agent_id": "agent",
                "group_id": DEVICE,
                "period_type": "weekly",
                "period_start": start,
                "period_end": start,
                "summary": "Old week.",
                "topics": ["old"],
                "created_at": dt_util.utcnow().isoformat(),
                "aggregated_from": ["pruned-1", "pruned-2"],
                "extractive": True,
                "rewrite_pending": True,
            }
        )
    hass_storage[SUMMARIES_KEY] = {
        "version": 1,
        "minor_version": 1,
        "key": SUMMARIES_KEY,
        "data": {
            "summaries": old_weeks,
            "summarised_through": (day - timedelta(days=1)).isoformat(),
        },
    }
    await set_up(hass, config_entry)
    freezer.move_to(local(day, 10))
    await talk(hass, "The tomato seedlings need light.", "s1")
    azure.queue(Reply.failure(500, "InternalServerError", "The server had an error."))
    await call(hass, "summary_aggregate", {"day": day.isoformat()})
    (daily,) = await get(hass, period_type="daily")
    assert daily["extractive"] is True
    azure.responder = summariser
    await daily_run(hass, freezer, day + timedelta(days=1))
    (again,) = await get(hass, period_type="daily")
    assert again["summary_id"] == daily["summary_id"]
    assert (again["extractive"], again["topics"]) == (False, ["garden", "tomatoes"])
    book = await stored_book(hass, hass_storage)
    old = [s for s in book["summaries"] if s["summary"] == "Old week."]
    assert len(old) == 10
    assert all(s["extractive"] and not s["rewrite_pending"] for s in old)


async def test_a_reply_after_midnight_belongs_to_the_conversation_s_group(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    freezer: FrozenDateTimeFactory,
) -> None:
    freezer.move_to(local(START, 9))
    await set_up(hass, config_entry)
    azure.responder = summariser
    for when, data in (
        (
            local(START, 23, 58),
            {"direction": "in", "text": "Any tomato news?", "device_id": DEVICE},
        ),
        (
            local(START + timedelta(days=1), 0, 1),
            {"direction": "out", "text": "The tomatoes grew."},
        ),
    ):
        freezer.move_to(when)
        await record_said(hass, data, "late")
    await daily_run(hass, freezer, START + timedelta(days=2))
    assert [(s["group_id"], s["period_start"], s["message_count"]) for s in await get(hass)] == [
        (DEVICE, (START + timedelta(days=1)).isoformat(), 1),
        (DEVICE, START.isoformat(), 1),
    ]


@pytest.mark.parametrize("agent_options", [{**NO_TOOLS, CONF_CONTEXT_LIMIT: 2000}])
async def test_a_long_day_is_shortened_to_fit_the_deployment_oldest_first(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    freezer: FrozenDateTimeFactory,
) -> None:
    freezer.move_to(local(START, 6))
    await set_up(hass, config_entry)
    azure.responder = summariser
    for n in range(60):
        freezer.move_to(local(START, 7 + n // 6, (n % 6) * 10))
        await talk(hass, f"Message {n}: the tomato seedlings on shelf {n} need more light.", "s")
    await daily_run(hass, freezer, START + timedelta(days=1))
    (request,) = [
        c.body
        for c in azure.calls("/chat/completions")
        if c.body and _kind(c.body) == "daily_summary"
    ]
    content = request["messages"][-1]["content"]
    assert SHORTENED_NOTE in content
    assert "Noted: Message 59: the tomato seedlings on shelf 59 need more light." in content
    assert "Message 0:" not in content
    assert (await agent_memory(hass, config_entry))["encoding"] == TEST_ENCODING
    tokens = sum(count_tokens(m["content"]) for m in request["messages"])
    assert request["max_tokens"] == 800
    assert "max_completion_tokens" not in request
    assert tokens + 800 <= 2000
    assert tokens + 800 > 1500  # shortened no more than it had to be


async def test_no_past_in_requests_with_the_entry_s_summaries_off(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    freezer: FrozenDateTimeFactory,
) -> None:
    freezer.move_to(local(START, 9))
    await set_up(hass, config_entry)
    azure.responder = summariser
    await talk(hass, "Tomato seedlings need light.", "s0")
    await call(hass, "summary_aggregate", {"day": START.isoformat()})
    summaries_off = {CONF_SUMMARIES: False}
    messages = await asked_with(hass, config_entry, azure, DEVICE, summaries_off, "Tomatoes.")
    assert len(await get(hass)) == 1
    assert not any('source="summaries"' in str(m["content"]) for m in messages)
    assert messages[-1] == {"role": "user", "content": "What did we talk about?"}


async def test_home_assistant_stopping_ends_the_daily_runs(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    freezer: FrozenDateTimeFactory,
) -> None:
    freezer.move_to(local(START, 9))
    await set_up(hass, config_entry)
    azure.responder = summariser
    await talk(hass, "Tomato seedlings need light.", "s0")
    hass.bus.async_fire(EVENT_HOMEASSISTANT_STOP)
    await hass.async_block_till_done()
    await daily_run(hass, freezer, START + timedelta(days=1))
    assert await get(hass) == []
    assert asked(azure, "daily_summary") == 0


async def test_a_first_catch_up_without_the_history_stops_at_its_first_day(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    freezer: FrozenDateTimeFactory,
    hass_storage: dict[str, Any],
    restart: Restart,
) -> None:
    """The days are read one by one: the first unreadable one ends the run, unmarked."""
    hass.config_entries.async_update_entry(
        config_entry, options={**config_entry.options, CONF_SUMMARIES: False}
    )
    freezer.move_to(local(START, 9))
    await set_up(hass, config_entry)
    azure.responder = summariser
    await talk(hass, "The tomato seedlings need light.", "s0")
    await hass.async_stop()
    history_schema_version(hass, 99)
    freezer.move_to(local(START + timedelta(days=3), 12))
    hass = await restart(options={CONF_SUMMARIES: True})
    await hass.async_block_till_done(wait_background_tasks=True)
    assert await get(hass) == []
    book = await stored_book(hass, hass_storage)
    assert book.get("summarised_through") is None
    await hass.async_stop()
    history_schema_version(hass, 1)
    freezer.move_to(local(START + timedelta(days=4), 3, 30))
    hass = await restart()
    await hass.async_block_till_done(wait_background_tasks=True)
    await daily_run(hass, freezer, START + timedelta(days=4))  # due just after the start
    (daily,) = await get(hass)
    assert (daily["period_start"], daily["message_count"]) == (START.isoformat(), 2)
    book = await stored_book(hass, hass_storage)
    assert book["summarised_through"] == (START + timedelta(days=3)).isoformat()
