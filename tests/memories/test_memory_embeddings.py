"""Embeddings for memories in the home a user has: a flaky deployment, a switch, two entries."""

import asyncio
from datetime import timedelta
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed

from custom_components.azure_openai_memory.const import (
    CONF_EMBEDDINGS_DEPLOYMENT,
    DOMAIN,
    RECOMMENDED_OPTIONS,
)

from ..azure_stub import AzureStub, Reply
from ..conftest import (
    MEMORIES_KEY,
    entry_data,
    loop_keeps_real_time,
    memories_file,
    memory_record,
    stored_memories,
    stored_vector,
)
from .test_memory_services import EMBEDDINGS, call, embedding_calls

LARGE = "text-embedding-3-large"
# How long embeddings pause after a failed request (seconds).
RETRY_AFTER = 60
# How long the deployment the stored vectors came from may be missing while an entry still
# sets up, before another deployment takes over (seconds).
TAKE_OVER_AFTER = 60
# Characters of a search's question that are embedded.
EMBEDDED_QUERY_CHARS = 2000


def stored_home(hass_storage: dict[str, Any], vectors_from: str | None = None) -> None:
    """Two memories on disk, with vectors only when vectors_from names their deployment."""
    vector = [1.0, 0.0, 0.5] if vectors_from else None
    hass_storage[MEMORIES_KEY] = memories_file(
        [
            memory_record(1, "The spare key is under the blue pot", vector=vector),
            memory_record(2, "The wifi password is on the fridge", vector=vector),
        ],
        vectors_from=vectors_from,
    )


async def with_vectors(hass: HomeAssistant, hass_storage: dict[str, Any]) -> list[bool]:
    """Which stored memories have a vector, in order."""
    stored = await stored_memories(hass, hass_storage)
    return [stored_vector(m) is not None for m in stored["memories"]]


def name_deployment(hass: HomeAssistant, entry: MockConfigEntry, deployment: str) -> None:
    hass.config_entries.async_update_entry(
        entry, options={**entry.options, CONF_EMBEDDINGS_DEPLOYMENT: deployment}
    )


async def set_up_with_embeddings(hass: HomeAssistant, entry: MockConfigEntry) -> None:
    """The entry set up with EMBEDDINGS as its embeddings deployment, and what that
    started has run."""
    name_deployment(hass, entry, EMBEDDINGS)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)


async def later(hass: HomeAssistant, freezer: FrozenDateTimeFactory, seconds: float) -> None:
    """The clock moved on by seconds, and what fell due has run."""
    freezer.tick(timedelta(seconds=seconds))
    async_fire_time_changed(hass)
    await hass.async_block_till_done(wait_background_tasks=True)


def second_entry(hass: HomeAssistant, azure: AzureStub, deployment: str) -> MockConfigEntry:
    """Another entry on the same resource, created after the `config_entry` fixture's."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        title="second",
        unique_id="second",
        entry_id="zzzzzzzzzzzzzzzzzzzzzzzzzz",
        data=entry_data(azure),
        options={**RECOMMENDED_OPTIONS, CONF_EMBEDDINGS_DEPLOYMENT: deployment},
    )
    entry.add_to_hass(hass)
    return entry


def models(azure: AzureStub) -> list[str]:
    return [c.body["model"] for c in embedding_calls(azure) if c.body]


async def test_a_failed_first_batch_is_tried_again_and_ranking_by_meaning_starts(
    hass: HomeAssistant,
    hass_storage: dict[str, Any],
    config_entry: MockConfigEntry,
    azure: AzureStub,
    freezer: FrozenDateTimeFactory,
) -> None:
    """Failing at start-up, then once more, then answering: every RETRY_AFTER seconds."""
    stored_home(hass_storage)
    azure.queue_embeddings(Reply.rate_limited("1"), Reply.rate_limited("1"))
    await set_up_with_embeddings(hass, config_entry)
    assert len(embedding_calls(azure)) == 1
    found = await call(hass, "search", query="Where is the key kept?")
    assert found["ranker"] == "keyword"
    assert len(embedding_calls(azure)) == 1  # paused: no request from the search either

    await later(hass, freezer, RETRY_AFTER - 1)
    assert len(embedding_calls(azure)) == 1

    await later(hass, freezer, 1)
    assert len(embedding_calls(azure)) == 2  # the retry, refused again
    assert await with_vectors(hass, hass_storage) == [False, False]

    await later(hass, freezer, RETRY_AFTER)
    assert len(embedding_calls(azure)) == 3
    assert await with_vectors(hass, hass_storage) == [True, True]
    found = await call(hass, "search", query="Where is the key kept?")
    assert found["ranker"] == "hybrid"
    assert found["memories"][0]["content"] == "The spare key is under the blue pot"

    # Nothing is left scheduled: time passing makes no more requests.
    await later(hass, freezer, 10 * RETRY_AFTER)
    assert len(embedding_calls(azure)) == 4  # the search's question only


async def test_a_search_embeds_its_question_before_any_memory_has_a_vector(
    hass: HomeAssistant,
    hass_storage: dict[str, Any],
    config_entry: MockConfigEntry,
    azure: AzureStub,
    freezer: FrozenDateTimeFactory,
) -> None:
    """A deployment that recovers is noticed by the next search, not only by the retry."""
    stored_home(hass_storage)
    azure.queue_embeddings(Reply.rate_limited("1"))
    await set_up_with_embeddings(hass, config_entry)
    assert await with_vectors(hass, hass_storage) == [False, False]
    freezer.tick(timedelta(seconds=RETRY_AFTER))  # the pause is over
    with loop_keeps_real_time(hass):  # and the retry's timer does not run
        found = await call(hass, "search", query="Where is the key kept?")
        assert found["ranker"] == "keyword"  # the question has a vector; no memory has yet
        assert len(embedding_calls(azure)) == 2
        await hass.async_block_till_done(wait_background_tasks=True)
    assert await with_vectors(hass, hass_storage) == [True, True]
    assert len(embedding_calls(azure)) == 3


async def test_a_vector_from_the_deployment_switched_away_from_is_not_kept(
    hass: HomeAssistant,
    hass_storage: dict[str, Any],
    config_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """The switch lands while a save's request is on its way: its vector is not mixed in."""
    azure.embedding_deployments.add(LARGE)
    stored_home(hass_storage)
    await set_up_with_embeddings(hass, config_entry)
    assert models(azure) == [EMBEDDINGS]
    text = "The bins go out on Tuesday night"
    arrived, answer = asyncio.Event(), asyncio.Event()
    azure.queue_embeddings(Reply(arrived=arrived, gate=answer))
    saving = asyncio.get_running_loop().create_task(
        call(hass, "save", content=text, type="routine")
    )
    await asyncio.wait_for(arrived.wait(), 10)
    # The entry reloads with another deployment while the save's answer is on the way.
    name_deployment(hass, config_entry, LARGE)
    await hass.async_block_till_done()
    answer.set()
    saved = await saving
    await hass.async_block_till_done(wait_background_tasks=True)
    calls = [c.body for c in embedding_calls(azure) if c.body]
    embedded = [t for body in calls if body["model"] == LARGE for t in body["input"]]
    # Embedded again by the deployment now in use, with the two stored memories.
    assert sorted(embedded) == sorted(
        ["The spare key is under the blue pot", "The wifi password is on the fridge", text]
    )
    stored = await stored_memories(hass, hass_storage)
    assert [stored_vector(m) is not None for m in stored["memories"]] == [True, True, True]
    assert saved["memory"]["id"] in [m["id"] for m in stored["memories"]]
    assert stored["vectors_from"] == f"{azure.endpoint}|{LARGE}"


async def test_the_deployment_the_vectors_came_from_stays_in_use_across_reloads(
    hass: HomeAssistant,
    hass_storage: dict[str, Any],
    config_entry: MockConfigEntry,
    azure: AzureStub,
    freezer: FrozenDateTimeFactory,
) -> None:
    """Two entries naming deployments: the order they set up in embeds nothing again."""
    azure.embedding_deployments.add(LARGE)
    large = f"{azure.endpoint}|{LARGE}"
    stored_home(hass_storage, vectors_from=large)
    name_deployment(hass, config_entry, EMBEDDINGS)
    other = second_entry(hass, azure, LARGE)
    assert await hass.config_entries.async_setup(config_entry.entry_id)  # sets up both
    await hass.async_block_till_done(wait_background_tasks=True)
    assert other.state is ConfigEntryState.LOADED
    assert embedding_calls(azure) == []
    for entry in (config_entry, other, config_entry, other):
        assert await hass.config_entries.async_reload(entry.entry_id)
        await hass.async_block_till_done(wait_background_tasks=True)
    await later(hass, freezer, TAKE_OVER_AFTER + 1)
    assert embedding_calls(azure) == []
    assert await with_vectors(hass, hass_storage) == [True, True]
    # The deployment in use is the one the vectors came from: it embeds the question.
    await call(hass, "search", query="Where is the key kept?")
    assert models(azure) == [LARGE]
    assert (await stored_memories(hass, hass_storage))["vectors_from"] == large

    # Removed for good: the other deployment takes over, once, after the pause.
    assert await hass.config_entries.async_unload(other.entry_id)
    found = await call(hass, "search", query="Where is the key kept?")
    assert found["ranker"] == "keyword"
    assert models(azure) == [LARGE]  # none in use meanwhile
    await later(hass, freezer, TAKE_OVER_AFTER)
    assert models(azure) == [LARGE, EMBEDDINGS]
    stored = await stored_memories(hass, hass_storage)
    assert stored["vectors_from"] == f"{azure.endpoint}|{EMBEDDINGS}"
    assert [stored_vector(m) is not None for m in stored["memories"]] == [True, True]


async def test_a_long_question_is_cut_before_it_is_embedded(
    hass: HomeAssistant,
    hass_storage: dict[str, Any],
    config_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """An AI task's whole instructions as the question: the request stays bounded."""
    stored_home(hass_storage)
    await set_up_with_embeddings(hass, config_entry)
    before = len(embedding_calls(azure))
    question = " ".join(["Where is the spare key kept?"] * 1000)
    found = await call(hass, "search", query=question)
    assert found["ranker"] == "hybrid"
    (request,) = [c.body for c in embedding_calls(azure)[before:]]
    assert EMBEDDED_QUERY_CHARS == 2000
    assert request["input"] == [question[:EMBEDDED_QUERY_CHARS]]
