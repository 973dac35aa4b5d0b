"""The e2e tests run Home Assistant in its own process: no hass fixture here."""

from collections.abc import Iterator

import pytest

from ..azure_stub import DEFAULT_KEY
from ..devhome import ResourceSettings, prepare
from ..devhome.home import DOMAIN
from ..no_hass import auto_enable_custom_integrations, detect_blocking_calls, setup_ha
from .examples import today
from .harness import Home, StandIn, allow_local_sockets, running_hass

__all__ = ["auto_enable_custom_integrations", "detect_blocking_calls", "setup_ha"]


@pytest.fixture(autouse=True)
def verify_cleanup() -> Iterator[None]:
    """The stand-in's thread and the hass process live for a whole module, by design."""
    yield


@pytest.fixture(autouse=True)
def enable_event_loop_debug() -> None:
    """No event loop of this process to debug: each hass runs in its own process. (The test
    plugin of 2026.2 asks asyncio.get_event_loop(), which Python 3.14 refuses once a test's
    asyncio.run has ended and left no loop current.)"""


@pytest.fixture(autouse=True)
def sockets(socket_enabled: None) -> None:
    """Every test here talks to hass and the stand-in on 127.0.0.1."""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Home]:
    """One hass per test module, set up as scripts/develop does, against the stand-in."""
    allow_local_sockets()
    config = tmp_path_factory.mktemp("hass")
    with StandIn() as stand_in, running_hass(config) as hass:
        dev = prepare(hass.base_url, config, ResourceSettings(stand_in.endpoint, DEFAULT_KEY))
        yield Home(hass, stand_in, dev, today())
    log = hass.output()
    assert DEFAULT_KEY not in log
    assert "custom_components/azure_openai_memory" not in log  # in no traceback
    assert not [line for line in log.splitlines() if "ERROR" in line and DOMAIN in line]
