"""Whose talk: a person who is not an administrator reads their own talk and the household's,
never another person's, in the history, the summaries and the conversation figures."""

from datetime import date
import json
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import ServiceValidationError, Unauthorized
from homeassistant.util import dt as dt_util, slugify
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, MockUser

from custom_components.azure_openai_memory.const import CONF_SUMMARY_GROUP_MODE, DOMAIN
from custom_components.azure_openai_memory.lib.summaries.book import (
    PeriodType,
    SummaryBook,
    Written,
)

from ..azure_stub import AzureStub
from ..conftest import (
    agent_entity_id,
    as_user,
    echoing_model,
    exception_text,
    say,
    stored,
)

ANNA_SAYS = "My dentist appointment is on Friday"
BEN_SAYS = "Is it going to rain tomorrow"
AUTOMATION_SAYS = "The bins went out"
SUMMARIES_KEY = f"{DOMAIN}.summaries"


async def anna_and_ben_talked(
    hass: HomeAssistant,
    azure: AzureStub,
    entry: MockConfigEntry,
    people: tuple[MockUser, MockUser],
) -> None:
    """The entry set up with a model that echoes; Anna and Ben each said their words."""
    anna, ben = people
    azure.responder = echoing_model
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)
    await say(hass, entry, ANNA_SAYS, "anna-talk", anna)
    await say(hass, entry, BEN_SAYS, "ben-talk", ben)


@pytest.fixture
async def talk(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    people: tuple[MockUser, MockUser],
) -> MockConfigEntry:
    """Anna and Ben each talked to the agent; an automation recorded an event; the day's
    talk is summarised (per person, in the default grouping by device)."""
    await anna_and_ben_talked(hass, azure, config_entry, people)
    await as_user(hass, None)(
        "history_record",
        event_type="system",
        event_data={"note": AUTOMATION_SAYS},
    )
    await as_user(hass, None)("summary_aggregate", day=dt_util.now().date().isoformat())
    return config_entry


def words(result: Any) -> str:
    return json.dumps(result)


def said(refused: pytest.ExceptionInfo[Unauthorized], key: str, **placeholders: str) -> str:
    """The refusal's key and its message in the user's words (Home Assistant drops the
    final full stop)."""
    assert refused.value.translation_key == key
    return exception_text(key, **placeholders).rstrip(".")


async def test_each_turn_names_its_person(
    hass: HomeAssistant, talk: MockConfigEntry, people: tuple[MockUser, MockUser]
) -> None:
    """Every event of a turn names whose talk it is; conversation_stats says it per
    conversation."""
    events = (await as_user(hass, None)("history_query", session_id="anna-talk"))["events"]
    assert [e["event_type"] for e in events] == ["communication", "decision", "communication"]
    assert {e["event_data"]["person_id"] for e in events} == {"anna"}
    stats = await as_user(hass, None)("conversation_stats", config_entry_id=talk.entry_id)
    (agent,) = stats["agents"].values()
    assert {cid: c["person_id"] for cid, c in agent["conversations"].items()} == {
        "anna-talk": "anna",
        "ben-talk": "ben",
    }


async def test_ben_never_reads_anna_s_words(
    hass: HomeAssistant, talk: MockConfigEntry, people: tuple[MockUser, MockUser]
) -> None:
    """Ben's history, chains, statistics, snapshots, summaries and conversation figures
    hold his own talk and the household's events, never Anna's words."""
    _anna, ben = people
    as_ben = as_user(hass, ben)
    everything = await as_user(hass, None)("history_query")
    anna_events = [e for e in everything["events"] if e["session_id"] == "anna-talk"]
    assert ANNA_SAYS in words(anna_events)

    seen = await as_ben("history_query")
    assert ANNA_SAYS not in words(seen)
    assert BEN_SAYS in words(seen)
    assert AUTOMATION_SAYS in words(seen)
    assert {e["session_id"] for e in seen["events"]} == {"ben-talk", None}
    assert seen["total"] == len(seen["events"]) == 4  # his turn's three, the automation's
    # Pages count what he may see: the total is his, whatever the page.
    page = await as_ben("history_query", limit=1, offset=1)
    assert (page["total"], page["events"]) == (4, [seen["events"][1]])
    # Asking for Anna's conversation narrows to nothing; it never widens.
    assert await as_ben("history_query", session_id="anna-talk") == {"events": [], "total": 0}

    statistics = await as_ben("history_statistics")
    assert statistics["total_events"] == 4
    assert statistics["unique_sessions"] == 1
    assert (await as_user(hass, None)("history_statistics"))["total_events"] == 7

    own_answer = next(e for e in seen["events"] if e["session_id"] == "ben-talk")
    chain = await as_ben("history_event_chain", event_id=own_answer["event_id"])
    assert [e["event_type"] for e in chain["events"]] == [
        "communication",
        "decision",
        "communication",
    ]
    assert BEN_SAYS in words(chain)

    taken = await as_ben("history_snapshot", agent_id=agent_entity_id(hass, talk))
    assert ANNA_SAYS not in words(taken)
    assert list(taken["snapshot"]["agent_state"]["conversations"]) == ["ben-talk"]

    summaries = await as_ben("summary_get")
    assert summaries["summaries"]
    assert ANNA_SAYS not in words(summaries)
    assert {s["group_id"] for s in summaries["summaries"]} == {"person_ben"}
    assert BEN_SAYS in words(summaries)
    groups = await as_ben("summary_groups")
    assert [g["group_id"] for g in groups["groups"]] == ["person_ben"]

    stats = await as_ben("conversation_stats", config_entry_id=talk.entry_id)
    (agent,) = stats["agents"].values()
    assert list(agent["conversations"]) == ["ben-talk"]


async def test_ben_asking_for_anna_s_data_is_refused_and_writes_nothing(
    hass: HomeAssistant, talk: MockConfigEntry, people: tuple[MockUser, MockUser]
) -> None:
    anna, ben = people
    as_ben = as_user(hass, ben)
    anna_question = (await as_user(hass, None)("history_query", session_id="anna-talk"))["events"][
        -1
    ]
    before = await as_user(hass, None)("history_statistics")

    # Her event and her snapshot are, to him, ones that do not exist.
    with pytest.raises(ServiceValidationError) as unknown:
        await as_ben("history_event_chain", event_id=anna_question["event_id"])
    assert (unknown.value.translation_key, unknown.value.translation_placeholders) == (
        "unknown_event",
        {"event_id": anna_question["event_id"]},
    )
    with pytest.raises(Unauthorized) as refused:
        await as_ben("summary_get", group="person_anna")
    assert str(refused.value) == said(refused, "summary_group_not_yours", group="person_anna")
    # Her conversation, asked by id, is shown as one that does not exist: nothing.
    asked = await as_ben(
        "conversation_stats", config_entry_id=talk.entry_id, conversation_id="anna-talk"
    )
    nothing = await as_ben(
        "conversation_stats", config_entry_id=talk.entry_id, conversation_id="no-such-talk"
    )
    assert [a["conversations"] for a in asked["agents"].values()] == [{}]
    assert asked["agents"] == nothing["agents"]
    taken = await as_user(hass, anna)("history_snapshot", agent_id=agent_entity_id(hass, talk))
    snapshot_id = taken["snapshot"]["snapshot_id"]
    with pytest.raises(ServiceValidationError) as unknown:
        await as_ben("history_snapshot", snapshot_id=snapshot_id)
    assert (unknown.value.translation_key, unknown.value.translation_placeholders) == (
        "unknown_snapshot",
        {"snapshot_id": snapshot_id},
    )
    assert (await as_ben("history_snapshots"))["total"] == 0
    # Recording as Anna, or after her event, is refused: nothing is written.
    with pytest.raises(Unauthorized):
        await as_ben(
            "history_record",
            event_type="communication",
            event_data={"text": "I am Anna", "person_id": "anna"},
        )
    with pytest.raises(ServiceValidationError) as unknown:
        await as_ben(
            "history_record",
            event_type="communication",
            event_data={"text": "a reply"},
            parent_event_id=anna_question["event_id"],
        )
    assert unknown.value.translation_key == "unknown_event"
    after = await as_user(hass, None)("history_statistics")
    assert after["total_events"] == before["total_events"]
    assert after["total_snapshots"] == before["total_snapshots"] + 1  # Anna's own
    # What Ben records is his.
    recorded = await as_ben("history_record", event_type="thought", event_data={"n": 1})
    assert recorded["event"]["event_data"] == {"n": 1, "person_id": "ben"}


@pytest.mark.parametrize("caller", ["anna", "automation"])
async def test_administrators_and_automations_read_everything(
    hass: HomeAssistant, talk: MockConfigEntry, people: tuple[MockUser, MockUser], caller: str
) -> None:
    anna, _ben = people
    call = as_user(hass, anna if caller == "anna" else None)
    history = await call("history_query")
    assert ANNA_SAYS in words(history)
    assert BEN_SAYS in words(history)
    assert history["total"] == 7
    summaries = await call("summary_get")
    assert {s["group_id"] for s in summaries["summaries"]} == {"person_anna", "person_ben"}
    stats = await call("conversation_stats", config_entry_id=talk.entry_id)
    (agent,) = stats["agents"].values()
    assert set(agent["conversations"]) == {"anna-talk", "ben-talk"}
    chain = await call(
        "history_event_chain",
        event_id=(await call("history_query", session_id="anna-talk"))["events"][0]["event_id"],
    )
    assert ANNA_SAYS in words(chain)


@pytest.mark.parametrize("mode", ["device", "user", "home"])
async def test_ben_s_turn_carries_no_summary_of_anna_s_talk(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    people: tuple[MockUser, MockUser],
    mode: str,
) -> None:
    """Whatever the grouping, a person's talk is summarised in their own group, and a
    turn carries the speaker's group and the household's, never another person's."""
    hass.config_entries.async_update_entry(
        config_entry, options={**config_entry.options, CONF_SUMMARY_GROUP_MODE: mode}
    )
    _anna, ben = people
    await anna_and_ben_talked(hass, azure, config_entry, people)
    await say(hass, config_entry, AUTOMATION_SAYS, "nobody-talk")
    await as_user(hass, None)("summary_aggregate", day=dt_util.now().date().isoformat())
    groups = {s["group_id"] for s in (await as_user(hass, None)("summary_get"))["summaries"]}
    assert groups == {"person_anna", "person_ben", "home"}

    await say(hass, config_entry, "What did we talk about?", "ben-again", ben)
    body = azure.calls("/chat/completions")[-1].body
    assert body is not None
    sent = words(body["messages"])
    assert ANNA_SAYS not in sent
    assert BEN_SAYS in sent
    assert AUTOMATION_SAYS in sent
    assert 'group=\\"person_ben\\"' in sent
    assert 'group=\\"home\\"' in sent


async def test_per_user_summaries_become_the_person_s_nothing_lost(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    people: tuple[MockUser, MockUser],
    hass_storage: dict[str, Any],
    freezer: FrozenDateTimeFactory,
) -> None:
    """Summaries grouped per user before people had groups: the group of a user linked to
    a person becomes that person's, every summary and link kept; Ben reads his."""
    _anna, ben = people
    freezer.move_to("2026-02-21 12:00:00+00:00")
    written_at = "2026-02-19T04:00:00+00:00"
    user_group = slugify(ben.id)
    book = SummaryBook()
    for day in (date(2026, 2, 2), date(2026, 2, 3)):
        said_then = Written(f"Ben asked about the rain on {day}.", ["rain"], [], ["Ben"], False)
        book.write_daily(user_group, day, said_then, 3, "conversation.x", written_at)
    (job,) = book.plan(user_group, PeriodType.DAILY, date(2026, 2, 20))
    book.fold(job, Written("A rainy week.", ["rain"], [], ["Ben"], False), "x", written_at)
    book.write_daily(
        "kitchen", date(2026, 2, 2), Written("Bins.", [], [], [], False), 1, "x", written_at
    )
    hass_storage[SUMMARIES_KEY] = {
        "version": 2,
        "minor_version": 1,
        "key": SUMMARIES_KEY,
        "data": book.as_dict(),
    }
    hass.config_entries.async_update_entry(
        config_entry, options={**config_entry.options, CONF_SUMMARY_GROUP_MODE: "user"}
    )
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)

    everything = (await as_user(hass, None)("summary_get", limit=100))["summaries"]
    assert {s["group_id"] for s in everything} == {"person_ben", "kitchen"}
    bens = {s["period_type"]: s for s in everything if s["group_id"] == "person_ben"}
    assert sorted(s["summary"] for s in everything if s["group_id"] == "person_ben") == sorted(
        s.summary for s in book if s.group_id == user_group
    )
    assert (
        bens["weekly"]["aggregated_from"]
        == [
            s["summary_id"]
            for s in everything
            if s["period_type"] == "daily" and s["group_id"] == "person_ben"
        ][::-1]
    )
    assert bens["weekly"]["message_count"] == 6
    # The kitchen's summary mixed everyone's talk before people had groups: like its
    # history, administrators' only.
    readable = (await as_user(hass, ben)("summary_get", limit=100))["summaries"]
    assert {s["group_id"] for s in readable} == {"person_ben"}
    file = await stored(hass, hass_storage, SUMMARIES_KEY)
    assert file is not None
    assert user_group not in json.dumps(file["data"])
