"""lib/ knows nothing of Home Assistant: its tests need no hass."""

import pytest

from custom_components.azure_openai_memory.lib.tokens import TokenCounter, load_counter

from ..no_hass import auto_enable_custom_integrations, detect_blocking_calls, setup_ha

__all__ = ["auto_enable_custom_integrations", "counter", "detect_blocking_calls", "setup_ha"]


@pytest.fixture(scope="session")
def counter() -> TokenCounter:
    """The exact cl100k counter tests count with (bundled, works offline)."""
    return load_counter("gpt-4", None)
