"""The Memory panel: a sidebar entry for every user, served by the integration itself.

The page is one ES module in frontend/, served from a static path of ours (no CDN, no
network at run time: a home may be offline) and registered with panel_custom. Everything
it shows comes through the WebSocket commands of each kind of memory; this module adds
the one that tells the page which tabs its user may open.
"""

import hashlib
from pathlib import Path
from typing import Any

from homeassistant.components import panel_custom
from homeassistant.components.http import StaticPathConfig
from homeassistant.core import Context, HomeAssistant

from .const import DOMAIN
from .history.websocket import history_visible_to
from .people import Speaker
from .summaries.websocket import summaries_visible_to
from .timeseries.websocket import series_visible_to
from .websocket import CommandSpec, async_register_commands, speaker_view
from .window import conversations_visible_to

FRONTEND_DIR = Path(__file__).parent / "frontend"
PANEL_MODULE = "memory-panel.js"
STATIC_URL = f"/{DOMAIN}_frontend"
# The sidebar entry's address (/azure-openai-memory) and the page's custom element.
PANEL_URL_PATH = "azure-openai-memory"
PANEL_ELEMENT = "azure-openai-memory-panel"
PANEL_TITLE = "Memory"
PANEL_ICON = "mdi:brain"


def _fingerprint() -> str:
    """The module's content hash: a browser keeps it cached until the file changes."""
    return hashlib.sha256((FRONTEND_DIR / PANEL_MODULE).read_bytes()).hexdigest()[:12]


async def _async_access(speaker: Speaker, _fields: dict[str, Any], _context: Context) -> Any:
    """Who the page is for, and which tabs they may open."""
    return {
        "user": speaker_view(speaker),
        "tabs": {
            "memories": True,
            "conversations": conversations_visible_to(speaker),
            "history": history_visible_to(speaker),
            "summaries": summaries_visible_to(speaker),
            "series": series_visible_to(speaker),
        },
    }


async def async_register_panel(hass: HomeAssistant) -> None:
    """Serve the page and add the sidebar entry (visible to every user)."""
    version = await hass.async_add_executor_job(_fingerprint)
    await hass.http.async_register_static_paths(
        [StaticPathConfig(STATIC_URL, str(FRONTEND_DIR), cache_headers=True)]
    )
    await panel_custom.async_register_panel(
        hass,
        frontend_url_path=PANEL_URL_PATH,
        webcomponent_name=PANEL_ELEMENT,
        sidebar_title=PANEL_TITLE,
        sidebar_icon=PANEL_ICON,
        module_url=f"{STATIC_URL}/{PANEL_MODULE}?v={version}",
        require_admin=False,
        config={"domain": DOMAIN},
    )
    async_register_commands(hass, (CommandSpec("panel/access", _async_access),))
