"""Asking for a JSON answer: a schema where the API version takes one, JSON mode before."""

from dataclasses import replace
import json
from typing import Any

import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.const import (
    API_MODE_RESPONSES,
    API_STYLE_DEPLOYMENT,
    API_STYLE_V1,
    CONF_API_MODE,
    RECOMMENDED_AGENT,
)
from custom_components.azure_openai_memory.llm.client import (
    JsonFormat,
    ResourceSettings,
    Usage,
    async_create_client,
    create_llm_client,
    request_options,
)
from tests.azure_stub import AzureStub, Reply
from tests.azure_stub.server import DEFAULT_KEY

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"summary": {"type": "string"}},
    "required": ["summary"],
    "additionalProperties": False,
}


async def _ask_for_json(
    hass: Any, azure: AzureStub, settings: ResourceSettings, agent: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    sdk = await async_create_client(hass, settings)
    options = replace(request_options(settings, agent), response_format=JsonFormat("day", SCHEMA))
    azure.queue(Reply(text='{"summary": "quiet day"}'))
    text = ""
    async for delta in create_llm_client(sdk, options).stream(
        [{"role": "user", "content": "Summarise as JSON."}], [], Usage()
    ):
        text += delta.get("content", "")
    body = azure.requests[-1].body
    assert body is not None
    return text, body


@pytest.mark.parametrize(
    ("api_style", "api_version", "expected"),
    [
        (
            API_STYLE_V1,
            "",
            {
                "type": "json_schema",
                "json_schema": {"name": "day", "schema": SCHEMA, "strict": True},
            },
        ),
        (
            API_STYLE_DEPLOYMENT,
            "2024-08-01-preview",
            {
                "type": "json_schema",
                "json_schema": {"name": "day", "schema": SCHEMA, "strict": True},
            },
        ),
        (API_STYLE_DEPLOYMENT, "2024-06-01", {"type": "json_object"}),
    ],
)
async def test_chat_completions_ask_for_the_schema_where_the_version_takes_it(
    hass: Any,
    azure: AzureStub,
    loaded_entry: MockConfigEntry,
    api_style: str,
    api_version: str,
    expected: dict[str, Any],
) -> None:
    settings = ResourceSettings(azure.endpoint, DEFAULT_KEY, api_style, api_version)
    text, body = await _ask_for_json(hass, azure, settings, dict(RECOMMENDED_AGENT))
    assert json.loads(text) == {"summary": "quiet day"}
    assert body["response_format"] == expected


async def test_responses_ask_for_the_schema_in_text_format(
    hass: Any, azure: AzureStub, loaded_entry: MockConfigEntry
) -> None:
    settings = ResourceSettings(azure.endpoint, DEFAULT_KEY, API_STYLE_V1, "")
    agent = {**RECOMMENDED_AGENT, CONF_API_MODE: API_MODE_RESPONSES}
    text, body = await _ask_for_json(hass, azure, settings, agent)
    assert json.loads(text) == {"summary": "quiet day"}
    assert body["text"] == {
        "format": {"type": "json_schema", "name": "day", "schema": SCHEMA, "strict": True}
    }


async def test_a_turn_asks_for_no_format(
    hass: Any, azure: AzureStub, loaded_entry: MockConfigEntry
) -> None:
    settings = ResourceSettings(azure.endpoint, DEFAULT_KEY, API_STYLE_V1, "")
    sdk = await async_create_client(hass, settings)
    azure.queue(Reply(text="hello"))
    async for _ in create_llm_client(sdk, request_options(settings, RECOMMENDED_AGENT)).stream(
        [{"role": "user", "content": "hi"}], [], Usage()
    ):
        pass
    body = azure.requests[-1].body
    assert body is not None
    assert "response_format" not in body
    assert "text" not in body
