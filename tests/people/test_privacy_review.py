"""What one person may learn of another's words, found in review: an import's answer, a
conversation id used by someone else, a late answer's notification, and summaries of the
talk before per-person grouping (or of a user without a person)."""

from dataclasses import replace
from datetime import timedelta
import json
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.auth.const import GROUP_ID_USER
from homeassistant.components import persistent_notification
from homeassistant.const import ATTR_ENTITY_ID
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import ServiceValidationError
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, MockUser

from custom_components.azure_openai_memory.const import (
    CONF_EARLY_TIMEOUT,
    CONF_REQUEST_TIMEOUT,
    CONF_SUMMARY_GROUP_MODE,
    DOMAIN,
)
from custom_components.azure_openai_memory.data import memories_of
from custom_components.azure_openai_memory.lib.summaries.book import (
    SUMMARIES_VERSION,
    SummaryBook,
    Written,
)

from ..azure_stub import AzureStub, Reply
from ..conftest import NO_TOOLS, agent_entity_id, call, exception_text, say, stored, windows_key

SECRET = "Anna takes 2.5 mg of melatonin"
ANNA_SAYS = "My dentist appointment is on Friday"
BEN_SAYS = "Is it going to rain tomorrow"
CARL_SAYS = "My new job starts in March"
SUMMARIES_KEY = f"{DOMAIN}.summaries"
SLOW = {**NO_TOOLS, CONF_EARLY_TIMEOUT: 0.2, CONF_REQUEST_TIMEOUT: 5}


def ctx(user: MockUser | None) -> Context:
    return Context(user_id=user.id if user is not None else None)


def last_request(azure: AzureStub) -> str:
    body = azure.calls("/chat/completions")[-1].body
    assert body is not None
    return json.dumps(body["messages"])


async def set_up(hass: HomeAssistant, entry: MockConfigEntry) -> None:
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)


async def set_up_with_one_private_per_type(hass: HomeAssistant, entry: MockConfigEntry) -> None:
    """The entry set up, with a cap of one private memory of each type per person."""
    await set_up(hass, entry)
    memories = memories_of(hass)
    memories.async_update_settings(replace(memories.settings, max_private_memories_per_type=1))


# -- A: what an import pushed out ---------------------------------------------------------


async def test_memory_import_tells_ben_only_of_what_he_may_see(
    hass: HomeAssistant, config_entry: MockConfigEntry, people: tuple[MockUser, MockUser]
) -> None:
    """Each scope has its own cap: Ben's import pushes out only his own private memory,
    never Anna's, and its answer names only his. A record whose id is no longer his gets a
    new one."""
    anna, ben = people
    await set_up_with_one_private_per_type(hass, config_entry)
    secret = await call(
        hass,
        "memory_save",
        {"content": SECRET, "type": "preference", "scope": "private"},
        context=ctx(anna),
    )
    mine = await call(
        hass,
        "memory_save",
        {"content": "I like my coffee black", "type": "preference", "scope": "private"},
        context=ctx(ben),
    )
    export = await call(hass, "memory_export", {}, context=ctx(ben))
    await call(
        hass, "memory_forget", {"memory_id": mine["memory"]["id"], "erase": True}, context=ctx(ben)
    )
    tea = await call(
        hass,
        "memory_save",
        {
            "content": "I drink green tea",
            "type": "preference",
            "scope": "private",
            "confidence": "low",
        },
        context=ctx(ben),
    )

    result = await call(hass, "memory_import", {"export": export}, context=ctx(ben))

    found = await call(hass, "memory_search", {"query": "coffee black"}, context=ctx(ben))
    assert result["added"] == [m["id"] for m in found["memories"]]
    assert result["added"] != [mine["memory"]["id"]]
    assert [one["id"] for one in result["evicted"]] == [tea["memory"]["id"]]
    assert SECRET not in json.dumps(result)
    # Anna's stays in use.
    held = await call(hass, "memory_search", {"query": "melatonin"}, context=ctx(anna))
    assert [m["id"] for m in held["memories"]] == [secret["memory"]["id"]]


async def test_an_administrator_s_import_never_pushes_out_ben_s_memories(
    hass: HomeAssistant, config_entry: MockConfigEntry, people: tuple[MockUser, MockUser]
) -> None:
    """One person's saves never archive another's: Anna, an administrator, importing into
    Ben's full private scope is refused, naming the cap, and nothing changes; an automation
    (no user) may, and is told what went."""
    anna, ben = people
    await set_up_with_one_private_per_type(hass, config_entry)
    mine = await call(
        hass,
        "memory_save",
        {"content": "I like my coffee black", "type": "preference", "scope": "private"},
        context=ctx(ben),
    )
    export = await call(hass, "memory_export", {"scopes": [mine["memory"]["scope"]]})
    await call(hass, "memory_forget", {"memory_id": mine["memory"]["id"], "erase": True})
    tea = await call(
        hass,
        "memory_save",
        {"content": "I drink green tea", "type": "preference", "scope": "private",
         "confidence": "low"},
        context=ctx(ben),
    )  # fmt: skip
    before = await call(hass, "memory_export", {"scopes": [mine["memory"]["scope"]]})

    with pytest.raises(ServiceValidationError) as refused:
        await call(hass, "memory_import", {"export": export}, context=ctx(anna))
    assert (refused.value.translation_key, refused.value.translation_placeholders) == (
        "memory_scope_full",
        {"type": "preference", "cap": "1"},
    )
    assert await call(hass, "memory_export", {"scopes": [mine["memory"]["scope"]]}) == before

    result = await call(hass, "memory_import", {"export": export})
    assert result["added"] == [mine["memory"]["id"]]
    assert [one["id"] for one in result["evicted"]] == [tea["memory"]["id"]]


# -- C: a conversation id is one person's --------------------------------------------------


async def anna_s_figures(hass: HomeAssistant, entry_id: str) -> dict[str, Any]:
    stats = await call(
        hass, "conversation_stats", {"config_entry_id": entry_id, "conversation_id": "anna-talk"}
    )
    (agent,) = stats["agents"].values()
    return dict(agent["conversations"]["anna-talk"])


async def test_ben_using_anna_s_conversation_id_gets_a_window_of_his_own(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    people: tuple[MockUser, MockUser],
    hass_storage: dict[str, Any],
) -> None:
    anna, ben = people
    await set_up(hass, config_entry)
    await say(hass, config_entry, ANNA_SAYS, "anna-talk", anna)
    entry_id = config_entry.entry_id
    anna_before = await anna_s_figures(hass, entry_id)

    await say(hass, config_entry, "What did I just say?", "anna-talk", ben)
    assert ANNA_SAYS not in last_request(azure)
    # Nobody known (an unmapped satellite, a call without a user) neither.
    await say(hass, config_entry, "And now?", "anna-talk", None)
    assert ANNA_SAYS not in last_request(azure)
    # Ben's follow-up under that id knows what he said before, and only that.
    await say(hass, config_entry, BEN_SAYS, "anna-talk", ben)
    ben_request = last_request(azure)
    assert "What did I just say?" in ben_request
    assert ANNA_SAYS not in ben_request
    assert "And now?" not in ben_request

    anna_after = await anna_s_figures(hass, entry_id)
    assert anna_after == anna_before
    assert anna_after["person_id"] == "anna"
    stored_file = await stored(hass, hass_storage, windows_key(config_entry))
    assert stored_file is not None
    (agent,) = stored_file["data"]["agents"].values()
    anna_window = json.dumps(agent["conversations"]["anna-talk"])
    assert ANNA_SAYS in anna_window
    assert "What did I just say?" not in anna_window
    assert "And now?" not in anna_window
    # Ben sees his own window of that conversation, never Anna's.
    ben_stats = await call(
        hass, "conversation_stats", {"config_entry_id": entry_id}, context=ctx(ben)
    )
    (ben_agent,) = ben_stats["agents"].values()
    # (shown under the id he used: that Anna talked under it first is not his to learn)
    assert list(ben_agent["conversations"]) == ["anna-talk"]
    assert ben_agent["conversations"]["anna-talk"]["person_id"] == "ben"
    # Anna's next turn carries her words and none of the others'.
    await say(hass, config_entry, "When was it again?", "anna-talk", anna)
    anna_request = last_request(azure)
    assert ANNA_SAYS in anna_request
    assert "What did I just say?" not in anna_request
    assert BEN_SAYS not in anna_request
    # Forgetting the conversation forgets every window of it.
    reset = await call(
        hass, "conversation_reset", {"config_entry_id": entry_id, "conversation_id": "anna-talk"}
    )
    assert reset["reset"] == 3


async def test_ben_at_anna_s_device_does_not_continue_her_conversation(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    people: tuple[MockUser, MockUser],
) -> None:
    """A follow-up under a new id from the same device continues the window of the same
    person only: on a shared tablet, Ben starts afresh and Anna's window stays hers."""
    anna, ben = people
    await set_up(hass, config_entry)
    await say(hass, config_entry, ANNA_SAYS, "anna-talk", anna, device_id="tablet")
    await say(hass, config_entry, "What did I just say?", "ben-talk", ben, device_id="tablet")
    assert ANNA_SAYS not in last_request(azure)
    await say(hass, config_entry, "When was it again?", "anna-again", anna, device_id="tablet")
    # Anna's own follow-up there continues hers, though Ben spoke there since.
    assert ANNA_SAYS in last_request(azure)
    assert "What did I just say?" not in last_request(azure)
    stats = await call(hass, "conversation_stats", {"config_entry_id": config_entry.entry_id})
    (agent,) = stats["agents"].values()
    assert {cid: c["person_id"] for cid, c in agent["conversations"].items()} == {
        "ben-talk": "ben",
        "anna-again": "anna",
    }


# -- D: a late answer's notification ------------------------------------------------------


@pytest.mark.parametrize("agent_options", [SLOW])
async def test_a_late_answer_s_notification_holds_no_words(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    people: tuple[MockUser, MockUser],
    clock: FrozenDateTimeFactory,
) -> None:
    """Every user reads persistent notifications: it says an answer is ready, and how to
    hear it, never the question or the answer."""
    anna, _ben = people
    await set_up(hass, config_entry)
    azure.queue(Reply(text="On Friday at nine.", delay=0.6))
    result = await say(hass, config_entry, ANNA_SAYS + ", when exactly?", "anna-talk", anna)
    assert result.response.speech["plain"]["speech"] == exception_text("still_working")
    await hass.async_block_till_done(wait_background_tasks=True)

    (note,) = persistent_notification._async_get_or_create_notifications(hass).values()
    shown = f"{note['title']} {note['message']}"
    assert "dentist" not in shown
    assert "Friday" not in shown
    agent = hass.states.get(agent_entity_id(hass, config_entry))
    assert agent is not None
    assert note["title"] == exception_text("late_answer_title", agent=agent.name, time="14:05")
    assert note["message"] == exception_text("late_answer_ready")
    # As it says: asked again, the conversation has it.
    await say(hass, config_entry, "What was your answer?", "anna-talk", anna)
    assert "On Friday at nine." in last_request(azure)


@pytest.mark.parametrize("agent_options", [SLOW])
async def test_an_incognito_late_answer_posts_no_notification(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    people: tuple[MockUser, MockUser],
) -> None:
    anna, _ben = people
    await set_up(hass, config_entry)
    await hass.services.async_call(
        "switch",
        "turn_on",
        {ATTR_ENTITY_ID: "switch.azure_openai_agent_incognito"},
        blocking=True,
    )
    azure.queue(Reply(text="On Friday at nine.", delay=0.6))
    result = await say(hass, config_entry, ANNA_SAYS + ", when exactly?", "anna-talk", anna)
    await hass.async_block_till_done(wait_background_tasks=True)

    assert persistent_notification._async_get_or_create_notifications(hass) == {}
    assert result.response.speech["plain"]["speech"] == exception_text("still_working_incognito")
    # The answer is in the conversation (in memory): asking again in it gets it.
    await say(hass, config_entry, "What was your answer?", "anna-talk", anna)
    assert "On Friday at nine." in last_request(azure)


# -- E: summaries of talk before per-person grouping, and of nobody known -----------------


async def test_summaries_written_before_per_person_grouping_are_for_administrators(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    people: tuple[MockUser, MockUser],
    hass_storage: dict[str, Any],
) -> None:
    """The previous version grouped everyone's app talk in `home` (and a satellite's in its
    device's group): like the history of that talk, only administrators read them; none
    is lost."""
    anna, ben = people
    yesterday = dt_util.now().date() - timedelta(days=1)
    book = SummaryBook()
    written_at = dt_util.utcnow().isoformat()
    for group in ("home", "kitchen"):
        said = Written(f"Anna said: {ANNA_SAYS}.", ["dentist"], [], ["Anna"], False)
        book.write_daily(group, yesterday, said, 2, "conversation.x", written_at)
    stored_book = book.as_dict()
    for summary in stored_book["summaries"]:
        summary.pop("household", None)  # as the previous version stored them
    stored_book["profiles"] = {
        group: {k: v for k, v in profile.items() if k != "household"}
        for group, profile in stored_book["profiles"].items()
    }
    hass_storage[SUMMARIES_KEY] = {
        "version": SUMMARIES_VERSION,
        "minor_version": 1,
        "key": SUMMARIES_KEY,
        "data": stored_book,
    }
    await set_up(hass, config_entry)

    got = await call(hass, "summary_get", {}, context=ctx(ben))
    assert got == {"summaries": []}
    # A group of nothing he may read is, to him, one that does not exist.
    for group in ("home", "no_such_group"):
        with pytest.raises(ServiceValidationError) as unknown:
            await call(hass, "summary_get", {"group": group}, context=ctx(ben))
        assert (unknown.value.translation_key, unknown.value.translation_placeholders) == (
            "unknown_group",
            {"group": group},
        )
    groups = await call(hass, "summary_groups", {}, context=ctx(ben))
    assert ANNA_SAYS not in json.dumps(groups)
    assert groups["groups"] == []
    await say(hass, config_entry, "What did we talk about yesterday?", "ben-talk", ben)
    assert ANNA_SAYS not in last_request(azure)
    # A satellite's turn (nobody known) neither.
    await say(hass, config_entry, "What did we talk about?", "kitchen-talk", None, "kitchen")
    assert ANNA_SAYS not in last_request(azure)

    for reader in (ctx(anna), ctx(None)):
        everything = await call(hass, "summary_get", {}, context=reader)
        assert {s["group_id"] for s in everything["summaries"]} == {"home", "kitchen"}
        assert ANNA_SAYS in json.dumps(everything)
    await say(hass, config_entry, "What did we talk about yesterday?", "anna-talk", anna)
    assert ANNA_SAYS in last_request(azure)
    file = await stored(hass, hass_storage, SUMMARIES_KEY)
    assert file is not None
    assert len(file["data"]["summaries"]) == 2


def summarising(body: dict[str, Any]) -> Reply:
    """A summary repeats the talk it is given (a word that leaks is found); an answer echoes."""
    if "response_format" in body:
        talk = body["messages"][-1]["content"]
        answer = {"summary": talk, "topics": ["talk"], "highlights": [], "active_users": []}
        return Reply(text=json.dumps(answer))
    return Reply()


@pytest.mark.parametrize("mode", ["user", "device"])
async def test_summaries_of_a_user_without_a_person_are_for_administrators(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    people: tuple[MockUser, MockUser],
    mode: str,
) -> None:
    """Carl has no person: his talk is nobody known's, and like its history only
    administrators read its summaries, whatever the grouping; a satellite's talk (no user)
    stays the household's."""
    anna, ben = people
    hass.config_entries.async_update_entry(
        config_entry, options={**config_entry.options, CONF_SUMMARY_GROUP_MODE: mode}
    )
    carl = await hass.auth.async_create_user("Carl", group_ids=[GROUP_ID_USER])
    azure.responder = summarising
    await set_up(hass, config_entry)
    await say(hass, config_entry, CARL_SAYS, "carl-talk", carl)
    await say(hass, config_entry, "The bins went out", "kitchen-talk", None, "kitchen")
    await call(hass, "summary_aggregate", {"day": dt_util.now().date().isoformat()})
    everything = await call(hass, "summary_get", {}, context=ctx(anna))
    assert CARL_SAYS in json.dumps(everything)

    for reader in (ben, carl):
        seen = await call(hass, "summary_get", {}, context=ctx(reader))
        assert CARL_SAYS not in json.dumps(seen)
        assert "The bins went out" in json.dumps(seen)
        assert CARL_SAYS not in json.dumps(
            await call(hass, "summary_groups", {}, context=ctx(reader))
        )
    # At the kitchen satellite, Ben's turn carries the household's talk there.
    await say(hass, config_entry, "What did we talk about?", "ben-talk", ben, "kitchen")
    assert CARL_SAYS not in last_request(azure)
    assert "The bins went out" in last_request(azure)
