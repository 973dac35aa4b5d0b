"""The e2e tests run Home Assistant in its own process: no hass fixture here."""

from collections.abc import Iterator

import pytest

from ..no_hass import auto_enable_custom_integrations, detect_blocking_calls, setup_ha

__all__ = ["auto_enable_custom_integrations", "detect_blocking_calls", "setup_ha"]


@pytest.fixture(autouse=True)
def verify_cleanup() -> Iterator[None]:
    """The stand-in's thread and the hass process live for a whole module, by design."""
    yield


@pytest.fixture(autouse=True)
def sockets(socket_enabled: None) -> None:
    """Every test here talks to hass and the stand-in on 127.0.0.1."""
