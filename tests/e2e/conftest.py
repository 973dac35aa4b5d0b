"""The e2e test runs Home Assistant in its own process: no hass fixture here."""

import pytest


@pytest.fixture(autouse=True)
def setup_ha() -> None:
    """Home Assistant runs in a subprocess."""


@pytest.fixture(autouse=True)
def auto_enable_custom_integrations() -> None:
    """The subprocess loads custom_components from its config directory."""


@pytest.fixture(autouse=True)
def detect_blocking_calls() -> None:
    """No event loop in this process."""
