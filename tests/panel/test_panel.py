"""The Memory panel: a sidebar entry for every user, its page served by the integration
itself (no network), and the tabs each user may open."""

from pathlib import Path
import re
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.typing import (
    ClientSessionGenerator,
    WebSocketGenerator,
)

from custom_components.azure_openai_memory.const import DOMAIN

from ..panel_commands import answer

FRONTEND = Path(__file__).parents[2] / "custom_components" / DOMAIN / "panel" / "frontend"


async def sidebar_entry(hass: HomeAssistant, hass_ws_client: WebSocketGenerator) -> dict[str, Any]:
    """The Memory panel's sidebar entry as the frontend asks for it (get_panels)."""
    assert await async_setup_component(hass, "frontend", {})
    client = await hass_ws_client(hass)
    await client.send_json_auto_id({"type": "get_panels"})
    message = await client.receive_json()
    assert message["success"], message
    return dict(message["result"]["azure-openai-memory"])


async def test_the_sidebar_entry_is_named_in_the_home_s_language(
    hass: HomeAssistant, hass_ws_client: WebSocketGenerator
) -> None:
    """The sidebar has one title for every user: the home's language's."""
    hass.config.language = "de"
    assert await async_setup_component(hass, DOMAIN, {})
    panel = await sidebar_entry(hass, hass_ws_client)
    assert panel["title"] == "Gedächtnis"


async def test_the_sidebar_entry_and_its_page(
    hass: HomeAssistant, hass_client: ClientSessionGenerator, hass_ws_client: WebSocketGenerator
) -> None:
    assert await async_setup_component(hass, DOMAIN, {})
    panel = await sidebar_entry(hass, hass_ws_client)
    assert panel["component_name"] == "custom"
    assert (panel["title"], panel["icon"]) == ("Memory", "mdi:brain")
    assert panel["require_admin"] is False
    custom = panel["config"]["_panel_custom"]
    assert custom["name"] == "azure-openai-memory-panel"
    assert custom["embed_iframe"] is False
    module_url = custom["module_url"]
    assert re.fullmatch(
        r"/azure_openai_memory_frontend/memory-panel\.js\?v=[0-9a-f]{12}", module_url
    )

    client = await hass_client()
    response = await client.get(module_url)
    assert response.status == 200
    assert "javascript" in response.headers["Content-Type"]
    source = await response.text()
    assert source == (FRONTEND / "memory-panel.js").read_text()
    assert 'customElements.define("azure-openai-memory-panel"' in source


def test_the_page_loads_nothing_from_the_network() -> None:
    """One ES module without imports: no CDN, no build step, nothing fetched but our API."""
    source = (FRONTEND / "memory-panel.js").read_text()
    assert not re.search(r"^\s*import\b|\bimport\(", source, re.MULTILINE)
    # The SVG namespace is a name, never fetched.
    assert not re.search(r"https?://", source.replace('"http://www.w3.org/2000/svg"', ""))
    assert "fetch(" not in source
    assert sorted(p.name for p in FRONTEND.iterdir()) == ["i18n", "memory-panel.js"]
    # The words, one catalogue per language, come through panel/access (never fetched).
    assert {p.suffix for p in (FRONTEND / "i18n").iterdir()} == {".json"}


async def test_each_user_sees_the_tabs_they_may_open(
    hass: HomeAssistant, hass_ws_client: WebSocketGenerator, hass_read_only_access_token: str
) -> None:
    assert await async_setup_component(hass, DOMAIN, {})
    admin = await hass_ws_client(hass)
    user = await hass_ws_client(hass, hass_read_only_access_token)
    assert (await answer(admin, "panel/access"))["tabs"] == {
        "memories": True,
        "conversations": True,
        "history": True,
        "summaries": True,
        "series": True,
    }
    # Every tab for everyone: each shows a user their own talk and the household's.
    mine = await answer(user, "panel/access")
    assert mine["tabs"] == {
        "memories": True,
        "conversations": True,
        "history": True,
        "summaries": True,
        "series": True,
    }
    assert mine["user"]["is_admin"] is False
