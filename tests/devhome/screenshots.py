"""Take README's screenshots with headless Chromium against the scripts/develop instance.

python -m tests.devhome.screenshots [--url ...] [--config config] [--out docs]
Chromium is driven over the DevTools protocol (aiohttp WebSocket); no browser download.
The Memory panel's tabs are taken in the light and the dark theme, with a few memories, a
series with a gap and today's summary added to the instance first (again on a second run:
the same memories are seen once more, the series' entries are the same).
"""

import argparse
import asyncio
import base64
from collections.abc import AsyncIterator
import contextlib
import io
import itertools
import json
from pathlib import Path
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any
import urllib.request

import aiohttp

from .client import HomeAssistantClient
from .home import DOMAIN, read_token

# How often a wait polls the page for the condition it waits on.
POLL_INTERVAL = 0.2
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
WIDTH, HEIGHT = 1100, 760
# A deep querySelector through shadow roots: the frontend is web components all the way.
DEEP_FIND = """
window.__deepFind = (pred) => {
  const stack = [document];
  while (stack.length) {
    const node = stack.pop();
    if (node.nodeType === 1 && pred(node)) return node;
    if (node.shadowRoot) stack.push(node.shadowRoot);
    for (const child of node.children || []) stack.push(child);
  }
  return null;
};
window.__deepFindAll = (pred) => {
  const found = [], stack = [document];
  while (stack.length) {
    const node = stack.pop();
    if (node.nodeType === 1 && pred(node)) found.push(node);
    if (node.shadowRoot) stack.push(node.shadowRoot);
    for (const child of node.children || []) stack.push(child);
  }
  return found;
};
"""


class Page:
    """One browser tab over the DevTools protocol."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self.socket = socket
        self.ids = itertools.count(1)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        message_id = next(self.ids)
        await self.socket.send_json({"id": message_id, "method": method, "params": params})
        while True:
            answer = await self.socket.receive_json()
            if answer.get("id") == message_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return dict(answer.get("result", {}))

    async def evaluate(self, expression: str) -> Any:
        result = await self.send(
            "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True
        )
        return result.get("result", {}).get("value")

    async def open(self, url: str) -> None:
        """Navigate; what the page then shows is waited for by the caller's wait_for."""
        await self.send("Page.navigate", url=url)
        # Page.navigate answers once the new document is committed: this is its readyState.
        await self.wait_until("document.readyState === 'complete'")
        await self.evaluate(DEEP_FIND)

    async def wait_until(self, expression: str, seconds: float = 20) -> None:
        """Poll a JavaScript condition: the frontend renders when its data arrives."""
        deadline = time.monotonic() + seconds
        while not await self.evaluate(f"!!({expression})"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"never true: {expression}")
            await asyncio.sleep(POLL_INTERVAL)

    async def wait_for(self, predicate: str, count: int = 1) -> None:
        """At least count elements matching predicate on the page."""
        await self.wait_until(f"window.__deepFindAll((n) => {predicate}).length >= {count}")

    async def settle(self) -> None:
        """Until no animation runs (a dialog's opening one), shadow trees included."""
        await self.wait_until("document.getAnimations().every((a) => a.playState !== 'running')")

    async def click(self, predicate: str) -> None:
        await self.wait_for(predicate)
        await self.evaluate(f"window.__deepFind((n) => {predicate}).click()")

    async def click_topmost(self, predicate: str) -> None:
        """The first of several matches on screen (an entry's button above its agents')."""
        await self.wait_for(predicate)
        await self.evaluate(
            f"window.__deepFindAll((n) => {predicate})"
            ".sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top)[0]"
            ".click()"
        )

    async def type(self, text: str) -> None:
        await self.send("Input.insertText", text=text)

    async def key(self, key: str, code: str, key_code: int, text: str = "") -> None:
        for kind in ("keyDown", "keyUp"):
            await self.send(
                "Input.dispatchKeyEvent",
                type=kind,
                key=key,
                code=code,
                windowsVirtualKeyCode=key_code,
                text=text if kind == "keyDown" else "",
            )

    async def save(self, path: Path) -> None:
        shot = await self.send("Page.captureScreenshot", format="png")
        path.write_bytes(small_png(base64.b64decode(shot["data"])))
        print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")


def small_png(png: bytes) -> bytes:
    """128 colours are plenty for the frontend's flat UI and a third of the bytes."""
    try:
        from PIL import Image
    except ImportError:
        return png
    out = io.BytesIO()
    Image.open(io.BytesIO(png)).convert("RGB").quantize(128).save(out, "PNG", optimize=True)
    return out.getvalue()


def find_browser() -> str | None:
    for name in BROWSERS:
        if found := shutil.which(name):
            return found
    return None


# An ha-form with its fields rendered (not only the element).
FORM = "n.tagName === 'HA-FORM' && !!n.shadowRoot?.querySelector('.root > *')"


def answered(turns: int) -> str:
    """The Assist dialog shows the answer to the turns-th question (not its "…")."""
    return f"""(() => {{
      const box = window.__deepFind((n) => n.id === 'scroll-container');
      if (!box) return false;
      const all = [...box.querySelectorAll('.message')];
      const last = all[all.length - 1];
      const text = last ? last.textContent.trim() : '';
      return all.filter((m) => m.classList.contains('user')).length === {turns}
        && last.classList.contains('hass') && text !== '' && !text.endsWith('…');
    }})()"""


def button(label: str) -> str:
    """A predicate for a clickable element whose own text is label."""
    return (
        "(['HA-BUTTON','MWC-BUTTON','BUTTON','HA-PROGRESS-BUTTON'].includes(n.tagName)"
        f" && n.textContent.trim() === {json.dumps(label)})"
    )


@contextlib.asynccontextmanager
async def browser_page(
    browser: str, width: int = WIDTH, height: int = HEIGHT
) -> AsyncIterator[Page]:
    """A headless Chromium of its own (a fresh profile), one tab of it; stopped after.

    Chromium's helper processes may still write to the profile for a moment after it has
    stopped: what they leave in the temporary folder is not worth failing for.
    """
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        chrome = await asyncio.create_subprocess_exec(
            browser,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            # Any free port; Chromium names it in the profile's DevToolsActivePort.
            "--remote-debugging-port=0",
            f"--window-size={width},{height}",
            f"--user-data-dir={profile}",
            "about:blank",
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            page_ws = await asyncio.to_thread(_page_socket, Path(profile))
            async with (
                aiohttp.ClientSession() as session,
                session.ws_connect(page_ws, max_msg_size=0) as socket,
            ):
                page = Page(socket)
                await page.send("Page.enable")
                await page.send(
                    "Emulation.setDeviceMetricsOverride",
                    width=width,
                    height=height,
                    deviceScaleFactor=1,
                    mobile=False,
                )
                yield page
        finally:
            chrome.terminate()
            await asyncio.wait_for(chrome.wait(), 30)


async def sign_in(page: Page, base_url: str, access_token: str, refresh_token: str = "") -> None:
    """The frontend keeps its tokens in localStorage: a token stands in for a login."""
    await page.open(base_url + "/auth/authorize")
    tokens = {
        "access_token": access_token,
        "token_type": "Bearer",
        "expires_in": 1800,
        "hassUrl": base_url,
        "clientId": base_url + "/",
        "expires": int(time.time() * 1000) + 10 * 365 * 86400 * 1000,
        "refresh_token": refresh_token,
    }
    await page.evaluate(f"localStorage.setItem('hassTokens', {json.dumps(json.dumps(tokens))})")


def take(base_url: str, token: str, out: Path, browser: str) -> None:
    """Start a headless Chromium of its own, take the pictures, stop it."""
    asyncio.run(_session(browser, base_url, token, out))


async def _session(browser: str, base_url: str, token: str, out: Path) -> None:
    async with browser_page(browser) as page:
        try:
            await _shoot(page, base_url, token, out)
        except RuntimeError:
            await page.save(out / "failed.png")  # what the browser showed instead
            raise


def _page_socket(profile: Path) -> str:
    deadline = time.monotonic() + 30
    while True:
        port = _devtools_port(profile)
        with (
            contextlib.suppress(OSError, ValueError),
            urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as answer,
        ):
            for target in json.loads(answer.read()):
                if target["type"] == "page":
                    return str(target["webSocketDebuggerUrl"])
        if time.monotonic() > deadline:
            raise RuntimeError("Chromium did not open its DevTools port")
        time.sleep(0.3)


def _devtools_port(profile: Path) -> int:
    """The port Chromium chose, once it has written it (0 until then)."""
    try:
        return int((profile / "DevToolsActivePort").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


async def _shoot(page: Page, base_url: str, token: str, out: Path) -> None:
    # A long-lived token stands in for a login.
    await sign_in(page, base_url, token)

    # 1. The config flow's first form.
    await page.open(base_url + "/config/integrations/dashboard/add?domain=azure_openai_memory")
    await page.click(button("OK"))  # "Do you want to set up Azure OpenAI Memory?"
    await page.wait_for(FORM)
    await page.settle()
    await page.save(out / "config-flow.png")

    # 2. The options of the entry scripts/develop made, then its agent's settings.
    integration = base_url + "/config/integrations/integration/azure_openai_memory"
    await page.open(integration)
    # The entry's button and its agent's.
    await page.wait_for(button("Configure"), count=2)
    await page.click_topmost(button("Configure"))
    await page.wait_for(FORM)
    await page.settle()
    await page.save(out / "options.png")
    await page.open(integration)
    await page.wait_for(button("Configure"), count=2)
    await page.evaluate(
        f"window.__deepFindAll((n) => {button('Configure')})"
        ".sort((a, b) => b.getBoundingClientRect().top - a.getBoundingClientRect().top)[0]"
        ".click()"
    )
    await page.wait_for(FORM)
    await page.settle()
    await page.save(out / "agent.png")

    # 3. A conversation in the Assist dialog ("a" opens it on any dashboard).
    await page.open(base_url + "/lovelace/0")
    await page.wait_for("n.tagName === 'HUI-VIEW'")
    await page.key("a", "KeyA", 65, "a")
    await page.wait_for("n.id === 'message-input'")
    await page.settle()
    for turn, line in enumerate(("turn on the kitchen light", "what did I just ask?"), 1):
        await page.type(line)
        await page.key("Enter", "Enter", 13, "\r")
        await page.wait_until(answered(turn))
    await page.save(out / "assist.png")

    # 4. The Memory panel.
    await asyncio.to_thread(add_panel_demo, HomeAssistantClient(base_url, token))
    await _shoot_panel(page, base_url, out)


PANEL_TABS = {
    "memories": "n.tagName === 'LI' && n.classList.contains('memory')",
    "conversations": "n.tagName === 'LI' && n.classList.contains('conversation')",
    # A row, and the statistics above (they come apart from the rows).
    "history": (
        "n.tagName === 'LI' && n.classList.contains('event')"
        " && !!n.closest('ul').parentNode.querySelector('.stats')"
    ),
    "summaries": "n.tagName === 'BUTTON' && n.classList.contains('chip')",
    "series": "n.tagName === 'svg' && n.classList.contains('coverage')",
}
PANEL_MEMORIES = (
    ("Anna drinks oolong tea every morning", "preference", ["person:anna"], False),
    ("A spare EpiPen is kept in the kitchen drawer", "household", ["topic:allergy"], True),
    ("The bins go out on Tuesday evening", "routine", ["topic:bins"], False),
    ("Ben likes the living room at 21 degrees", "preference", ["person:ben"], False),
    ("The heater is off while windows are open", "household", ["device:heater"], False),
)
PANEL_SERIES = "outdoor_humidity_timeseries"


def add_panel_demo(client: HomeAssistantClient) -> None:
    """What the panel's pictures show: memories, a series with a gap, today's summary."""
    for content, kind, tags, pinned in PANEL_MEMORIES:
        client.service(
            DOMAIN,
            "memory_save",
            {"content": content, "type": kind, "tags": tags, "pinned": pinned},
        )
    now = int(time.time()) // 3600 * 3600
    for first, last in ((now - 96 * 3600, now - 60 * 3600), (now - 36 * 3600, now - 3600)):
        client.service(
            DOMAIN,
            "timeseries_merge",
            {
                "key": PANEL_SERIES,
                "entries": [
                    {"id": str(t), "timestamp": t, "humidity": 60 + (t // 3600) % 7}
                    for t in range(first, last, 3600)
                ],
                "window_start": first,
                "window_end": last,
            },
        )
    client.ws({"type": f"{DOMAIN}/summaries/run"})


async def _shoot_panel(page: Page, base_url: str, out: Path) -> None:
    """Each tab of the Memory panel, light and dark."""
    for theme in ("light", "dark"):
        await page.send(
            "Emulation.setEmulatedMedia",
            features=[{"name": "prefers-color-scheme", "value": theme}],
        )
        for tab, first_row in PANEL_TABS.items():
            await page.open(f"{base_url}/azure-openai-memory#{tab}")
            await page.wait_for(first_row)
            await page.settle()
            await page.save(out / f"panel-{tab}-{theme}.png")
    await page.send("Emulation.setEmulatedMedia", features=[])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", default="http://127.0.0.1:8123")
    parser.add_argument("--config", type=Path, default=Path("config"))
    parser.add_argument("--out", type=Path, default=Path("docs"))
    args = parser.parse_args()
    browser = find_browser()
    if browser is None:
        print(
            "No Chromium found (looked for " + ", ".join(BROWSERS) + "): "
            "install it, e.g. 'apt-get install chromium', and run this again.",
            file=sys.stderr,
        )
        return 1
    token = read_token(args.config)
    if not token:
        print("No development instance found: run scripts/develop first.", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    take(args.url, token, args.out, browser)
    return 0


if __name__ == "__main__":
    sys.exit(main())
