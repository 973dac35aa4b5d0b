"""memory/ knows nothing of Home Assistant: its tests need no hass."""

import pytest

from custom_components.azure_openai_memory.memory.tokens import TokenCounter, load_counter


@pytest.fixture(autouse=True)
def setup_ha() -> None:
    """No Home Assistant here."""


@pytest.fixture(autouse=True)
def auto_enable_custom_integrations() -> None:
    """No Home Assistant here."""


@pytest.fixture(autouse=True)
def detect_blocking_calls() -> None:
    """No event loop here."""


@pytest.fixture(scope="session")
def counter() -> TokenCounter:
    """The exact cl100k counter tests count with (bundled, works offline)."""
    return load_counter("gpt-4", None)
