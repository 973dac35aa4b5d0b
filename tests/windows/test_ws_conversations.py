"""The Memory panel's conversation commands: each agent's live windows, one read, reset.

An administrator reads every conversation, anyone else their own person's, as
conversation_stats shows them (tests/people/test_ws_privacy.py has two people); reset is an
administrator's, as conversation_reset. The figures are the windows' own.
"""

from typing import Any

from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.typing import (
    MockHAClientWebSocket,
    WebSocketGenerator,
)

from ..conftest import NO_TOOLS, agent_entity_id, call, converse
from ..panel_commands import answer, invalid, not_allowed, refused_as, translated


@pytest.fixture
def agent_options() -> dict[str, Any]:
    return dict(NO_TOOLS)


@pytest.fixture
async def admin(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, hass_ws_client: WebSocketGenerator
) -> MockHAClientWebSocket:
    return await hass_ws_client(hass)


def agent_of(entry: MockConfigEntry) -> str:
    (subentry_id,) = list(entry.subentries)
    return subentry_id


async def test_the_windows_of_each_agent_their_figures_and_messages(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, admin: MockHAClientWebSocket
) -> None:
    await converse(hass, loaded_entry, "Tell me about owls", "c-owls")
    await converse(hass, loaded_entry, "And about bats?", "c-owls")
    await converse(hass, loaded_entry, "Hello", "c-hello")
    listed = await answer(admin, "conversations/list")
    (agent,) = listed["agents"]
    assert agent["agent_id"] == agent_entity_id(hass, loaded_entry)
    assert (agent["entry_id"], agent["subentry_id"]) == (
        loaded_entry.entry_id,
        agent_of(loaded_entry),
    )
    assert agent["total"] == 2
    latest, owls = agent["conversations"]
    assert (latest["conversation_id"], owls["conversation_id"]) == ("c-hello", "c-owls")
    stats = await call(hass, "conversation_stats", {"config_entry_id": loaded_entry.entry_id})
    service_view = stats["agents"][agent["agent_id"]]["conversations"]["c-owls"]
    assert owls["current_tokens"] == service_view["current_tokens"]
    assert owls["max_tokens"] == agent["max_tokens"] == service_view["max_tokens"]
    assert owls["message_count"] == service_view["message_count"] == 4
    assert agent["totals"]["conversations"] == 2
    paged = await answer(admin, "conversations/list", offset=1, limit=1)
    assert [c["conversation_id"] for c in paged["agents"][0]["conversations"]] == ["c-owls"]

    where = {"entry_id": loaded_entry.entry_id, "subentry_id": agent_of(loaded_entry)}
    read = await answer(admin, "conversations/read", conversation_id="c-owls", **where)
    assert read["total"] == 4
    first = read["messages"][0]
    assert (first["role"], first["content"]) == ("user", "Tell me about owls")
    assert [m["role"] for m in read["messages"]] == ["user", "assistant", "user", "assistant"]
    assert all(m["token_count"] > 0 for m in read["messages"])
    tail = await answer(admin, "conversations/read", conversation_id="c-owls", offset=3, **where)
    assert [m["role"] for m in tail["messages"]] == ["assistant"]


async def test_reset_is_for_administrators_and_talk_of_nobody_known_too(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    admin: MockHAClientWebSocket,
    user: MockHAClientWebSocket,
) -> None:
    await converse(hass, loaded_entry, "Tell me about owls", "c-owls")
    await converse(hass, loaded_entry, "Hello", "c-hello")
    where = {"entry_id": loaded_entry.entry_id, "subentry_id": agent_of(loaded_entry)}
    (theirs,) = (await answer(user, "conversations/list"))["agents"]
    assert (theirs["conversations"], theirs["total"]) == ([], 0)
    # Another person's conversation is, to the user, one that does not exist.
    for conversation_id in ("c-owls", "c-none"):
        error = await refused_as(
            user, "home_assistant_error", "conversations/read", conversation_id=conversation_id,
            **where,
        )  # fmt: skip
        assert (error["translation_key"], error["translation_placeholders"]) == (
            "unknown_conversation",
            {"conversation_id": conversation_id},
        )
    await not_allowed(user, "conversations/reset", conversation_id="c-owls", **where)
    listed = await answer(admin, "conversations/list")
    assert listed["agents"][0]["total"] == 2

    assert await answer(admin, "conversations/reset", conversation_id="c-owls", **where) == {
        "reset": 1
    }
    assert await translated(
        admin, "unknown_conversation", "conversations/read", conversation_id="c-owls", **where
    ) == {"conversation_id": "c-owls"}
    assert await answer(admin, "conversations/reset", **where) == {"reset": 1}
    stats = await call(hass, "conversation_stats", {"config_entry_id": loaded_entry.entry_id})
    assert all(not agent["conversations"] for agent in stats["agents"].values())
    events = await call(hass, "history_query", {"event_type": "state_change", "tags": ["panel"]})
    assert [e["agent_id"] for e in events["events"]] == [
        "azure_openai_memory.conversation_reset"
    ] * 2


async def test_unknown_entries_agents_and_schema_errors(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, admin: MockHAClientWebSocket
) -> None:
    assert await translated(
        admin, "unknown_entry", "conversations/reset", entry_id="nope", subentry_id="x"
    ) == {"entry_id": "nope"}
    assert await translated(
        admin,
        "unknown_agent",
        "conversations/read",
        entry_id=loaded_entry.entry_id,
        subentry_id="x",
        conversation_id="c",
    ) == {"agent": "x"}
    assert "conversation_id" in await invalid(
        admin, "conversations/read", entry_id=loaded_entry.entry_id, subentry_id="x"
    )
    assert "limit" in await invalid(admin, "conversations/list", limit=500)
