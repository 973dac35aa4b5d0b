"""The Memory panel on a year of a real home's state: how soon each tab shows its first rows.

A real Home Assistant (with its frontend, set up as scripts/develop does) on
benchmarks/bench_year.py's state: 10,000 memories, 1,000,000 history events, 100 series,
two years of summaries. Headless Chromium (Debian's, as the panel's browser test drives
it) goes to the panel at each tab's address from another page of Home Assistant, as a click
in its sidebar does (no page load), as an administrator and as a person who is not one (who
talked to the agent once; the year's talk is nobody's, so theirs is all the history shows
them). The figure against the 1 s target is the median time from that navigation until
the tab's first row is in the page. Beside it: a switch to the tab within the open panel,
the round trip of the commands the tab issues first over a WebSocket connection of its own,
and a whole page load at the tab's address (Home Assistant's frontend starting, its files
cached), with the part of it until the panel showed its tabs (none of our rows yet).

Run by scripts/bench; without Chromium only the WebSocket round trips are measured.
"""

import asyncio
from datetime import datetime
import json
import os
from pathlib import Path
import shutil
import statistics
import tempfile
import time
from typing import Any
from zoneinfo import ZoneInfo

import aiohttp

from benchmarks.bench_year import CONFIG, HISTORY_PATH, info, report, year_state
from custom_components.azure_openai_memory.const import DOMAIN
from tests.azure_stub import DEFAULT_KEY
from tests.devhome import HomeAssistantClient, ResourceSettings, prepare
from tests.devhome.client import add_person, log_in
from tests.devhome.screenshots import DEEP_FIND, Page, browser_page, find_browser, sign_in
from tests.e2e.harness import StandIn, running_hass

PANEL_URL = "/azure-openai-memory"
TARGET_MS = 1000.0
LOADS = 3
ROUND_TRIPS = 10
POLL_SECONDS = 0.01
USERNAME, PASSWORD = "ben", "ben-password-bench"
# Each tab, the element of its first row, and the commands it issues first (at once).
TABS: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "memories": ("li.memory", [{"type": "memories/list", "offset": 0, "limit": 50}]),
    "conversations": (
        "li.conversation",
        [{"type": "conversations/list", "offset": 0, "limit": 20}],
    ),
    "history": (
        "li.event",
        [
            {"type": "history/statistics"},
            {"type": "history/events", "offset": 0, "limit": 50},
        ],
    ),
    "summaries": ("section.card", [{"type": "summaries/groups", "offset": 0, "limit": 50}]),
    "series": ("li.series", [{"type": "series/list", "offset": 0, "limit": 25}]),
}
# The panel on screen (a connected element: Home Assistant may keep one it took down) showing
# this tab: its shadow root, else null.
PANEL_ON = """(() => {
  const panel = window.__deepFind(
    (n) => n.tagName === 'AZURE-OPENAI-MEMORY-PANEL' && n.isConnected);
  const root = panel && panel.shadowRoot;
  const selected = root && root.querySelector('[role=tab][aria-selected=true]');
  return selected && selected.id === 'tab-' + %s ? root : null;
})()"""
# Home Assistant's own navigation (what a click in its sidebar does): no page load.
NAVIGATE = """(() => {
  history.pushState(null, '', %s);
  window.dispatchEvent(new CustomEvent('location-changed', {detail: {replace: false}}));
  window.dispatchEvent(new HashChangeEvent('hashchange'));
  return performance.now();
})()"""
AWAY = "/profile/general"


def _copy_year(config: Path) -> None:
    """The year's files in a fresh configuration (the cache stays as it was built)."""
    storage = config / ".storage"
    storage.mkdir(parents=True)
    for stored in (CONFIG / ".storage").iterdir():
        shutil.copy(stored, storage / stored.name)
    (config / DOMAIN).mkdir()
    shutil.copy(CONFIG / HISTORY_PATH, config / HISTORY_PATH)


async def _poll(page: Page, expression: str, seconds: float = 60) -> Any:
    """The first non-null value of a JavaScript expression, polled."""
    deadline = time.monotonic() + seconds
    while (value := await page.evaluate(expression)) is None:
        if time.monotonic() > deadline:
            raise RuntimeError(f"never there: {expression}")
        await asyncio.sleep(POLL_SECONDS)
    return value


def _first_row(tab: str) -> str:
    """performance.now() once the panel shows the tab's first row, else null."""
    root = PANEL_ON % json.dumps(tab)
    return (
        f"(() => {{ const root = {root};"
        f" return root && root.querySelector({json.dumps(TABS[tab][0])})"
        " ? performance.now() : null; })()"
    )


async def _navigate(page: Page, tab: str) -> float:
    """ms from Home Assistant's navigation to the panel at the tab's address (from another
    page of it, as a click in the sidebar) until the tab's first row is shown."""
    await page.evaluate(NAVIGATE % json.dumps(AWAY))
    await _poll(page, f"({PANEL_ON % json.dumps(tab)}) ? null : true")
    started = float(await page.evaluate(NAVIGATE % json.dumps(f"{PANEL_URL}#{tab}")))
    return float(await _poll(page, _first_row(tab))) - started


async def _load(page: Page, base_url: str, tab: str) -> tuple[float, float]:
    """A whole page load at the tab's address (Home Assistant's frontend starting, its
    files cached): ms from the navigation until the panel showed its tabs, and until the
    tab's first row."""
    await page.send("Page.navigate", url="about:blank")
    await page.send("Page.navigate", url=f"{base_url}{PANEL_URL}#{tab}")
    await _poll(page, "document.readyState === 'loading' ? null : true")
    await page.evaluate(DEEP_FIND)
    shown = float(await _poll(page, f"({PANEL_ON % json.dumps(tab)}) ? performance.now() : null"))
    return shown, float(await _poll(page, _first_row(tab)))


async def _switch(page: Page, tab: str, away: str) -> float:
    """ms from a click on the tab (coming from another) until its first row is shown."""
    await page.evaluate(
        "window.__deepFind((n) => n.tagName === 'AZURE-OPENAI-MEMORY-PANEL' && n.isConnected)"
        f".shadowRoot.getElementById('tab-{away}').click()"
    )
    await _poll(page, _first_row(away))
    started = float(
        await page.evaluate(
            "(() => { window.__deepFind((n) => n.tagName === 'AZURE-OPENAI-MEMORY-PANEL'"
            f" && n.isConnected).shadowRoot.getElementById('tab-{tab}').click();"
            " return performance.now(); })()"
        )
    )
    return float(await _poll(page, _first_row(tab))) - started


async def _in_browser(browser: str, base_url: str, tokens: dict[str, str]) -> dict[str, Any]:
    """Each tab's figures in the page: navigation, whole load, switch (medians)."""
    samples: dict[str, dict[str, list[float]]] = {
        tab: {"navigation": [], "shown": [], "load": [], "switch": []} for tab in TABS
    }
    async with browser_page(browser) as page:
        await sign_in(page, base_url, tokens["access_token"], tokens.get("refresh_token", ""))
        await _load(page, base_url, "memories")  # the frontend's files into the cache
        # One tab after another, so that no navigation finds its tab's rows shown already.
        for _ in range(LOADS):
            for tab in TABS:
                shown, row = await _load(page, base_url, tab)
                samples[tab]["shown"].append(shown)
                samples[tab]["load"].append(row)
        for _ in range(LOADS):
            for tab in TABS:
                samples[tab]["navigation"].append(await _navigate(page, tab))
        for _ in range(LOADS):
            for tab in TABS:
                away = "memories" if tab != "memories" else "series"
                samples[tab]["switch"].append(await _switch(page, tab, away))
    return {
        tab: {name: statistics.median(values) for name, values in figures.items()}
        for tab, figures in samples.items()
    }


async def _round_trips(base_url: str, token: str) -> dict[str, float]:
    """Median ms of each tab's first commands (sent at once, as the page sends them)."""
    url = base_url.replace("http", "ws", 1) + "/api/websocket"
    figures: dict[str, float] = {}
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(url, max_msg_size=0) as socket,
    ):
        await socket.receive_json()
        await socket.send_json({"type": "auth", "access_token": token})
        assert (await socket.receive_json())["type"] == "auth_ok"
        ids = iter(range(1, 1_000_000))
        for tab, (_row, commands) in TABS.items():
            samples = []
            for _ in range(ROUND_TRIPS):
                started = time.perf_counter()
                waiting = set()
                for command in commands:
                    message_id = next(ids)
                    waiting.add(message_id)
                    name = f"{DOMAIN}/{command['type']}"
                    await socket.send_json({**command, "type": name, "id": message_id})
                while waiting:
                    answer = await socket.receive_json()
                    assert answer.get("success"), answer
                    waiting.discard(answer["id"])
                samples.append((time.perf_counter() - started) * 1000)
            figures[tab] = statistics.median(samples)
    return figures


def _print(who: str, browser: dict[str, Any] | None, trips: dict[str, float]) -> list[bool]:
    results = []
    print(f"\n{who}:")
    for tab in TABS:
        trip = f"  {tab}: its first commands' WebSocket round trip"
        if browser is None:
            results.append(report(trip, trips[tab], "ms", "<= 1000 ms", trips[tab] <= TARGET_MS))
            continue
        row = browser[tab]["navigation"]
        name = f"  {tab}: first rows after navigation"
        results.append(report(name, row, "ms", "<= 1000 ms", row <= TARGET_MS))
        info("    a switch to the tab in the open panel", browser[tab]["switch"], "ms")
        info(trip.replace(f"  {tab}: its", "   "), trips[tab], "ms")
        info(
            "    a whole page load (Home Assistant's frontend starting)", browser[tab]["load"], "ms"
        )
        info("      of which until the panel showed its tabs", browser[tab]["shown"], "ms")
    return results


def _prepare_people(client: HomeAssistantClient, base_url: str, agent_id: str) -> dict[str, str]:
    """Ben (not an administrator, a person) and the administrator each talked to the agent
    once today, and today is summarised: every tab has a first row for both."""
    add_person(client, "Ben", USERNAME, PASSWORD)
    tokens = log_in(base_url, USERNAME, PASSWORD)
    client.converse("How warm is the kitchen?", agent_id, "bench-admin")
    HomeAssistantClient(base_url, tokens["access_token"]).converse(
        "Where did I put my keys?", agent_id, "bench-ben"
    )
    # Today by Home Assistant's clock: a run without a day summarises finished days only.
    today = datetime.now(ZoneInfo(client.get("/api/config")["time_zone"])).date()
    client.service(DOMAIN, "summary_aggregate", {"day": today.isoformat()})
    return tokens


def _measure(base_url: str, config: Path, endpoint: str) -> list[bool]:
    dev = prepare(base_url, config, ResourceSettings(endpoint, DEFAULT_KEY))
    client = dev.client
    ben = _prepare_people(client, base_url, dev.agent_id)
    browser = find_browser()
    results: list[bool] = []
    for who, tokens in (
        ("an administrator", {"access_token": dev.token}),
        ("Ben, not an administrator", ben),
    ):
        shown = asyncio.run(_in_browser(browser, base_url, tokens)) if browser else None
        trips = asyncio.run(_round_trips(base_url, tokens["access_token"]))
        results += _print(f"as {who}", shown, trips)
    if browser is None:
        print("\nno Chromium (scripts/setup installs it): the round trips stand in for the page")
    return results


def main() -> int:
    state = year_state()
    print(
        "the Memory panel on a year of state "
        f"({state['events']:,} events, 10,000 memories, 100 series, two years of summaries);"
        f" medians of {LOADS} page loads, {ROUND_TRIPS} round trips"
    )
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        config = Path(tmp) / "config"
        _copy_year(config)
        with StandIn() as stand_in, running_hass(config, frontend=True) as hass:
            results = _measure(hass.base_url, config, stand_in.endpoint)
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
