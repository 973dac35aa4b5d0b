"""The Memory panel: a sidebar entry for every user, served by the integration itself.

The page is one ES module in frontend/, served from a static path of ours (no CDN, no
network at run time: a home may be offline) and registered with panel_custom. Everything
it shows comes through the WebSocket commands of each kind of memory, which show each
caller what the services show them; this module adds the one that tells the page who its
user is, which tabs they may open, and every word it shows in the user's language.

The page's words are catalogues, one JSON file per language in frontend/i18n (English
the fallback, key by key): a language is added by adding its file. The page names the
language its user chose in Home Assistant (`hass.locale.language`); the catalogue sent
is the closest one (de-CH: de), over English, so a word not yet translated reads in
English rather than as its key.
"""

from collections.abc import Mapping
import hashlib
import json
from pathlib import Path
from typing import Any

from homeassistant.components import panel_custom
from homeassistant.components.http import StaticPathConfig
from homeassistant.core import Context, HomeAssistant
import voluptuous as vol

from ..const import DOMAIN
from ..people.access import access
from ..people.speakers import Speaker
from .commands import CommandSpec, async_register_commands, speaker_view

FRONTEND_DIR = Path(__file__).parent / "frontend"
PANEL_MODULE = "memory-panel.js"
STATIC_URL = f"/{DOMAIN}_frontend"
# The sidebar entry's address (/azure-openai-memory) and the page's custom element.
PANEL_URL_PATH = "azure-openai-memory"
PANEL_ELEMENT = "azure-openai-memory-panel"
PANEL_TITLE = "Memory"
PANEL_ICON = "mdi:brain"
CATALOGUE_DIR = FRONTEND_DIR / "i18n"
FALLBACK_LANGUAGE = "en"
ACCESS_SCHEMA: dict[Any, Any] = {vol.Optional("language"): vol.All(str, vol.Length(max=35))}

type Catalogue = dict[str, Any]


def _fingerprint() -> str:
    """The module's content hash: a browser keeps it cached until the file changes."""
    return hashlib.sha256((FRONTEND_DIR / PANEL_MODULE).read_bytes()).hexdigest()[:12]


def read_catalogues(folder: Path = CATALOGUE_DIR) -> dict[str, Catalogue]:
    """Every language's catalogue, by its file's name (de.json: "de")."""
    return {
        path.stem: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(folder.glob("*.json"))
    }


def _over(fallback: Mapping[str, Any], words: Mapping[str, Any]) -> Catalogue:
    """words, with what they lack taken from fallback (key by key, at every depth)."""
    merged: Catalogue = dict(fallback)
    for key, value in words.items():
        below = merged.get(key)
        if isinstance(value, Mapping) and isinstance(below, Mapping):
            merged[key] = _over(below, value)
        else:
            merged[key] = value
    return merged


def catalogue_for(catalogues: Mapping[str, Catalogue], language: str | None) -> Catalogue:
    """The words for a language as Home Assistant names it ("de", "de-CH", "zh-Hans"):
    its own catalogue, else its base language's, over English; English alone for a
    language without one."""
    fallback = catalogues[FALLBACK_LANGUAGE]
    wanted = (language or "").replace("_", "-")
    for name in (wanted, wanted.split("-")[0].lower()):
        if name and name in catalogues:
            return {"language": name, "words": _over(fallback, catalogues[name])}
    return {"language": FALLBACK_LANGUAGE, "words": fallback}


def _access_handler(catalogues: Mapping[str, Catalogue]) -> Any:
    async def page_access(speaker: Speaker, fields: dict[str, Any], _context: Context) -> Any:
        """Who the page is for, which tabs they may open (every tab of talk to everyone,
        each showing the caller their own talk and the household's, all of it to an
        administrator), and the words for the language the page asks in."""
        return {
            "user": speaker_view(speaker),
            "tabs": {
                "memories": True,
                "conversations": True,
                "history": True,
                "summaries": True,
                "series": access(speaker).reads_series(),
            },
            "text": catalogue_for(catalogues, fields.get("language")),
        }

    return page_access


async def async_register_panel(hass: HomeAssistant) -> None:
    """Serve the page and add the sidebar entry (visible to every user)."""
    version = await hass.async_add_executor_job(_fingerprint)
    catalogues = await hass.async_add_executor_job(read_catalogues)
    await hass.http.async_register_static_paths(
        [StaticPathConfig(STATIC_URL, str(FRONTEND_DIR), cache_headers=True)]
    )
    await panel_custom.async_register_panel(
        hass,
        frontend_url_path=PANEL_URL_PATH,
        webcomponent_name=PANEL_ELEMENT,
        # The sidebar has one title for everyone: the home's language's.
        sidebar_title=str(
            catalogue_for(catalogues, hass.config.language)["words"].get("title") or PANEL_TITLE
        ),
        sidebar_icon=PANEL_ICON,
        module_url=f"{STATIC_URL}/{PANEL_MODULE}?v={version}",
        require_admin=False,
        config={"domain": DOMAIN},
    )
    async_register_commands(
        hass, (CommandSpec("panel/access", _access_handler(catalogues), ACCESS_SCHEMA),)
    )
