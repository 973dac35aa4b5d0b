"""The agent end to end: Assist -> our entity -> openai SDK -> HTTP -> the stand-in."""

from datetime import timedelta
import logging
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components import persistent_notification
from homeassistant.config_entries import SOURCE_REAUTH
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_mock_service

from custom_components.azure_openai_memory.const import (
    API_MODE_RESPONSES,
    API_STYLE_DEPLOYMENT,
    API_STYLE_V1,
    CONF_API_MODE,
    CONF_EARLY_TIMEOUT,
    CONF_REASONING_EFFORT,
    CONF_REQUEST_TIMEOUT,
    CONF_SLIDING_WINDOW_MAX_TOKENS,
    DOMAIN,
)

from ..azure_stub import DEFAULT_KEY, AzureStub, Reply, ToolCall
from ..conftest import (
    CLOCK_NOTE,
    LLM_ONLY,
    NO_TOOLS,
    assist_tool,
    converse,
    exception_text,
    speech,
    statistics,
    stored_window,
    window_stats,
)


def chat_calls(azure: AzureStub) -> list[Any]:
    return azure.calls("/chat/completions")


@pytest.fixture
def kitchen_light(hass: HomeAssistant) -> list[Any]:
    """An exposed light and the service calls made to it."""
    hass.states.async_set("light.kitchen", "off", {"friendly_name": "Kitchen"})
    return async_mock_service(hass, "light", "turn_on")


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
@pytest.mark.parametrize("api_style", [API_STYLE_V1, API_STYLE_DEPLOYMENT])
async def test_llm_turn_streams_and_is_remembered(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    api_style: str,
    hass_storage: dict[str, Any],
) -> None:
    """A sentence HA does not understand goes to Azure; the turn lands in the window."""
    result = await converse(hass, loaded_entry, "What rhymes with orange?", "conv-1")
    assert speech(result) == "You said: What rhymes with orange?"
    (call,) = chat_calls(azure)
    if api_style == API_STYLE_V1:
        assert call.path == "/openai/v1/chat/completions"
    else:
        assert call.path == "/openai/deployments/gpt-4o-mini/chat/completions"
        assert call.query == {"api-version": "2025-04-01-preview"}
    body = call.body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 1500
    assert body["temperature"] == 1.0
    # No Home Assistant API: the memory tools only (memories in conversations is on).
    assert [tool["function"]["name"] for tool in body["tools"]] == [
        "forget",
        "past_talk",
        "recall",
        "remember",
    ]
    assert body["messages"][0]["role"] == "system"
    assert body["messages"][-1] == {"role": "user", "content": "What rhymes with orange?"}

    messages = await stored_window(hass, hass_storage, loaded_entry, "conv-1")
    # The window holds the conversation only; the prompt is rebuilt every turn.
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "What rhymes with orange?"),
        ("assistant", "You said: What rhymes with orange?"),
    ]
    stats = await statistics(hass, loaded_entry)
    # Usage comes in the last chunk, after a delta-less content-filter annotation.
    assert (stats["tokens_in"], stats["tokens_out"]) == (12, 7)
    assert (stats["turns"], stats["llm_turns"], stats["local_turns"]) == (1, 1, 0)


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_window_is_what_the_model_sees(
    hass: HomeAssistant,
    clock: FrozenDateTimeFactory,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """The second turn carries the first, from our window rather than HA's chat log."""
    await converse(hass, loaded_entry, "My name is Ada", "c")
    await converse(hass, loaded_entry, "What is my name?", "c")
    second = chat_calls(azure)[1].body["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user", "user"]
    assert [m["content"] for m in second[1:]] == [
        "My name is Ada",
        "You said: My name is Ada",
        CLOCK_NOTE,
        "What is my name?",
    ]


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_new_conversation_id_from_same_device_continues(
    hass: HomeAssistant,
    clock: FrozenDateTimeFactory,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """HA drops its chat log after idle minutes; a follow-up still knows what was asked."""
    await converse(hass, loaded_entry, "What is 6 times 7?", "first", device_id="sat-1")
    await converse(hass, loaded_entry, "What did I just ask?", "second", device_id="sat-1")
    second = chat_calls(azure)[1].body["messages"]
    assert second[1] == {"role": "user", "content": "What is 6 times 7?"}
    await converse(hass, loaded_entry, "Tell me a joke", "third", device_id="sat-2")
    third = chat_calls(azure)[2].body["messages"]
    assert third[1:] == [
        {"role": "user", "content": CLOCK_NOTE},
        {"role": "user", "content": "Tell me a joke"},
    ]


async def test_local_intent_costs_no_request(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    kitchen_light: list[Any],
    hass_storage: dict[str, Any],
) -> None:
    """'Turn on the kitchen' is HA's own business: answered with zero HTTP requests."""
    requests_before = len(azure.requests)
    result = await converse(hass, loaded_entry, "turn on the kitchen", "c")
    assert result.response.response_type is intent.IntentResponseType.ACTION_DONE
    assert len(kitchen_light) == 1
    assert len(azure.requests) == requests_before
    stats = await statistics(hass, loaded_entry)
    assert (stats["local_turns"], stats["llm_turns"]) == (1, 0)
    window = await stored_window(hass, hass_storage, loaded_entry, "c")
    assert [(m["role"], "local" in m["tags"]) for m in window] == [
        ("user", True),
        ("assistant", True),
    ]


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_tool_round_trip(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    kitchen_light: list[Any],
    hass_storage: dict[str, Any],
) -> None:
    """The model calls HA's tool; the call and its result go back and into the window."""
    azure.queue(
        Reply(tool_calls=[ToolCall(assist_tool("HassTurnOn"), {"name": "Kitchen"})]),
        Reply(text="The kitchen light is on."),
    )
    result = await converse(hass, loaded_entry, "It is dark in the kitchen", "c")
    assert speech(result) == "The kitchen light is on."
    assert len(kitchen_light) == 1
    first, second = chat_calls(azure)
    assert any(t["function"]["name"] == assist_tool("HassTurnOn") for t in first.body["tools"])
    sent = second.body["messages"]
    assert sent[-2]["tool_calls"][0]["function"]["name"] == assist_tool("HassTurnOn")
    assert sent[-1]["role"] == "tool"
    assert sent[-1]["tool_call_id"] == "call_0"
    window = await stored_window(hass, hass_storage, loaded_entry, "c")
    assert [m["role"] for m in window] == ["user", "assistant", "tool", "assistant"]
    assert window[1]["tool_calls"][0]["name"] == assist_tool("HassTurnOn")
    assert window[2]["tool_call_id"] == window[1]["tool_calls"][0]["id"]


@pytest.mark.parametrize(
    "agent_options", [{**NO_TOOLS, CONF_API_MODE: API_MODE_RESPONSES, CONF_LLM_HASS_API: "assist"}]
)
@pytest.mark.parametrize("api_style", [API_STYLE_V1, API_STYLE_DEPLOYMENT])
async def test_responses_api_with_tools(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    kitchen_light: list[Any],
    api_style: str,
) -> None:
    """The Responses API streams text and function calls the same way."""
    azure.queue(
        Reply(tool_calls=[ToolCall(assist_tool("HassTurnOn"), {"name": "Kitchen"})]),
        Reply(text="Done, it is on."),
    )
    result = await converse(hass, loaded_entry, "Brighten the kitchen please", "c")
    assert speech(result) == "Done, it is on."
    first, second = azure.calls("/responses")
    if api_style == API_STYLE_DEPLOYMENT:
        assert first.path == "/openai/responses"
        assert first.query == {"api-version": "2025-04-01-preview"}
    else:
        assert first.path == "/openai/v1/responses"
    assert first.body["store"] is False
    assert first.body["input"][0]["role"] == "developer"
    assert first.body["tools"][0]["type"] == "function"
    items = second.body["input"]
    assert items[-2]["type"] == "function_call"
    assert items[-1] == {
        "type": "function_call_output",
        "call_id": "call_0",
        "output": items[-1]["output"],
    }
    assert len(kitchen_light) == 1
    assert (await statistics(hass, loaded_entry))["tokens_in"] == 24


@pytest.mark.parametrize("agent_options", [{**NO_TOOLS, CONF_REASONING_EFFORT: "low"}])
async def test_reasoning_model_gets_only_what_it_accepts(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """No temperature, top_p or max_tokens; max_completion_tokens and reasoning_effort."""
    await converse(hass, loaded_entry, "Think hard", "c")
    body = chat_calls(azure)[0].body
    assert body["max_completion_tokens"] == 1500
    assert body["reasoning_effort"] == "low"
    for refused in ("temperature", "top_p", "max_tokens"):
        assert refused not in body


ERROR_CASES = [
    pytest.param(
        [Reply.failure(401, "401", "Access denied due to invalid subscription key")],
        "invalid_auth",
        id="401",
    ),
    pytest.param(
        [Reply.failure(404, "DeploymentNotFound", "The API deployment does not exist")],
        "not_found",
        id="404",
    ),
    pytest.param([Reply.rate_limited("0.01")] * 3, "rate_limited", id="429"),
    pytest.param(
        [Reply.failure(500, "500", "Internal error", headers={"retry-after-ms": "5"})] * 3,
        "server_error",
        id="500",
    ),
    pytest.param([Reply.prompt_filtered()], "content_filter", id="content_filter"),
    pytest.param(
        [Reply(text="partial", finish_reason="content_filter")],
        "content_filter",
        id="filtered_completion",
    ),
    pytest.param(
        [Reply(tool_calls=[ToolCall(assist_tool("HassTurnOn"), '{"name": "Kit')])],
        "malformed_tool_arguments",
        id="malformed_tool_args",
    ),
    pytest.param(
        [Reply(text="one two three four five six", cut_after_chunks=4)],
        "stream_interrupted",
        id="stream_cut",
    ),
]


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
@pytest.mark.parametrize(("replies", "kind"), ERROR_CASES)
async def test_failures_are_spoken_and_leave_window_unchanged(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    caplog: pytest.LogCaptureFixture,
    replies: list[Reply],
    kind: str,
    hass_storage: dict[str, Any],
) -> None:
    """Each failure: a friendly answer, counted by kind, no key in the log, nothing recorded."""
    await converse(hass, loaded_entry, "Remember this first turn", "c")
    before = await stored_window(hass, hass_storage, loaded_entry, "c")
    assert len(before) == 2
    azure.queue(*replies)
    with caplog.at_level(logging.DEBUG):
        result = await converse(hass, loaded_entry, "And now this?", "c")
    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert speech(result) == exception_text(f"api_{kind}")
    assert await stored_window(hass, hass_storage, loaded_entry, "c") == before
    assert (await statistics(hass, loaded_entry))["errors"] == {kind: 1}
    if kind in ("rate_limited", "server_error"):
        # The SDK retried twice, honouring Retry-After, before giving up.
        assert len(chat_calls(azure)) == 1 + 3
    assert DEFAULT_KEY not in caplog.text
    assert f"failed ({kind})" in caplog.text
    if kind == "invalid_auth":
        await hass.async_block_till_done()
        flows = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
        assert [f["context"]["source"] for f in flows] == [SOURCE_REAUTH]


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_unreachable_azure_is_spoken(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """Azure going away mid-session (the SDK retries, then gives up): 'can't reach'."""
    await azure.stop()
    result = await converse(hass, loaded_entry, "Anyone there?", "c")
    assert speech(result) == exception_text("api_cannot_connect")
    assert (await statistics(hass, loaded_entry))["errors"] == {"cannot_connect": 1}
    assert await window_stats(hass, loaded_entry, "c") is None


@pytest.mark.parametrize(
    "agent_options", [{**LLM_ONLY, CONF_EARLY_TIMEOUT: 0, CONF_REQUEST_TIMEOUT: 0.3}]
)
async def test_request_timeout(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """An answer later than the request timeout is given up; nothing half recorded."""
    azure.queue(Reply(text="too late", delay=1.0), Reply(text="too late", delay=1.0))
    result = await converse(hass, loaded_entry, "Slow question", "c")
    assert speech(result) == exception_text("api_timeout")
    assert (await statistics(hass, loaded_entry))["errors"] == {"timeout": 1}
    assert await window_stats(hass, loaded_entry, "c") is None


@pytest.mark.parametrize(
    "agent_options", [{**LLM_ONLY, CONF_EARLY_TIMEOUT: 0.2, CONF_REQUEST_TIMEOUT: 5}]
)
async def test_early_timeout_then_late_answer(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    hass_storage: dict[str, Any],
) -> None:
    """The user hears 'still working' at once; the late answer is remembered, and a
    notification (which every user reads: no words of the turn) says it is ready."""
    azure.queue(Reply(text="The answer is 42.", delay=0.6))
    result = await converse(hass, loaded_entry, "What is the answer?", "c")
    assert speech(result) == exception_text("still_working")
    assert result.response.response_type is intent.IntentResponseType.ACTION_DONE
    assert (await statistics(hass, loaded_entry))["early_timeouts"] == 1
    assert await window_stats(hass, loaded_entry, "c") is None

    await hass.async_block_till_done(wait_background_tasks=True)
    window = await stored_window(hass, hass_storage, loaded_entry, "c")
    assert [m["content"] for m in window] == ["What is the answer?", "The answer is 42."]
    assert (await statistics(hass, loaded_entry))["late_answers"] == 1
    notifications = persistent_notification._async_get_or_create_notifications(hass)
    (note,) = notifications.values()
    assert note["message"] == exception_text("late_answer_ready")
    assert "What is the answer?" not in note["title"]
    assert "The answer is" not in note["title"]

    await converse(hass, loaded_entry, "What was the answer?", "c")
    sent = chat_calls(azure)[-1].body["messages"]
    assert {"role": "assistant", "content": "The answer is 42."} in sent


@pytest.mark.parametrize("agent_options", [{**NO_TOOLS, CONF_SLIDING_WINDOW_MAX_TOKENS: 120}])
async def test_window_evicts_oldest_turns(
    hass: HomeAssistant,
    clock: FrozenDateTimeFactory,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    hass_storage: dict[str, Any],
) -> None:
    """A small window keeps the newest turns and counts what it forgot."""
    for i in range(8):
        await converse(hass, loaded_entry, f"Question number {i} about the garden", "c")
    stats = await window_stats(hass, loaded_entry, "c")
    assert stats is not None
    assert stats["current_tokens"] <= 120
    # A question costs 12 tokens, its echo 15: 114 tokens of the newest messages fit.
    window = await stored_window(hass, hass_storage, loaded_entry, "c")
    contents = [m["content"] for m in window]
    assert contents == [
        "You said: Question number 3 about the garden",
        *[
            text
            for i in range(4, 8)
            for text in (
                f"Question number {i} about the garden",
                f"You said: Question number {i} about the garden",
            )
        ],
    ]
    assert (stats["message_count"], stats["evicted_count"]) == (9, 7)
    # The last request carried the window as it was before that turn, the clock note, then
    # the question.
    sent = [m["content"] for m in chat_calls(azure)[-1].body["messages"][1:]]
    assert sent == [
        "You said: Question number 2 about the garden",
        "Question number 3 about the garden",
        *contents[:-2],
        CLOCK_NOTE,
        contents[-2],
    ]


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_windows_survive_reload(
    hass: HomeAssistant,
    clock: FrozenDateTimeFactory,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    hass_storage: dict[str, Any],
) -> None:
    """Unload writes the windows; set-up reads them back."""
    await converse(hass, loaded_entry, "Keep this in mind", "c")
    assert await hass.config_entries.async_reload(loaded_entry.entry_id)
    await hass.async_block_till_done()
    key = f"{DOMAIN}.windows.{loaded_entry.entry_id}"
    assert key in hass_storage
    stats = await window_stats(hass, loaded_entry, "c")
    assert stats is not None
    assert stats["message_count"] == 2
    # What the reloaded agent read back is what the next request carries.
    await converse(hass, loaded_entry, "What did I say?", "c")
    sent = chat_calls(azure)[-1].body["messages"][1:]
    assert [m["content"] for m in sent] == [
        "Keep this in mind",
        "You said: Keep this in mind",
        CLOCK_NOTE,
        "What did I say?",
    ]


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
@pytest.mark.parametrize(
    ("fetched_hours", "expected"),
    [(72, 'coverage="full"'), (24, "Not fetched yet")],
    ids=["full", "partial"],
)
async def test_time_series_in_prompt(
    hass: HomeAssistant,
    clock: FrozenDateTimeFactory,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    fetched_hours: int,
    expected: str,
    hass_storage: dict[str, Any],
) -> None:
    """A request naming a range gets the stored series; partial coverage names the gaps."""
    now = dt_util.utcnow()
    await hass.services.async_call(
        DOMAIN,
        "timeseries_merge",
        {
            "key": "kudos_givers_timeseries",
            "entries": [
                {
                    "id": "k1",
                    "athlete_name": "Alice",
                    "timestamp": (now - timedelta(hours=5)).isoformat(),
                },
                {
                    "id": "k2",
                    "athlete_name": "Bob",
                    "timestamp": (now - timedelta(hours=20)).isoformat(),
                },
            ],
            "window_start": (now - timedelta(hours=fetched_hours)).isoformat(),
            "window_end": (now + timedelta(hours=1)).isoformat(),
        },
        blocking=True,
    )
    result = await converse(hass, loaded_entry, "Who gave me kudos in the last 2 days?", "c")
    assert speech(result).startswith("You said"), speech(result)
    system, note, data, question = chat_calls(azure)[0].body["messages"]
    # Third-party data never enters the system prompt: it is a user message marked as data.
    assert "kudos" not in system["content"]
    assert note == {"role": "user", "content": CLOCK_NOTE}
    assert data["role"] == "user"
    assert data["content"].startswith("Reference data from Home Assistant's storage")
    assert '<data source="timeseries" key="kudos_givers_timeseries"' in data["content"]
    assert expected in data["content"]
    assert '"athlete_name":"Alice"' in data["content"]
    assert '"athlete_name":"Bob"' in data["content"]
    assert question == {"role": "user", "content": "Who gave me kudos in the last 2 days?"}
    # The data is not part of the conversation: the window holds the exchange only.
    window = await stored_window(hass, hass_storage, loaded_entry, "c")
    assert [m["content"] for m in window] == [
        "Who gave me kudos in the last 2 days?",
        "You said: Who gave me kudos in the last 2 days?",
    ]

    await converse(hass, loaded_entry, "Tell me a story about the last 2 days", "c2")
    assert chat_calls(azure)[1].body["messages"][1:] == [
        {"role": "user", "content": CLOCK_NOTE},
        {"role": "user", "content": "Tell me a story about the last 2 days"},
    ]


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_tool_rounds_are_capped(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    kitchen_light: list[Any],
    hass_storage: dict[str, Any],
) -> None:
    """A model that keeps calling tools is stopped after 10 rounds, with a spoken answer."""
    azure.queue(
        *[Reply(tool_calls=[ToolCall(assist_tool("HassTurnOn"), {"name": "Kitchen"})])] * 12
    )
    result = await converse(hass, loaded_entry, "Keep the kitchen bright", "c")
    assert len(chat_calls(azure)) == 10
    assert len(kitchen_light) == 10
    assert speech(result) == exception_text("no_answer")
    roles = [m["role"] for m in await stored_window(hass, hass_storage, loaded_entry, "c")]
    assert roles.count("tool") == roles.count("assistant") == 10  # every call kept its result
