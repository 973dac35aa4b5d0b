"""The memories a start reads: their words are indexed in the background once Home
Assistant has started, and a search or save before that answers as it would after."""

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
import time
from typing import Any

from homeassistant.const import EVENT_HOMEASSISTANT_STARTED
from homeassistant.core import CoreState, HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.storage import MAX_LOAD_CONCURRENTLY, STORAGE_SEMAPHORE, Store
from homeassistant.setup import async_setup_component

from custom_components.azure_openai_memory.azure.client import ResourceSettings, build_client
from custom_components.azure_openai_memory.azure.embeddings import Embedder
from custom_components.azure_openai_memory.const import API_STYLE_V1, DOMAIN
from custom_components.azure_openai_memory.data import memories_of
from custom_components.azure_openai_memory.lib.memories import (
    MemorySettings,
    MemoryStore,
    SaveAction,
)
from custom_components.azure_openai_memory.memories.store import Memories

from ..azure_stub import DEFAULT_KEY, AzureStub
from ..conftest import MEMORIES_KEY, memories_file, memory_record, stored_memories
from ..lib.memories.test_memories import household_memories
from .test_memory_services import EMBEDDINGS, embedding_calls

QUESTIONS = ["garage fan speed", "what does anna like in the kitchen", "jazz playlist"]


def _file() -> dict[str, Any]:
    records = [
        memory_record(n, text, "preference", tags)
        for n, (text, tags) in enumerate(household_memories())
    ]
    return memories_file(records, settings={"max_memories_per_type": 1000})


async def _search(hass: HomeAssistant, question: str) -> list[tuple[str, float]]:
    found = await hass.services.async_call(
        DOMAIN,
        "memory_search",
        {"query": question, "limit": 8},
        blocking=True,
        return_response=True,
    )
    assert found is not None
    return [(m["id"], m["score"]) for m in found["memories"]]


@asynccontextmanager
async def _file_reads_held(
    hass: HomeAssistant, hass_storage: dict[str, Any]
) -> AsyncIterator[None]:
    """Home Assistant reads a few stored files at once; with every one of those places
    taken, the memories file's read waits inside the block.

    Without it the read may end before the test looks: on Python 3.14 a job the executor
    finished before its future was awaited hands back a future already done, so the
    background read can run to its end in the very call that started it.
    """
    # A first read of a stored file makes the places (Home Assistant's storage semaphore).
    hass_storage["test_reads_held"] = {"version": 1, "data": {}}
    await Store[dict[str, Any]](hass, 1, "test_reads_held").async_load()
    reads = hass.data[STORAGE_SEMAPHORE]
    for _ in range(MAX_LOAD_CONCURRENTLY):
        await reads.acquire()
    try:
        yield
    finally:
        for _ in range(MAX_LOAD_CONCURRENTLY):
            reads.release()


async def _set_up_while_starting(hass: HomeAssistant, hass_storage: dict[str, Any]) -> None:
    hass_storage[MEMORIES_KEY] = _file()
    hass.set_state(CoreState.starting)
    assert await async_setup_component(hass, DOMAIN, {})
    await hass.async_block_till_done(wait_background_tasks=True)


async def test_a_search_and_a_save_before_the_words_are_indexed(
    hass: HomeAssistant, hass_storage: dict[str, Any]
) -> None:
    expected = MemoryStore.from_dict(_file()["data"])
    expected.build_keywords()
    await _set_up_while_starting(hass, hass_storage)
    assert not memories_of(hass).store.keywords_ready  # waiting for the start

    for question in QUESTIONS:
        found = await _search(hass, question)
        reference = expected.search(question, limit=8, now=time.time()).memories
        assert found == [(memory.id, score) for memory, score in reference]
        assert found

    text, tags = household_memories()[30]
    saved = await hass.services.async_call(
        DOMAIN,
        "memory_save",
        {"content": text, "type": "preference", "tags": tags},
        blocking=True,
        return_response=True,
    )
    assert saved is not None
    assert saved["action"] == "reinforced"
    assert saved["memory"]["occurrences"] == 2
    hass.set_state(CoreState.running)
    hass.bus.async_fire(EVENT_HOMEASSISTANT_STARTED)
    await hass.async_block_till_done(wait_background_tasks=True)
    stored = await stored_memories(hass, hass_storage)
    assert len(stored["memories"]) == len(household_memories())


async def test_the_words_are_indexed_once_home_assistant_has_started(
    hass: HomeAssistant, hass_storage: dict[str, Any]
) -> None:
    await _set_up_while_starting(hass, hass_storage)
    memories = memories_of(hass)
    assert not memories.store.keywords_ready
    hass.set_state(CoreState.running)
    hass.bus.async_fire(EVENT_HOMEASSISTANT_STARTED)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert memories.store.keywords_ready  # before any question asked for it


async def test_what_uses_the_memories_waits_for_them_to_be_read(
    hass: HomeAssistant, hass_storage: dict[str, Any]
) -> None:
    """The file is read in the background (the set-up does not wait for it): a search and
    a save made while it is read answer from the stored memories, and the save is kept
    beside them."""
    hass_storage[MEMORIES_KEY] = _file()
    memories = Memories(hass)
    text, tags = household_memories()[12]
    async with _file_reads_held(hass, hass_storage):
        memories.async_start_loading()
        answers = asyncio.gather(
            memories.async_search(text, limit=3),
            memories.async_save("The cellar light is on a timer", "routine"),
        )
        await hass.async_block_till_done()
        assert not memories.loaded
        assert not answers.done()  # both wait for the file
    found, saved = await answers
    assert memories.loaded
    assert found.memories[0][0].id == memory_record(12, text, "preference", tags)["id"]
    assert saved.action is SaveAction.CREATED
    assert len(memories.store) == len(household_memories()) + 1
    await memories.async_close()
    stored = await stored_memories(hass, hass_storage)
    assert len(stored["memories"]) == len(household_memories()) + 1


async def test_closing_just_after_the_start_loses_nothing(
    hass: HomeAssistant, hass_storage: dict[str, Any]
) -> None:
    """Closed at once (a start that fails, a reload), whether or not the file was read
    by then: what it holds stays."""
    hass_storage[MEMORIES_KEY] = _file()
    assert await async_setup_component(hass, DOMAIN, {})
    await memories_of(hass).async_close()
    await hass.async_block_till_done(wait_background_tasks=True)
    stored = await stored_memories(hass, hass_storage)
    assert [m["id"] for m in stored["memories"]] == [m["id"] for m in _file()["data"]["memories"]]


async def test_a_stop_while_the_memories_are_read_writes_nothing(
    hass: HomeAssistant, hass_storage: dict[str, Any]
) -> None:
    """Closed before the file was read, with entries' settings waiting for it: nothing is
    applied and nothing written (the store holds none of the file's memories)."""
    hass_storage[MEMORIES_KEY] = _file()
    memories = Memories(hass)
    async with _file_reads_held(hass, hass_storage):
        memories.async_start_loading()
        memories.async_when_loaded(
            lambda: memories.async_update_settings(MemorySettings(max_memories_per_type=500))
        )
        before = await stored_memories(hass, hass_storage)
        assert not memories.loaded
        await memories.async_close()
    await hass.async_block_till_done(wait_background_tasks=True)
    after = await stored_memories(hass, hass_storage)
    assert after == before
    assert len(after["memories"]) == len(household_memories())


async def test_a_file_that_stops_the_read_is_kept_aside(
    hass: HomeAssistant, hass_storage: dict[str, Any]
) -> None:
    """Whatever stops the read (here a cap no number can hold) keeps the file as it was,
    aside; the memories start empty and are written anew."""
    file = _file()
    file["data"]["settings"] = {"max_memories_per_type": float("inf")}
    hass_storage[MEMORIES_KEY] = file
    memories = Memories(hass)
    memories.async_start_loading()
    await memories.async_loaded()
    assert len(memories.store) == 0
    issues = ir.async_get(hass).issues
    assert (DOMAIN, "corrupt_azure_openai_memory.memories") in issues


async def test_the_stored_vectors_deployment_is_kept_whatever_entry_came_first(
    hass: HomeAssistant, hass_storage: dict[str, Any], azure: AzureStub
) -> None:
    """Entries that set up while the file is read are all counted before a deployment is
    chosen: the one the stored vectors came from, not the first to ask."""
    mine, other = f"{azure.endpoint}|{EMBEDDINGS}", f"{azure.endpoint}|other"
    vector = [1.0, 0.0, 0.5]
    hass_storage[MEMORIES_KEY] = memories_file(
        [memory_record(1, "The spare key is under the blue pot", vector=vector)],
        vectors_from=mine,
    )
    settings = ResourceSettings(azure.endpoint, DEFAULT_KEY, API_STYLE_V1, "")
    client = await hass.async_add_executor_job(build_client, settings, None)
    memories = Memories(hass)
    async with _file_reads_held(hass, hass_storage):
        memories.async_start_loading()
        for entry_id, identity in (("b", other), ("a", mine)):
            embedder = Embedder(client, identity.rsplit("|", 1)[1], identity)
            memories.async_when_loaded(
                lambda entry_id=entry_id, embedder=embedder: memories.async_use_embeddings(
                    entry_id, embedder
                )
            )
        assert not memories.loaded
    await memories.async_loaded()
    await hass.async_block_till_done(wait_background_tasks=True)
    assert memories.embedder_identity == mine
    assert embedding_calls(azure) == []
    assert memories.store.vector("mem_0000000000000001") is not None
    await memories.async_close()
