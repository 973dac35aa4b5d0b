"""The exact token encodings, fetched in the background and cached in the config folder.

Set-up never waits for them: the agents count with the best encoding at hand locally
(a cached file, or a clear estimate), and their counters switch when the exact one
arrives. A failed download is logged once per Home Assistant run and retried at each
maintenance run.
"""

import asyncio

from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.httpx_client import get_async_client
import tiktoken

from ..const import DOMAIN, LOGGER, MAINTENANCE_INTERVAL
from ..data import DATA_ENCODING_WARNED, AzureOpenAIMemoryConfigEntry, Runtime
from ..lib.tokens import (
    PUBLIC_ENCODINGS_URL,
    TokenCounter,
    cached_encoding,
    encoding_file_name,
    encoding_from_download,
)

ENCODING_DOWNLOAD_BASE = PUBLIC_ENCODINGS_URL
# Each try is bounded; a failed one is repeated at the next maintenance run.
ENCODING_DOWNLOAD_TIMEOUT = 120.0


@callback
def async_fetch_encodings(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> None:
    """Fetch the encodings the agents still lack; one fetch at a time per entry."""
    runtime = entry.runtime_data
    if runtime.encoding_task is not None and not runtime.encoding_task.done():
        return
    if all(agent.counter.exact for agent in runtime.windows.values()):
        return
    runtime.encoding_task = entry.async_create_background_task(
        hass, _async_fetch(hass, runtime), f"{DOMAIN} token encodings"
    )


async def _async_fetch(hass: HomeAssistant, runtime: Runtime) -> None:
    wanting: dict[str, list[TokenCounter]] = {}
    for agent in runtime.windows.values():
        if not agent.counter.exact:
            wanting.setdefault(agent.counter.wanted, []).append(agent.counter)
    for name, counters in wanting.items():
        try:
            encoding = await _async_load_encoding(hass, name, runtime)
        except Exception as err:  # offline, blocked, a wrong file: try again later
            # Warned once per Home Assistant run and encoding, not again at every reload.
            warned = hass.data.setdefault(DATA_ENCODING_WARNED, set())
            log = LOGGER.debug if name in warned else LOGGER.warning
            warned.add(name)
            log(
                "Token encoding %s could not be downloaded (%s); counting with %s, "
                "which is not exact, and trying again every %d minutes",
                name,
                str(err) or type(err).__name__,
                counters[0].name,
                MAINTENANCE_INTERVAL.total_seconds() // 60,
            )
            continue
        for counter in counters:
            counter.upgrade(encoding)
        LOGGER.debug("Counting tokens with %s from now on", encoding.name)


async def _async_load_encoding(
    hass: HomeAssistant, name: str, runtime: Runtime
) -> tiktoken.Encoding:
    """The exact encoding: cached by another entry meanwhile, else downloaded (bounded)."""
    cache_dir = runtime.token_cache_dir
    if (
        encoding := await hass.async_add_executor_job(cached_encoding, name, cache_dir)
    ) is not None:
        return encoding
    if (file_name := encoding_file_name(name)) is None:
        raise ValueError(f"no download known for {name}")
    async with asyncio.timeout(ENCODING_DOWNLOAD_TIMEOUT):
        response = await get_async_client(hass).get(ENCODING_DOWNLOAD_BASE + file_name)
        response.raise_for_status()
    return await hass.async_add_executor_job(
        encoding_from_download, name, response.content, cache_dir
    )
