"""The ConversationMemoryManager: windows, eviction, tags, stats, continuation, storage."""

import json

import pytest

from custom_components.azure_openai_memory.lib.tokens import TokenCounter
from custom_components.azure_openai_memory.lib.windows.window import (
    MESSAGE_OVERHEAD_TOKENS,
    ConversationMemoryManager,
    MessageEntry,
    ToolCallEntry,
    WindowSettings,
)


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def make(counter: TokenCounter, clock: Clock, **settings: object) -> ConversationMemoryManager:
    return ConversationMemoryManager(counter, WindowSettings(**settings), clock)  # type: ignore[arg-type]


def held(memory: ConversationMemoryManager, conversation_id: str) -> list[MessageEntry]:
    """What a conversation's window holds, system first."""
    window = memory.windows.get(conversation_id)
    return window.messages() if window is not None else []


def words(n: int) -> str:
    """A text of exactly n cl100k tokens (' a' is one token)."""
    return "a" + " a" * (n - 1)


def test_add_message_creates_window(counter: TokenCounter, clock: Clock) -> None:
    memory = make(counter, clock)
    entry = memory.add_message("c1", "user", "Turn on the lights", {"input"})
    assert entry.token_count == 4 + MESSAGE_OVERHEAD_TOKENS
    assert memory.get_all_conversations() == ["c1"]
    assert [m.content for m in held(memory, "c1")] == ["Turn on the lights"]
    assert held(memory, "unknown") == []


def test_fifo_eviction(counter: TokenCounter, clock: Clock) -> None:
    """Oldest messages go first; the total never exceeds the budget."""
    memory = make(counter, clock, max_tokens=100)
    for i in range(10):
        memory.add_message("c", "user" if i % 2 == 0 else "assistant", f"m{i} " + words(16))
        assert memory.get_stats("c")["current_tokens"] <= 100  # type: ignore[index]
    contents = [m.content.split()[0] for m in held(memory, "c")]
    assert contents == ["m6", "m7", "m8", "m9"]  # 22 tokens each: four fit in 100
    assert memory.get_stats("c")["evicted_count"] == 6  # type: ignore[index]


def test_preserve_system_messages(counter: TokenCounter, clock: Clock) -> None:
    """The system prompt stays first and is never evicted; a new one replaces it."""
    memory = make(counter, clock, max_tokens=60)
    memory.add_message("c", "system", "You are helpful")
    for i in range(6):
        memory.add_message("c", "user", f"q{i} " + words(10))
    messages = held(memory, "c")
    assert messages[0].role == "system"
    assert messages[-1].content.startswith("q5")
    memory.add_message("c", "system", "You are terse")
    messages = held(memory, "c")
    assert [m.content for m in messages if m.role == "system"] == ["You are terse"]
    assert messages[0].role == "system"


def test_system_evicted_when_not_preserved(counter: TokenCounter, clock: Clock) -> None:
    memory = make(counter, clock, max_tokens=40, preserve_system=False)
    memory.add_message("c", "system", words(10))
    memory.add_message("c", "user", words(10))
    memory.add_message("c", "user", words(10))
    assert all(m.role != "system" for m in held(memory, "c"))


def test_important_last_ephemeral_first(counter: TokenCounter, clock: Clock) -> None:
    memory = make(counter, clock, max_tokens=50)  # 14 tokens a message: three fit
    memory.add_message("c", "user", "keep " + words(9), {"important"})
    memory.add_message("c", "user", "plain " + words(9))
    memory.add_message("c", "tool", "search " + words(9), {"ephemeral"})
    memory.add_message("c", "user", "new " + words(9))
    firsts = [m.content.split()[0] for m in held(memory, "c")]
    assert firsts == ["keep", "plain", "new"]  # ephemeral went first although newer
    memory.add_message("c", "user", "newer " + words(9))
    firsts = [m.content.split()[0] for m in held(memory, "c")]
    assert firsts == ["keep", "new", "newer"]  # then plain, oldest first; important stays


def test_tool_call_and_results_leave_together(counter: TokenCounter, clock: Clock) -> None:
    """An orphaned tool result would be rejected by the API."""
    memory = make(counter, clock, max_tokens=60)

    def assert_no_orphans() -> None:
        messages = held(memory, "c")
        calls = {c.id for m in messages for c in m.tool_calls}
        results = {m.tool_call_id for m in messages if m.role == "tool"}
        assert calls == results

    memory.add_message("c", "user", "turn on the kitchen")
    memory.add_message(
        "c",
        "assistant",
        "",
        tool_calls=[ToolCallEntry("call_1", "HassTurnOn", {"name": "kitchen"})],
    )
    memory.add_message("c", "tool", '{"success": true}', tool_call_id="call_1")
    memory.add_message("c", "assistant", "Done")
    assert [m.role for m in held(memory, "c")] == ["user", "assistant", "tool", "assistant"]
    seen_partial = False
    for i in range(6):
        memory.add_message("c", "user", f"next{i} " + words(8))
        assert_no_orphans()
        roles = [m.role for m in held(memory, "c")]
        seen_partial |= roles[0] == "assistant" and "tool" in roles
    assert seen_partial  # the user message went first, the pair stayed together
    assert "tool" not in [m.role for m in held(memory, "c")]


def test_oversized_message_truncated_not_emptying(counter: TokenCounter, clock: Clock) -> None:
    memory = make(counter, clock, max_tokens=50)
    memory.add_message("c", "system", words(10))
    memory.add_message("c", "user", "hello")
    memory.add_message("c", "user", words(500))
    messages = held(memory, "c")
    assert messages[0].role == "system"
    assert messages[-1].token_count <= 50 - messages[0].token_count
    assert memory.get_stats("c")["current_tokens"] <= 50  # type: ignore[index]
    assert len(messages[-1].content) > 0


def test_tag_filtering_and_distribution(counter: TokenCounter, clock: Clock) -> None:
    memory = make(counter, clock)
    memory.add_message("c", "user", "lights on", {"input", "context:lights"})
    memory.add_message("c", "assistant", "done", {"output", "context:lights"})
    memory.add_message("c", "user", "weather?", {"input", "context:weather"})
    memory.add_message("c", "assistant", "sunny", {"output", "context:weather"})
    lights = [m for m in held(memory, "c") if "context:lights" in m.tags]
    assert [m.content for m in lights] == ["lights on", "done"]
    stats = memory.get_stats("c")
    assert stats is not None
    assert stats["tag_distribution"] == {
        "input": 2,
        "output": 2,
        "context:lights": 2,
        "context:weather": 2,
    }
    assert stats["message_count"] == 4
    assert stats["max_tokens"] == 4000
    assert stats["utilization"] == round(100 * stats["current_tokens"] / 4000, 2)
    assert stats["tokens_estimated"] is False


def test_tag_distribution_drops_evicted(counter: TokenCounter, clock: Clock) -> None:
    memory = make(counter, clock, max_tokens=30)
    memory.add_message("c", "user", words(10), {"context:a"})
    memory.add_message("c", "user", words(10), {"context:b"})
    memory.add_message("c", "user", words(10), {"context:b"})
    assert memory.get_stats("c")["tag_distribution"] == {"context:b": 2}  # type: ignore[index]


def test_reset_and_multiple_conversations(counter: TokenCounter, clock: Clock) -> None:
    memory = make(counter, clock)
    memory.add_message("a", "user", "one")
    memory.add_message("b", "user", "two")
    assert held(memory, "a")[0].content == "one"
    assert held(memory, "b")[0].content == "two"
    assert memory.reset("a") == 1
    assert memory.reset("a") == 0
    assert memory.get_all_conversations() == ["b"]
    assert memory.reset() == 1
    assert memory.get_all_conversations() == []


def test_cap_drops_least_recently_used(counter: TokenCounter, clock: Clock) -> None:
    memory = make(counter, clock, max_conversations=2)
    memory.add_message("a", "user", "1")
    memory.add_message("b", "user", "2")
    memory.add_message("a", "user", "3")
    memory.add_message("c", "user", "4")
    assert memory.get_all_conversations() == ["a", "c"]
    assert memory.totals()["dropped_conversations"] == 1
    assert any("reached the cap" in w for w in memory.health())


def test_idle_expiry(counter: TokenCounter, clock: Clock) -> None:
    memory = make(counter, clock, idle_seconds=60)
    memory.add_message("old", "user", "1")
    clock.now += 50
    memory.add_message("new", "user", "2")
    clock.now += 20
    assert memory.expire_idle() == 1
    assert memory.get_all_conversations() == ["new"]


def test_health_warns_when_nearly_full(counter: TokenCounter, clock: Clock) -> None:
    memory = make(counter, clock, max_tokens=20)
    memory.add_message("c", "user", words(16))
    assert any("full" in w for w in memory.health())


def test_continuation_from_same_source(counter: TokenCounter, clock: Clock) -> None:
    """A new id from the same device within the continuation time keeps the window."""
    memory = make(counter, clock, continuation_seconds=1800)
    memory.continue_conversation("c1", "satellite.kitchen")
    memory.add_message("c1", "user", "what is 2+2?")
    clock.now += 600
    assert memory.continue_conversation("c2", "satellite.kitchen") == "c2"
    assert [m.content for m in held(memory, "c2")] == ["what is 2+2?"]
    assert "c1" not in memory.get_all_conversations()
    # Another device starts fresh; so does the same device after the continuation time.
    memory.continue_conversation("c3", "satellite.office")
    assert held(memory, "c3") == []
    clock.now += 3600
    memory.continue_conversation("c4", "satellite.kitchen")
    assert held(memory, "c4") == []


def test_a_conversation_is_its_person_s(counter: TokenCounter, clock: Clock) -> None:
    """Someone else's turn under a person's conversation id gets a window kept apart; the
    conversation's window and its person stay as they were."""
    memory = make(counter, clock)
    memory.add_message("talk", "user", "my dentist is on Friday")
    memory.set_person("talk", "person.anna")
    assert memory.window_for("talk", "person.anna") == "talk"
    assert memory.window_for("talk", "person.ben") == "talk@person.ben"
    assert memory.window_for("talk", None) == "talk@nobody"
    assert memory.window_for("new", "person.ben") == "new"
    memory.set_person("talk", "person.ben")
    assert memory.person_of("talk") == "person.anna"
    # What nobody known said is nobody's to take over: a person's turn under its id gets
    # a window of its own; a window where nothing was said yet becomes the speaker's.
    memory.add_message("kitchen", "user", "timer for ten minutes")
    assert memory.window_for("kitchen", None) == "kitchen"
    assert memory.window_for("kitchen", "person.ben") == "kitchen@person.ben"
    memory.set_person("kitchen", None)
    assert memory.person_of("kitchen") is None
    memory.continue_conversation("hall", None, None)
    assert memory.window_for("hall", "person.ben") == "hall"
    memory.add_message("talk@person.ben", "user", "what did I say?")
    memory.add_message("talk@nobody", "user", "and now?")
    assert memory.reset("talk") == 3
    assert memory.get_all_conversations() == ["kitchen"]


def test_continuation_is_per_person(counter: TokenCounter, clock: Clock) -> None:
    """At a shared device each person continues their own window, never another's."""
    memory = make(counter, clock, continuation_seconds=1800)
    memory.continue_conversation("a1", "device:tablet", "person.anna")
    memory.add_message("a1", "user", "my dentist is on Friday")
    memory.set_person("a1", "person.anna")
    clock.now += 60
    memory.continue_conversation("b1", "device:tablet", "person.ben")
    assert held(memory, "b1") == []
    memory.add_message("b1", "user", "will it rain?")
    memory.set_person("b1", "person.ben")
    clock.now += 60
    memory.continue_conversation("a2", "device:tablet", "person.anna")
    assert [m.content for m in held(memory, "a2")] == ["my dentist is on Friday"]
    # Nobody known at the tablet neither continues a person's window.
    memory.continue_conversation("n1", "device:tablet")
    assert held(memory, "n1") == []


def test_persistence_round_trip(counter: TokenCounter, clock: Clock) -> None:
    memory = make(counter, clock, max_tokens=200)
    memory.add_message("c", "system", "sys")
    memory.add_message("c", "user", "hi", {"input", "important"})
    memory.add_message("c", "assistant", "", tool_calls=[ToolCallEntry("x", "Hass", {"a": 1})])
    memory.add_message("c", "tool", "{}", tool_call_id="x")
    memory.continue_conversation("c", "user:1")
    stored = json.loads(json.dumps(memory.as_dict()))
    restored = make(counter, clock, max_tokens=200)
    restored.load(stored)
    assert [m.as_dict() for m in held(restored, "c")] == [m.as_dict() for m in held(memory, "c")]
    assert restored.get_stats("c") == memory.get_stats("c")
    assert restored.windows["c"].groups() == memory.windows["c"].groups()


def test_langgraph_shapes(counter: TokenCounter, clock: Clock) -> None:
    memory = make(counter, clock)
    memory.add_message("c", "user", "lights")
    memory.add_message(
        "c",
        "assistant",
        "",
        tool_calls=[ToolCallEntry("call_9", "HassTurnOn", {"area": "kitchen"})],
    )
    memory.add_message("c", "tool", '{"ok": true}', tool_call_id="call_9")
    user, assistant, tool = (m.to_langgraph_message() for m in held(memory, "c"))
    assert user == {"role": "user", "content": "lights"}
    assert assistant["tool_calls"] == [
        {"id": "call_9", "name": "HassTurnOn", "args": {"area": "kitchen"}, "type": "tool_call"}
    ]
    assert tool == {"role": "tool", "content": '{"ok": true}', "tool_call_id": "call_9"}
    api = held(memory, "c")[1].to_api_message()
    assert api["tool_calls"][0]["function"] == {
        "name": "HassTurnOn",
        "arguments": '{"area": "kitchen"}',
    }


def test_tool_calls_without_ids_never_group(counter: TokenCounter, clock: Clock) -> None:
    """A server that omits tool-call ids must not glue every later message into one group."""
    memory = make(counter, clock, max_tokens=200)
    for i in range(20):
        memory.add_message("c", "user", f"q{i} " + words(10))
        memory.add_message(
            "c", "assistant", "", tool_calls=[ToolCallEntry("", "HassTurnOn", {"name": "x"})]
        )
        memory.add_message("c", "tool", '{"success": true}', tool_call_id="")
        memory.add_message("c", "assistant", f"a{i} " + words(10))
        assert memory.get_stats("c")["current_tokens"] <= 200  # type: ignore[index]
    assert held(memory, "c")[-1].content.startswith("a19")
    assert memory.get_stats("c")["evicted_count"] > 40  # type: ignore[index]


def exchange(memory: ConversationMemoryManager, i: int, size: int = 20) -> None:
    memory.add_message("c", "user", f"q{i} " + words(size))
    memory.add_message("c", "assistant", f"a{i} " + words(size))


def test_recent_messages_fit_a_request_budget(counter: TokenCounter, clock: Clock) -> None:
    """A request leaves out the oldest messages; the window keeps them."""
    memory = make(counter, clock, max_tokens=10_000)
    for i in range(10):
        exchange(memory, i)  # 26 tokens per message
    everything, left_out = memory.get_recent_messages("c", 10_000)
    assert (len(everything), left_out) == (20, 0)
    recent, left_out = memory.get_recent_messages("c", 26 * 5)
    assert [m.content.split()[0] for m in recent] == ["a7", "q8", "a8", "q9", "a9"]
    assert left_out == 15
    assert len(held(memory, "c")) == 20


def test_recent_messages_keep_the_last_exchange(counter: TokenCounter, clock: Clock) -> None:
    """Even over budget, the last complete exchange goes with the request, tool rounds and all."""
    memory = make(counter, clock, max_tokens=10_000)
    exchange(memory, 0)
    memory.add_message("c", "user", "q1 " + words(200))
    memory.add_message("c", "assistant", "", tool_calls=[ToolCallEntry("t1", "HassTurnOn", {})])
    memory.add_message("c", "tool", '{"success": true}', tool_call_id="t1")
    memory.add_message("c", "assistant", "a1 done")
    recent, left_out = memory.get_recent_messages("c", 10)
    assert [m.role for m in recent] == ["user", "assistant", "tool", "assistant"]
    assert recent[0].content.startswith("q1")
    assert left_out == 2
    assert memory.get_recent_messages("unknown", 10) == ([], 0)
