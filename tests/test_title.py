"""Entries are titled after the resource; a title the user chose is kept."""

from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.title import is_untouched_title, resource_title

from .azure_stub import AzureStub


@pytest.mark.parametrize(
    ("endpoint", "title"),
    [
        ("https://myres.openai.azure.com", "Azure OpenAI myres"),
        ("https://my-res.cognitiveservices.azure.com", "Azure OpenAI my-res"),
        ("https://hub-1.services.ai.azure.com/api", "Azure OpenAI hub-1"),
        ("http://127.0.0.1:8124", "Azure OpenAI 127.0.0.1:8124"),
        ("http://localhost:11434/v1", "Azure OpenAI localhost:11434"),
        ("https://llm.example.org", "Azure OpenAI llm.example.org"),
        ("https://openai.azure.com", "Azure OpenAI openai.azure.com"),
    ],
)
def test_resource_title(endpoint: str, title: str) -> None:
    """Azure hosts by resource name; any other server by host and explicit port."""
    assert resource_title(endpoint) == title


def test_untouched_titles() -> None:
    """The old host-name default and today's title may be replaced; a user's may not."""
    endpoint = "https://myres.openai.azure.com"
    assert is_untouched_title("myres.openai.azure.com", endpoint)
    assert is_untouched_title("Azure OpenAI myres", endpoint)
    assert not is_untouched_title("Kitchen brain", endpoint)
    assert not is_untouched_title("Azure OpenAI other", endpoint)


async def test_old_default_title_is_replaced_at_set_up(
    hass: HomeAssistant, config_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """An entry titled "127.0.0.1" by an earlier version gets the resource title."""
    assert config_entry.title == "127.0.0.1"
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    assert config_entry.title == f"Azure OpenAI 127.0.0.1:{azure.port}"


async def test_a_title_the_user_chose_is_kept(
    hass: HomeAssistant, config_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """Renamed by the user: set-up and reload leave it alone."""
    hass.config_entries.async_update_entry(config_entry, title="Kitchen brain")
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    assert await hass.config_entries.async_reload(config_entry.entry_id)
    await hass.async_block_till_done()
    assert config_entry.title == "Kitchen brain"
