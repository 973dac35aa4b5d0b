"""For tests that run without a hass fixture: the suite's autouse hass fixtures, turned off.

Import these names into a folder's conftest.py to override tests/conftest.py there.
"""

import pytest


@pytest.fixture(autouse=True)
def setup_ha() -> None:
    """No Home Assistant in this process."""


@pytest.fixture(autouse=True)
def auto_enable_custom_integrations() -> None:
    """No Home Assistant in this process."""


@pytest.fixture(autouse=True)
def detect_blocking_calls() -> None:
    """No event loop in this process."""
