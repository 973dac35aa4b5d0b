"""The past a turn carries: every day talked about, within the budget, through the real turn."""

from datetime import date, datetime, timedelta
import json
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.util import dt as dt_util
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    MockUser,
    async_fire_time_changed,
)

from custom_components.azure_openai_memory.agent.context import DATA_NOTICE, build_past_context
from custom_components.azure_openai_memory.const import CONF_SUMMARY_CONTEXT_TOKENS, DOMAIN
from custom_components.azure_openai_memory.lib.summaries.book import (
    PeriodType,
    SummaryBook,
    Written,
)
from custom_components.azure_openai_memory.lib.tokens import load_counter

from ..azure_stub import AzureStub, Reply
from ..conftest import (
    TEST_ENCODING,
    agent_entity_id,
    agent_memory,
    converse,
    count_tokens,
)
from ..lib.summaries.test_summaries_coverage import FIRST, GROUP, LAST, live

DEVICE = "kitchen_display"
START = date(2026, 1, 5)  # a Monday
QUESTION = "How are the tomato seedlings doing?"


def model(body: dict[str, Any]) -> Reply:
    """The stand-in's model: a summary when one is asked for, else an answer to the turn."""
    if "response_format" not in body:
        return Reply(text="They are doing fine.")
    answer = {
        "summary": "Talked about how the tomato seedlings grow on the kitchen window sill.",
        "topics": ["tomato seedlings", "garden"],
        "highlights": ["seedlings"],
        "active_users": ["Ann"],
        "is_era_shift": False,
        "theme": "garden",
    }
    return Reply(text=json.dumps(answer))


def local(day: date, hour: int, minute: int = 0) -> datetime:
    return datetime(
        day.year, day.month, day.day, hour, minute, tzinfo=dt_util.get_default_time_zone()
    )


def summaries_in(azure: AzureStub) -> list[dict[str, Any]]:
    """The summaries block of the last turn's request, one parsed line per period."""
    body = azure.calls("/chat/completions")[-1].body
    assert body is not None
    (data,) = [m["content"] for m in body["messages"] if 'source="summaries"' in m["content"]]
    block = data[data.index('<data source="summaries"') :]
    block = block[: block.index("</data>")]
    return [json.loads(line) for line in block.splitlines() if line.startswith("{")]


def period(line: dict[str, Any]) -> tuple[str, str]:
    """Which period a line is: its first key and its value."""
    kind, when = next(iter(line.items()))
    return kind, when


def expected_on(today: date) -> list[tuple[str, str]]:
    """What holds every day talked about before today: the weeks already folded (their
    Sunday more than 7 days back), then every day since, newest first."""
    first_open = START
    while first_open + timedelta(days=6) < today - timedelta(days=7):
        first_open += timedelta(days=7)
    days = [today - timedelta(days=n) for n in range(1, (today - first_open).days + 1)]
    weeks = [
        first_open - timedelta(days=7 * n) for n in range(1, (first_open - START).days // 7 + 1)
    ]
    return [("day", d.isoformat()) for d in days] + [("week_of", w.isoformat()) for w in weeks]


async def talk_every_day(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    freezer: FrozenDateTimeFactory,
    last: date,
) -> dict[date, list[dict[str, Any]]]:
    """A turn at ten every day from START to last, after the 03:30 run; the past each
    turn from the second week on carried, by day."""
    freezer.move_to(local(START, 9))
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)
    azure.responder = model
    seen: dict[date, list[dict[str, Any]]] = {}
    day = START
    while day <= last:
        if day > START:
            freezer.move_to(local(day, 3, 30))
            async_fire_time_changed(hass, dt_util.utcnow())
            await hass.async_block_till_done(wait_background_tasks=True)
        freezer.move_to(local(day, 10))
        await converse(hass, config_entry, QUESTION, device_id=DEVICE)
        if day > START + timedelta(days=7):
            seen[day] = summaries_in(azure)
        day += timedelta(days=1)
    return seen


async def test_every_day_since_the_last_folded_week_reaches_the_turn(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    freezer: FrozenDateTimeFactory,
) -> None:
    """The week of 01-12 ends on Sunday 01-18 and is folded on 01-26: on every day of the
    week after that Sunday its days, and the days since, are each in the request."""
    sunday = date(2026, 1, 18)
    seen = await talk_every_day(hass, azure, config_entry, freezer, sunday + timedelta(days=8))
    for n in range(1, 9):
        today = sunday + timedelta(days=n)
        assert [period(line) for line in seen[today]] == expected_on(today), today
    # Thursday 01-22: the two weeks' days Monday 01-12 to Wednesday 01-21, the first week.
    assert expected_on(date(2026, 1, 22)) == [
        ("day", (date(2026, 1, 21) - timedelta(days=n)).isoformat()) for n in range(10)
    ] + [("week_of", "2026-01-05")]
    # Monday 01-26: the week of 01-12 folded, its days no longer listed one by one.
    assert expected_on(date(2026, 1, 26))[-3:] == [
        ("day", "2026-01-19"),
        ("week_of", "2026-01-12"),
        ("week_of", "2026-01-05"),
    ]


async def test_over_the_budget_older_days_are_headlines_and_none_is_left_out(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    freezer: FrozenDateTimeFactory,
) -> None:
    """Two weeks of days in the default budget: the newest in full, the older ones as
    their topics (a day is shortened before the week, whose text tells of seven)."""
    budget = config_entry.options[CONF_SUMMARY_CONTEXT_TOKENS]
    assert budget == 400
    sunday = date(2026, 1, 25)
    seen = await talk_every_day(hass, azure, config_entry, freezer, sunday)
    lines = seen[sunday]
    assert [period(line) for line in lines] == expected_on(sunday)
    *days, week = lines
    full = ["summary" in line for line in days]
    assert full[0]
    assert not full[-1]
    # Newest first: once a day is a headline, so is every older one.
    assert full == sorted(full, reverse=True)
    assert "summary" in week
    assert all(line["topics"] == ["tomato seedlings", "garden"] for line in lines)
    body = azure.calls("/chat/completions")[-1].body
    assert body is not None
    (data,) = [m["content"] for m in body["messages"] if 'source="summaries"' in m["content"]]
    block = data[data.index('<data source="summaries"') :]
    assert (await agent_memory(hass, config_entry))["encoding"] == TEST_ENCODING
    assert count_tokens(block) <= budget


def test_too_small_a_budget_for_every_headline_joins_the_oldest_into_one_line() -> None:
    """When even the topics of every period do not fit, the oldest periods share one line
    over their span: every day is still held, the block stays within its budget."""
    book = SummaryBook()
    text = Written("Talked about the garden at length. " * 3, ["garden", "tomatoes"], [], [], False)
    for n in range(14):
        book.write_daily(DEVICE, START + timedelta(days=n), text, 6, "a", "")
    (job,) = book.plan(DEVICE, PeriodType.DAILY, START + timedelta(days=14))
    book.fold(job, text, "a", "")
    counter = load_counter("gpt-4", None)
    cover = book.context(DEVICE)
    assert len(cover) == 8  # the first week, the second week's days
    past = build_past_context(None, DEVICE, cover, counter, 2000, 120)
    assert past is not None
    block = past.message.removeprefix(DATA_NOTICE).lstrip("\n")
    assert counter.count(block) <= 120
    assert past.tokens == counter.count(past.message)
    lines = [json.loads(line) for line in block.splitlines() if line.startswith("{")]
    assert lines[0] == {"day": "2026-01-18", "topics": ["garden", "tomatoes"]}
    *days, earlier = lines
    first, _, last = earlier["earlier"].partition(" to ")
    assert first == "2026-01-05"
    assert earlier["topics"] == ["garden", "tomatoes"]
    # Every day after the span is listed.
    assert [line["day"] for line in days] == [
        (date(2026, 1, 18) - timedelta(days=n)).isoformat()
        for n in range((date(2026, 1, 18) - date.fromisoformat(last)).days)
    ]
    assert len(days) >= 1
    # A budget that holds no line at all leaves the past out.
    assert build_past_context(None, DEVICE, cover, counter, 2000, 20) is None


def test_a_year_and_a_half_in_the_default_budget_holds_every_day() -> None:
    """Seven days, seven weeks, thirteen months and the era before them in 400 tokens:
    every period shortened to its topics, the oldest months joined into one line that
    reaches back to the first day talked about."""
    book = SummaryBook()
    live(book, FIRST, LAST)
    counter = load_counter("gpt-4", None)
    past = build_past_context(None, GROUP, book.context(GROUP), counter, 2000, 400)
    assert past is not None
    block = past.message.removeprefix(DATA_NOTICE).lstrip("\n")
    assert counter.count(block) <= 400
    lines = [json.loads(line) for line in block.splitlines() if line.startswith("{")]
    assert not any("summary" in line for line in lines)
    *periods, earlier = [period(line) for line in lines]
    assert periods[:8] == [
        *(("day", (LAST - timedelta(days=n)).isoformat()) for n in range(7)),
        ("week_of", "2027-02-15"),
    ]
    kind, oldest_month = periods[-1]
    assert kind == "month"
    assert earlier == ("earlier", f"{FIRST.isoformat()} to {month_before(oldest_month)}")


def month_before(month: str) -> str:
    """The last day of the month before month (YYYY-MM)."""
    return (date.fromisoformat(f"{month}-01") - timedelta(days=1)).isoformat()


async def test_summaries_stored_by_version_1_reach_the_turn(
    hass: HomeAssistant,
    hass_storage: dict[str, Any],
    azure: AzureStub,
    config_entry: MockConfigEntry,
    freezer: FrozenDateTimeFactory,
    hass_admin_user: MockUser,
) -> None:
    """A file written before each part's count was kept: read, saved in the new form with
    every count as it was, and its past carried by an administrator's next turn (written
    before talk named its person, it is for administrators only: a satellite's turn of
    nobody known carries none of it)."""
    book = SummaryBook()
    text = Written("Talked about the garden.", ["garden"], [], [], False)
    for n in range(14):
        day = START + timedelta(days=n)
        book.write_daily(
            DEVICE, day, text, 4 + n, "a", local(day + timedelta(days=1), 3).isoformat()
        )
    (job,) = book.plan(DEVICE, PeriodType.DAILY, START + timedelta(days=14))
    book.fold(job, text, "a", local(START + timedelta(days=14), 3).isoformat())
    book.summarised_through = (START + timedelta(days=13)).isoformat()
    stored = book.as_dict()
    for item in stored["summaries"]:
        del item["part_counts"]
    key = f"{DOMAIN}.summaries"
    hass_storage[key] = {"version": 1, "minor_version": 1, "key": key, "data": stored}
    freezer.move_to(local(START + timedelta(days=14), 10))
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert hass_storage[key]["version"] == 2
    (weekly,) = (s for s in hass_storage[key]["data"]["summaries"] if s["period_type"] == "weekly")
    assert weekly["message_count"] == sum(4 + n for n in range(7))
    assert sum(weekly["part_counts"].values()) == weekly["message_count"]
    azure.responder = model
    await converse(hass, config_entry, QUESTION, device_id=DEVICE)
    body = azure.calls("/chat/completions")[-1].body
    assert body is not None
    assert 'source="summaries"' not in json.dumps(body["messages"])
    await conversation.async_converse(
        hass,
        QUESTION,
        None,
        Context(user_id=hass_admin_user.id),
        language="en",
        agent_id=agent_entity_id(hass, config_entry),
        device_id=DEVICE,
    )
    assert [period(line) for line in summaries_in(azure)] == expected_on(START + timedelta(days=14))
