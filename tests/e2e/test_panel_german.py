"""The Memory panel in the user's language, in a real browser against a real Home Assistant.

An administrator who chose German in their profile opens the panel and finds German words
on every tab, button and filter, and the history as German sentences with the raw data
behind "Details"; "Gesprächsrunde zeigen" (show the turn) only on the events of a turn.
A user who chose French reads the panel in French. With PANEL_SCREENSHOTS naming a folder,
the Memories and History tabs are saved there in both languages. Chromium is Debian's
(scripts/setup installs it): without it this test fails, it never skips.
"""

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
import json
import os
from pathlib import Path
from typing import Any

import pytest

from ..azure_stub import DEFAULT_KEY
from ..devhome import HomeAssistantClient, ResourceSettings, prepare
from ..devhome.client import add_person, log_in
from ..devhome.screenshots import Page, browser_page, find_browser, sign_in
from .examples import DOMAIN
from .harness import StandIn, allow_local_sockets, running_hass
from .test_panel_browser import PANEL_JS, PANEL_URL

pytestmark = [pytest.mark.timeout(240)]

TEA = "Anna drinks green tea every morning"
BINS = "The bins go out on Tuesday evening"
OWLS = "Tell me about owls"
GUEST_ASKS = "Where did I park the bicycle"
SERIES = "outdoor_humidity_timeseries"
GUEST, GUEST_PASSWORD = "guest", "guest-password-e2e"


@dataclass
class LanguageHome:
    base_url: str
    admin: HomeAssistantClient
    guest_tokens: dict[str, str]


def _speaks(client: HomeAssistantClient, language: str) -> None:
    """The language a user chose in their profile (Home Assistant keeps it per user)."""
    client.ws(
        {
            "type": "frontend/set_user_data",
            "key": "language",
            "value": {
                "language": language,
                "number_format": "language",
                "time_format": "language",
                "date_format": "language",
                "time_zone": "local",
                "first_weekday": "language",
            },
        }
    )


@pytest.fixture(scope="module")
def language_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LanguageHome]:
    allow_local_sockets()
    config = tmp_path_factory.mktemp("hass-languages")
    with StandIn() as stand_in, running_hass(config, frontend=True) as hass:
        dev = prepare(hass.base_url, config, ResourceSettings(stand_in.endpoint, DEFAULT_KEY))
        client = dev.client
        add_person(client, "Guest", GUEST, GUEST_PASSWORD)
        for content, kind in ((TEA, "preference"), (BINS, "routine")):
            client.service(DOMAIN, "memory_save", {"content": content, "type": kind})
        client.converse(OWLS, dev.agent_id, "e2e-languages")
        client.service(
            DOMAIN,
            "timeseries_merge",
            {
                "key": SERIES,
                "entries": [
                    {"id": str(hour), "timestamp": f"2026-01-01T{hour:02d}:00:00Z"}
                    for hour in range(0, 24, 3)
                ],
            },
        )
        guest_tokens = log_in(hass.base_url, GUEST, GUEST_PASSWORD)
        as_guest = HomeAssistantClient(hass.base_url, guest_tokens["access_token"])
        as_guest.converse(GUEST_ASKS, dev.agent_id, "e2e-guest")
        _speaks(client, "de")
        _speaks(as_guest, "fr")
        yield LanguageHome(hass.base_url, client, guest_tokens)
    log = hass.output()
    assert DEFAULT_KEY not in log
    assert not [line for line in log.splitlines() if "ERROR" in line and DOMAIN in line]


def _browser() -> str:
    browser = find_browser()
    assert browser is not None, "no Chromium: install Debian's chromium (scripts/setup does)"
    return browser


def _shots() -> Path | None:
    folder = os.environ.get("PANEL_SCREENSHOTS")
    if not folder:
        return None
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    return path


async def _texts(page: Page, selector: str) -> list[str]:
    found: list[str] = await page.evaluate(
        f"window.__all({json.dumps(selector)}).map((n) => n.textContent.trim())"
    )
    return found


async def _options(page: Page, label: str) -> list[str]:
    found: list[str] = await page.evaluate(
        f"[...window.__select({json.dumps(label)}).options].map((o) => o.text)"
    )
    return found


async def _tab(page: Page, name: str, ready: str) -> None:
    await page.evaluate(
        f"window.__all('[role=tab]').find((t) => t.textContent === {json.dumps(name)}).click()"
    )
    await page.wait_until(ready)


async def _open(page: Page, home: LanguageHome, tab: str = "") -> None:
    await page.open(home.base_url + PANEL_URL + (f"#{tab}" if tab else ""))
    await page.evaluate(PANEL_JS)
    await page.wait_until("window.__all('[role=tab]').length === 5", seconds=30)


async def _in_german(page: Page, home: LanguageHome, shots: Path | None) -> None:
    await sign_in(page, home.base_url, home.admin.token)
    await _open(page, home)
    await page.wait_until("window.__all('li.memory').length === 2")
    assert await page.evaluate("window.__root().querySelector('h1').textContent") == "Gedächtnis"
    assert await _texts(page, "[role=tab]") == [
        "Erinnerungen",
        "Gespräche",
        "Verlauf",
        "Zusammenfassungen",
        "Zeitreihen",
    ]
    # The memories' filters, their choices and every button of a row.
    assert await _texts(page, ".filters .label") == [
        "Erinnerungen durchsuchen",
        "Wessen",
        "Typ",
        "Tag",
        "Sicherheit mindestens",
    ]
    assert await _texts(page, ".filters label.field.check") == ["Archiviert"]
    assert (await _options(page, "Wessen"))[:2] == ["Alle", "Haushalt"]
    assert await _options(page, "Typ") == [
        "Alle Typen",
        "Vorliebe",
        "Haushalt",
        "Routine",
        "Umstand",
        "Erkenntnis",
        "Verletzungen",
        "Trainingsreaktion",
    ]
    assert await _options(page, "Sicherheit mindestens") == [
        "Beliebig",
        "niedrig",
        "mittel",
        "hoch",
    ]
    row = f"window.__row({json.dumps(TEA)})"
    buttons = await page.evaluate(
        f"[...{row}.querySelectorAll('button')].map((b) => b.textContent.trim())"
    )
    assert buttons == ["Bearbeiten", "Anheften", "Vergessen", "Löschen"]
    meta = await page.evaluate(f"{row}.querySelector('.meta').textContent")
    assert "von: Haushalt" in meta
    assert "Vorliebe" in meta
    assert "aus Dienst · gesagt" in meta
    if shots:
        await page.save(shots / "panel-memories-de.png")

    # History: a sentence for each event, its data behind "Details"; the turn's button on
    # the events of a turn only.
    await _tab(
        page, "Verlauf", "window.__all('li.event').length > 0 && window.__all('.stat').length"
    )
    assert await _texts(page, ".filters .label") == ["Agent", "Ereignistyp", "Tag"]
    assert (await _options(page, "Ereignistyp"))[:3] == [
        "Alle Typen",
        "Kommunikation",
        "Entscheidung",
    ]
    assert await page.evaluate("window.__all('.stat').map((n) => n.lastChild.textContent)") == [
        "Ereignisse",
        "Gespräche",
        "Schnappschüsse",
        "Erstes",
        "Letztes",
    ]
    rows: list[dict[str, Any]] = await page.evaluate(
        "window.__all('li.event').map((r) => ({type: r.dataset.type,"
        " sentence: r.querySelector('.sentence').textContent,"
        " buttons: [...r.querySelectorAll('button')].map((b) => b.textContent.trim())}))"
    )
    sentences = [r["sentence"] for r in rows]
    assert f"Developer fragte: „{OWLS}“" in sentences
    assert "Das Modell gefragt: kein lokaler Intent passte" in sentences
    assert "8 Einträge in outdoor_humidity_timeseries zusammengeführt (insgesamt 8)" in sentences
    assert sentences.count("Eine Erinnerung gespeichert") == 2
    assert f"Guest fragte: „{GUEST_ASKS}“" in sentences
    for one in rows:
        turn = one["type"] != "state_change"
        assert one["buttons"] == (["Details", "Gesprächsrunde zeigen"] if turn else ["Details"]), (
            one
        )
    # Details: the data as stored.
    merge = (
        "window.__all('li.event').find((r) => r.querySelector('.sentence')"
        ".textContent.includes('outdoor_humidity_timeseries'))"
    )
    await page.evaluate(f"{merge}.querySelector('button.details-toggle').click()")
    await page.wait_until(f"!!{merge}.querySelector('pre.details')")
    raw = json.loads(await page.evaluate(f"{merge}.querySelector('pre.details').textContent"))
    assert (raw["key"], raw["added"], raw["total_count"]) == (SERIES, 8, 8)
    assert (
        await page.evaluate(f"{merge}.querySelector('button.details-toggle').textContent")
        == "Details ausblenden"
    )
    # The turn of the question: its events as sentences too.
    question = (
        "window.__all('li.event').find((r) => r.querySelector('.sentence')"
        f".textContent.includes({json.dumps(OWLS)}))"
    )
    await page.evaluate(f"{question}.querySelector('button.turn-toggle').click()")
    await page.wait_until(f"{question}?.querySelectorAll('ol.turn li').length >= 3")
    turn = await page.evaluate(
        f"[...{question}.querySelectorAll('ol.turn li .content')].map((n) => n.textContent)"
    )
    assert turn[:2] == [
        f"Developer fragte: „{OWLS}“",
        "Das Modell gefragt: kein lokaler Intent passte",
    ]
    assert turn[-1].startswith("Antwort an Developer: „You said: ")
    if shots:
        await page.save(shots / "panel-history-de.png")

    # The other tabs: their buttons.
    await _tab(page, "Gespräche", "window.__all('li.conversation').length > 0")
    assert set(await _texts(page, "li.conversation button")) == {"Öffnen", "Zurücksetzen"}
    assert await _texts(page, "section.card > .actions button") == ["Alle Gespräche zurücksetzen"]
    await _tab(page, "Zusammenfassungen", "window.__all('button.primary').length > 0")
    assert await _texts(page, ".filters button") == ["Heute jetzt zusammenfassen"]
    await _tab(page, "Zeitreihen", "window.__all('li.series').length > 0")
    assert await _texts(page, "li.series button") == ["Öffnen"]
    assert "8 Einträge" in await page.evaluate("window.__all('li.series .meta')[0].textContent")
    await page.evaluate("window.__all('li.series button')[0].click()")
    await page.wait_until("window.__all('.series-detail').length > 0")
    assert await _texts(page, ".filters button") == ["Zurück zu allen Zeitreihen"]
    assert await _texts(page, "th") == ["Zeit", "Eintrag"]


async def _in_french(page: Page, home: LanguageHome, shots: Path | None) -> None:
    tokens = home.guest_tokens
    await sign_in(page, home.base_url, tokens["access_token"], tokens["refresh_token"])
    await _open(page, home)
    await page.wait_until("window.__all('li.memory').length === 2")
    assert await _texts(page, "[role=tab]") == [
        "Souvenirs",
        "Conversations",
        "Historique",
        "Résumés",
        "Séries",
    ]
    assert await _options(page, "À qui") == ["Tous", "Foyer", "Les miens"]
    buttons = await page.evaluate(
        f"[...window.__row({json.dumps(BINS)}).querySelectorAll('button')]"
        ".map((b) => b.textContent.trim())"
    )
    assert buttons == ["Modifier", "Épingler"]
    if shots:
        await page.save(shots / "panel-memories-fr.png")
    await _tab(
        page, "Historique", "window.__all('li.event').length > 0 && window.__all('.stat').length"
    )
    sentences = await _texts(page, "li.event .sentence")
    assert f"Guest a demandé : « {GUEST_ASKS} »" in sentences
    assert [s for s in sentences if s.startswith("Réponse à Guest : « ")]
    assert OWLS not in " ".join(sentences)
    if shots:
        await page.save(shots / "panel-history-fr.png")


def test_a_german_speaking_user_reads_the_panel_in_german(language_home: LanguageHome) -> None:
    asyncio.run(_run(_in_german, language_home))


def test_a_french_speaking_user_reads_the_panel_in_french(language_home: LanguageHome) -> None:
    asyncio.run(_run(_in_french, language_home))


async def _run(steps: Any, home: LanguageHome) -> None:
    shots = _shots()
    async with browser_page(_browser()) as page:
        try:
            await steps(page, home, shots)
        except BaseException:
            if shots:
                await page.save(shots / "failed.png")
            raise
