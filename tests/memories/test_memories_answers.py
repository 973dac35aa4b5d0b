"""One answer shape for saves: memory_save and the remember tool say what happened, what a
newer fact replaced and what a cap pushed out, so the agent can tell the user."""

import json

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, MockUser

from custom_components.azure_openai_memory.data import memories_of
from custom_components.azure_openai_memory.lib.memories import MemorySettings

from ..azure_stub import AzureStub, Reply, ToolCall
from ..conftest import NO_TOOLS, agent_entity_id, converse, family, told_memories

KNEE = {"type": "injury_history", "tags": ["body:knee"], "scope": "household"}


call = family("memory")


async def test_memory_save_answers_what_it_replaced_and_pushed_out(
    hass: HomeAssistant, services: None
) -> None:
    created = await call(hass, "save", content="Occasional knee soreness", **KNEE)
    assert set(created) == {"action", "memory", "replaced", "archived", "evicted"}
    assert (created["action"], created["replaced"], created["evicted"]) == ("created", None, [])
    updated = await call(hass, "save", content="Chronic knee pain after runs over 15km", **KNEE)
    assert updated["action"] == "superseded"
    assert updated["replaced"] == {
        "id": created["memory"]["id"],
        "content": "Occasional knee soreness",
    }
    # The archived record as before, for scripts written against it.
    assert updated["archived"]["id"] == created["memory"]["id"]
    assert updated["archived"]["original_content"] == "Occasional knee soreness"

    memories_of(hass).async_update_settings(MemorySettings(max_memories_per_type=1))
    pushed = await call(hass, "save", content="The bins go out on Tuesday", type="routine")
    assert pushed["evicted"] == []
    making_room = await call(hass, "save", content="The dog is walked at seven", type="routine")
    (evicted,) = making_room["evicted"]
    assert (evicted["id"], evicted["content"]) == (
        pushed["memory"]["id"],
        "The bins go out on Tuesday",
    )
    assert making_room["replaced"] is None


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_the_remember_tool_answers_the_same_shape(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    await call(hass, "save", content="Occasional knee soreness", **KNEE)
    azure.queue(
        Reply(
            tool_calls=[
                ToolCall("remember", {"content": "Chronic knee pain after runs over 15km", **KNEE})
            ]
        ),
        Reply(text="I replaced the older note about your knee."),
    )
    await converse(hass, loaded_entry, "Remember: my knee now hurts after runs over 15 km")
    first, second = azure.calls("/chat/completions")
    assert first.body is not None
    assert second.body is not None
    (remember,) = [t for t in first.body["tools"] if t["function"]["name"] == "remember"]
    description = remember["function"]["description"]
    assert "replaced" in description
    assert "evicted" in description
    result = json.loads(second.body["messages"][-1]["content"])
    (memory,) = list(memories_of(hass).store)
    assert result["action"] == "superseded"
    (saved,) = told_memories(result["memory"])
    assert saved["id"] == memory.id
    assert saved["content"] == "Chronic knee pain after runs over 15km"
    (replaced,) = told_memories(result["replaced"])
    assert replaced["content"] == "Occasional knee soreness"
    assert result["evicted"] == ""


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_the_remember_tool_tells_what_the_cap_pushed_out(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub, hass_admin_user: MockUser
) -> None:
    """A save that makes room hands the model what went (id and words), and the tool's
    description tells the model to say so. (Only an administrator's save may push a
    household memory out.)"""
    memories_of(hass).async_update_settings(MemorySettings(max_memories_per_type=1))
    bins = await call(hass, "save", content="The bins go out on Tuesday", type="routine")
    dog = {"content": "The dog is walked at seven", "type": "routine", "scope": "household"}
    azure.queue(
        Reply(tool_calls=[ToolCall("remember", dog)]),
        Reply(text="Saved; I archived the note about the bins to make room."),
    )
    await conversation.async_converse(
        hass,
        "Remember: the dog is walked at seven",
        None,
        Context(user_id=hass_admin_user.id),
        language="en",
        agent_id=agent_entity_id(hass, loaded_entry),
    )
    first, second = azure.calls("/chat/completions")
    (remember,) = [t for t in first.body["tools"] if t["function"]["name"] == "remember"]
    assert "when `evicted` is not empty, tell the user" in remember["function"]["description"]
    result = json.loads(second.body["messages"][-1]["content"])
    assert set(result) == {"action", "scope", "id", "ids", "memory", "replaced", "evicted"}
    assert (result["action"], result["replaced"]) == ("created", None)
    assert [one["content"] for one in told_memories(result["memory"])] == [
        "The dog is walked at seven"
    ]
    assert result["ids"] == [result["id"], bins["memory"]["id"]]
    assert told_memories(result["evicted"]) == [
        {"id": bins["memory"]["id"], "content": "The bins go out on Tuesday"}
    ]
