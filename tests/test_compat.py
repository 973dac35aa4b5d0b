"""The compatibility module picks the right side on each Home Assistant version."""

import dataclasses

from awesomeversion import AwesomeVersion
from homeassistant.components import conversation
from homeassistant.const import __version__ as HA_VERSION
from homeassistant.core import Context
from homeassistant.helpers import entity_platform

from custom_components.azure_openai_memory import compat

ON_2025_4 = AwesomeVersion(HA_VERSION) < AwesomeVersion("2025.5.0")


def test_llm_api_option_matches_this_version() -> None:
    """2025.4 stores one LLM API id; newer versions store a list."""
    assert compat.LLM_API_ACCEPTS_LIST is not ON_2025_4
    if ON_2025_4:
        assert compat.llm_api_option(["assist"]) == "assist"
        assert compat.llm_api_option("assist") == "assist"
    else:
        assert compat.llm_api_option("assist") == ["assist"]
        assert compat.llm_api_option(["assist", "other"]) == ["assist", "other"]
    assert compat.llm_api_option(None) is None
    assert compat.llm_api_option([]) is None


def test_llm_api_ids_reads_either_form() -> None:
    """A value written by either version reads back as a list."""
    assert compat.llm_api_ids("assist") == ["assist"]
    assert compat.llm_api_ids(["a", "b"]) == ["a", "b"]
    assert compat.llm_api_ids(None) == []


def _input(**kwargs: object) -> conversation.ConversationInput:
    """A ConversationInput on either version (2026 added satellite_id)."""
    names = {f.name for f in dataclasses.fields(conversation.ConversationInput)}
    values = {
        "text": "hi",
        "context": Context(user_id=kwargs.pop("user_id", None)),  # type: ignore[arg-type]
        "conversation_id": None,
        "device_id": None,
        "language": "en",
        "agent_id": None,
        **kwargs,
    }
    if "satellite_id" in names:
        values.setdefault("satellite_id", None)
    else:
        values.pop("satellite_id", None)
    return conversation.ConversationInput(**{k: v for k, v in values.items() if k in names})  # type: ignore[arg-type]


def test_conversation_source_prefers_satellite_then_device_then_user() -> None:
    """Who is speaking decides which window a new conversation id continues."""
    assert compat.conversation_source(_input(device_id="d1", user_id="u1")) == "device:d1"
    assert compat.conversation_source(_input(user_id="u1")) == "user:u1"
    assert compat.conversation_source(_input()) is None
    satellite = _input(satellite_id="assist_satellite.kitchen", device_id="d1")
    expected = "satellite:assist_satellite.kitchen" if not ON_2025_4 else "device:d1"
    assert compat.conversation_source(satellite) == expected


def test_api_differences_detected_on_this_version() -> None:
    """Each side of the compatibility module is the one this version needs."""
    assert compat.HAS_PROVIDE_LLM_DATA is not ON_2025_4
    assert compat.HANDLE_INTENTS_TAKES_CHAT_LOG is not ON_2025_4


def test_config_entry_add_entities_type_takes_a_subentry() -> None:
    """Platforms add entities per agent subentry, on every supported version."""
    assert compat.AddConfigEntryEntitiesCallback is entity_platform.AddConfigEntryEntitiesCallback
    call = compat.signature(compat.AddConfigEntryEntitiesCallback.__call__)
    assert "config_subentry_id" in call.parameters
