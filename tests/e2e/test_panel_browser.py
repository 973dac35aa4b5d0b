"""The Memory panel in a real browser: headless Chromium against a real Home Assistant.

One hass (with its frontend) for the module, holding some memories, history, summaries and a
series with a gap. An administrator opens the panel, searches, edits, pins and forgets a
memory, and sees the series' gap drawn; a user who is not one sees the controls theirs to use,
and on the tabs of talk their own talk only, never the administrator's. Every change is checked through the services, as a
script would see it. Chromium is Debian's (scripts/setup installs it): without it this
test fails, it never skips.
"""

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
import json
from pathlib import Path
import time
from typing import Any

import pytest

from ..azure_stub import DEFAULT_KEY
from ..devhome import HomeAssistantClient, ResourceSettings, prepare
from ..devhome.client import add_person, log_in
from ..devhome.screenshots import Page, browser_page, find_browser, sign_in
from .examples import DOMAIN, today
from .harness import StandIn, allow_local_sockets, running_hass

pytestmark = [pytest.mark.timeout(240)]

TEA = "Anna drinks green tea every morning"
OOLONG = "Anna drinks oolong tea every morning"
COFFEE = "Ben takes his coffee black"
BINS = "The bins go out on Tuesday evening"
KEY = "The spare key is under the blue flower pot"
GUEST, GUEST_PASSWORD = "guest", "guest-password-e2e"
OWLS = "Tell me about owls"
GUEST_ASKS = "Where did I park the bicycle"
SERIES = "kudos_timeseries"
PANEL_URL = "/azure-openai-memory"
# The panel's shadow root, its memory rows, and a row's button by its text.
PANEL_JS = """
window.__root = () => {
  const panel = window.__deepFind((n) => n.tagName === 'AZURE-OPENAI-MEMORY-PANEL');
  return panel ? panel.shadowRoot : null;
};
window.__all = (selector) => {
  const root = window.__root();
  return root ? [...root.querySelectorAll(selector)] : [];
};
window.__row = (text) => window.__all('li.memory').find((r) => r.textContent.includes(text));
window.__select = (label) => window.__all('label.field')
  .find((l) => l.querySelector('.label').textContent === label)?.querySelector('select');
window.__choose = (label, value) => {
  const box = window.__select(label);
  box.value = value;
  box.dispatchEvent(new Event('change'));
};
window.__button = (row, label) =>
  row ? [...row.querySelectorAll('button')].find((b) => b.textContent.trim() === label) : null;
"""


@dataclass
class PanelHome:
    base_url: str
    admin: HomeAssistantClient
    guest_tokens: dict[str, str]
    config: Path
    # The summary group of the guest's own talk.
    guest_group: str


def _fill(client: HomeAssistantClient, agent_id: str) -> None:
    """Memories, a turn in the history (today's talk) and a series with a gap."""
    for content, kind, tags in (
        (TEA, "preference", ["person:anna"]),
        (COFFEE, "preference", ["person:ben"]),
        (BINS, "routine", ["topic:bins"]),
        (KEY, "household", []),
    ):
        client.service(DOMAIN, "memory_save", {"content": content, "type": kind, "tags": tags})
    client.converse(OWLS, agent_id, "e2e-panel")
    for first, last in ((1, 3), (6, 7)):  # days 4 and 5 of the month were never fetched
        client.service(
            DOMAIN,
            "timeseries_merge",
            {
                "key": SERIES,
                "entries": [
                    {"id": f"{day}-{hour}", "timestamp": f"2026-01-{day:02d}T{hour:02d}:00:00Z"}
                    for day in range(first, last + 1)
                    for hour in range(0, 24, 6)
                ],
                "window_start": f"2026-01-{first:02d}T00:00:00Z",
                "window_end": f"2026-01-{last:02d}T23:59:59Z",
            },
        )


@pytest.fixture(scope="module")
def panel_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PanelHome]:
    """One hass with its frontend for the module, set up as scripts/develop does."""
    allow_local_sockets()
    config = tmp_path_factory.mktemp("hass-panel")
    with StandIn() as stand_in, running_hass(config, frontend=True) as hass:
        dev = prepare(hass.base_url, config, ResourceSettings(stand_in.endpoint, DEFAULT_KEY))
        client = dev.client
        person = add_person(client, "Guest", GUEST, GUEST_PASSWORD)
        _fill(client, dev.agent_id)
        guest_tokens = log_in(hass.base_url, GUEST, GUEST_PASSWORD)
        as_guest = HomeAssistantClient(hass.base_url, guest_tokens["access_token"])
        as_guest.converse(GUEST_ASKS, dev.agent_id, "e2e-guest")
        guest_group = person.replace(".", "_")  # its summaries' group: the id, slugified
        yield PanelHome(hass.base_url, client, guest_tokens, config, guest_group)
    log = hass.output()
    assert DEFAULT_KEY not in log
    assert not [line for line in log.splitlines() if "ERROR" in line and DOMAIN in line]


def _browser() -> str:
    browser = find_browser()
    assert browser is not None, "no Chromium: install Debian's chromium (scripts/setup does)"
    return browser


def _searched(home: PanelHome, **data: Any) -> dict[str, dict[str, Any]]:
    found = home.admin.service(DOMAIN, "memory_search", {"limit": 50, **data})
    return {m["content"]: m for m in found["memories"]}


async def _open_panel(page: Page, home: PanelHome) -> None:
    await page.open(home.base_url + PANEL_URL)
    await page.evaluate(PANEL_JS)
    await page.wait_until("window.__all('li.memory').length > 0", seconds=30)


async def _click(page: Page, text: str, label: str) -> None:
    button = f"window.__button(window.__row({json.dumps(text)}), {json.dumps(label)})"
    await page.wait_until(button)
    await page.evaluate(f"{button}.click()")


async def _search(page: Page, words: str) -> None:
    """Typed into the search box, as a person types."""
    await page.evaluate(
        "(() => { const box = window.__root().getElementById('memory-search');"
        " box.focus(); box.select(); })()"
    )
    if words:
        await page.type(words)
    else:
        await page.key("Backspace", "Backspace", 8)


async def _as_admin(page: Page, home: PanelHome, out: Path) -> None:
    await sign_in(page, home.base_url, home.admin.token)
    await _open_panel(page, home)
    await page.wait_until("window.__all('li.memory').length === 4")
    tabs = await page.evaluate("window.__all('[role=tab]').map((t) => t.textContent)")
    assert tabs == ["Memories", "Conversations", "History", "Summaries", "Series"]
    # An administrator may list each person's memories.
    whose = await page.evaluate("[...window.__select('Whose').options].map((o) => o.text)")
    assert whose[:2] == ["All", "Household"]
    assert "Guest" in whose

    # Search as you type: the hybrid search's best match.
    await _search(page, "what does Anna drink in the morning")
    await page.wait_until(
        f"window.__all('li.memory').length === 1 && !!window.__row({json.dumps(TEA)})"
    )
    # Edit: the old words go to the archive as "edited".
    await _click(page, TEA, "Edit")
    await page.wait_until("!!window.__all('li.memory textarea')[0]")
    await page.evaluate("window.__all('li.memory textarea')[0].select()")
    await page.type(OOLONG)
    await _click(page, "", "Save")
    await page.wait_until(
        "window.__root().querySelector('.status').textContent.startsWith('Saved')"
    )
    assert OOLONG in _searched(home, query="oolong")
    assert TEA not in _searched(home, query="green tea")
    assert TEA in _searched(home, query="green tea", include_archived=True)

    # Pin: shown first, offered first.
    await _search(page, "")
    await page.wait_until("window.__all('li.memory').length === 4")
    await _click(page, BINS, "Pin")
    await page.wait_until(
        f"window.__button(window.__row({json.dumps(BINS)}), 'Unpin')"
        "?.getAttribute('aria-pressed') === 'true'"
    )
    first = home.admin.service(DOMAIN, "memory_search", {"limit": 1})["memories"][0]
    assert (first["content"], first["pinned"]) == (BINS, True)
    assert await page.evaluate("window.__all('li.memory')[0].textContent.includes('Tuesday')")

    # Forget: out of use, into the archive.
    await _click(page, COFFEE, "Forget")
    await page.wait_until("window.__all('li.memory').length === 3")
    assert COFFEE not in _searched(home, query="coffee")
    assert COFFEE in _searched(home, query="coffee", include_archived=True)

    # The series' coverage: the gaps timeseries_query reports, drawn in another colour.
    await page.evaluate(
        "window.__all('[role=tab]').find((t) => t.textContent === 'Series').click()"
    )
    await page.wait_until("window.__all('svg.coverage rect.gap').length > 0")
    drawn = await page.evaluate("window.__all('svg.coverage rect.gap').length")
    shown_range = await page.evaluate("window.__all('.legend span')[2].textContent")
    assert shown_range
    queried = home.admin.service(
        DOMAIN,
        "timeseries_query",
        {"key": SERIES, "start_time": "2026-01-01T00:00:00Z", "end_time": _now()},
    )
    assert drawn == len(queried["gaps"]) == 2
    colours = await page.evaluate(
        "['covered', 'gap'].map((c) => getComputedStyle("
        "window.__all(`svg.coverage rect.${c}`)[0]).fill)"
    )
    assert colours[0] != colours[1], colours
    await page.save(out / "panel-series.png")

    # The other tabs show their first rows; today's talk is summarised on request.
    for tab, first_row in (("History", "li.event"), ("Conversations", "li.conversation")):
        await _tab(page, tab)
        await page.wait_until(f"window.__all({json.dumps(first_row)}).length > 0")
    await _tab(page, "Summaries")
    await page.wait_until("window.__all('button.primary').length > 0")
    await page.evaluate("window.__all('button.primary')[0].click()")
    await page.wait_until("window.__all('.strip button.chip').length > 0", seconds=60)
    found = home.admin.service(DOMAIN, "summary_get", {"period_type": "daily"})["summaries"]
    dailies = {summary["group_id"]: summary for summary in found}
    assert len(dailies) == len(found) == 2  # the administrator's talk and the guest's
    chip = "window.__all('.strip button.chip')[0]"
    group = await page.evaluate(f"{chip}.closest('section').getAttribute('aria-label')")
    daily = dailies[group]
    label = await page.evaluate(f"{chip}.getAttribute('aria-label')")
    assert label.startswith("Dailies")
    await page.evaluate("window.__all('.strip button.chip')[0].click()")
    await page.wait_until("window.__root().querySelector('dialog').open")
    shown = await page.evaluate("window.__root().querySelector('dialog').textContent")
    assert daily["summary"] in shown


async def _tab(page: Page, name: str) -> None:
    await page.evaluate(
        f"window.__all('[role=tab]').find((t) => t.textContent === {json.dumps(name)}).click()"
    )


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


async def _as_guest(page: Page, home: PanelHome) -> None:
    tokens = home.guest_tokens
    await sign_in(page, home.base_url, tokens["access_token"], tokens["refresh_token"])
    await _open_panel(page, home)
    tabs = await page.evaluate("window.__all('[role=tab]').map((t) => t.textContent)")
    assert tabs == ["Memories", "Conversations", "History", "Summaries", "Series"]
    labels = await page.evaluate(
        f"[...window.__row({json.dumps(KEY)}).querySelectorAll('button')]"
        ".map((b) => b.textContent.trim())"
    )
    assert labels == ["Edit", "Pin"]  # forgetting and erasing are an administrator's
    # Whose a memory is, and where it came from.
    meta = await page.evaluate(
        f"window.__row({json.dumps(KEY)}).querySelector('.meta').textContent"
    )
    assert "whose: Household" in meta
    assert "from service · stated" in meta
    # Whose: theirs to choose among the household's and their own, nobody else's.
    whose = await page.evaluate("[...window.__select('Whose').options].map((o) => o.text)")
    assert whose == ["All", "Household", "Mine"]
    shown = await page.evaluate("window.__all('li.memory').length")
    await page.evaluate("window.__choose('Whose', 'private')")
    await page.wait_until("window.__all('li.memory').length === 0")
    await page.evaluate("window.__choose('Whose', 'household')")
    await page.wait_until(f"window.__all('li.memory').length === {shown}")
    await _search(page, "spare key")
    await page.wait_until("window.__all('li.memory').length === 1")
    await _click(page, KEY, "Pin")
    await page.wait_until(
        f"window.__button(window.__row({json.dumps(KEY)}), 'Unpin')"
        "?.getAttribute('aria-pressed') === 'true'"
    )
    assert _searched(home, query="spare key")[KEY]["pinned"] is True
    # The tabs of talk: their own words, never the administrator's.
    await _tab(page, "History")
    await page.wait_until("window.__all('li.event').length > 0")
    history = await page.evaluate("window.__root().querySelector('main').textContent")
    assert GUEST_ASKS in history
    assert OWLS not in history
    await _tab(page, "Conversations")
    await page.wait_until("window.__all('li.conversation').length > 0")
    rows = await page.evaluate("window.__all('li.conversation').map((r) => r.textContent)")
    assert len(rows) == 1
    assert "e2e-guest" in rows[0]
    assert "e2e-panel" not in rows[0]
    assert await page.evaluate("window.__all('button.danger').length") == 0  # no reset
    # The tabs by keyboard: the arrow keys move between them.
    await _tab(page, "Memories")
    await page.wait_until("window.__all('li.memory').length > 0")
    await page.evaluate("window.__all('[role=tab]')[0].focus()")
    await page.key("ArrowLeft", "ArrowLeft", 37)
    await page.wait_until(
        "window.__all('[role=tab][aria-selected=true]')[0]?.textContent === 'Series'"
        " && window.__all('svg.coverage').length > 0"
    )
    # At phone width nothing runs off the side of the page.
    await page.send(
        "Emulation.setDeviceMetricsOverride",
        width=390,
        height=800,
        deviceScaleFactor=1,
        mobile=True,
    )
    await page.wait_until(
        "(() => { const main = window.__root().querySelector('main');"
        " return main.scrollWidth <= main.clientWidth + 1; })()"
    )
    assert await page.evaluate("!window.__root().querySelector('header .menu').hidden"), (
        "the sidebar's menu button shows at phone width"
    )
    # Summaries: summarising now is an administrator's (it covers everyone's talk); once
    # one has, they read their own group only.
    home.admin.service(DOMAIN, "summary_aggregate", {"day": today()})
    await _tab(page, "Summaries")
    await page.wait_until("window.__all('.strip button.chip').length > 0", seconds=60)
    groups = await page.evaluate("window.__all('section.card').map((c) => c.ariaLabel)")
    assert groups == [home.guest_group]
    await page.evaluate("window.__all('.strip button.chip')[0].click()")
    await page.wait_until("window.__root().querySelector('dialog').open")
    shown = await page.evaluate("window.__root().querySelector('dialog').textContent")
    assert GUEST_ASKS in shown
    assert OWLS not in shown


def test_an_administrator_searches_edits_pins_and_forgets(
    panel_home: PanelHome, tmp_path: Path
) -> None:
    asyncio.run(_run(_as_admin, panel_home, tmp_path))


def test_a_user_sees_their_tabs_and_controls_only(panel_home: PanelHome, tmp_path: Path) -> None:
    async def as_guest(page: Page, home: PanelHome, _out: Path) -> None:
        await _as_guest(page, home)

    asyncio.run(_run(as_guest, panel_home, tmp_path))


async def _run(steps: Any, home: PanelHome, out: Path) -> None:
    async with browser_page(_browser()) as page:
        try:
            await steps(page, home, out)
        except BaseException:
            await page.save(out / "failed.png")  # what the browser showed instead
            raise
