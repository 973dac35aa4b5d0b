"""ConversationMemoryManager.get_messages: a conversation's messages, all or by tag."""

from collections.abc import Iterable

import pytest

from custom_components.azure_openai_memory.lib.tokens import TokenCounter
from custom_components.azure_openai_memory.lib.windows.window import (
    EPHEMERAL,
    IMPORTANT,
    ConversationMemoryManager,
    ToolCallEntry,
    WindowSettings,
)


def manager(counter: TokenCounter, max_tokens: int = 4000) -> ConversationMemoryManager:
    return ConversationMemoryManager(counter, WindowSettings(max_tokens=max_tokens), lambda: 0.0)


@pytest.fixture
def talk(counter: TokenCounter) -> ConversationMemoryManager:
    """One conversation of five messages with a mix of tags, and another of one."""
    windows = manager(counter)
    windows.add_message("c", "user", "Turn on the kitchen light", {"input"})
    windows.add_message("c", "assistant", "Done", {"output", IMPORTANT})
    windows.add_message("c", "user", "The sensor reads 21 degrees", {EPHEMERAL, "sensor"})
    windows.add_message("c", "assistant", "Noted")
    windows.add_message("c", "user", "Lock the door", {"input", IMPORTANT})
    windows.add_message("other", "user", "Hello", {"input"})
    return windows


def contents(
    windows: ConversationMemoryManager, cid: str, tags: str | Iterable[str] | None = None
) -> list[str]:
    return [m.content for m in windows.get_messages(cid, tags)]


def test_all_messages_in_order(talk: ConversationMemoryManager) -> None:
    assert contents(talk, "c") == [
        "Turn on the kitchen light",
        "Done",
        "The sensor reads 21 degrees",
        "Noted",
        "Lock the door",
    ]
    assert contents(talk, "other") == ["Hello"]


def test_unknown_conversation_has_none(talk: ConversationMemoryManager) -> None:
    assert talk.get_messages("nobody knows") == []
    assert talk.get_messages("nobody knows", "input") == []
    assert "nobody knows" not in talk.get_all_conversations()


def test_one_tag(talk: ConversationMemoryManager) -> None:
    """A single tag as text is one tag, not its letters."""
    assert contents(talk, "c", IMPORTANT) == ["Done", "Lock the door"]
    assert contents(talk, "c", "input") == ["Turn on the kitchen light", "Lock the door"]
    assert contents(talk, "c", "i") == []


def test_any_of_several_tags(talk: ConversationMemoryManager) -> None:
    """A message carrying any of the tags is returned once, in the window's order."""
    assert contents(talk, "c", {"sensor", IMPORTANT}) == [
        "Done",
        "The sensor reads 21 degrees",
        "Lock the door",
    ]
    assert contents(talk, "c", ["output", "input"]) == [
        "Turn on the kitchen light",
        "Done",
        "Lock the door",
    ]
    assert contents(talk, "c", ("no such tag",)) == []
    assert contents(talk, "c", ()) == []


def test_only_what_the_window_still_holds(counter: TokenCounter) -> None:
    """Evicted messages are gone from get_messages too, filtered or not."""
    windows = manager(counter, max_tokens=40)
    for i in range(6):
        windows.add_message("c", "user", f"question {i} " + "a" * 40, {"input"})
    held = windows.get_messages("c")
    assert 0 < len(held) < 6
    assert [m.content for m in held] == [
        f"question {i} " + "a" * 40 for i in range(6 - len(held), 6)
    ]
    assert windows.get_messages("c", "input") == held
    stats = windows.get_stats("c")
    assert stats is not None
    assert stats["evicted_count"] == 6 - len(held)


def test_tool_calls_keep_their_order(counter: TokenCounter) -> None:
    windows = manager(counter)
    windows.add_message("c", "user", "Is the door locked?", {"input"})
    windows.add_message(
        "c",
        "assistant",
        "",
        {"tool"},
        tool_calls=[ToolCallEntry("call_1", "HassGetState", {"name": "door"})],
    )
    windows.add_message("c", "tool", '{"state": "locked"}', {"tool"}, tool_call_id="call_1")
    windows.add_message("c", "assistant", "Yes, it is locked", {"output"})
    assert [m.role for m in windows.get_messages("c")] == ["user", "assistant", "tool", "assistant"]
    tools = windows.get_messages("c", "tool")
    assert [m.role for m in tools] == ["assistant", "tool"]
    assert tools[0].tool_calls[0].id == tools[1].tool_call_id == "call_1"


def test_the_result_is_a_copy(talk: ConversationMemoryManager) -> None:
    """Changing the list returned changes nothing in the window."""
    talk.get_messages("c").clear()
    talk.get_messages("c", "input").clear()
    assert len(talk.get_messages("c")) == 5
