"""Memory by voice through the stand-in: "forget what I told you about the dentist" and
"what do you remember about me?", for two real users (Anna, an administrator, and Ben, who
is not one), a satellite that speaks for nobody, and while incognito."""

import json
from typing import Any

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry, MockUser
from pytest_homeassistant_custom_component.typing import WebSocketGenerator

from custom_components.azure_openai_memory.const import CONF_MEMORY_TOKEN_BUDGET

from ..azure_stub import AzureStub, Reply, ToolCall
from ..conftest import (
    agent_entity_id,
    call,
    count_tokens,
    exception_text,
    told_memories,
)
from ..panel_commands import answer

ANNA_SCOPE = "person:anna"
BEN_APPOINTMENT = "My dentist appointment is on Friday at ten"
BEN_DENTIST = "My dentist is Doctor Berg in the old town"
BEN_VITAMIN = "I take vitamin D every morning"
ANNA_CROWN = "My dentist says I need a crown"
ANNA_MELATONIN = "I take 2.5 mg of melatonin"
ANNA_TEA = "I like my tea with honey"
HOUSEHOLD_DENTIST = "The dentist's practice in town closes at five"
BINS = "The bins go out on Tuesday"


async def save(
    hass: HomeAssistant, content: str, kind: str, scope: str, user: MockUser | None = None
) -> str:
    """A memory saved with memory_save (as the user, or as an automation); its id."""
    saved = await call(
        hass,
        "memory_save",
        {"content": content, "type": kind, "scope": scope},
        context=Context(user_id=user.id if user is not None else None),
    )
    assert saved["action"] == "created"
    return str(saved["memory"]["id"])


async def active(hass: HomeAssistant) -> set[str]:
    """Every memory in use, whoever's."""
    return {m["content"] for m in (await call(hass, "memory_search", {"limit": 50}))["memories"]}


async def tool_turn(
    hass: HomeAssistant,
    azure: AzureStub,
    entry: MockConfigEntry,
    tool: ToolCall,
    *,
    user: MockUser | None = None,
    device_id: str | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """A turn whose model calls one tool: what the tool answered (as the next request
    carries it; the memories forget names, read from their blocks), and both requests as
    sent."""
    azure.queue(Reply(tool_calls=[tool]), Reply(text="Done."))
    before = len(azure.calls("/chat/completions"))
    await conversation.async_converse(
        hass,
        f"Please use {tool.name}",
        None,
        Context(user_id=user.id if user is not None else None),
        language="en",
        agent_id=agent_entity_id(hass, entry),
        device_id=device_id,
    )
    sent = azure.calls("/chat/completions")[before:]
    assert len(sent) == 2
    told = sent[1].body["messages"][-1]
    assert told["role"] == "tool"
    answer = dict(json.loads(told["content"]))
    for part in ("forgotten", "also_matching"):
        if part in answer:
            answer[part] = told_memories(answer[part])
    return answer, [json.dumps(r.body) for r in sent]


# -- forget ----------------------------------------------------------------------------


async def test_ben_forgets_what_he_told_about_the_dentist_and_nothing_else(
    hass: HomeAssistant,
    people: tuple[MockUser, MockUser],
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    hass_ws_client: WebSocketGenerator,
) -> None:
    """His own two dentist memories go to the archive, as forgotten by voice; the
    household's dentist memory (he is no administrator), Anna's and his other ones stay."""
    anna, ben = people
    appointment = await save(hass, BEN_APPOINTMENT, "context", "private", ben)
    dentist = await save(hass, BEN_DENTIST, "household", "private", ben)
    await save(hass, BEN_VITAMIN, "routine", "private", ben)
    await save(hass, ANNA_CROWN, "context", "private", anna)
    await save(hass, HOUSEHOLD_DENTIST, "household", "household", anna)

    told, sent = await tool_turn(
        hass, azure, loaded_entry, ToolCall("forget", {"about": "dentist"}), user=ben
    )
    assert sorted(told["forgotten"], key=lambda one: one["content"]) == [
        {"id": appointment, "content": BEN_APPOINTMENT, "scope": "private"},
        {"id": dentist, "content": BEN_DENTIST, "scope": "private"},
    ]
    assert told["also_matching"] == []
    assert "note" not in told
    for body in sent:
        assert ANNA_CROWN not in body
    assert await active(hass) == {BEN_VITAMIN, ANNA_CROWN, HOUSEHOLD_DENTIST}

    # The panel's archive shows why they went (to Ben, whose memories they were).
    client = await hass_ws_client(hass)
    rows = (await answer(client, "memories/list", archived=True))["memories"]
    assert sorted((row["id"], row["reason"]) for row in rows) == sorted(
        [(appointment, "Forgotten by voice"), (dentist, "Forgotten by voice")]
    )

    # Erasing one of them later takes the forget call that carried its words too.
    erased = await call(hass, "memory_forget", {"memory_id": appointment, "erase": True})
    assert erased["history_events_erased"] >= 1
    events = await call(hass, "history_query", {"limit": 100})
    assert all(appointment not in json.dumps(e["event_data"]) for e in events["events"])


async def test_only_an_administrator_has_the_household_s_memories_forgotten(
    hass: HomeAssistant,
    people: tuple[MockUser, MockUser],
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    anna, ben = people
    bins = await save(hass, BINS, "routine", "household")

    told, _sent = await tool_turn(
        hass, azure, loaded_entry, ToolCall("forget", {"about": "bins"}), user=ben
    )
    assert (told["forgotten"], told["also_matching"]) == ([], [])
    assert "nothing was forgotten" in told["note"]
    assert await active(hass) == {BINS}

    told, _sent = await tool_turn(
        hass, azure, loaded_entry, ToolCall("forget", {"about": "the bins"}), user=anna
    )
    assert told["forgotten"] == [{"id": bins, "content": BINS, "scope": "household"}]
    assert await active(hass) == set()


async def test_nobody_known_is_refused_and_nothing_is_forgotten(
    hass: HomeAssistant,
    people: tuple[MockUser, MockUser],
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """An unmapped satellite speaks for nobody: no private memory is theirs, and the
    household's are an administrator's to forget."""
    await save(hass, BINS, "routine", "household")
    await save(hass, ANNA_MELATONIN, "context", ANNA_SCOPE)
    told, _sent = await tool_turn(
        hass,
        azure,
        loaded_entry,
        ToolCall("forget", {"about": "bins melatonin"}),
        device_id="kitchen_satellite",
    )
    assert told == {
        "error": "HomeAssistantError",
        # Home Assistant drops the final full stop of a translated error.
        "error_text": exception_text("memory_forget_nobody").rstrip("."),
    }
    assert await active(hass) == {BINS, ANNA_MELATONIN}


async def test_forget_takes_the_three_best_and_names_the_others(
    hass: HomeAssistant,
    people: tuple[MockUser, MockUser],
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """Five memories about the garden: three go, two are named for the model to ask about;
    one that shares no word with the request stays unnamed."""
    anna, _ben = people
    garden = [
        "My garden hose is in the shed",
        "My garden gate squeaks",
        "My garden gnome is called Bert",
        "My garden bench needs paint",
        "My garden path floods in spring",
    ]
    ids = {
        await save(hass, text, kind, "private", anna): text
        for text, kind in zip(
            garden, ["household", "context", "preference", "insight", "routine"], strict=True
        )
    }
    await save(hass, ANNA_TEA, "preference", "private", anna)
    told, _sent = await tool_turn(
        hass, azure, loaded_entry, ToolCall("forget", {"about": "garden"}), user=anna
    )
    assert len(told["forgotten"]) == 3
    assert len(told["also_matching"]) == 2
    named = told["forgotten"] + told["also_matching"]
    assert {one["id"]: one["content"] for one in named} == ids
    assert await active(hass) == {ANNA_TEA} | {one["content"] for one in told["also_matching"]}


async def test_forget_works_while_incognito(
    hass: HomeAssistant,
    people: tuple[MockUser, MockUser],
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """Incognito keeps less; forgetting is the user's say over what is kept, so it stays."""
    anna, _ben = people
    melatonin = await save(hass, ANNA_MELATONIN, "context", "private", anna)
    await call(
        hass,
        "incognito",
        {"entity_id": agent_entity_id(hass, loaded_entry), "minutes": 10},
    )
    told, _sent = await tool_turn(
        hass, azure, loaded_entry, ToolCall("forget", {"about": "melatonin"}), user=anna
    )
    assert told["forgotten"] == [{"id": melatonin, "content": ANNA_MELATONIN, "scope": "private"}]
    assert await active(hass) == set()


# -- "What do you remember about me?" --------------------------------------------------


async def test_what_do_you_remember_about_me_lists_the_speaker_s_own(
    hass: HomeAssistant,
    people: tuple[MockUser, MockUser],
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """recall with mine and no query: all of the speaker's private memories, nobody
    else's and not the household's; refused for nobody known."""
    anna, ben = people
    melatonin = await save(hass, ANNA_MELATONIN, "context", "private", anna)
    tea = await save(hass, ANNA_TEA, "preference", "private", anna)
    vitamin = await save(hass, BEN_VITAMIN, "routine", "private", ben)
    await save(hass, BINS, "routine", "household")

    told, sent = await tool_turn(
        hass, azure, loaded_entry, ToolCall("recall", {"mine": True}), user=anna
    )
    assert (told["found"], told["shown"], sorted(told["ids"])) == (2, 2, sorted([melatonin, tea]))
    block = told["memories"]
    assert block.startswith('<memories count="2">')
    lines = [json.loads(line) for line in block.splitlines() if line.startswith("{")]
    assert sorted(line["content"] for line in lines) == sorted([ANNA_MELATONIN, ANNA_TEA])
    assert all(line["private"] is True for line in lines)
    for body in sent:
        assert BEN_VITAMIN not in body

    told, _sent = await tool_turn(
        hass, azure, loaded_entry, ToolCall("recall", {"mine": True}), user=ben
    )
    assert (told["found"], told["ids"]) == (1, [vitamin])
    assert BEN_VITAMIN in told["memories"]
    assert ANNA_TEA not in told["memories"]

    # With a query: the speaker's own that match it.
    told, _sent = await tool_turn(
        hass, azure, loaded_entry, ToolCall("recall", {"mine": True, "query": "tea"}), user=anna
    )
    assert told["ids"] == [tea]

    told, _sent = await tool_turn(
        hass, azure, loaded_entry, ToolCall("recall", {"mine": True}), device_id="kitchen"
    )
    assert told == {
        "error": "HomeAssistantError",
        "error_text": exception_text("memory_mine_nobody").rstrip("."),
    }


async def test_a_long_list_of_one_s_own_fits_the_memory_budget(
    hass: HomeAssistant,
    people: tuple[MockUser, MockUser],
    config_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """Forty of Anna's memories and a budget of 150 tokens: as many as fit, the rest
    counted; the ids are of the memories shown."""
    anna, _ben = people
    hass.config_entries.async_update_entry(
        config_entry, options={**config_entry.options, CONF_MEMORY_TOKEN_BUDGET: 150}
    )
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    for n in range(40):
        await save(
            hass, f"My locker number {n} holds the spare key {n}", "context", "private", anna
        )
    told, _sent = await tool_turn(
        hass, azure, config_entry, ToolCall("recall", {"mine": True}), user=anna
    )
    block = told["memories"]
    assert count_tokens(block) <= 150
    assert told["found"] == 40
    assert 0 < told["shown"] < 40
    assert len(told["ids"]) == told["shown"]
    assert block.count('{"content"') == told["shown"]
    assert f"({40 - told['shown']} less relevant not shown.)" in block
