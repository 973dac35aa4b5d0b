"""Whose memory: two real users on one Home Assistant, each with a person, and satellites.

Anna (an administrator) and Ben (not one) talk to the same agent. What Anna keeps private
never reaches a request sent during Ben's turns, nor his searches; what the household
shares reaches both; a satellite mapped to Anna speaks for her, an unmapped one for nobody.
"""

import json
from typing import Any

from homeassistant.auth.const import GROUP_ID_USER
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import ServiceValidationError, Unauthorized
from homeassistant.helpers import device_registry as dr
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, MockUser

from custom_components.azure_openai_memory.const import CONF_DEVICE_PEOPLE, DOMAIN

from ..azure_stub import AzureStub, Reply, ToolCall
from ..conftest import (
    MEMORIES_KEY,
    NO_TOOLS,
    call,
    memories_file,
    memory_record,
    say,
    speech,
    stored_memories,
)
from ..options_form import submit_options

ANNA_SCOPE = "person:anna"
MELATONIN = "Anna takes 2.5 mg of melatonin"
BINS = "The bins go out on Tuesday"


@pytest.fixture
def agent_options() -> dict[str, Any]:
    """An agent without Home Assistant's tools: just remember and recall."""
    return dict(NO_TOOLS)


def bodies(azure: AzureStub, since: int = 0) -> list[str]:
    """Every chat request the stand-in received from the since-th on, as sent."""
    return [json.dumps(r.body) for r in azure.calls("/chat/completions")[since:]]


def sent_count(azure: AzureStub) -> int:
    return len(azure.calls("/chat/completions"))


async def search(hass: HomeAssistant, user: MockUser | None, **data: Any) -> list[str]:
    answer = await call(
        hass, "memory_search", data, context=Context(user_id=user.id if user else None)
    )
    return sorted(m["content"] for m in answer["memories"])


async def anna_keeps_her_melatonin_private(
    hass: HomeAssistant, entry: MockConfigEntry, azure: AzureStub, anna: MockUser
) -> dict[str, Any]:
    """Anna's turn: the model saves her fact to her private scope."""
    azure.queue(
        Reply(
            tool_calls=[
                ToolCall(
                    "remember",
                    {"content": MELATONIN, "type": "context", "scope": "private"},
                )
            ]
        ),
        Reply(text="I'll keep that to myself."),
    )
    result = await say(hass, entry, "I take 2.5 mg of melatonin, remember it", "a1", user=anna)
    assert speech(result) == "I'll keep that to myself."
    told = json.loads(azure.calls("/chat/completions")[-1].body["messages"][-1]["content"])
    assert (told["action"], told["scope"]) == ("created", "private")
    (memory,) = [
        m
        for m in (await call(hass, "memory_search", {"query": "melatonin"}))["memories"]
        if m["content"] == MELATONIN
    ]
    return memory


async def test_anna_s_private_fact_never_reaches_ben_and_the_household_s_reaches_both(
    hass: HomeAssistant,
    people: tuple[MockUser, MockUser],
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    hass_storage: dict[str, Any],
) -> None:
    anna, ben = people
    memory = await anna_keeps_her_melatonin_private(hass, loaded_entry, azure, anna)
    assert memory["scope"] == ANNA_SCOPE
    provenance = memory["provenance"]
    assert {k: v for k, v in provenance.items() if k != "history_event_id"} == {
        "source": "conversation",
        "conversation_id": "a1",
        "said_by": "anna",
        "channel": "app",
        "authority": "stated",
    }
    assert provenance["history_event_id"] is not None
    # Anna's own turn told the model who speaks (as data, not as an instruction).
    first_of_anna = azure.calls("/chat/completions")[0].body
    assert '{"name":"Anna"}' in first_of_anna["messages"][-2]["content"]
    await call(
        hass,
        "memory_save",
        {"content": BINS, "type": "routine", "scope": "household"},
        context=Context(user_id=anna.id),
    )

    # Ben asks about both, and the model looks them up as well.
    before = sent_count(azure)
    azure.queue(
        Reply(tool_calls=[ToolCall("recall", {"query": "melatonin bins Anna"})]),
        Reply(text="The bins go out on Tuesday."),
    )
    question = "When do the bins go out, and how much melatonin does Anna take?"
    result = await say(hass, loaded_entry, question, "b1", user=ben)
    assert speech(result) == "The bins go out on Tuesday."
    during_ben = bodies(azure, before)
    assert len(during_ben) == 2
    for body in during_ben:
        assert MELATONIN not in body
        assert memory["id"] not in body
    assert BINS in during_ben[0]  # the household's fact, as data
    recalled = json.loads(azure.calls("/chat/completions")[-1].body["messages"][-1]["content"])
    assert memory["id"] not in recalled["ids"]
    assert BINS in recalled["memories"]

    # Ben's searches see the household's memories and his own, never Anna's.
    assert await search(hass, ben, query="melatonin") == []
    assert await search(hass, ben) == [BINS]
    assert await search(hass, ben, query="melatonin", include_archived=True) == []
    # An administrator's search sees everyone's; a call without a user too.
    assert await search(hass, anna) == sorted([BINS, MELATONIN])
    assert await search(hass, None, scope=ANNA_SCOPE) == [MELATONIN]

    # Ben naming Anna's scope is refused, translated, and writes nothing.
    stored_before = await stored_memories(hass, hass_storage)
    as_ben = Context(user_id=ben.id)
    for service, data in (
        ("memory_search", {"query": "melatonin", "scope": ANNA_SCOPE}),
        ("memory_save", {"content": "Anna takes 5 mg", "type": "context", "scope": ANNA_SCOPE}),
        ("memory_export", {"scopes": [ANNA_SCOPE]}),
    ):
        with pytest.raises(Unauthorized) as refused:
            await call(hass, service, data, context=as_ben)
        assert refused.value.translation_key is not None
        assert str(refused.value) != "Unauthorized"
    # Her memory's id is, to him, one that names nothing.
    with pytest.raises(ServiceValidationError) as unknown:
        await call(
            hass, "memory_forget", {"memory_id": memory["id"], "erase": True}, context=as_ben
        )
    assert unknown.value.translation_key == "memory_unknown"
    assert await stored_memories(hass, hass_storage) == stored_before

    # Anna's later turn, in a fresh conversation, has her fact (marked hers).
    before = sent_count(azure)
    azure.queue(Reply(text="2.5 mg."))
    await say(hass, loaded_entry, "How much melatonin do I take?", "a2", user=anna)
    (body,) = azure.calls("/chat/completions")[before:]
    data = body.body["messages"][-2]["content"]
    assert MELATONIN in data
    (line,) = [one for one in data.splitlines() if MELATONIN in one]
    assert json.loads(line)["private"] is True


async def test_ben_may_save_search_and_forget_his_own_private_memories(
    hass: HomeAssistant,
    people: tuple[MockUser, MockUser],
    loaded_entry: MockConfigEntry,
    hass_storage: dict[str, Any],
) -> None:
    anna, ben = people
    as_ben = Context(user_id=ben.id)
    mine = await call(
        hass,
        "memory_save",
        {"content": "My dentist is on Friday", "type": "context", "scope": "private"},
        context=as_ben,
    )
    assert mine["memory"]["scope"] == "person:ben"
    assert mine["memory"]["provenance"] == {
        "source": "service",
        "conversation_id": None,
        "history_event_id": None,
        "said_by": "ben",
        "channel": "app",
        "authority": "stated",
    }
    shared = await call(hass, "memory_save", {"content": BINS, "type": "routine"}, context=as_ben)
    assert shared["memory"]["scope"] == "household"
    # Tags never make a fact private: this one is about Anna, and the household's.
    about_anna = await call(
        hass,
        "memory_save",
        {"content": "Anna's birthday is on 3 May", "type": "context", "tags": ["person:anna"]},
        context=as_ben,
    )
    assert about_anna["memory"]["scope"] == "household"
    # He may not forget the household's memory, but may erase his own.
    with pytest.raises(Unauthorized):
        await call(hass, "memory_forget", {"memory_id": shared["memory"]["id"]}, context=as_ben)
    erased = await call(
        hass, "memory_forget", {"memory_id": mine["memory"]["id"], "erase": True}, context=as_ben
    )
    assert erased["erased"] == [mine["memory"]["id"]]
    assert await search(hass, anna) == sorted([BINS, "Anna's birthday is on 3 May"])
    # His patterns are the ones he may see; his export is his own scope only.
    exported = await call(hass, "memory_export", {}, context=as_ben)
    assert (exported["scopes"], exported["memories"]) == (["person:ben"], [])
    # A user without a person has no private memories to save to.
    stranger = await hass.auth.async_create_user("Guest", group_ids=[GROUP_ID_USER])
    with pytest.raises(ServiceValidationError) as caught:
        await call(
            hass,
            "memory_save",
            {"content": "x", "type": "context", "scope": "private"},
            context=Context(user_id=stranger.id),
        )
    assert caught.value.translation_key == "memory_scope_no_person"


async def test_a_private_fact_with_nobody_known_is_refused_and_nothing_is_saved(
    hass: HomeAssistant,
    people: tuple[MockUser, MockUser],
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    azure.queue(
        Reply(
            tool_calls=[
                ToolCall("remember", {"content": MELATONIN, "type": "context", "scope": "private"})
            ]
        ),
        Reply(text="I can't keep that private here."),
    )
    await say(hass, loaded_entry, "I take melatonin", "k1", device_id="unmapped-device")
    told = json.loads(azure.calls("/chat/completions")[-1].body["messages"][-1]["content"])
    assert told["error"] == "HomeAssistantError"
    assert "Nothing was saved" in told["error_text"]
    assert await search(hass, None) == []
    # Nobody known: no speaker is named to the model.
    assert '<data source="speaker">' not in json.dumps(azure.calls("/chat/completions")[0].body)


async def test_a_satellite_mapped_to_anna_gets_her_memories_an_unmapped_one_household_only(
    hass: HomeAssistant,
    people: tuple[MockUser, MockUser],
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    anna, _ben = people
    await anna_keeps_her_melatonin_private(hass, loaded_entry, azure, anna)
    await call(hass, "memory_save", {"content": BINS, "type": "routine"})
    devices = dr.async_get(hass)
    satellites = MockConfigEntry(domain="test")
    satellites.add_to_hass(hass)
    bedroom = devices.async_get_or_create(
        config_entry_id=satellites.entry_id, identifiers={("test", "bedroom")}, name="Bedroom"
    )
    kitchen = devices.async_get_or_create(
        config_entry_id=satellites.entry_id, identifiers={("test", "kitchen")}, name="Kitchen"
    )
    result = await submit_options(
        hass, loaded_entry, map_devices=[bedroom.id], map_person="person.anna"
    )
    assert result["type"] == "create_entry"
    assert loaded_entry.options[CONF_DEVICE_PEOPLE] == {bedroom.id: "anna"}
    question = "How much melatonin do I take, and when do the bins go out?"

    before = sent_count(azure)
    azure.queue(Reply(text="2.5 mg; Tuesday."))
    await say(hass, loaded_entry, question, "s1", device_id=bedroom.id)
    (from_bedroom,) = bodies(azure, before)
    assert MELATONIN in from_bedroom and BINS in from_bedroom

    before = sent_count(azure)
    azure.queue(Reply(text="Tuesday."))
    await say(hass, loaded_entry, question, "s2", device_id=kitchen.id)
    (from_kitchen,) = bodies(azure, before)
    assert MELATONIN not in from_kitchen and BINS in from_kitchen

    # The form lists the mapping; unmapping it makes the bedroom speak for nobody.
    result = await submit_options(hass, loaded_entry, unmap_devices=[bedroom.id])
    assert result["type"] == "create_entry"
    assert CONF_DEVICE_PEOPLE not in loaded_entry.options
    before = sent_count(azure)
    azure.queue(Reply(text="Tuesday."))
    await say(hass, loaded_entry, question, "s3", device_id=bedroom.id)
    (unmapped,) = bodies(azure, before)
    assert MELATONIN not in unmapped and BINS in unmapped


async def test_export_erase_import_gives_every_memory_back_as_it_was(
    hass: HomeAssistant,
    people: tuple[MockUser, MockUser],
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    anna, ben = people
    await anna_keeps_her_melatonin_private(hass, loaded_entry, azure, anna)
    as_ben = Context(user_id=ben.id)
    await call(
        hass,
        "memory_save",
        {"content": "Ben is allergic to cats", "type": "context", "scope": "private"},
        context=as_ben,
    )
    await call(hass, "memory_save", {"content": BINS, "type": "routine", "pinned": True})
    await call(hass, "memory_save", {"content": BINS, "type": "routine", "confidence": "high"})
    gone = await call(
        hass,
        "memory_save",
        {"content": "The recycling goes out on Monday", "type": "routine", "authority": "inferred"},
    )
    await call(hass, "memory_forget", {"memory_id": gone["memory"]["id"]})

    exported = await call(hass, "memory_export", {}, context=Context(user_id=anna.id))
    assert exported["format"] == "azure_openai_memory.memories" and exported["version"] == 1
    assert len(exported["memories"]) == 3 and len(exported["archived"]) == 1
    ids = [m["id"] for m in exported["memories"]] + [a["id"] for a in exported["archived"]]
    for memory_id in ids:
        await call(hass, "memory_forget", {"memory_id": memory_id, "erase": True})
    assert (await call(hass, "memory_export", {}))["memories"] == []

    dry = await call(hass, "memory_import", {"export": exported, "dry_run": True})
    assert (dry["dry_run"], sorted(dry["added"])) == (True, sorted(ids))
    assert (await call(hass, "memory_export", {}))["memories"] == []
    done = await call(hass, "memory_import", {"export": json.dumps(exported)})
    assert sorted(done["added"]) == sorted(ids)
    assert await call(hass, "memory_export", {}) == exported
    # Once more: nothing added, nothing replaced.
    again = await call(hass, "memory_import", {"export": exported})
    assert (again["added"], sorted(again["unchanged"])) == ([], sorted(ids))
    # Ben may import only his own scope.
    with pytest.raises(Unauthorized):
        await call(hass, "memory_import", {"export": exported}, context=as_ben)
    with pytest.raises(ServiceValidationError) as caught:
        await call(hass, "memory_import", {"export": {"format": "something else"}})
    assert caught.value.translation_key == "memory_import_invalid"


async def test_an_existing_memories_file_keeps_every_memory_as_the_household_s(
    hass: HomeAssistant,
    hass_storage: dict[str, Any],
    people: tuple[MockUser, MockUser],
) -> None:
    records = [memory_record(n, f"Fact number {n} about the garden") for n in range(1, 41)]
    archived = [
        {
            "id": "mem_00000000000000ff",
            "original_content": "An old fact about the garden",
            "superseded_by": None,
            # Within the archive's retention: kept at start-up.
            "archived_at": dt_util.utcnow().timestamp() - 3600,
            "reason": "Forgotten on request",
            "memory": memory_record(255, "An old fact about the garden"),
        }
    ]
    hass_storage[MEMORIES_KEY] = memories_file(records, archived)
    assert await async_setup_component(hass, DOMAIN, {})
    _anna, ben = people
    everything = await call(hass, "memory_export", {})
    assert [m["id"] for m in everything["memories"]] == [r["id"] for r in records]
    assert {m["scope"] for m in everything["memories"]} == {"household"}
    assert [a["memory"]["scope"] for a in everything["archived"]] == ["household"]
    for kept, record in zip(everything["memories"], records, strict=True):
        assert kept == {**record, "pinned": False, "scope": "household", "provenance": None}
    # Everyone sees them, Ben included, as before.
    answer = await call(hass, "memory_search", {"limit": 50}, context=Context(user_id=ben.id))
    assert len(answer["memories"]) == 40
    stored = await stored_memories(hass, hass_storage)
    assert len(stored["memories"]) == 40
    assert hass_storage[MEMORIES_KEY]["version"] == 3


async def test_an_automation_s_memory_names_it_and_an_inferred_one_is_marked_so(
    hass: HomeAssistant,
    people: tuple[MockUser, MockUser],
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    assert await async_setup_component(
        hass,
        "automation",
        {
            "automation": {
                "id": "watering",
                "alias": "Learn the watering time",
                "triggers": [{"trigger": "event", "event_type": "watered"}],
                "actions": [
                    {
                        "action": f"{DOMAIN}.memory_save",
                        "data": {
                            "content": "The garden is watered at 6 in the morning",
                            "type": "routine",
                            "authority": "inferred",
                        },
                    }
                ],
            }
        },
    )
    hass.bus.async_fire("watered")
    await hass.async_block_till_done()
    (memory,) = (await call(hass, "memory_search", {"query": "garden watered"}))["memories"]
    assert memory["provenance"] == {
        "source": "automation",
        "conversation_id": None,
        "history_event_id": None,
        "said_by": "automation.learn_the_watering_time",
        "channel": None,
        "authority": "inferred",
    }
    azure.queue(Reply(text="At 6."))
    await say(hass, loaded_entry, "When is the garden watered?", "g1", user=people[1])
    data = azure.calls("/chat/completions")[-1].body["messages"][-2]["content"]
    (line,) = [one for one in data.splitlines() if "garden is watered" in one]
    assert json.loads(line)["inferred"] is True
    assert "private" not in json.loads(line)
