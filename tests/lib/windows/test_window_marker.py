"""The note a conversation gains when it resumes after a pause: once, before the question."""

from datetime import UTC, datetime
import json
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from custom_components.azure_openai_memory.lib.tokens import TokenCounter
from custom_components.azure_openai_memory.lib.windows.window import (
    MESSAGE_OVERHEAD_TOKENS,
    RESUME_AFTER_SECONDS,
    RESUMED,
    ConversationMemoryManager,
    MessageEntry,
    WindowSettings,
    resumption_note,
)

BERLIN = ZoneInfo("Europe/Berlin")
# Tuesday 3 June 2025, 09:05 in Berlin.
MORNING = datetime(2025, 6, 3, 7, 5, tzinfo=UTC).timestamp()
HOUR = 3600.0


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = MORNING

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def make(counter: TokenCounter, clock: Clock, max_tokens: int = 4000) -> ConversationMemoryManager:
    return ConversationMemoryManager(counter, WindowSettings(max_tokens=max_tokens), clock)


def everything(memory: ConversationMemoryManager) -> list[MessageEntry]:
    """Conversation c's messages, oldest first: all that fit in more tokens than it holds."""
    messages, left_out = memory.get_recent_messages("c", 10**9)
    assert left_out == 0
    return messages


def stats(memory: ConversationMemoryManager) -> dict[str, Any]:
    found = memory.get_stats("c")
    assert found is not None
    return found


def talk(memory: ConversationMemoryManager, question: str, answer: str) -> None:
    memory.add_message("c", "user", question, {"input"})
    memory.add_message("c", "assistant", answer, {"output"})


def note(text: str) -> str:
    return (
        f"— Note, not from the user: {text}; what was observed before this line may have changed —"
    )


def test_resumed_after_hours_gains_one_note(counter: TokenCounter, clock: Clock) -> None:
    """Three hours later: one note with the home's local time, counted like any message."""
    memory = make(counter, clock)
    talk(memory, "Is the kitchen light on?", "Yes, the kitchen light is on.")
    before = [m.as_dict() for m in everything(memory)]
    tokens_before = memory.window_tokens("c")

    clock.now += 3 * HOUR
    added = memory.note_resumption("c", BERLIN)

    assert added is not None
    assert (added.role, added.content) == ("user", note("3 hours later, 12:05"))
    assert added.tags == frozenset({RESUMED})
    assert added.token_count == counter.count(added.content) + MESSAGE_OVERHEAD_TOKENS
    assert memory.window_tokens("c") == tokens_before + added.token_count
    messages = everything(memory)
    assert [m.as_dict() for m in messages[:-1]] == before
    assert messages[-1] is added
    assert stats(memory)["tag_distribution"][RESUMED] == 1
    # Stored once: asking again at once adds nothing.
    assert memory.note_resumption("c", BERLIN) is None
    assert len(everything(memory)) == 3


def test_no_note_within_the_pause_or_without_a_past(counter: TokenCounter, clock: Clock) -> None:
    """A follow-up within ten minutes is the same moment; a new conversation has no past."""
    memory = make(counter, clock)
    assert memory.note_resumption("c", BERLIN) is None
    talk(memory, "Is the door locked?", "It is.")
    clock.now += RESUME_AFTER_SECONDS
    assert memory.note_resumption("c", BERLIN) is None
    talk(memory, "And the window?", "Closed.")
    clock.now += RESUME_AFTER_SECONDS + 1
    added = memory.note_resumption("c", BERLIN)
    assert added is not None
    assert added.content == note("10 minutes later, 09:25")
    assert [m.role for m in everything(memory)] == ["user", "assistant"] * 2 + ["user"]


@pytest.mark.parametrize(
    ("paused", "later"),
    [
        (11 * 60, "11 minutes later, 09:16"),
        (HOUR, "1 hour later, 10:05"),
        (2 * HOUR + 59 * 60, "2 hours later, 12:04"),
        (15 * HOUR, "15 hours later, Wednesday 2025-06-04, 00:05"),
        (47 * HOUR, "47 hours later, Thursday 2025-06-05, 08:05"),
        (2 * 24 * HOUR, "2 days later, Thursday 2025-06-05, 09:05"),
        (9 * 24 * HOUR + 5 * HOUR, "9 days later, Thursday 2025-06-12, 14:05"),
    ],
)
def test_note_says_how_much_later(paused: float, later: str) -> None:
    """Whole minutes, then hours, then days; a pause into another day names it."""
    before = datetime.fromtimestamp(MORNING, BERLIN)
    now = datetime.fromtimestamp(MORNING + paused, BERLIN)
    assert resumption_note(paused, now, before) == note(later)


def test_day_is_the_homes_day(counter: TokenCounter, clock: Clock) -> None:
    """Whether the day changed is the home's affair: 23:30 to 00:30 in Berlin, not in UTC."""
    clock.now = datetime(2025, 6, 3, 21, 30, tzinfo=UTC).timestamp()
    memory = make(counter, clock)
    talk(memory, "Good night", "Good night!")
    clock.now += HOUR
    in_berlin = memory.note_resumption("c", BERLIN)
    assert in_berlin is not None
    assert in_berlin.content == note("1 hour later, Wednesday 2025-06-04, 00:30")

    clock.now = datetime(2025, 6, 3, 21, 30, tzinfo=UTC).timestamp()
    memory = make(counter, clock)
    talk(memory, "Good night", "Good night!")
    clock.now += HOUR
    in_utc = memory.note_resumption("c", UTC)
    assert in_utc is not None
    assert in_utc.content == note("1 hour later, 22:30")


def test_request_carries_the_exchange_before_the_note(counter: TokenCounter, clock: Clock) -> None:
    """The note is not a question: the last exchange before it still goes with a tight request."""
    memory = make(counter, clock)
    talk(memory, "Old question " + "a " * 50, "Old answer " + "a " * 50)
    talk(memory, "Is the kitchen light on?", "Yes, the kitchen light is on.")
    clock.now += 2 * HOUR
    added = memory.note_resumption("c", BERLIN)
    assert added is not None
    recent, left_out = memory.get_recent_messages("c", added.token_count)
    assert [m.content for m in recent] == [
        "Is the kitchen light on?",
        "Yes, the kitchen light is on.",
        added.content,
    ]
    assert left_out == 2
    assert memory.last_exchange_tokens("c") == sum(m.token_count for m in recent)


def test_note_is_evicted_like_any_message(counter: TokenCounter, clock: Clock) -> None:
    """Oldest first: the note goes after what came before it, before what followed it."""
    memory = make(counter, clock, max_tokens=120)
    talk(memory, "First question", "First answer")
    clock.now += 2 * HOUR
    added = memory.note_resumption("c", BERLIN)
    assert added is not None
    order = ["First question", "First answer", added.content]
    for i in range(2, 12):
        talk(memory, f"Question {i}", f"Answer {i}")
        order += [f"Question {i}", f"Answer {i}"]
        assert stats(memory)["current_tokens"] <= 120
    kept = [m.content for m in everything(memory)]
    assert added.content not in kept
    assert kept == order[len(order) - len(kept) :]
    assert RESUMED not in stats(memory)["tag_distribution"]


def test_note_survives_storage(counter: TokenCounter, clock: Clock) -> None:
    """Stored with its tag, read back as it was: a restart does not add a second one."""
    memory = make(counter, clock)
    talk(memory, "Is the kitchen light on?", "Yes.")
    clock.now += 2 * HOUR
    assert memory.note_resumption("c", BERLIN) is not None
    restored = make(counter, clock)
    restored.load(json.loads(json.dumps(memory.as_dict())))
    assert [m.as_dict() for m in everything(restored)] == [m.as_dict() for m in everything(memory)]
    clock.now += 60
    assert restored.note_resumption("c", BERLIN) is None
