"""The integration set up on a year of a real home's state, in Home Assistant (issue 17).

Run by scripts/bench (pytest -s); not collected by the test suite. The state is
benchmarks/bench_year.py's (built once into benchmarks/.cache/): its files are copied into
the test's config directory and read as Home Assistant reads them (real files, not the
test plugin's in-memory storage). The stand-in answers the model's requests at once, so a
turn's time is our work plus the SDK's.
"""

from collections.abc import Callable, Coroutine
import gc
import os
from pathlib import Path
import random
import shutil
import statistics
import time
from typing import Any

from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant
from homeassistant.setup import async_get_setup_timings
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from benchmarks.bench_year import CONFIG, DAY, HISTORY_PATH, year_state
from custom_components.azure_openai_memory.const import (
    CONF_EARLY_TIMEOUT,
    CONF_HISTORY_RECORDING,
    CONF_MEMORY_CONTEXT,
    CONF_SUMMARIES,
    DOMAIN,
    RECOMMENDED_AGENT,
    RECOMMENDED_TIMESERIES_KEEP_DAYS,
    RECOMMENDED_TIMESERIES_MAX_ENTRIES,
)
from custom_components.azure_openai_memory.history.recorder import HistoryRecorder
from custom_components.azure_openai_memory.lib.series.store import SeriesSettings
from custom_components.azure_openai_memory.memories.store import Memories
from custom_components.azure_openai_memory.series.store import SeriesStore
from custom_components.azure_openai_memory.summaries.store import SummaryStore
from tests.azure_stub import AzureStub
from tests.conftest import converse

# Building the year's state the first time takes minutes (bench_year.py, run first by
# scripts/bench, builds it; a test that finds none builds it itself).
pytestmark = pytest.mark.timeout(1200)
NO_TOOLS_AGENT = {**RECOMMENDED_AGENT, CONF_LLM_HASS_API: None, CONF_EARLY_TIMEOUT: 10}
DEVICE = "kitchen_satellite"  # a group with two years of summaries
TURNS = 100


def report(name: str, value: float, unit: str, target: str, ok: bool) -> None:
    print(f"{name:<62} {value:>10.2f} {unit:<4} target {target:<10} {'OK' if ok else 'MISSED'}")


def info(name: str, value: float, unit: str) -> None:
    print(f"{name:<62} {value:>10.2f} {unit}")


def _resident_mb() -> float:
    gc.collect()
    pages = int(Path("/proc/self/statm").read_text(encoding="ascii").split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


async def resident_mb(hass: HomeAssistant) -> float:
    """The process's resident memory after a collection (read off the event loop)."""
    return await hass.async_add_executor_job(_resident_mb)


async def median_ms(call: Callable[[], Coroutine[Any, Any, object]], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


@pytest.fixture
def hass_storage() -> dict[str, Any]:
    """Real files instead of the test plugin's in-memory storage."""
    return {}


@pytest.fixture
def year(tmp_path: Path) -> dict[str, Any]:
    """The year's files in this test's config directory."""
    state = year_state()
    shutil.copytree(CONFIG / ".storage", tmp_path / ".storage", dirs_exist_ok=True)
    (tmp_path / DOMAIN).mkdir(exist_ok=True)
    shutil.copy(CONFIG / HISTORY_PATH, tmp_path / HISTORY_PATH)
    return state


async def _call(hass: HomeAssistant, service: str, **data: Any) -> Any:
    return await hass.services.async_call(
        DOMAIN, service, data, blocking=True, return_response=True
    )


async def _set_up(hass: HomeAssistant, entry: MockConfigEntry) -> tuple[float, float]:
    """Set the entry (and so the integration) up: the time Home Assistant records for it,
    and the resident memory it added."""
    before = await resident_mb(hass)
    start = time.perf_counter()
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    wall = time.perf_counter() - start
    # The memories are read after the set-up, in the background: their memory counts too.
    await hass.async_block_till_done(wait_background_tasks=True)
    return async_get_setup_timings(hass).get(DOMAIN, wall), await resident_mb(hass) - before


@pytest.mark.parametrize("agent_options", [NO_TOOLS_AGENT])
async def test_set_up_on_an_empty_home(
    hass: HomeAssistant,
    config_entry: MockConfigEntry,
    azure: AzureStub,
    agent_options: dict[str, Any],
) -> None:
    """The reference: the same set-up with nothing stored (run first, so that it also pays
    for importing the integration and its libraries)."""
    hass.loop.set_debug(False)
    setup, added = await _set_up(hass, config_entry)
    print("\nset-up on an empty home (reference; first in this process, imports included):")
    info("  integration set-up (integration/setup_info)", setup, "s")
    info("  resident memory added by the start", added, "MB")


async def _set_up_parts(hass: HomeAssistant) -> None:
    """Each part of the set-up again on its own, the files now in the OS's cache."""
    print("  its parts, each again on its own (files cached by the OS):")
    start = time.perf_counter()
    recorder = await HistoryRecorder.async_open(hass)
    info("    history: open the database", (time.perf_counter() - start) * 1000, "ms")
    await recorder.async_close()
    series = SeriesStore(
        hass,
        f"{DOMAIN}.timeseries",
        defaults=SeriesSettings(
            max_entries=RECOMMENDED_TIMESERIES_MAX_ENTRIES,
            keep_days=float(RECOMMENDED_TIMESERIES_KEEP_DAYS),
        ),
    )
    start = time.perf_counter()
    await series.async_load()
    info(
        "    time series: read the index of 100 series", (time.perf_counter() - start) * 1000, "ms"
    )
    summaries = SummaryStore(hass, f"{DOMAIN}.summaries")
    start = time.perf_counter()
    await summaries.async_load()
    info("    summaries: read two years", (time.perf_counter() - start) * 1000, "ms")
    await summaries.async_close()
    before = await resident_mb(hass)
    memories = Memories(hass)
    start = time.perf_counter()
    await memories.async_load()
    info("    memories: read 10,000 with their vectors", (time.perf_counter() - start) * 1000, "ms")
    info("      resident memory they take", await resident_mb(hass) - before, "MB")
    await memories.async_close()


@pytest.mark.parametrize("agent_options", [NO_TOOLS_AGENT])
async def test_set_up_and_services_on_a_year(
    hass: HomeAssistant,
    config_entry: MockConfigEntry,
    azure: AzureStub,
    year: dict[str, Any],
    agent_options: dict[str, Any],
) -> None:
    hass.loop.set_debug(False)  # the test harness turns asyncio debug on; HA runs without
    before = await resident_mb(hass)
    setup, added = await _set_up(hass, config_entry)
    print("\nset-up on a year of state (1M events, 10k memories, 100 series, 2 years of dailies):")
    report("  integration set-up (integration/setup_info)", setup, "s", "<= 0.5 s", setup <= 0.5)
    report("  resident memory added by the start", added, "MB", "<= 50 MB", added <= 50)
    for i in range(10):
        await converse(hass, config_entry, f"How warm is the kitchen {i}?", f"t{i}", DEVICE)
    await hass.async_block_till_done()
    added = await resident_mb(hass) - before
    report("  resident memory added after 10 turns", added, "MB", "<= 50 MB", added <= 50)

    rng = random.Random(2)
    questions = ["kitchen temperature", "what does anna like in the office", "music", "garage fan"]
    figure = await median_ms(lambda: _call(hass, "memory_search", query=rng.choice(questions)), 100)
    print()
    report("memory_search over 10,000, p50 (service call)", figure, "ms", "<= 10 ms", figure <= 10)
    day = year["start"] + rng.randrange(360) * DAY
    calls: dict[str, Callable[[], Coroutine[Any, Any, object]]] = {
        "session": lambda: _call(hass, "history_query", session_id=rng.choice(year["sessions"])),
        "day": lambda: _call(hass, "history_query", start_time=day, end_time=day + DAY - 1),
        "type": lambda: _call(hass, "history_query", event_type="tool_use"),
        "tag": lambda: _call(hass, "history_query", tags=["user"]),
    }
    for label, call in calls.items():
        figure = await median_ms(call, 40)
        name = f"history_query by {label}, p50 (service call)"
        report(name, figure, "ms", "<= 100 ms", figure <= 100)
    figure = await median_ms(lambda: _call(hass, "history_statistics"), 20)
    report("history_statistics, p50 (service call)", figure, "ms", "<= 50 ms", figure <= 50)
    assert (await _call(hass, "history_statistics"))["total_events"] >= year["events"]
    print()
    await _set_up_parts(hass)


async def _turns_p50(hass: HomeAssistant, entry: MockConfigEntry, prefix: str) -> float:
    times = []
    for i in range(TURNS):
        start = time.perf_counter()
        await converse(hass, entry, f"How warm is the kitchen {i}?", f"{prefix}{i % 10}", DEVICE)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


@pytest.mark.parametrize("agent_options", [NO_TOOLS_AGENT])
async def test_turn_with_the_years_memory_on_and_off(
    hass: HomeAssistant,
    config_entry: MockConfigEntry,
    azure: AzureStub,
    year: dict[str, Any],
    agent_options: dict[str, Any],
) -> None:
    """Memories, summaries and history recording on against all three off, interleaved."""
    hass.loop.set_debug(False)
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    for i in range(20):  # warm up: intents loaded, connections open
        await converse(hass, config_entry, f"How warm is it {i}?", f"w{i % 5}", DEVICE)
    rounds: dict[bool, list[float]] = {True: [], False: []}
    for round_ in range(3):
        for enabled in (True, False):
            hass.config_entries.async_update_entry(
                config_entry,
                options={
                    **config_entry.options,
                    CONF_MEMORY_CONTEXT: enabled,
                    CONF_SUMMARIES: enabled,
                    CONF_HISTORY_RECORDING: enabled,
                },
            )
            await hass.async_block_till_done()
            rounds[enabled].append(await _turns_p50(hass, config_entry, f"r{round_}{enabled}"))
    on, off = statistics.median(rounds[True]), statistics.median(rounds[False])
    print(f"\nturn p50 with memories, summaries and history on {on:.2f} ms, off {off:.2f} ms")
    report("  what they add to a turn", on - off, "ms", "<= 10 ms", on - off <= 10)
