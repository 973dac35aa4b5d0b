"""The past_talk tool through the stand-in: the model asks for a day, week or month in the
user's words and gets the speaker's group's summaries of those days, as bounded data."""

from datetime import date, timedelta
import json
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.const import (
    CONF_MEMORY_CONTEXT,
    CONF_MEMORY_TOKEN_BUDGET,
    CONF_SUMMARIES,
    DOMAIN,
)
from custom_components.azure_openai_memory.lib.summaries.book import (
    SUMMARIES_VERSION,
    GroupSummary,
    PeriodType,
    SummaryBook,
    Written,
    summary_id,
)

from ..azure_stub import AzureStub, Reply, ToolCall
from ..conftest import LLM_ONLY, NO_TOOLS, converse, count_tokens, exception_text

KITCHEN = "kitchen_display"
BEDROOM = "bedroom_speaker"
SUMMARIES_KEY = f"{DOMAIN}.summaries"
# The clock fixture's today: Thursday 26 November 2026.
TODAY = date(2026, 11, 26)


def kitchen_text(day: date) -> str:
    return f"Planned the {day:%A} meals and the {day.isoformat()} shopping list."


def book_of_two_places() -> SummaryBook:
    """The kitchen's days from 13 to 25 November and its week of 9 November, whose first
    days' dailies are gone; the bedroom's days too, in other words. Talk of no one known
    at two satellites: the household's."""
    book = SummaryBook()
    day = date(2026, 11, 13)
    while day < TODAY:
        made = (day + timedelta(days=1)).isoformat()
        for group, text, topics in (
            (KITCHEN, kitchen_text(day), ["meals", f"shopping {day.day}"]),
            (BEDROOM, f"Bedroom alarm for {day.isoformat()}.", ["alarm"]),
        ):
            book.write_daily(
                group,
                day,
                Written(text, topics, ["list"], ["Ann"], False),
                6,
                "a",
                made,
                household=True,
            )
        day += timedelta(days=1)
    week = date(2026, 11, 9)
    book.put(
        GroupSummary(
            summary_id=summary_id(KITCHEN, PeriodType.WEEKLY, week.isoformat()),
            agent_id="a",
            group_id=KITCHEN,
            period_type=PeriodType.WEEKLY,
            period_start=week.isoformat(),
            period_end=(week + timedelta(days=6)).isoformat(),
            summary="A week of soup recipes.",
            topics=["soup"],
            highlights=["lentil soup"],
            created_at="2026-11-17T03:30:00+00:00",
            household=True,
        )
    )
    book.summarised_through = (TODAY - timedelta(days=1)).isoformat()
    return book


async def set_up(
    hass: HomeAssistant, hass_storage: dict[str, Any], entry: MockConfigEntry, **options: Any
) -> None:
    """The two places' summaries stored; the entry writes none itself (its summaries off),
    so the book stays as stored."""
    hass_storage[SUMMARIES_KEY] = {
        "version": SUMMARIES_VERSION,
        "minor_version": 1,
        "key": SUMMARIES_KEY,
        "data": book_of_two_places().as_dict(),
    }
    hass.config_entries.async_update_entry(
        entry, options={**entry.options, CONF_SUMMARIES: False, **options}
    )
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()


def tool_names(body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools", [])]


async def ask_past_talk(
    hass: HomeAssistant,
    azure: AzureStub,
    entry: MockConfigEntry,
    when: str,
    device_id: str | None = KITCHEN,
) -> dict[str, Any]:
    """A turn whose model calls past_talk; what the tool answered, as the next request
    carries it."""
    azure.queue(
        Reply(tool_calls=[ToolCall("past_talk", {"when": when})]),
        Reply(text="We talked about meals."),
    )
    before = len(azure.calls("/chat/completions"))
    await converse(hass, entry, f"What did we talk about {when}?", device_id=device_id)
    ask, answer = azure.calls("/chat/completions")[before:]
    assert "past_talk" in tool_names(ask.body)
    tool_message = answer.body["messages"][-1]
    assert tool_message["role"] == "tool"
    return dict(json.loads(tool_message["content"]))


def periods(summaries: str) -> list[dict[str, Any]]:
    """The block's lines, parsed; the block must be one delimited data block."""
    lines = summaries.splitlines()
    assert lines[0].startswith('<data source="summaries" group="kitchen_display"')
    assert lines[-1] == "</data>"
    return [json.loads(line) for line in lines if line.startswith("{")]


@pytest.mark.parametrize(
    "agent_options",
    [NO_TOOLS, {**LLM_ONLY, CONF_LLM_HASS_API: "assist"}],
    ids=["no_control", "control"],
)
async def test_what_did_we_talk_about_on_tuesday(
    hass: HomeAssistant,
    clock: FrozenDateTimeFactory,
    hass_storage: dict[str, Any],
    config_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """Tuesday's own summary, of the kitchen where the question is asked, never the bedroom's."""
    await set_up(hass, hass_storage, config_entry)
    result = await ask_past_talk(hass, azure, config_entry, "on Tuesday")
    assert {k: result[k] for k in ("from", "to", "found", "shown")} == {
        "from": "2026-11-24",
        "to": "2026-11-24",
        "found": 1,
        "shown": 1,
    }
    (line,) = periods(result["summaries"])
    assert line == {
        "day": "2026-11-24",
        "summary": kitchen_text(date(2026, 11, 24)),
        "topics": ["meals", "shopping 24"],
        "highlights": ["list"],
    }
    assert "Bedroom" not in result["summaries"]
    names = tool_names(azure.calls("/chat/completions")[0].body)
    assert names == sorted(names)
    assert names.count("past_talk") == 1
    assert {"recall", "remember"} <= set(names)


@pytest.mark.parametrize(
    ("when", "first", "last", "expected"),
    [
        ("yesterday", "2026-11-25", "2026-11-25", [("day", "2026-11-25")]),
        (
            "last week",
            "2026-11-16",
            "2026-11-22",
            [("day", f"2026-11-{n}") for n in range(16, 23)],
        ),
        # The week's first days are told only by the weekly; the others by their dailies.
        (
            "two weeks ago",
            "2026-11-09",
            "2026-11-15",
            [("week", "2026-11-09 to 2026-11-15")]
            + [("day", f"2026-11-{n}") for n in range(13, 16)],
        ),
        ("2026-11-20", "2026-11-20", "2026-11-20", [("day", "2026-11-20")]),
    ],
)
async def test_days_weeks_and_dates(
    hass: HomeAssistant,
    clock: FrozenDateTimeFactory,
    hass_storage: dict[str, Any],
    config_entry: MockConfigEntry,
    azure: AzureStub,
    when: str,
    first: str,
    last: str,
    expected: list[tuple[str, str]],
) -> None:
    await set_up(hass, hass_storage, config_entry)
    result = await ask_past_talk(hass, azure, config_entry, when)
    assert (result["from"], result["to"]) == (first, last)
    assert result["found"] == result["shown"] == len(expected)
    assert [next(iter(line.items())) for line in periods(result["summaries"])] == expected


async def test_a_small_budget_shortens_and_counts_what_is_left_out(
    hass: HomeAssistant,
    clock: FrozenDateTimeFactory,
    hass_storage: dict[str, Any],
    config_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """Within the agent's memory budget: topics only, the oldest days left out and counted."""
    await set_up(hass, hass_storage, config_entry, **{CONF_MEMORY_TOKEN_BUDGET: 150})
    result = await ask_past_talk(hass, azure, config_entry, "last week")
    assert result["found"] == 7
    assert 0 < result["shown"] < 7
    assert count_tokens(result["summaries"]) <= 150
    lines = periods(result["summaries"])
    assert [line["day"] for line in lines] == [
        f"2026-11-{n}" for n in range(23 - result["shown"], 23)
    ]
    assert all(set(line) == {"day", "topics"} for line in lines)
    assert f"({7 - result['shown']} earlier periods not shown.)" in result["summaries"]


async def test_a_place_without_summaries_and_words_that_name_no_day(
    hass: HomeAssistant,
    clock: FrozenDateTimeFactory,
    hass_storage: dict[str, Any],
    config_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    await set_up(hass, hass_storage, config_entry)
    result = await ask_past_talk(hass, azure, config_entry, "yesterday", device_id="hallway")
    assert (result["found"], result["summaries"]) == (0, "")
    assert "not summarised yet" in result["note"]
    result = await ask_past_talk(hass, azure, config_entry, "someday")
    assert result == {
        "error": "ServiceValidationError",
        # Home Assistant drops the final full stop of a translated error.
        "error_text": exception_text("past_talk_when", when="someday").rstrip("."),
    }


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_not_offered_with_memories_off(
    hass: HomeAssistant,
    clock: FrozenDateTimeFactory,
    hass_storage: dict[str, Any],
    config_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """Like remember and recall: an agent told not to use memories has none of them."""
    await set_up(hass, hass_storage, config_entry, **{CONF_MEMORY_CONTEXT: False})
    await converse(hass, config_entry, "What did we talk about yesterday?", device_id=KITCHEN)
    (call,) = azure.calls("/chat/completions")
    assert tool_names(call.body) == []
