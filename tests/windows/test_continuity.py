# ruff: noqa: RUF001  (sentences in many scripts are what these tests are about)
"""Continuity on both sides of a pause, and on voice.

A conversation resumed after a pause carries a note that time has passed, stored once so
that what came before stays the same request after request; an answer that asks the user
something keeps a satellite listening.
"""

from datetime import timedelta
import json
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_mock_service

from custom_components.azure_openai_memory.agent.speech import asks_user
from custom_components.azure_openai_memory.const import CONF_EARLY_TIMEOUT, CONF_REQUEST_TIMEOUT
from custom_components.azure_openai_memory.lib.windows.window import RESUMED

from ..azure_stub import AzureStub, Reply
from ..conftest import LLM_ONLY, NO_TOOLS, converse, say, speech, stored_window

# Tuesday 3 June 2025, 09:05 in Berlin.
MORNING = "2025-06-03 07:05:00+00:00"


def note(later: str) -> str:
    return (
        f"— Note, not from the user: {later}; what was observed before this line may have changed —"
    )


def clock(now: str) -> dict[str, str]:
    """The clock note a request carries between its history and its question."""
    return {"role": "user", "content": f"Now: {now} (Home Assistant's clock)."}


def sent(azure: AzureStub, index: int) -> list[dict[str, Any]]:
    """The messages of one request the stand-in received."""
    body = azure.calls("/chat/completions")[index].body
    assert body is not None
    messages: list[dict[str, Any]] = body["messages"]
    return messages


def notes_in(messages: list[dict[str, Any]]) -> list[int]:
    """Where the resumption notes sit in a request."""
    return [i for i, m in enumerate(messages) if m["content"].startswith("— Note, not from")]


def history_through(messages: list[dict[str, Any]], end: int) -> str:
    """The request's history up to and including index end, as the bytes it was sent as.

    The history begins after the system prompt, which is not part of the conversation.
    """
    return json.dumps(messages[1 : end + 1], ensure_ascii=False)


@pytest.fixture
async def berlin(hass: HomeAssistant, freezer: FrozenDateTimeFactory) -> FrozenDateTimeFactory:
    """The home is in Berlin; the clock stands still until a test moves it."""
    await hass.config.async_set_time_zone("Europe/Berlin")
    freezer.move_to(MORNING)
    return freezer


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_resumed_conversation_carries_one_note(
    hass: HomeAssistant,
    hass_storage: dict[str, Any],
    berlin: FrozenDateTimeFactory,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """Two hours later the request carries the note; later turns keep everything up to it
    exactly as sent, across a reload, and add no second one."""
    azure.queue(Reply(text="Yes, the kitchen light is on."))
    await converse(hass, loaded_entry, "Is the kitchen light on?", "c")
    assert notes_in(sent(azure, 0)) == []

    berlin.tick(timedelta(hours=2))
    await converse(hass, loaded_entry, "Is it still on?", "c")
    resumed = sent(azure, 1)
    (at,) = notes_in(resumed)
    assert resumed[1:] == [
        {"role": "user", "content": "Is the kitchen light on?"},
        {"role": "assistant", "content": "Yes, the kitchen light is on."},
        {"role": "user", "content": note("2 hours later, 11:05")},
        clock("11:05, Tuesday 3 June 2025"),
        {"role": "user", "content": "Is it still on?"},
    ]

    berlin.tick(timedelta(minutes=1))
    await converse(hass, loaded_entry, "And the hall light?", "c")
    follow_up = sent(azure, 2)
    assert notes_in(follow_up) == [at]
    assert history_through(follow_up, at) == history_through(resumed, at)
    assert follow_up[at + 1 :] == [
        {"role": "user", "content": "Is it still on?"},
        {"role": "assistant", "content": "You said: Is it still on?"},
        clock("11:06, Tuesday 3 June 2025"),
        {"role": "user", "content": "And the hall light?"},
    ]

    assert await hass.config_entries.async_reload(loaded_entry.entry_id)
    await hass.async_block_till_done()
    berlin.tick(timedelta(minutes=1))
    await converse(hass, loaded_entry, "Thanks", "c")
    after_reload = sent(azure, 3)
    assert notes_in(after_reload) == [at]
    assert history_through(after_reload, at) == history_through(resumed, at)
    window = await stored_window(hass, hass_storage, loaded_entry, "c")
    assert [sorted(m.get("tags", [])) for m in window].count([RESUMED]) == 1


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_pause_into_another_day_names_it(
    hass: HomeAssistant,
    berlin: FrozenDateTimeFactory,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """The note tells the home's local time, and the day when the pause crossed midnight."""
    await converse(hass, loaded_entry, "Good night", "c", device_id="sat-1")
    berlin.tick(timedelta(hours=20))
    await converse(hass, loaded_entry, "Good morning", "c", device_id="sat-1")
    messages = sent(azure, 1)
    (at,) = notes_in(messages)
    assert messages[at]["content"] == note("20 hours later, Wednesday 2025-06-04, 05:05")
    assert messages[at + 1 :] == [
        clock("05:05, Wednesday 4 June 2025"),
        {"role": "user", "content": "Good morning"},
    ]


async def test_command_answered_locally_after_a_pause_notes_it_too(
    hass: HomeAssistant,
    berlin: FrozenDateTimeFactory,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """A local command after a pause comes after the note; the next request carries both."""
    hass.states.async_set("light.kitchen", "off", {"friendly_name": "Kitchen"})
    async_mock_service(hass, "light", "turn_on")
    azure.queue(Reply(text="It is 19 degrees."))
    await converse(hass, loaded_entry, "How warm is it in the garden?", "c")
    berlin.tick(timedelta(hours=3))
    local = await converse(hass, loaded_entry, "turn on the kitchen", "c")
    assert local.response.response_type is intent.IntentResponseType.ACTION_DONE
    berlin.tick(timedelta(minutes=1))
    await converse(hass, loaded_entry, "Is it warmer now?", "c")
    messages = sent(azure, 1)
    (at,) = notes_in(messages)
    assert messages[at - 1] == {"role": "assistant", "content": "It is 19 degrees."}
    assert messages[at]["content"] == note("3 hours later, 12:05")
    assert messages[at + 1] == {"role": "user", "content": "turn on the kitchen"}
    assert messages[-1] == {"role": "user", "content": "Is it warmer now?"}


@pytest.mark.parametrize(
    ("answer", "language", "asks"),
    [
        ("Shall I turn on the kitchen light?", "en", True),
        ("Shall I turn it on? 💡", "en", True),
        ("**Which room do you mean?**", "en", True),
        ('Did you mean the lamp called "Reading"?', "en", True),
        ("Do you mean the lamp (the one by the sofa)?", "en", True),
        ("Shall I? (Yes or no.)", "en", True),
        ("Don't you want it warmer?", "en", True),
        ("The kitchen light is on.", "en", False),
        ("Is it on? Yes, it is.", "en", False),
        ("You did what?!", "en", False),
        ("", "en", False),
        ('You asked "Is the kitchen light on?"', "en", False),
        ('"Is the kitchen light on?" is what you asked.', "en", False),
        ("I found a note (is it yours?)", "en", False),
        ("The film is called [What now?]", "en", False),
        ("¿Quieres que encienda la luz?", "es", True),
        ("Dijiste «¿Está encendida la luz?»", "es", False),
        ("Voulez-vous que j'allume la cuisine ?", "fr", True),
        ("Vous avez demandé « Est-ce allumé ? »", "fr", False),
        ("Soll ich das Licht einschalten?", "de", True),
        ("„Ist das Licht an?“, hast du gefragt.", "de", False),
        ("Du fragtest „Ist das Licht an?”", "de", False),
        ("»Er lyset tændt?«", "da", False),
        ("要我打开厨房的灯吗？", "zh-Hans", True),
        ("你问：「厨房的灯开着吗？」", "zh-Hans", False),
        ("キッチンの電気をつけますか？", "ja", True),
        ("هل تريد أن أشغل ضوء المطبخ؟", "ar", True),
        ("آیا چراغ آشپزخانه را روشن کنم؟", "fa", True),
        ("کیا میں باورچی خانے کی روشنی جلا دوں؟", "ur", True),
        ("ወጥ ቤቱን መብራት ላብራ፧", "am", True),
        ("Θέλετε να ανάψω το φως της κουζίνας;", "el", True),
        ("Θέλετε να ανάψω το φως της κουζίνας;", "el-GR", True),
        ("Θέλετε να ανάψω το φως της κουζίνας\u037e", "el", True),
        ("Είπατε «Είναι αναμμένο;»", "el", False),
        ("The kitchen light is on;", "en", False),
        ("La luz está encendida;", "es", False),
        ("Միացնե՞մ խոհանոցի լույսը։", "hy", True),
        ("Միացնե՞մ խոհանոցի լույսը", "hy", True),
        ("Խոհանոցի լույսը միացված է։", "hy", False),
        ("Դուք հարցրիք «Միացվա՞ծ է»։", "hy", False),
        ("Միացվա՞ծ է։ Այո, միացված է։", "hy", False),
        ("Хотите, чтобы я включил свет?", "ru", True),
        ("האם להדליק את האור במטבח?", "he", True),
    ],
)
def test_question_rule(answer: str, language: str, asks: bool) -> None:
    """The answer's last question mark ends it, in the language's marks, and is not quoted."""
    assert asks_user(answer, language) is asks


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
@pytest.mark.parametrize(
    ("language", "answer"),
    [
        ("ar", "هل تريد أن أشغل ضوء المطبخ؟"),
        ("hy", "Միացնե՞մ խոհանոցի լույսը։"),
        ("el", "Θέλετε να ανάψω το φως της κουζίνας\u037e"),
        ("en", "Shall I turn on the kitchen light? 💡"),
    ],
)
async def test_answer_that_asks_keeps_listening(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub, language: str, answer: str
) -> None:
    """An answer ending in the language's question keeps a satellite listening; a statement
    does not."""
    azure.queue(Reply(text=answer), Reply(text="Done."))
    result = await say(hass, loaded_entry, "It is dark in the kitchen", "c", language=language)
    assert speech(result) == answer
    assert result.continue_conversation is True
    result = await say(hass, loaded_entry, "Yes", "c", language=language)
    assert result.continue_conversation is False


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
@pytest.mark.parametrize(
    ("language", "quoted", "asked"),
    [
        ("ar", "سألتني «هل أشغل ضوء المطبخ؟»", "هل أشغل ضوء المطبخ؟"),
        ("hy", "Դուք հարցրիք «Միացվա՞ծ է»։", "Միացվա՞ծ է։"),
        ("en", "I found a note (is it yours?)", "Is it yours? 🙂"),
    ],
)
async def test_answer_that_quotes_a_question_stops_listening(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    language: str,
    quoted: str,
    asked: str,
) -> None:
    """A question inside quotes or brackets is quoted, not asked; the same question asked is."""
    azure.queue(Reply(text=quoted), Reply(text=asked))
    result = await say(hass, loaded_entry, "What did I say?", "c", language=language)
    assert speech(result) == quoted
    assert result.continue_conversation is False
    result = await say(hass, loaded_entry, "And now?", "c", language=language)
    assert speech(result) == asked
    assert result.continue_conversation is True


@pytest.mark.parametrize(
    "agent_options", [{**LLM_ONLY, CONF_EARLY_TIMEOUT: 0.2, CONF_REQUEST_TIMEOUT: 5}]
)
async def test_early_answer_never_keeps_listening(
    hass: HomeAssistant,
    hass_storage: dict[str, Any],
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """'Still working on it' ends the exchange even when the late answer asks; a prompt
    answer with the same question keeps the satellite listening."""
    question = "هل تريد أن أشغل ضوء المطبخ؟"
    azure.queue(Reply(text=question, delay=0.6), Reply(text=question))
    early = await say(hass, loaded_entry, "الجو مظلم في المطبخ", "c", language="ar")
    assert "still working" in speech(early)
    assert early.continue_conversation is False
    await hass.async_block_till_done(wait_background_tasks=True)
    assert (await stored_window(hass, hass_storage, loaded_entry, "c"))[-1]["content"] == question

    prompt = await say(hass, loaded_entry, "الجو مظلم في المطبخ", "c", language="ar")
    assert speech(prompt) == question
    assert prompt.continue_conversation is True


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
@pytest.mark.parametrize(
    "answer", ["Done; the kitchen light is on;", 'You asked me "is it raining?"']
)
async def test_no_listening_for_what_only_looks_like_a_question(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub, answer: str
) -> None:
    """A final ';' outside Greek, or a quoted question, does not keep a satellite listening
    (Home Assistant's own chat-log reading would say it does)."""
    azure.queue(Reply(text=answer))
    result = await say(hass, loaded_entry, "Status?", "c", language="en")
    assert speech(result) == answer
    assert result.continue_conversation is False
