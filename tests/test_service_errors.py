"""Every service that takes free-form input refuses a bad value with a translated validation
error (never another exception), and never echoes a huge value back whole."""

import json
from pathlib import Path
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.exceptions import ServiceValidationError
from homeassistant.setup import async_setup_component
import pytest

from custom_components.azure_openai_memory.const import DOMAIN

STRINGS = json.loads(
    (Path(__file__).parents[1] / "custom_components" / DOMAIN / "strings.json").read_text()
)
UNKNOWN_UUID = "3f2b9c4e-1d2a-4b8e-9f00-0c1d2e3f4a5b"
SERIES = "fuzz_series"
# 100,000 characters that are no key, id, time, duration, type, tag or date.
HUGE = "no such thing! " * 6_667
HUGE = HUGE[:100_000]
# A value echoed in a message is cut to this many characters and an ellipsis.
ECHOED = 60


@pytest.fixture
async def services(hass: HomeAssistant) -> None:
    """The integration without an entry (the home's services need none), with one series."""
    assert await async_setup_component(hass, DOMAIN, {})
    await hass.services.async_call(
        DOMAIN,
        "timeseries_merge",
        {"key": SERIES, "entries": [{"id": "a", "timestamp": "2025-10-25T09:30:00Z"}]},
        blocking=True,
        return_response=True,
    )


async def refused(
    hass: HomeAssistant, service: str, data: dict[str, Any]
) -> ServiceValidationError:
    with pytest.raises(ServiceValidationError) as err:
        await hass.services.async_call(DOMAIN, service, data, blocking=True, return_response=True)
    assert err.value.translation_domain == DOMAIN
    return err.value


def message(err: ServiceValidationError) -> str:
    """The English message, as the log and the frontend show it: every placeholder it names
    is filled (a KeyError otherwise)."""
    assert err.translation_key is not None
    template: str = STRINGS["exceptions"][err.translation_key]["message"]
    return template.format(**(err.translation_placeholders or {}))


MALFORMED: list[tuple[str, dict[str, Any], str]] = [
    ("timeseries_merge", {"key": "Not a slug", "entries": []}, "invalid_key"),
    ("timeseries_merge", {"key": SERIES, "entries": "a list, surely"}, "entries_not_list"),
    (
        "timeseries_merge",
        {"key": SERIES, "entries": [], "window_start": "yesterday", "window_end": "now"},
        "invalid_time",
    ),
    ("timeseries_query", {"key": "no_such_series", "last": "1h"}, "unknown_series"),
    ("timeseries_query", {"key": SERIES, "start_time": "2025-02-30T10:00:00Z"}, "invalid_time"),
    ("timeseries_query", {"key": SERIES, "last": "a fortnight or so"}, "invalid_last"),
    ("timeseries_cleanup", {"key": "Not a slug"}, "invalid_key"),
    ("memory_save", {"content": "The cat is fed at six", "type": "gossip"}, "memory_type_invalid"),
    ("memory_save", {"content": "", "type": "household"}, "memory_content_empty"),
    (
        "memory_save",
        {"content": "The cat is fed at six", "type": "household", "confidence": "sure"},
        "memory_confidence_invalid",
    ),
    (
        "memory_save",
        {"content": "The cat is fed at six", "type": "household", "source": "rumour"},
        "memory_source_invalid",
    ),
    (
        "memory_save",
        {"content": "The cat is fed at six", "type": "household", "tags": ["not a tag!"]},
        "memory_tag_invalid",
    ),
    ("memory_search", {"query": "cat", "type": "gossip"}, "memory_type_invalid"),
    ("memory_search", {"query": "cat", "limit": 0}, "memory_limit_invalid"),
    ("memory_forget", {"memory_id": "nope"}, "memory_unknown"),
    ("memory_forget", {"tag": "not a tag!"}, "memory_tag_invalid"),
    ("history_record", {"event_type": "dream", "event_data": {}}, "unknown_event_type"),
    (
        "history_record",
        {"event_type": "action", "event_data": {"x": "y" * 70_000}},
        "event_data_too_large",
    ),
    (
        "history_record",
        {"event_type": "action", "event_data": {}, "parent_event_id": "0"},
        "invalid_event_id",
    ),
    (
        "history_record",
        {"event_type": "action", "event_data": {}, "parent_event_id": UNKNOWN_UUID},
        "unknown_event",
    ),
    ("history_query", {"event_type": "dream"}, "unknown_event_type"),
    ("history_query", {"start_time": "2025-02-30T10:00:00Z"}, "invalid_time"),
    ("history_query", {"limit": 0}, "history_limit_out_of_range"),
    ("history_query", {"offset": -1}, "history_limit_out_of_range"),
    ("history_query", {"offset": 10**30}, "history_limit_out_of_range"),
    ("history_snapshot", {"snapshot_id": "0"}, "invalid_snapshot_id"),
    ("history_snapshot", {"snapshot_id": "2025-02-30T10:00:00Z"}, "invalid_snapshot_id"),
    ("history_snapshot", {"snapshot_id": UNKNOWN_UUID}, "unknown_snapshot"),
    ("history_snapshot", {"agent_id": "conversation.x", "limit": 0}, "history_limit_out_of_range"),
    ("history_snapshots", {"limit": 0}, "history_limit_out_of_range"),
    ("history_snapshots", {"offset": 10**30}, "history_limit_out_of_range"),
    ("history_event_chain", {"event_id": "0"}, "invalid_event_id"),
    ("history_event_chain", {"event_id": UNKNOWN_UUID}, "unknown_event"),
    ("summary_aggregate", {"day": "2025-02-30"}, "invalid_day"),
    ("summary_get", {"group": "Not a group!"}, "invalid_group"),
    ("summary_get", {"period_type": "fortnightly"}, "invalid_period_type"),
    ("summary_get", {"limit": "ten"}, "summary_limit_out_of_range"),
    ("summary_get", {"start": "2025-02-30"}, "invalid_day"),
]


@pytest.mark.parametrize(
    ("service", "data", "key"),
    MALFORMED,
    ids=[f"{service}-{'-'.join(data)}-{key}" for service, data, key in MALFORMED],
)
@pytest.mark.usefixtures("services")
async def test_a_malformed_value_is_a_translated_error(
    hass: HomeAssistant, service: str, data: dict[str, Any], key: str
) -> None:
    err = await refused(hass, service, data)
    assert err.translation_key == key
    assert message(err)


# (service, data, key, the placeholder that echoes the huge value)
HUGE_VALUES: list[tuple[str, dict[str, Any], str, str]] = [
    ("timeseries_merge", {"key": HUGE, "entries": []}, "invalid_key", "key"),
    (
        "timeseries_merge",
        {"key": SERIES, "entries": [], "window_start": HUGE, "window_end": "now"},
        "invalid_time",
        "value",
    ),
    ("timeseries_query", {"key": HUGE, "last": "1h"}, "invalid_key", "key"),
    ("timeseries_query", {"key": SERIES, "start_time": HUGE}, "invalid_time", "value"),
    ("timeseries_query", {"key": SERIES, "last": HUGE}, "invalid_last", "value"),
    ("timeseries_cleanup", {"key": HUGE}, "invalid_key", "key"),
    ("memory_save", {"content": "The cat", "type": HUGE}, "memory_type_invalid", "value"),
    (
        "memory_save",
        {"content": "The cat", "type": "household", "confidence": HUGE},
        "memory_confidence_invalid",
        "value",
    ),
    (
        "memory_save",
        {"content": "The cat", "type": "household", "source": HUGE},
        "memory_source_invalid",
        "value",
    ),
    ("memory_search", {"query": "cat", "type": HUGE}, "memory_type_invalid", "value"),
    ("memory_forget", {"memory_id": HUGE}, "memory_unknown", "memory_id"),
    ("history_record", {"event_type": HUGE, "event_data": {}}, "unknown_event_type", "event_type"),
    (
        "history_record",
        {"event_type": "action", "event_data": {}, "parent_event_id": HUGE},
        "invalid_event_id",
        "value",
    ),
    ("history_query", {"event_type": HUGE}, "unknown_event_type", "event_type"),
    ("history_query", {"start_time": HUGE}, "invalid_time", "value"),
    ("history_snapshot", {"snapshot_id": HUGE}, "invalid_snapshot_id", "value"),
    ("history_event_chain", {"event_id": HUGE}, "invalid_event_id", "value"),
    ("summary_aggregate", {"day": HUGE}, "invalid_day", "value"),
    ("summary_get", {"group": HUGE}, "invalid_group", "group"),
    ("summary_get", {"period_type": HUGE}, "invalid_period_type", "period_type"),
    ("summary_get", {"start": HUGE}, "invalid_day", "value"),
    ("conversation_stats", {"config_entry_id": HUGE}, "unknown_entry", "entry_id"),
]


@pytest.mark.parametrize(
    ("service", "data", "key", "echo"),
    HUGE_VALUES,
    ids=[f"{service}-{'-'.join(data)}" for service, data, _key, _echo in HUGE_VALUES],
)
@pytest.mark.usefixtures("services")
async def test_a_huge_value_is_echoed_cut(
    hass: HomeAssistant, service: str, data: dict[str, Any], key: str, echo: str
) -> None:
    """100,000 characters in, at most 61 back (and so in the log) in every placeholder."""
    err = await refused(hass, service, data)
    assert err.translation_key == key
    placeholders = err.translation_placeholders or {}
    assert placeholders[echo] == HUGE[:ECHOED] + "…"
    assert max(len(value) for value in placeholders.values()) <= ECHOED + 1
    assert len(message(err)) < 400


@pytest.mark.usefixtures("services")
async def test_a_short_value_is_echoed_whole(hass: HomeAssistant) -> None:
    err = await refused(hass, "history_event_chain", {"event_id": "x" * ECHOED})
    assert err.translation_placeholders is not None
    assert err.translation_placeholders["value"] == "x" * ECHOED
