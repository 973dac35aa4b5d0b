"""Asking for a JSON answer: a schema where the API version takes one, JSON mode before.

The summaries ask for one; a conversation turn asks for none.
"""

from datetime import date, datetime
import json
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.core import HomeAssistant
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.const import (
    API_MODE_RESPONSES,
    API_STYLE_DEPLOYMENT,
    API_STYLE_V1,
    CONF_API_MODE,
    CONF_API_STYLE,
    CONF_API_VERSION,
    DOMAIN,
)

from ..azure_stub import AzureStub, Reply
from ..conftest import NO_TOOLS, call, converse

DAY = date(2026, 1, 5)
ANSWER = {
    "summary": "A quiet day.",
    "topics": ["garden"],
    "highlights": [],
    "active_users": [],
}


@pytest.fixture
def agent_options() -> dict[str, Any]:
    return dict(NO_TOOLS)


@pytest.fixture(autouse=True)
def on_the_day(freezer: FrozenDateTimeFactory) -> None:
    """The clock on DAY, so that its talk is there to summarise."""
    freezer.move_to(datetime(2026, 1, 5, 10, tzinfo=dt_util.get_default_time_zone()))


async def summary_request(
    hass: HomeAssistant, entry: MockConfigEntry, azure: AzureStub, data: dict[str, Any]
) -> dict[str, Any]:
    """The request of a day's summary, written by the model from its JSON answer."""
    hass.config_entries.async_update_entry(entry, data={**entry.data, **data})
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)
    await hass.services.async_call(
        DOMAIN,
        "history_record",
        {
            "event_type": "communication",
            "event_data": {"direction": "in", "text": "The tomatoes look dry."},
            "agent_id": "conversation.azure",
        },
        blocking=True,
    )
    azure.queue(Reply(text=json.dumps(ANSWER)))
    before = len(azure.requests)
    await call(hass, "summary_aggregate", {"day": DAY.isoformat()})
    (request,) = [r for r in azure.requests[before:] if not r.path.endswith("/models")]
    assert request.body is not None
    (daily,) = (await call(hass, "summary_get", {"period_type": "daily"}))["summaries"]
    assert (daily["summary"], daily["extractive"]) == ("A quiet day.", False)
    return request.body


def assert_daily_schema(response_format: dict[str, Any]) -> None:
    assert response_format["name"] == "daily_summary"
    assert response_format["strict"] is True
    schema = response_format["schema"]
    assert schema["type"] == "object"
    assert {"summary", "topics", "highlights", "active_users"} <= set(schema["properties"])


@pytest.mark.parametrize(
    ("api_style", "api_version", "schema_format"),
    [
        (API_STYLE_V1, "", True),
        (API_STYLE_DEPLOYMENT, "2024-08-01-preview", True),
        (API_STYLE_DEPLOYMENT, "2024-06-01", False),
    ],
)
async def test_chat_completions_ask_for_the_schema_where_the_version_takes_it(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    api_style: str,
    api_version: str,
    schema_format: bool,
) -> None:
    body = await summary_request(
        hass, config_entry, azure, {CONF_API_STYLE: api_style, CONF_API_VERSION: api_version}
    )
    response_format = body["response_format"]
    if not schema_format:
        assert response_format == {"type": "json_object"}
        return
    assert response_format["type"] == "json_schema"
    assert_daily_schema(response_format["json_schema"])


@pytest.mark.parametrize("agent_options", [{**NO_TOOLS, CONF_API_MODE: API_MODE_RESPONSES}])
async def test_responses_ask_for_the_schema_in_text_format(
    hass: HomeAssistant, azure: AzureStub, config_entry: MockConfigEntry
) -> None:
    body = await summary_request(hass, config_entry, azure, {})
    assert "response_format" not in body
    text_format = body["text"]["format"]
    assert text_format["type"] == "json_schema"
    assert_daily_schema(text_format)


async def test_a_turn_asks_for_no_format(
    hass: HomeAssistant, azure: AzureStub, loaded_entry: MockConfigEntry
) -> None:
    azure.queue(Reply(text="hello"))
    await converse(hass, loaded_entry, "hi", "c")
    body = azure.calls("/chat/completions")[-1].body
    assert body is not None
    assert "response_format" not in body
    assert "text" not in body
