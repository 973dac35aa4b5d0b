"""Config flow, reauth, reconfigure, options and agent subentries, against the stand-in."""

from collections.abc import AsyncIterator
from datetime import timedelta
import json
from pathlib import Path
from typing import Any

from homeassistant import config_entries
from homeassistant.const import CONF_API_KEY, CONF_LLM_HASS_API, CONF_NAME
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.compat import (
    HAS_AI_TASK,
    LLM_API_ACCEPTS_LIST,
    LLM_API_NONE,
    llm_api_option,
)
from custom_components.azure_openai_memory.const import (
    API_MODE_CHAT,
    API_MODE_RESPONSES,
    API_STYLE_DEPLOYMENT,
    API_STYLE_V1,
    CONF_API_MODE,
    CONF_API_STYLE,
    CONF_API_VERSION,
    CONF_CONTEXT_LIMIT,
    CONF_CONTINUATION_MINUTES,
    CONF_CONVERSATION_IDLE_MINUTES,
    CONF_DEPLOYMENT,
    CONF_EARLY_TIMEOUT,
    CONF_ENDPOINT,
    CONF_HISTORY_RECORDING,
    CONF_HISTORY_RETENTION_DAYS,
    CONF_MAX_CONVERSATIONS,
    CONF_MAX_TOKENS,
    CONF_REASONING_EFFORT,
    CONF_REQUEST_TIMEOUT,
    CONF_SUMMARIES,
    CONF_SUMMARY_CONTEXT_TOKENS,
    CONF_SUMMARY_GROUP_MODE,
    CONF_SUMMARY_TIME,
    CONF_TIMESERIES_CONTEXT,
    CONF_TIMESERIES_KEEP_DAYS,
    CONF_TIMESERIES_MAX_ENTRIES,
    DEFAULT_AGENT_NAME,
    DOMAIN,
    REASONING_EFFORT_OFF,
    RECOMMENDED_AGENT,
    RECOMMENDED_AI_TASK,
    RECOMMENDED_MEMORY_OPTIONS,
    RECOMMENDED_OPTIONS,
    SUBENTRY_AGENT,
    SUBENTRY_AI_TASK,
)
from custom_components.azure_openai_memory.data import history_of, series_of
from custom_components.azure_openai_memory.lib.series.store import SeriesSettings

from .azure_stub import DEFAULT_KEY, AzureStub, Reply
from .conftest import options_shown
from .options_form import filled, shown, submit_options

STRINGS = json.loads(
    (Path(__file__).parents[1] / "custom_components" / DOMAIN / "strings.json").read_text()
)


def _user_input(stub: AzureStub, **overrides: Any) -> dict[str, Any]:
    return {
        CONF_ENDPOINT: stub.endpoint + "/",
        CONF_API_KEY: DEFAULT_KEY,
        CONF_API_STYLE: API_STYLE_V1,
        CONF_DEPLOYMENT: "gpt-4o-mini",
        **overrides,
    }


async def _start_user_flow(hass: HomeAssistant) -> dict[str, Any]:
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_USER}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "user"
    return result


async def test_user_flow_v1_creates_entry_and_first_agent(
    hass: HomeAssistant, azure: AzureStub
) -> None:
    """The v1 style proves the key with GET /openai/v1/models and creates one agent."""
    result = await _start_user_flow(hass)
    result = await hass.config_entries.flow.async_configure(result["flow_id"], _user_input(azure))
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == "Azure OpenAI " + azure.endpoint.removeprefix("http://")
    assert result["data"] == {
        CONF_ENDPOINT: azure.endpoint,
        CONF_API_KEY: DEFAULT_KEY,
        CONF_API_STYLE: API_STYLE_V1,
    }
    assert result["options"] == RECOMMENDED_OPTIONS
    assert CONF_TIMESERIES_MAX_ENTRIES not in result["options"]  # the installation's
    entry = hass.config_entries.async_entries(DOMAIN)[0]
    assert (entry.version, entry.minor_version) == (1, 3)
    assert entry.unique_id == azure.endpoint
    (agent,) = entry.subentries.values()
    assert agent.subentry_type == SUBENTRY_AGENT
    assert agent.data[CONF_DEPLOYMENT] == "gpt-4o-mini"
    assert agent.data[CONF_REQUEST_TIMEOUT] == 30.0
    models_call = azure.requests[0]
    assert (models_call.method, models_call.path) == ("GET", "/openai/v1/models")
    assert models_call.query == {}
    assert models_call.headers["authorization"] == f"Bearer {DEFAULT_KEY}"
    probe = azure.requests[1]
    assert probe.path == "/openai/v1/chat/completions"
    assert probe.body is not None
    assert probe.body["model"] == "gpt-4o-mini"
    assert agent.data[CONF_REASONING_EFFORT] == REASONING_EFFORT_OFF


@pytest.mark.parametrize(
    ("reply", "errors"),
    [
        (None, {CONF_DEPLOYMENT: "deployment_not_found"}),
        (
            Reply.failure(
                400, "OperationNotSupported", "The chatCompletion operation does not work"
            ),
            {CONF_DEPLOYMENT: "deployment_rejected"},
        ),
        (Reply.failure(500, "500", "boom"), {"base": "unknown"}),
    ],
    ids=["unknown_deployment", "not_a_chat_model", "server_error"],
)
async def test_user_flow_checks_first_deployment(
    hass: HomeAssistant, azure: AzureStub, reply: Reply | None, errors: dict[str, str]
) -> None:
    """The first agent's deployment is proven before the entry exists; fixing it recovers."""
    result = await _start_user_flow(hass)
    if reply is None:
        user_input = _user_input(azure, **{CONF_DEPLOYMENT: "missing"})
    else:
        # A rejected classic probe is followed by a reasoning-model probe.
        azure.queue(*[reply] * (2 if reply.status == 400 else 1))
        user_input = _user_input(azure)
    result = await hass.config_entries.flow.async_configure(result["flow_id"], user_input)
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == errors
    assert hass.config_entries.async_entries(DOMAIN) == []

    result = await hass.config_entries.flow.async_configure(result["flow_id"], _user_input(azure))
    assert result["type"] is FlowResultType.CREATE_ENTRY
    (agent,) = hass.config_entries.async_entries(DOMAIN)[0].subentries.values()
    assert agent.data[CONF_DEPLOYMENT] == "gpt-4o-mini"


async def test_user_flow_first_agent_on_a_reasoning_model(
    hass: HomeAssistant, azure: AzureStub
) -> None:
    """A deployment refusing max_tokens but answering as a reasoning model gets an effort."""
    azure.queue(
        Reply.failure(
            400,
            "unsupported_parameter",
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
        )
    )
    result = await _start_user_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], _user_input(azure, **{CONF_DEPLOYMENT: "o4-mini"})
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    (agent,) = hass.config_entries.async_entries(DOMAIN)[0].subentries.values()
    assert agent.data[CONF_DEPLOYMENT] == "o4-mini"
    assert agent.data[CONF_REASONING_EFFORT] == "medium"
    classic, reasoning = azure.calls("/chat/completions")
    assert classic.body is not None
    assert reasoning.body is not None
    assert "max_tokens" in classic.body
    assert reasoning.body["max_completion_tokens"] == 16


async def test_user_flow_deployment_style_sends_api_version(
    hass: HomeAssistant, azure: AzureStub
) -> None:
    """Deployment URLs carry the api-version on the proving request."""
    result = await _start_user_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        _user_input(
            azure, **{CONF_API_STYLE: API_STYLE_DEPLOYMENT, CONF_API_VERSION: "2024-10-21"}
        ),
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"][CONF_API_VERSION] == "2024-10-21"
    call = azure.requests[0]
    assert call.path == "/openai/models"
    assert call.query == {"api-version": "2024-10-21"}
    assert call.headers["api-key"] == DEFAULT_KEY


@pytest.mark.parametrize(
    ("overrides", "errors"),
    [
        ({CONF_API_KEY: "wrong"}, {"base": "invalid_auth"}),
        ({CONF_ENDPOINT: "not a url"}, {CONF_ENDPOINT: "invalid_url"}),
        ({CONF_ENDPOINT: "ftp://example.com"}, {CONF_ENDPOINT: "invalid_url"}),
        ({CONF_ENDPOINT: "http://127.0.0.1:1"}, {"base": "cannot_connect"}),
        (
            {CONF_API_STYLE: API_STYLE_DEPLOYMENT, CONF_API_VERSION: "latest"},
            {CONF_API_VERSION: "invalid_api_version"},
        ),
        (
            {CONF_API_STYLE: API_STYLE_DEPLOYMENT, CONF_API_VERSION: "2099-01-01"},
            {CONF_API_VERSION: "invalid_api_version"},
        ),
        ({CONF_ENDPOINT: "{endpoint}/elsewhere"}, {"base": "endpoint_not_found"}),
    ],
    ids=[
        "wrong_key",
        "malformed",
        "wrong_scheme",
        "unreachable",
        "bad_version",
        "unknown_version",
        "wrong_path",
    ],
)
async def test_user_flow_errors_then_recovers(
    hass: HomeAssistant, azure: AzureStub, overrides: dict[str, Any], errors: dict[str, str]
) -> None:
    """Each failure has its own message, and fixing the input creates the entry."""
    azure.refused_api_versions = {"2099-01-01"}
    if CONF_ENDPOINT in overrides:
        overrides[CONF_ENDPOINT] = overrides[CONF_ENDPOINT].format(endpoint=azure.endpoint)
    result = await _start_user_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], _user_input(azure, **overrides)
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == errors
    assert hass.config_entries.async_entries(DOMAIN) == []

    result = await hass.config_entries.flow.async_configure(result["flow_id"], _user_input(azure))
    assert result["type"] is FlowResultType.CREATE_ENTRY


async def timed_out_user_flow(
    hass: HomeAssistant, azure: AzureStub, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """The user flow's first step, against an endpoint slower than the check waits: the
    form again, with its own message."""
    monkeypatch.setattr(
        "custom_components.azure_openai_memory.azure.client.VALIDATION_TIMEOUT", 0.2
    )
    azure.models_delay = 1.0
    result = await _start_user_flow(hass)
    result = await hass.config_entries.flow.async_configure(result["flow_id"], _user_input(azure))
    assert result["errors"] == {"base": "timeout_connect"}
    return result


async def test_user_flow_timeout(
    hass: HomeAssistant, azure: AzureStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An endpoint that does not answer in time gets its own message."""
    await timed_out_user_flow(hass, azure, monkeypatch)


async def test_same_endpoint_cannot_be_added_twice(
    hass: HomeAssistant, config_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """The endpoint is the unique id, however it is spelled."""
    for spelling in (
        azure.endpoint.upper().replace("HTTP", "http") + "/",
        azure.endpoint + "/openai/v1/",
        azure.endpoint + "/openai",
    ):
        result = await _start_user_flow(hass)
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], _user_input(azure, **{CONF_ENDPOINT: spelling})
        )
        assert result["type"] is FlowResultType.ABORT
        assert result["reason"] == "already_configured"
    assert azure.requests == []


async def test_reauth_flow(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """A wrong new key is refused; the right one is stored and the entry reloads."""
    result = await loaded_entry.start_reauth_flow(hass)
    assert result["step_id"] == "reauth_confirm"
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_API_KEY: "still-wrong"}
    )
    assert result["errors"] == {"base": "invalid_auth"}

    azure.api_key = "new-key"
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_API_KEY: "new-key"}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reauth_successful"
    assert loaded_entry.data[CONF_API_KEY] == "new-key"
    await hass.async_block_till_done()
    assert loaded_entry.state is config_entries.ConfigEntryState.LOADED


async def test_reconfigure_changes_style_and_keeps_agents(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """Reconfigure switches to deployment URLs without touching the agents."""
    agents = dict(loaded_entry.subentries)
    result = await loaded_entry.start_reconfigure_flow(hass)
    assert result["step_id"] == "reconfigure"
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        {
            CONF_ENDPOINT: azure.endpoint,
            CONF_API_STYLE: API_STYLE_DEPLOYMENT,
            CONF_API_VERSION: "2025-04-01-preview",
        },
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reconfigure_successful"
    assert loaded_entry.data[CONF_API_STYLE] == API_STYLE_DEPLOYMENT
    assert loaded_entry.data[CONF_API_KEY] == DEFAULT_KEY
    assert dict(loaded_entry.subentries) == agents
    await hass.async_block_till_done()
    assert azure.requests[-1].query == {"api-version": "2025-04-01-preview"}


async def test_reconfigure_errors_and_duplicate(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """A bad URL is reported; another entry's endpoint is refused before any request."""
    elsewhere = azure.endpoint.replace("127.0.0.1", "localhost")
    MockConfigEntry(domain=DOMAIN, unique_id=elsewhere, data={}).add_to_hass(hass)
    result = await loaded_entry.start_reconfigure_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_ENDPOINT: "nope", CONF_API_STYLE: API_STYLE_V1}
    )
    assert result["errors"] == {CONF_ENDPOINT: "invalid_url"}
    requests_before = len(azure.requests)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_ENDPOINT: elsewhere + "/", CONF_API_STYLE: API_STYLE_V1}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "already_configured"
    assert len(azure.requests) == requests_before
    assert loaded_entry.data[CONF_ENDPOINT] == azure.endpoint


def _suggested(result: dict[str, Any]) -> dict[str, Any]:
    """What a form shows in its fields."""
    return {
        str(key): (key.description or {}).get("suggested_value")
        for key in result["data_schema"].schema
    }


# The form of an entry with the recommended options, in its sections: durations for the
# minutes, and the installation's settings as their stores hold them.
RECOMMENDED_FORM = {
    "conversations": {
        CONF_CONVERSATION_IDLE_MINUTES: {"days": 1, "hours": 0, "minutes": 0, "seconds": 0},
        CONF_MAX_CONVERSATIONS: 100,
        CONF_CONTINUATION_MINUTES: {"hours": 0, "minutes": 30, "seconds": 0},
    },
    "timeseries": {
        CONF_TIMESERIES_CONTEXT: True,
        CONF_TIMESERIES_MAX_ENTRIES: 10_000,
        CONF_TIMESERIES_KEEP_DAYS: 90.0,
    },
    "memories": {
        "embeddings_deployment": "",
        "memory_context": True,
        "memory_token_budget": 500,
        "archive_retention_days": 90,
        "high_confidence_threshold": 3,
        "max_memories_per_type": 10_000,
        "max_private_memories_per_type": 10_000,
        "relevance_score_threshold": 2,
    },
    "history": {CONF_HISTORY_RECORDING: True, CONF_HISTORY_RETENTION_DAYS: 90.0},
    "summaries": {
        CONF_SUMMARIES: True,
        CONF_SUMMARY_TIME: "03:30:00",
        CONF_SUMMARY_GROUP_MODE: "device",
        CONF_SUMMARY_CONTEXT_TOKENS: 400,
    },
    # No device mapped to a person yet: nothing to unmap is listed.
    "people": {"map_devices": None, "map_person": None},
}


async def merge(hass: HomeAssistant, count: int, start: int = 0) -> dict[str, Any]:
    """Merge entries start..count-1 into one series: what the service answers."""
    response = await hass.services.async_call(
        DOMAIN,
        "timeseries_merge",
        {
            "key": "meter",
            "entries": [
                {"id": f"e{i}", "timestamp": f"2025-01-01T00:{i // 60:02d}:{i % 60:02d}Z"}
                for i in range(start, count)
            ],
        },
        blocking=True,
        return_response=True,
    )
    assert response is not None
    return dict(response)


async def test_options_flow(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """The form comes in sections; options are saved flat, as whole numbers, and reload."""
    result = await hass.config_entries.options.async_init(loaded_entry.entry_id)
    assert result["type"] is FlowResultType.FORM
    assert shown(result) == RECOMMENDED_FORM
    before = len(azure.calls("/models"))
    result = await hass.config_entries.options.async_configure(
        result["flow_id"],
        filled(result, max_conversations=12.0, continuation_minutes={"minutes": 5}),
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    assert dict(loaded_entry.options) == {
        **RECOMMENDED_OPTIONS,
        **RECOMMENDED_MEMORY_OPTIONS,
        CONF_MAX_CONVERSATIONS: 12,
        CONF_CONTINUATION_MINUTES: 5,
    }
    assert isinstance(loaded_entry.options[CONF_MAX_CONVERSATIONS], int)
    assert len(azure.calls("/models")) == before + 1  # reloaded


@pytest.mark.parametrize(
    ("changes", "stored"),
    [
        ({CONF_CONVERSATION_IDLE_MINUTES: {"hours": 2}}, {CONF_CONVERSATION_IDLE_MINUTES: 120}),
        (
            {CONF_CONVERSATION_IDLE_MINUTES: {"days": 2, "hours": 1, "minutes": 5, "seconds": 0}},
            {CONF_CONVERSATION_IDLE_MINUTES: 2 * 1440 + 65},
        ),
        (
            {CONF_CONTINUATION_MINUTES: {"minutes": 1, "seconds": 30}},
            {CONF_CONTINUATION_MINUTES: 1.5},
        ),
        ({CONF_CONTINUATION_MINUTES: {"seconds": 0}}, {CONF_CONTINUATION_MINUTES: 0}),
    ],
    ids=["hours", "days", "seconds", "off"],
)
async def test_durations_are_stored_in_minutes(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    changes: dict[str, Any],
    stored: dict[str, Any],
) -> None:
    """A duration is stored as the number of minutes, and shown as that duration again."""
    result = await submit_options(hass, loaded_entry, **changes)
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    for key, minutes in stored.items():
        assert loaded_entry.options[key] == minutes
        assert type(loaded_entry.options[key]) is type(minutes)
    result = await hass.config_entries.options.async_init(loaded_entry.entry_id)
    again = shown(result)["conversations"]
    for key, duration in changes.items():
        assert timedelta(**again[key]) == timedelta(**duration)


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({CONF_CONVERSATION_IDLE_MINUTES: {"minutes": 4}}, "conversation_idle_out_of_range"),
        ({CONF_CONVERSATION_IDLE_MINUTES: {"days": 31}}, "conversation_idle_out_of_range"),
        ({CONF_CONTINUATION_MINUTES: {"hours": 24, "seconds": 1}}, "continuation_out_of_range"),
    ],
    ids=["idle_too_short", "idle_too_long", "continuation_too_long"],
)
async def test_durations_out_of_range_save_nothing(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, changes: dict[str, Any], error: str
) -> None:
    """A duration beyond its bounds is refused in its section; fixing it saves."""
    before = dict(loaded_entry.options)
    result = await hass.config_entries.options.async_init(loaded_entry.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], filled(result, **changes)
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {"conversations": error}
    assert error in STRINGS["options"]["error"]
    assert dict(loaded_entry.options) == before
    # Shown as submitted, so that the user fixes rather than retypes.
    for key, duration in changes.items():
        assert shown(result)["conversations"][key] == duration
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], filled(result, **{key: {"hours": 1} for key in changes})
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    assert {key: loaded_entry.options[key] for key in changes} == dict.fromkeys(changes, 60)


async def test_options_flow_series_settings_belong_to_the_installation(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """The series settings go to the series' store, shown the same in every entry, and
    changing only them reloads nothing."""
    other = MockConfigEntry(
        domain=DOMAIN,
        unique_id="https://other.openai.azure.com",
        data={},
        options=dict(RECOMMENDED_OPTIONS),
        minor_version=2,
    )
    other.add_to_hass(hass)
    # Saved once, so that the memory options are the entry's own.
    hass.config_entries.async_update_entry(
        loaded_entry, options={**RECOMMENDED_OPTIONS, **RECOMMENDED_MEMORY_OPTIONS}
    )
    await hass.async_block_till_done()
    before = len(azure.calls("/models"))
    result = await submit_options(
        hass,
        loaded_entry,
        timeseries_max_entries=500.0,
        timeseries_keep_days=30.0,
        history_retention_days=14.0,
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    assert series_of(hass).settings == SeriesSettings(500, 30.0)
    assert await history_of(hass).async_retention_days() == 14.0
    assert dict(loaded_entry.options) == {**RECOMMENDED_OPTIONS, **RECOMMENDED_MEMORY_OPTIONS}
    assert len(azure.calls("/models")) == before  # nothing of the entry changed

    result = await hass.config_entries.options.async_init(other.entry_id)
    form = shown(result)
    assert form["timeseries"][CONF_TIMESERIES_MAX_ENTRIES] == 500
    assert form["timeseries"][CONF_TIMESERIES_KEEP_DAYS] == 30.0
    assert form["history"][CONF_HISTORY_RETENTION_DAYS] == 14.0


async def test_the_flow_writes_no_store(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """The form only returns what changed (among the entry's options); the entry's update
    hands the home's settings to their stores, also for an entry that is not loaded (its
    resource unreachable), and takes them out of its options."""
    second = MockConfigEntry(
        domain=DOMAIN,
        unique_id="http://second.example",
        data=dict(loaded_entry.data),
        options=dict(RECOMMENDED_OPTIONS),
        minor_version=2,
    )
    second.add_to_hass(hass)
    assert second.state is config_entries.ConfigEntryState.NOT_LOADED
    result = await submit_options(hass, second, timeseries_max_entries=100.0)
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"] == {
        **RECOMMENDED_OPTIONS,
        **RECOMMENDED_MEMORY_OPTIONS,
        CONF_TIMESERIES_MAX_ENTRIES: 100,
    }
    await hass.async_block_till_done()
    assert second.state is config_entries.ConfigEntryState.NOT_LOADED
    assert dict(second.options) == {**RECOMMENDED_OPTIONS, **RECOMMENDED_MEMORY_OPTIONS}
    assert (await merge(hass, 150))["total_count"] == 100
    for entry in (second, loaded_entry):
        result = await hass.config_entries.options.async_init(entry.entry_id)
        assert shown(result)["timeseries"][CONF_TIMESERIES_MAX_ENTRIES] == 100
        hass.config_entries.options.async_abort(result["flow_id"])


STORED_OPTIONS = {
    CONF_CONVERSATION_IDLE_MINUTES: 90,
    CONF_MAX_CONVERSATIONS: 12,
    CONF_CONTINUATION_MINUTES: 2.5,
    CONF_TIMESERIES_CONTEXT: False,
    CONF_HISTORY_RECORDING: False,
    CONF_SUMMARIES: False,
    CONF_SUMMARY_TIME: "05:15:00",
    CONF_SUMMARY_GROUP_MODE: "user",
    CONF_SUMMARY_CONTEXT_TOKENS: 0,
    "embeddings_deployment": "",
    "memory_context": False,
    "memory_token_budget": 800,
}


@pytest.mark.parametrize(
    "entry_options", [STORED_OPTIONS, RECOMMENDED_OPTIONS], ids=["all", "before_memories"]
)
async def test_stored_options_are_the_forms_defaults(
    hass: HomeAssistant,
    setup_ha: None,
    config_entry: MockConfigEntry,
    azure: AzureStub,
    entry_options: dict[str, Any],
) -> None:
    """An entry's saved options open the form; saving it unchanged changes nothing, and
    the installation's settings stay what their stores hold."""
    hass.config_entries.async_update_entry(config_entry, options=dict(entry_options))
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    series_of(hass).async_update_settings(SeriesSettings(2000, 45.0))
    result = await hass.config_entries.options.async_init(config_entry.entry_id)
    form = shown(result)
    if entry_options is STORED_OPTIONS:
        assert form["conversations"] == {
            CONF_CONVERSATION_IDLE_MINUTES: {"days": 0, "hours": 1, "minutes": 30, "seconds": 0},
            CONF_MAX_CONVERSATIONS: 12,
            CONF_CONTINUATION_MINUTES: {"hours": 0, "minutes": 2, "seconds": 30},
        }
        assert form["summaries"] == {
            CONF_SUMMARIES: False,
            CONF_SUMMARY_TIME: "05:15:00",
            CONF_SUMMARY_GROUP_MODE: "user",
            CONF_SUMMARY_CONTEXT_TOKENS: 0,
        }
        assert form["memories"]["memory_token_budget"] == 800
    else:
        assert form["conversations"] == RECOMMENDED_FORM["conversations"]
    assert form["timeseries"][CONF_TIMESERIES_MAX_ENTRIES] == 2000
    assert form["timeseries"][CONF_TIMESERIES_KEEP_DAYS] == 45.0
    before = len(azure.calls("/models"))
    result = await hass.config_entries.options.async_configure(result["flow_id"], filled(result))
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    assert dict(config_entry.options) == {**RECOMMENDED_MEMORY_OPTIONS, **entry_options}
    assert series_of(hass).settings == SeriesSettings(2000, 45.0)
    # Nothing an agent uses changed, unless the memory options were first written now.
    reloads = 0 if entry_options is STORED_OPTIONS else 1
    assert len(azure.calls("/models")) == before + reloads


async def test_migration_moves_series_settings_to_the_store(
    hass: HomeAssistant, setup_ha: None, azure: AzureStub
) -> None:
    """1.1 entries had the series settings in their options: the first one migrated gives
    them to the store; the entry keeps only its own options."""
    old_options = {
        **RECOMMENDED_OPTIONS,
        CONF_TIMESERIES_MAX_ENTRIES: 2000,
        CONF_TIMESERIES_KEEP_DAYS: 14,
    }
    entries = [
        MockConfigEntry(
            domain=DOMAIN,
            unique_id=endpoint,
            data={CONF_ENDPOINT: endpoint, CONF_API_KEY: DEFAULT_KEY, CONF_API_STYLE: API_STYLE_V1},
            options=options,
            minor_version=1,
        )
        for endpoint, options in (
            (azure.endpoint, old_options),
            ("http://127.0.0.1:1", {**old_options, CONF_TIMESERIES_MAX_ENTRIES: 7}),
        )
    ]
    for entry in entries:
        entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entries[0].entry_id)
    await hass.async_block_till_done()
    for entry in entries:
        shown = await options_shown(hass, entry)
        assert (shown[CONF_TIMESERIES_MAX_ENTRIES], shown[CONF_TIMESERIES_KEEP_DAYS]) == (2000, 14)
    for entry in entries:
        assert entry.minor_version == 3
        assert dict(entry.options) == RECOMMENDED_OPTIONS
    assert entries[0].state is config_entries.ConfigEntryState.LOADED


def _agent_input(**overrides: Any) -> dict[str, Any]:
    data = {**RECOMMENDED_AGENT, CONF_LLM_HASS_API: llm_api_option("assist")}
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


async def test_add_agent_subentry(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """A new agent is proven with one tiny request to its deployment."""
    result = await hass.config_entries.subentries.async_init(
        (loaded_entry.entry_id, SUBENTRY_AGENT), context={"source": config_entries.SOURCE_USER}
    )
    assert result["type"] is FlowResultType.FORM
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {
            CONF_NAME: "Reasoner",
            # Pasted with a space around it: still the deployment.
            **_agent_input(**{CONF_DEPLOYMENT: " o4-mini ", CONF_REASONING_EFFORT: "low"}),
        },
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    titles = sorted(s.title for s in loaded_entry.subentries.values())
    assert titles == ["Azure OpenAI agent", "Reasoner"]
    assert result["data"][CONF_DEPLOYMENT] == "o4-mini"
    probe = azure.calls("/chat/completions")[-1]
    assert probe.body is not None
    assert probe.body["model"] == "o4-mini"
    assert probe.body["max_completion_tokens"] == 16
    assert "max_tokens" not in probe.body
    assert "temperature" not in probe.body


async def test_add_agent_responses_mode_probe(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """A Responses-mode agent is proven through /responses."""
    result = await hass.config_entries.subentries.async_init(
        (loaded_entry.entry_id, SUBENTRY_AGENT), context={"source": config_entries.SOURCE_USER}
    )
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {CONF_NAME: "Responder", **_agent_input(**{CONF_API_MODE: API_MODE_RESPONSES})},
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert azure.calls("/openai/v1/responses")[-1].body["model"] == "gpt-4o-mini"  # type: ignore[index]


# What a deployment's check can answer, and the error each shows on the form.
DEPLOYMENT_ERRORS = [
    pytest.param(
        None,
        {CONF_DEPLOYMENT: "missing"},
        {CONF_DEPLOYMENT: "deployment_not_found"},
        id="unknown_deployment",
    ),
    pytest.param(
        Reply.failure(400, "unsupported_parameter", "Unsupported parameter: 'max_tokens'"),
        {},
        {"base": "deployment_rejected"},
        id="rejected",
    ),
    pytest.param(
        Reply.failure(401, "401", "Access denied"), {}, {"base": "invalid_auth"}, id="auth"
    ),
    pytest.param(Reply.failure(500, "500", "boom"), {}, {"base": "unknown"}, id="server_error"),
]


@pytest.mark.parametrize(
    ("reply", "overrides", "errors"),
    [
        *DEPLOYMENT_ERRORS,
        pytest.param(
            None,
            {CONF_EARLY_TIMEOUT: 40, CONF_REQUEST_TIMEOUT: 30},
            {CONF_EARLY_TIMEOUT: "early_timeout_too_long"},
            id="early_timeout",
        ),
    ],
)
async def test_reconfigure_agent_errors(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    reply: Reply | None,
    overrides: dict[str, Any],
    errors: dict[str, str],
) -> None:
    """Reconfigure reports what is wrong with the deployment and saves nothing."""
    (subentry,) = loaded_entry.subentries.values()
    result = await hass.config_entries.subentries.async_init(
        (loaded_entry.entry_id, SUBENTRY_AGENT),
        context={"source": config_entries.SOURCE_RECONFIGURE, "subentry_id": subentry.subentry_id},
    )
    assert result["step_id"] == "reconfigure"
    if reply is not None:
        azure.queue(reply)
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], _agent_input(**overrides)
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == errors
    assert loaded_entry.subentries[subentry.subentry_id].data == subentry.data


async def test_reconfigure_agent_saves_and_reloads(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """A good change is saved and the entry reloads with it."""
    (subentry,) = loaded_entry.subentries.values()
    result = await hass.config_entries.subentries.async_init(
        (loaded_entry.entry_id, SUBENTRY_AGENT),
        context={"source": config_entries.SOURCE_RECONFIGURE, "subentry_id": subentry.subentry_id},
    )
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        _agent_input(
            **{CONF_DEPLOYMENT: "o4-mini", CONF_REASONING_EFFORT: "high", CONF_LLM_HASS_API: None}
        ),
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    data = loaded_entry.subentries[subentry.subentry_id].data
    assert data[CONF_DEPLOYMENT] == "o4-mini"
    assert data[CONF_LLM_HASS_API] is None
    assert loaded_entry.state is config_entries.ConfigEntryState.LOADED


async def responses_mode_refused(
    hass: HomeAssistant, azure: AzureStub, api_style: str, kind: str, user_input: dict[str, Any]
) -> str:
    """A new subentry of this kind, on an entry of an api-version older than the Responses
    API needs, asked for that API: refused, naming the api-version. The flow's id."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        unique_id=azure.endpoint,
        data={
            CONF_ENDPOINT: azure.endpoint,
            CONF_API_KEY: DEFAULT_KEY,
            CONF_API_STYLE: api_style,
            CONF_API_VERSION: "2024-10-21",
        },
    )
    entry.add_to_hass(hass)
    result = await hass.config_entries.subentries.async_init(
        (entry.entry_id, kind), context={"source": config_entries.SOURCE_USER}
    )
    result = await hass.config_entries.subentries.async_configure(result["flow_id"], user_input)
    assert result["errors"] == {CONF_API_MODE: "responses_needs_api_version"}
    return str(result["flow_id"])


@pytest.mark.parametrize("api_style", [API_STYLE_DEPLOYMENT])
async def test_responses_mode_needs_new_api_version(
    hass: HomeAssistant, setup_ha: None, azure: AzureStub, api_style: str
) -> None:
    """Deployment URLs on an old api-version cannot use the Responses API."""
    responses = {CONF_NAME: "R", **_agent_input(**{CONF_API_MODE: API_MODE_RESPONSES})}
    flow_id = await responses_mode_refused(hass, azure, api_style, SUBENTRY_AGENT, responses)
    result = await hass.config_entries.subentries.async_configure(
        flow_id, {CONF_NAME: "R", **_agent_input(**{CONF_API_MODE: API_MODE_CHAT})}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    call = azure.calls("/chat/completions")[-1]
    assert call.path == "/openai/deployments/gpt-4o-mini/chat/completions"
    assert call.query == {"api-version": "2024-10-21"}


async def test_agent_context_limit_is_optional(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """A context limit is kept when given; empty or 0 means: follow the deployment."""
    result = await hass.config_entries.subentries.async_init(
        (loaded_entry.entry_id, SUBENTRY_AGENT), context={"source": config_entries.SOURCE_USER}
    )
    assert CONF_CONTEXT_LIMIT in _suggested(result)
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_NAME: "Small", **_agent_input(**{CONF_CONTEXT_LIMIT: 32000.0})}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    small = next(s for s in loaded_entry.subentries.values() if s.title == "Small")
    assert small.data[CONF_CONTEXT_LIMIT] == 32000
    assert isinstance(small.data[CONF_CONTEXT_LIMIT], int)
    default = next(s for s in loaded_entry.subentries.values() if s.title == DEFAULT_AGENT_NAME)
    assert CONF_CONTEXT_LIMIT not in default.data

    result = await hass.config_entries.subentries.async_init(
        (loaded_entry.entry_id, SUBENTRY_AGENT),
        context={"source": config_entries.SOURCE_RECONFIGURE, "subentry_id": small.subentry_id},
    )
    assert _suggested(result)[CONF_CONTEXT_LIMIT] == 32000
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], _agent_input(**{CONF_CONTEXT_LIMIT: 0})
    )
    assert result["reason"] == "reconfigure_successful"
    assert CONF_CONTEXT_LIMIT not in loaded_entry.subentries[small.subentry_id].data
    # The reconfigured agent reloads the entry: done before the test ends, so that the
    # entry the test leaves is the one its teardown unloads (no timer of a reload left).
    await hass.async_block_till_done()
    assert loaded_entry.state is config_entries.ConfigEntryState.LOADED


# -- every step and error, each followed by recovery (quality scale: config-flow-test-coverage)


async def test_user_flow_timeout_then_recovers(
    hass: HomeAssistant, azure: AzureStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow endpoint is reported; once it answers in time, the entry is created."""
    result = await timed_out_user_flow(hass, azure, monkeypatch)
    azure.models_delay = 0.0
    result = await hass.config_entries.flow.async_configure(result["flow_id"], _user_input(azure))
    assert result["type"] is FlowResultType.CREATE_ENTRY


async def test_reauth_timeout_then_recovers(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reauthentication reports a slow endpoint, then stores the key once it answers."""
    monkeypatch.setattr(
        "custom_components.azure_openai_memory.azure.client.VALIDATION_TIMEOUT", 0.2
    )
    result = await loaded_entry.start_reauth_flow(hass)
    azure.api_key = "new-key"
    azure.models_delay = 1.0
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_API_KEY: "new-key"}
    )
    assert result["errors"] == {"base": "timeout_connect"}
    assert loaded_entry.data[CONF_API_KEY] == DEFAULT_KEY
    azure.models_delay = 0.0
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_API_KEY: "new-key"}
    )
    assert result["reason"] == "reauth_successful"
    assert loaded_entry.data[CONF_API_KEY] == "new-key"


@pytest.mark.parametrize(
    ("form", "errors"),
    [
        ({CONF_ENDPOINT: "nope", CONF_API_STYLE: API_STYLE_V1}, {CONF_ENDPOINT: "invalid_url"}),
        (
            {CONF_ENDPOINT: "http://127.0.0.1:1", CONF_API_STYLE: API_STYLE_V1},
            {"base": "cannot_connect"},
        ),
        (
            {CONF_ENDPOINT: "{endpoint}/elsewhere", CONF_API_STYLE: API_STYLE_V1},
            {"base": "endpoint_not_found"},
        ),
        (
            {
                CONF_ENDPOINT: "{endpoint}",
                CONF_API_STYLE: API_STYLE_DEPLOYMENT,
                CONF_API_VERSION: "latest",
            },
            {CONF_API_VERSION: "invalid_api_version"},
        ),
        (
            {
                CONF_ENDPOINT: "{endpoint}",
                CONF_API_STYLE: API_STYLE_DEPLOYMENT,
                CONF_API_VERSION: "2099-01-01",
            },
            {CONF_API_VERSION: "invalid_api_version"},
        ),
    ],
    ids=["malformed", "unreachable", "wrong_path", "bad_version", "unknown_version"],
)
async def test_reconfigure_errors_then_recovers(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    form: dict[str, Any],
    errors: dict[str, str],
) -> None:
    """Each failure leaves the entry as it was; fixing the input saves it."""
    azure.refused_api_versions = {"2099-01-01"}
    before = dict(loaded_entry.data)
    result = await loaded_entry.start_reconfigure_flow(hass)
    form = {**form, CONF_ENDPOINT: form[CONF_ENDPOINT].format(endpoint=azure.endpoint)}
    result = await hass.config_entries.flow.async_configure(result["flow_id"], form)
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == errors
    assert dict(loaded_entry.data) == before
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        {
            CONF_ENDPOINT: azure.endpoint,
            CONF_API_STYLE: API_STYLE_DEPLOYMENT,
            CONF_API_VERSION: "2024-10-21",
        },
    )
    assert result["reason"] == "reconfigure_successful"
    assert loaded_entry.data[CONF_API_VERSION] == "2024-10-21"


@pytest.fixture
async def other_azure(azure: AzureStub) -> AsyncIterator[AzureStub]:
    """A second stand-in, on another port of 127.0.0.1: another server taking the same key.

    (Not the first one as localhost: Home Assistant 2026.10's test plugin refuses to
    resolve a host name the HTTP client hands over as bytes, localhost included.)
    """
    stub = AzureStub()
    await stub.start()
    yield stub
    await stub.stop()


async def test_reconfigure_retitles_an_untouched_title_only(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub, other_azure: AzureStub
) -> None:
    """A new endpoint renames an entry that has the title we gave it, not one the user gave."""
    result = await loaded_entry.start_reconfigure_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_ENDPOINT: other_azure.endpoint, CONF_API_STYLE: API_STYLE_V1}
    )
    assert result["reason"] == "reconfigure_successful"
    assert loaded_entry.title == f"Azure OpenAI 127.0.0.1:{other_azure.port}"
    await hass.async_block_till_done()

    hass.config_entries.async_update_entry(loaded_entry, title="Kitchen brain")
    result = await loaded_entry.start_reconfigure_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_ENDPOINT: azure.endpoint, CONF_API_STYLE: API_STYLE_V1}
    )
    assert result["reason"] == "reconfigure_successful"
    assert loaded_entry.title == "Kitchen brain"
    await hass.async_block_till_done()


@pytest.mark.parametrize(
    ("reply", "overrides", "errors"),
    [
        *DEPLOYMENT_ERRORS,
        pytest.param(Reply(text="late", delay=1.0), {}, {"base": "timeout_connect"}, id="timeout"),
        pytest.param(
            None,
            {CONF_EARLY_TIMEOUT: 40, CONF_REQUEST_TIMEOUT: 30},
            {CONF_EARLY_TIMEOUT: "early_timeout_too_long"},
            id="early_timeout",
        ),
    ],
)
@pytest.mark.parametrize("source", [config_entries.SOURCE_USER, config_entries.SOURCE_RECONFIGURE])
async def test_agent_flow_errors_then_recovers(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    monkeypatch: pytest.MonkeyPatch,
    reply: Reply | None,
    overrides: dict[str, Any],
    errors: dict[str, str],
    source: str,
) -> None:
    """Adding or editing an agent: each error is shown, nothing saved; fixing it saves."""
    monkeypatch.setattr(
        "custom_components.azure_openai_memory.azure.client.VALIDATION_TIMEOUT", 0.2
    )
    (subentry,) = loaded_entry.subentries.values()
    context: dict[str, Any] = {"source": source}
    name: dict[str, Any] = {CONF_NAME: "Second"}
    if source == config_entries.SOURCE_RECONFIGURE:
        context["subentry_id"] = subentry.subentry_id
        name = {}
    result = await hass.config_entries.subentries.async_init(
        (loaded_entry.entry_id, SUBENTRY_AGENT), context=context
    )
    assert result["step_id"] == source
    if reply is not None:
        azure.queue(reply)
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {**name, **_agent_input(**overrides)}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == errors
    assert list(loaded_entry.subentries) == [subentry.subentry_id]
    assert loaded_entry.subentries[subentry.subentry_id].data == subentry.data

    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {**name, **_agent_input(**{CONF_MAX_TOKENS: 900.0})}
    )
    if source == config_entries.SOURCE_USER:
        assert result["type"] is FlowResultType.CREATE_ENTRY
        assert result["title"] == "Second"
        assert len(loaded_entry.subentries) == 2
    else:
        assert result["reason"] == "reconfigure_successful"
    assert result_data(loaded_entry, source, subentry.subentry_id)[CONF_MAX_TOKENS] == 900


def result_data(entry: MockConfigEntry, source: str, first: str) -> dict[str, Any]:
    """The data of the agent a flow saved: the new one, or the one reconfigured."""
    if source == config_entries.SOURCE_RECONFIGURE:
        return dict(entry.subentries[first].data)
    (new,) = [s for s in entry.subentries.values() if s.subentry_id != first]
    return dict(new.data)


async def test_control_can_be_switched_off_on_every_version(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """2025.4's single choice offers "No control"; newer versions empty the multi-select."""
    (subentry,) = loaded_entry.subentries.values()
    assert subentry.data[CONF_LLM_HASS_API] == llm_api_option("assist")
    result = await hass.config_entries.subentries.async_init(
        (loaded_entry.entry_id, SUBENTRY_AGENT),
        context={"source": config_entries.SOURCE_RECONFIGURE, "subentry_id": subentry.subentry_id},
    )
    (marker,) = [k for k in result["data_schema"].schema if str(k) == CONF_LLM_HASS_API]
    selector = result["data_schema"].schema[marker]
    values = [option["value"] for option in selector.config["options"]]
    assert selector.config["translation_key"] == CONF_LLM_HASS_API
    if LLM_API_ACCEPTS_LIST:
        assert values == ["assist"]
        assert selector.config["multiple"] is True
        off: Any = []
    else:
        assert values == [LLM_API_NONE, "assist"]
        assert selector.config["multiple"] is False
        off = LLM_API_NONE
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {**_agent_input(), CONF_LLM_HASS_API: off}
    )
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert loaded_entry.subentries[subentry.subentry_id].data[CONF_LLM_HASS_API] is None

    # Shown as switched off, and it can be switched on again.
    result = await hass.config_entries.subentries.async_init(
        (loaded_entry.entry_id, SUBENTRY_AGENT),
        context={"source": config_entries.SOURCE_RECONFIGURE, "subentry_id": subentry.subentry_id},
    )
    assert _suggested(result)[CONF_LLM_HASS_API] == off
    result = await hass.config_entries.subentries.async_configure(result["flow_id"], _agent_input())
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert loaded_entry.subentries[subentry.subentry_id].data[CONF_LLM_HASS_API] == llm_api_option(
        "assist"
    )


def _task_input(**overrides: Any) -> dict[str, Any]:
    return {**RECOMMENDED_AI_TASK, **overrides}


@pytest.mark.skipif(not HAS_AI_TASK, reason="AI tasks exist from HA 2025.8")
@pytest.mark.parametrize(
    ("reply", "overrides", "errors"),
    DEPLOYMENT_ERRORS,
)
async def test_ai_task_flow_adds_and_edits_after_errors(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    reply: Reply | None,
    overrides: dict[str, Any],
    errors: dict[str, str],
) -> None:
    """An AI task is added, then edited; each error first, then the fix."""
    result = await hass.config_entries.subentries.async_init(
        (loaded_entry.entry_id, SUBENTRY_AI_TASK), context={"source": config_entries.SOURCE_USER}
    )
    assert result["step_id"] == "user"
    assert set(_suggested(result)) == {CONF_NAME, *RECOMMENDED_AI_TASK}
    if reply is not None:
        azure.queue(reply)
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_NAME: "Summaries", **_task_input(**overrides)}
    )
    assert result["errors"] == errors
    assert len(loaded_entry.subentries) == 1
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_NAME: "Summaries", **_task_input()}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == "Summaries"
    assert result["data"] == RECOMMENDED_AI_TASK  # nothing of a conversation agent
    await hass.async_block_till_done()
    (task,) = [s for s in loaded_entry.subentries.values() if s.subentry_type == SUBENTRY_AI_TASK]

    result = await hass.config_entries.subentries.async_init(
        (loaded_entry.entry_id, SUBENTRY_AI_TASK),
        context={"source": config_entries.SOURCE_RECONFIGURE, "subentry_id": task.subentry_id},
    )
    assert result["step_id"] == "reconfigure"
    assert CONF_NAME not in _suggested(result)
    if reply is not None:
        azure.queue(reply)
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], _task_input(**overrides)
    )
    assert result["errors"] == errors
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], _task_input(**{CONF_DEPLOYMENT: "o4-mini", CONF_REASONING_EFFORT: "low"})
    )
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert loaded_entry.subentries[task.subentry_id].data[CONF_DEPLOYMENT] == "o4-mini"
    assert loaded_entry.state is config_entries.ConfigEntryState.LOADED


@pytest.mark.skipif(not HAS_AI_TASK, reason="AI tasks exist from HA 2025.8")
@pytest.mark.parametrize("api_style", [API_STYLE_DEPLOYMENT])
async def test_ai_task_responses_mode_needs_new_api_version(
    hass: HomeAssistant, setup_ha: None, azure: AzureStub, api_style: str
) -> None:
    """The AI task form has the agent's api-version rule, and recovers the same way."""
    responses = {CONF_NAME: "T", **_task_input(**{CONF_API_MODE: API_MODE_RESPONSES})}
    flow_id = await responses_mode_refused(hass, azure, api_style, SUBENTRY_AI_TASK, responses)
    result = await hass.config_entries.subentries.async_configure(
        flow_id, {CONF_NAME: "T", **_task_input()}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
