"""The Memory panel: a sidebar entry for every user, served by the integration itself.

The page is one ES module in frontend/, served from a static path of ours (no CDN, no
network at run time: a home may be offline) and registered with panel_custom. Everything
it shows comes through the WebSocket commands of each kind of memory, which show each
caller what the services show them; this module adds the one that tells the page who its
user is and which tabs they may open.
"""

import hashlib
from pathlib import Path
from typing import Any

from homeassistant.components import panel_custom
from homeassistant.components.http import StaticPathConfig
from homeassistant.core import Context, HomeAssistant

from .const import DOMAIN
from .people import Speaker
from .timeseries.websocket import series_visible_to
from .websocket import CommandSpec, async_register_commands, speaker_view

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
    """Who the page is for, and which tabs they may open: every tab of talk to everyone,
    each showing the caller their own talk and the household's (all of it to an
    administrator)."""
    return {
        "user": speaker_view(speaker),
        "tabs": {
            "memories": True,
            "conversations": True,
            "history": True,
            "summaries": True,
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
