"""Snapshots of what the integration hands out: the diagnostics download, and a request
body as Azure receives it (an Assist turn with tools and a prior exchange).

Both differ between Home Assistant versions (the Assist prompt, the stored form of the
LLM API option, whether the SDK takes Home Assistant's HTTP client), so each is kept per
version; a test for another version than the one running is skipped. Values that change
from run to run (ids, ports, sizes, durations) are replaced before the comparison.
"""

from typing import Any

from freezegun import freeze_time
from freezegun.api import FrozenDateTimeFactory
from homeassistant.const import CONF_LLM_HASS_API, MAJOR_VERSION, MINOR_VERSION
from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.components.diagnostics import (
    get_diagnostics_for_config_entry,
)
from pytest_homeassistant_custom_component.syrupy import HomeAssistantSnapshotExtension
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator
from syrupy.assertion import SnapshotAssertion

from .azure_stub import AzureStub, Reply
from .conftest import (
    LLM_ONLY,
    converse,
    download_encodings_from,
    forget_built_encodings,
    loop_keeps_real_time,
)

HA_VERSION = f"{MAJOR_VERSION}.{MINOR_VERSION}"
VERSIONS = ["2025.4", "2026.2", "2026.10"]
NOW = "2026-01-05T09:30:00-08:00"


@pytest.fixture(params=VERSIONS)
def ha_version(request: pytest.FixtureRequest) -> str:
    """The Home Assistant version a snapshot belongs to; others are skipped."""
    version: str = request.param
    if version != HA_VERSION:
        pytest.skip(f"snapshot of Home Assistant {version}, this is {HA_VERSION}")
    return version


@pytest.fixture
def snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """Kept in tests/snapshots/, serialised as Home Assistant's own tests do."""
    return snapshot.use_extension(HomeAssistantSnapshotExtension)


@pytest.fixture
def no_downloads(hass: HomeAssistant, monkeypatch: pytest.MonkeyPatch) -> None:
    """Token encodings are neither built earlier nor downloaded: counted as shipped."""
    forget_built_encodings(monkeypatch)
    download_encodings_from(monkeypatch, "http://127.0.0.1:1/")


def stable(value: Any, replace: dict[str, str]) -> Any:
    """value with every string (and key) in `replace` given its stable name, and every
    `enum` sorted (Home Assistant builds some of its tools' enums from sets, whose order
    changes from run to run)."""
    if isinstance(value, dict):
        return {
            stable(k, replace): sorted(v) if k == "enum" else stable(v, replace)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [stable(v, replace) for v in value]
    if isinstance(value, str):
        for volatile, name in replace.items():
            value = value.replace(volatile, name)
    return value


@pytest.mark.parametrize("agent_options", [{**LLM_ONLY, CONF_LLM_HASS_API: "assist"}])
async def test_diagnostics(
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    no_downloads: None,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    ha_version: str,
    snapshot: SnapshotAssertion,
) -> None:
    """The diagnostics download of an entry that has answered one turn, asked at a fixed
    time so that the clock note its request carried costs the same tokens every run."""
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)
    # Ticking on from NOW, so that the turn's latency is measured.
    with freeze_time(NOW, tick=True), loop_keeps_real_time(hass):
        await converse(hass, config_entry, "What is the capital of France?", "c")
    result = await get_diagnostics_for_config_entry(hass, hass_client, config_entry)
    (subentry_id,) = config_entry.subentries
    diagnostics = stable(result, {subentry_id: "<agent>", str(azure.port): "<port>"})
    diagnostics["history"]["size_bytes"] = "<size>"
    for key in ("latency_p50_ms", "latency_p95_ms"):
        assert diagnostics["statistics"][key] > 0
        diagnostics["statistics"][key] = "<ms>"
    assert diagnostics == snapshot


@pytest.mark.parametrize("agent_options", [{**LLM_ONLY, CONF_LLM_HASS_API: "assist"}])
async def test_request_body(
    hass: HomeAssistant,
    no_downloads: None,
    freezer: FrozenDateTimeFactory,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    ha_version: str,
    snapshot: SnapshotAssertion,
) -> None:
    """The second turn of a conversation with the Assist API, as the stand-in received it;
    the clock stands still, so the time the request tells does too."""
    freezer.move_to(NOW)
    hass.states.async_set("light.kitchen", "off", {"friendly_name": "Kitchen"})
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)
    azure.queue(Reply(text="Nice to meet you, Ada."), Reply(text="Your name is Ada."))
    await converse(hass, config_entry, "My name is Ada", "c")
    await converse(hass, config_entry, "What is my name?", "c")
    request = azure.calls("/chat/completions")[-1]
    assert request.body is not None
    assert stable(request.body, {str(azure.port): "<port>"}) == snapshot
    assert request.path == "/openai/v1/chat/completions"
