"""Memory services end to end, with return_response: the seed's section 8 and a real home."""

import asyncio
import copy
from datetime import UTC, datetime, timedelta
import json
from pathlib import Path
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.auth.const import GROUP_ID_ADMIN, GROUP_ID_USER
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import ServiceValidationError, Unauthorized
import numpy as np
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.azure import embeddings
from custom_components.azure_openai_memory.const import (
    API_STYLE_DEPLOYMENT,
    CONF_EMBEDDINGS_DEPLOYMENT,
    CONF_MAX_MEMORIES_PER_TYPE,
    DOMAIN,
)

from ..azure_stub import AzureStub, Reply
from ..conftest import (
    MEMORIES_KEY,
    Restart,
    family,
    memories_file,
    memory_record,
    options_shown,
    saves_fall_due,
    stored_memories,
    stored_vector,
)
from ..lib.memories.test_memories import household_memories
from ..options_form import submit_options

DAY0 = datetime(2025, 10, 25, 10, 0, tzinfo=UTC)
EMBEDDINGS = "text-embedding-3-small"
STRINGS = json.loads(
    (Path(__file__).parents[2] / "custom_components" / DOMAIN / "strings.json").read_text()
)


@pytest.fixture
async def embedding_entry(
    hass: HomeAssistant, setup_ha: None, config_entry: MockConfigEntry
) -> MockConfigEntry:
    """An entry whose options name an embeddings deployment of the stand-in."""
    hass.config_entries.async_update_entry(
        config_entry, options={**config_entry.options, CONF_EMBEDDINGS_DEPLOYMENT: EMBEDDINGS}
    )
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    return config_entry


call = family("memory")


async def allow_many_per_type(hass: HomeAssistant, entry: MockConfigEntry) -> None:
    """A thousand memories of one type may stay active (the options form's setting)."""
    await submit_options(hass, entry, **{CONF_MAX_MEMORIES_PER_TYPE: 1000})


def embedding_calls(azure: AzureStub) -> list[Any]:
    return azure.calls("/embeddings")


def models_of(azure: AzureStub) -> list[str]:
    return [c.body["model"] for c in embedding_calls(azure) if c.body]


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


# -- the seed's section 8 -----------------------------------------------------------------


async def test_seed_scenarios(
    hass: HomeAssistant, services: None, freezer: FrozenDateTimeFactory
) -> None:
    """New, exact-match reinforcement to high confidence, type + subject supersede."""
    freezer.move_to(DAY0)
    new = await call(
        hass,
        "save",
        content="Knee pain after long runs",
        type="injury_history",
        tags=["body:knee"],
        source="claude_code",
    )
    memory_id = new["memory"]["id"]
    assert new == {
        "action": "created",
        "memory": {
            "id": memory_id,
            "type": "injury_history",
            "content": "Knee pain after long runs",
            "source": "claude_code",
            "source_reference": None,
            "created_at": iso(DAY0),
            "updated_at": iso(DAY0),
            "confidence": "medium",
            "occurrences": 1,
            "tags": ["body:knee"],
            "pinned": False,
            "scope": "household",
            # Called without a user and outside any automation or script.
            "provenance": {
                "source": "service",
                "conversation_id": None,
                "history_event_id": None,
                "said_by": None,
                "channel": None,
                "authority": "stated",
            },
        },
        "replaced": None,
        "archived": None,
        "evicted": [],
    }
    freezer.tick(60)
    again = await call(
        hass, "save", content="knee pain after long runs.", type="injury_history", tags="body:knee"
    )
    assert (again["action"], again["memory"]["id"], again["memory"]["occurrences"]) == (
        "reinforced",
        memory_id,
        2,
    )
    third = await call(
        hass, "save", content="Knee pain after long runs", type="injury_history", tags="body:knee"
    )
    assert third["memory"]["occurrences"] == 3
    assert third["memory"]["confidence"] == "high"
    assert third["memory"]["updated_at"] == iso(DAY0 + timedelta(seconds=60))

    freezer.tick(30 * 86400)
    newer = await call(
        hass,
        "save",
        content="Chronic knee pain after runs over 15km",
        type="injury_history",
        tags=["body:knee"],
        confidence="high",
    )
    assert newer["action"] == "superseded"
    assert newer["memory"]["occurrences"] == 4
    assert newer["archived"] == {
        "id": memory_id,
        "original_content": "Knee pain after long runs",
        "superseded_by": newer["memory"]["id"],
        "archived_at": iso(DAY0 + timedelta(days=30, seconds=60)),
        "reason": "Updated by newer observation about body:knee",
        "type": "injury_history",
        "tags": ["body:knee"],
        "scope": "household",
    }
    active = await call(hass, "search", type="injury_history")
    assert [m["id"] for m in active["memories"]] == [newer["memory"]["id"]]
    assert active["ranker"] == "keyword"
    both = await call(hass, "search", type="injury_history", include_archived=True)
    assert [m["id"] for m in both["memories"]] == [newer["memory"]["id"], memory_id]


# -- a real home ----------------------------------------------------------------------------


async def test_hundreds_of_household_facts_stay_active(
    hass: HomeAssistant,
    embedding_entry: MockConfigEntry,
    azure: AzureStub,
    hass_storage: dict[str, Any],
) -> None:
    """336 facts about one home, every one sharing tags with dozens: none archives another.

    Each save makes one embeddings request for its own text; a search makes one more.
    """
    await allow_many_per_type(hass, embedding_entry)
    told = household_memories()
    for text, tags in told:
        result = await call(hass, "save", content=text, type="preference", tags=tags)
        assert (result["action"], result["archived"]) == ("created", None), text
    stored = await stored_memories(hass, hass_storage)
    assert len(stored["memories"]) == len(told)
    assert stored["archived"] == []
    calls = embedding_calls(azure)
    assert len(calls) == len(told)
    assert calls[0].path == "/openai/v1/embeddings"
    assert calls[0].body is not None
    assert (calls[0].body["model"], calls[0].body["input"], calls[0].body["dimensions"]) == (
        EMBEDDINGS,
        [told[0][0]],
        256,
    )
    text, _tags = told[100]
    found = await call(hass, "search", query=text, limit=5)
    assert found["ranker"] == "hybrid"
    assert found["memories"][0]["content"] == text
    assert len(found["memories"]) == 5
    assert len(embedding_calls(azure)) == len(told) + 1
    by_tags = await call(hass, "search", tags=["person:anna", "room:attic"], limit=50)
    assert len(by_tags["memories"]) == 7
    assert all({"person:anna", "room:attic"} <= set(m["tags"]) for m in by_tags["memories"])


async def test_max_memories_per_type_from_the_options_flow(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, freezer: FrozenDateTimeFactory
) -> None:
    """The options flow's cap applies to the installation: the least confident, oldest go."""
    freezer.move_to(DAY0)
    await submit_options(hass, loaded_entry, max_memories_per_type=3.0)
    await hass.async_block_till_done()
    assert (await options_shown(hass, loaded_entry))["max_memories_per_type"] == 3
    assert "max_memories_per_type" not in loaded_entry.options
    sure = await call(
        hass, "save", content="Ben is allergic to cats", type="context", confidence="high"
    )
    freezer.tick(1)
    oldest = await call(hass, "save", content="The boiler was serviced in May", type="context")
    freezer.tick(1)
    await call(hass, "save", content="The car is a blue Golf", type="context")
    freezer.tick(1)
    fourth = await call(hass, "save", content="Grandma visits on Sundays", type="context")
    assert [a["id"] for a in fourth["evicted"]] == [oldest["memory"]["id"]]
    assert fourth["evicted"][0]["reason"] == "Over max_memories_per_type"
    kept = await call(hass, "search", type="context")
    assert [m["content"] for m in kept["memories"]] == [
        "Ben is allergic to cats",
        "Grandma visits on Sundays",
        "The car is a blue Golf",
    ]
    assert kept["memories"][0]["id"] == sure["memory"]["id"]


async def test_search_by_words_type_and_tags(hass: HomeAssistant, services: None) -> None:
    """Without embeddings: BM25 over content and tag values, and the seed's boosts."""
    await call(
        hass,
        "save",
        content="The guest room is Anna's",
        type="household",
        tags=["room:guest_room", "person:anna"],
    )
    await call(
        hass, "save", content="Bins go out on Tuesday night", type="routine", tags=["chore:bins"]
    )
    await call(
        hass, "save", content="Anna takes her coffee black", type="preference", tags=["person:anna"]
    )
    found = await call(hass, "search", query="Which room is the guest room?")
    assert found["ranker"] == "keyword"
    assert [m["content"] for m in found["memories"]] == ["The guest room is Anna's"]
    assert found["memories"][0]["score"] > 0
    anna = await call(hass, "search", query="What do you know about Anna?")
    assert sorted(m["content"] for m in anna["memories"]) == [
        "Anna takes her coffee black",
        "The guest room is Anna's",
    ]
    routine = await call(hass, "search", type="routine")
    assert [m["content"] for m in routine["memories"]] == ["Bins go out on Tuesday night"]
    tagged = await call(hass, "search", tags="person:anna", type="preference")
    assert [m["content"] for m in tagged["memories"]] == ["Anna takes her coffee black"]
    assert (await call(hass, "search", query="zebra crossing"))["memories"] == []


async def test_patterns(hass: HomeAssistant, services: None) -> None:
    ids = [
        (await call(hass, "save", content=text, type="household", tags=["room:attic", f"n:{i}"]))[
            "memory"
        ]["id"]
        for i, text in enumerate(["The attic leaks", "The attic is cold", "Mice in the attic"])
    ]
    await call(hass, "save", content="The hall is dark", type="household", tags=["room:hall"])
    result = await call(hass, "patterns")
    assert result == {
        "patterns": [
            {
                "pattern_type": "recurring_room",
                "description": "Recurring room attic in household memories (3 occurrences)",
                "evidence": ids,
                "confidence": "high",
            }
        ]
    }


# -- embeddings failing ---------------------------------------------------------------------


async def embedding_entry_with_short_timeout(
    hass: HomeAssistant, config_entry: MockConfigEntry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embeddings, "EMBEDDINGS_TIMEOUT", 0.2)
    hass.config_entries.async_update_entry(
        config_entry, options={**config_entry.options, CONF_EMBEDDINGS_DEPLOYMENT: EMBEDDINGS}
    )
    assert await hass.config_entries.async_setup(config_entry.entry_id)


@pytest.mark.parametrize(
    "failure",
    [Reply.failure(500, "server_error", "The server had an error."), Reply.rate_limited("30")],
    ids=["500", "429"],
)
async def test_failing_embeddings_fall_back_to_words(
    hass: HomeAssistant,
    setup_ha: None,
    config_entry: MockConfigEntry,
    azure: AzureStub,
    freezer: FrozenDateTimeFactory,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    failure: Reply,
    hass_storage: dict[str, Any],
) -> None:
    """A failing deployment never fails a call: keyword ranking, logged once each way, the
    missing vectors embedded after it recovers."""
    await embedding_entry_with_short_timeout(hass, config_entry, monkeypatch)
    await call(hass, "save", content="The wifi password is on the fridge", type="household")
    azure.queue_embeddings(failure)
    saved = await call(
        hass, "save", content="The spare key is under the blue pot", type="household"
    )
    assert saved["action"] == "created"
    before = len(embedding_calls(azure))
    found = await call(hass, "search", query="Where is the spare key?")
    assert found["ranker"] == "keyword"
    assert [m["content"] for m in found["memories"]] == ["The spare key is under the blue pot"]
    # Paused after a failure: no request, no waiting, words only.
    assert len(embedding_calls(azure)) == before
    records = {m["id"]: m for m in (await stored_memories(hass, hass_storage))["memories"]}
    assert stored_vector(records[saved["memory"]["id"]]) is None
    assert caplog.text.count(f"Embeddings deployment {EMBEDDINGS} failed") == 1

    freezer.tick(61)
    found = await call(hass, "search", query="Where is the spare key?")
    assert found["ranker"] == "hybrid"
    assert found["memories"][0]["content"] == "The spare key is under the blue pot"
    await hass.async_block_till_done(wait_background_tasks=True)
    stored = await stored_memories(hass, hass_storage)
    assert [stored_vector(m) is not None for m in stored["memories"]] == [True, True]
    assert caplog.text.count(f"Embeddings deployment {EMBEDDINGS} answers again") == 1
    assert caplog.text.count(f"Embeddings deployment {EMBEDDINGS} failed") == 1


async def test_slow_embeddings_fall_back_to_words(
    hass: HomeAssistant,
    setup_ha: None,
    config_entry: MockConfigEntry,
    azure: AzureStub,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An answer slower than the embeddings timeout: the save and the search go on without."""
    await embedding_entry_with_short_timeout(hass, config_entry, monkeypatch)
    await call(hass, "save", content="The wifi password is on the fridge", type="household")
    azure.queue_embeddings(Reply(delay=1.0))
    saved = await call(
        hass, "save", content="The spare key is under the blue pot", type="household"
    )
    assert saved["action"] == "created"
    found = await call(hass, "search", query="Where is the spare key?")
    assert found["ranker"] == "keyword"
    assert [m["content"] for m in found["memories"]] == ["The spare key is under the blue pot"]
    assert "failed (timeout)" in caplog.text


async def test_unknown_embeddings_deployment_still_saves(
    hass: HomeAssistant, setup_ha: None, config_entry: MockConfigEntry, azure: AzureStub
) -> None:
    hass.config_entries.async_update_entry(
        config_entry, options={**config_entry.options, CONF_EMBEDDINGS_DEPLOYMENT: "missing"}
    )
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    saved = await call(hass, "save", content="Dinner is at seven", type="routine")
    assert saved["action"] == "created"
    assert (await call(hass, "search", query="dinner"))["ranker"] == "keyword"


# -- re-embedding -------------------------------------------------------------------------


async def test_a_new_deployment_embeds_everything_again_in_batches(
    hass: HomeAssistant,
    hass_storage: dict[str, Any],
    setup_ha: None,
    config_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """Stored vectors from another deployment are replaced in the background, 64 at a time."""
    told = household_memories()[:150]
    records = [
        memory_record(n, text, "preference", tags, vector=[1.0, 0.0, 0.5])
        for n, (text, tags) in enumerate(told)
    ]
    hass_storage[MEMORIES_KEY] = memories_file(
        records,
        vectors_from="https://elsewhere|ada",
        settings={"max_memories_per_type": 1000},
    )
    hass.config_entries.async_update_entry(
        config_entry, options={**config_entry.options, CONF_EMBEDDINGS_DEPLOYMENT: EMBEDDINGS}
    )
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)
    batches = [len(c.body["input"]) for c in embedding_calls(azure) if c.body]
    assert batches == [64, 64, 22]
    stored = await stored_memories(hass, hass_storage)
    assert {len(v) for m in stored["memories"] if (v := stored_vector(m)) is not None} == {256}
    assert len(stored["memories"]) == 150

    azure.embedding_deployments.add("text-embedding-3-large")
    hass.config_entries.async_update_entry(
        config_entry,
        options={**config_entry.options, CONF_EMBEDDINGS_DEPLOYMENT: "text-embedding-3-large"},
    )
    await hass.async_block_till_done(wait_background_tasks=True)
    models = [c.body["model"] for c in embedding_calls(azure) if c.body]
    assert models == [EMBEDDINGS] * 3 + ["text-embedding-3-large"] * 3
    stored = await stored_memories(hass, hass_storage)
    assert stored["vectors_from"] == f"{azure.endpoint}|text-embedding-3-large"
    size = len(json.dumps(stored))
    assert size / len(told) < 2048
    assert all(len(m["vector"]) == 684 for m in stored["memories"])


async def test_memories_survive_a_restart(
    hass: HomeAssistant,
    embedding_entry: MockConfigEntry,
    azure: AzureStub,
    restart: Restart,
) -> None:
    saved = await call(
        hass, "save", content="The guest room is Anna's", type="household", tags="person:anna"
    )
    hass = await restart()
    await hass.async_block_till_done(wait_background_tasks=True)
    before = len(embedding_calls(azure))
    found = await call(hass, "search", query="Whose is the guest room?")
    assert [m["id"] for m in found["memories"]] == [saved["memory"]["id"]]
    assert found["memories"][0]["content"] == "The guest room is Anna's"
    # Its vector came back with it: ranked by meaning at once, nothing embedded again.
    assert found["ranker"] == "hybrid"
    assert len(embedding_calls(azure)) == before + 1  # the question


# -- forgetting ---------------------------------------------------------------------------


async def test_forget_erase_cleanup_and_administrators(
    hass: HomeAssistant,
    hass_storage: dict[str, Any],
    services: None,
    freezer: FrozenDateTimeFactory,
) -> None:
    freezer.move_to(DAY0)
    admin = await hass.auth.async_create_user("Admin", group_ids=[GROUP_ID_ADMIN])
    member = await hass.auth.async_create_user("Household member", group_ids=[GROUP_ID_USER])
    as_admin, as_member = Context(user_id=admin.id), Context(user_id=member.id)
    old = await call(
        hass, "save", content="Anna's phone number is 0171 123", type="context", tags="person:anna"
    )
    new = await call(
        hass, "save", content="Anna's phone number is 0171 456", type="context", tags="person:anna"
    )
    tea = await call(hass, "save", content="Anna likes tea", type="preference", tags="person:anna")
    ben = await call(hass, "save", content="Ben likes coffee", type="preference", tags="person:ben")
    assert new["archived"]["id"] == old["memory"]["id"]
    before = copy.deepcopy(await stored_memories(hass, hass_storage))

    with pytest.raises(Unauthorized):
        await call(hass, "forget", as_member, memory_id=ben["memory"]["id"])
    with pytest.raises(Unauthorized):
        await call(hass, "cleanup_archived", as_member, retention_days=0)
    assert await stored_memories(hass, hass_storage) == before

    forgot = await call(hass, "forget", as_admin, memory_id=ben["memory"]["id"])
    assert [(a["id"], a["reason"]) for a in forgot["archived"]] == [
        (ben["memory"]["id"], "Forgotten on request")
    ]
    assert forgot["erased"] == []
    with pytest.raises(ServiceValidationError) as caught:
        await call(hass, "forget", as_admin, memory_id=ben["memory"]["id"])
    assert caught.value.translation_key == "memory_unknown"

    erased = await call(hass, "forget", as_admin, tag="person:anna", erase=True)
    assert sorted(erased["erased"]) == sorted(
        [old["memory"]["id"], new["memory"]["id"], tea["memory"]["id"]]
    )
    assert erased["archived"] == []
    stored = await stored_memories(hass, hass_storage)
    assert "Anna" not in json.dumps(hass_storage[MEMORIES_KEY])
    assert stored["memories"] == []

    freezer.tick(timedelta(days=89))
    assert await call(hass, "cleanup_archived", as_admin) == {"deleted": 0, "ids": []}
    freezer.tick(timedelta(days=2))
    assert await call(hass, "cleanup_archived", as_admin) == {
        "deleted": 1,
        "ids": [ben["memory"]["id"]],
    }


# -- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("service", "data", "key"),
    [
        ("save", {"content": "", "type": "household"}, "memory_content_empty"),
        ("save", {"content": "   ", "type": "household"}, "memory_content_empty"),
        ("save", {"content": 42, "type": "household"}, "memory_content_not_text"),
        ("save", {"content": ["a", "list"], "type": "household"}, "memory_content_not_text"),
        ("save", {"content": "x" * 2001, "type": "household"}, "memory_content_too_long"),
        ("save", {"content": "fine", "type": "dream"}, "memory_type_invalid"),
        (
            "save",
            {"content": "fine", "type": "household", "confidence": "sure"},
            "memory_confidence_invalid",
        ),
        (
            "save",
            {"content": "fine", "type": "household", "source": "rumour"},
            "memory_source_invalid",
        ),
        ("save", {"content": "fine", "type": "household", "tags": ["a:b:c"]}, "memory_tag_invalid"),
        (
            "save",
            {"content": "fine", "type": "household", "tags": ["two words"]},
            "memory_tag_invalid",
        ),
        (
            "save",
            {"content": "fine", "type": "household", "tags": [{"x": 1}]},
            "memory_tag_invalid",
        ),
        (
            "save",
            {"content": "fine", "type": "household", "tags": ["t" * 65]},
            "memory_tag_too_long",
        ),
        (
            "save",
            {"content": "fine", "type": "household", "tags": [f"t{i}" for i in range(33)]},
            "memory_too_many_tags",
        ),
        ("search", {"query": "x", "limit": 0}, "memory_limit_invalid"),
        ("search", {"query": "x", "limit": 51}, "memory_limit_invalid"),
        ("search", {"type": "dream"}, "memory_type_invalid"),
        ("search", {"tags": ["bad tag"]}, "memory_tag_invalid"),
        ("forget", {"memory_id": "mem_nope"}, "memory_unknown"),
        ("forget", {}, "memory_forget_one"),
        ("forget", {"memory_id": "x", "tag": "y"}, "memory_forget_one"),
        ("forget", {"tag": "bad tag"}, "memory_tag_invalid"),
    ],
)
async def test_bad_input_is_refused_and_nothing_is_written(
    hass: HomeAssistant,
    hass_storage: dict[str, Any],
    embedding_entry: MockConfigEntry,
    azure: AzureStub,
    service: str,
    data: dict[str, Any],
    key: str,
) -> None:
    await call(hass, "save", content="Keep me", type="household", tags="person:anna")
    await saves_fall_due(hass)
    stored = copy.deepcopy(hass_storage[MEMORIES_KEY])
    kept = await call(hass, "search", limit=50, include_archived=True)
    requests = len(embedding_calls(azure))
    with pytest.raises(ServiceValidationError) as caught:
        await call(hass, service, **data)
    assert (caught.value.translation_domain, caught.value.translation_key) == (DOMAIN, key)
    assert key in STRINGS["exceptions"]
    assert await call(hass, "search", limit=50, include_archived=True) == kept
    assert len(embedding_calls(azure)) == requests
    await saves_fall_due(hass)
    assert hass_storage[MEMORIES_KEY] == stored


async def test_non_admin_may_save_and_search(hass: HomeAssistant, services: None) -> None:
    await hass.auth.async_create_user("Owner", group_ids=[GROUP_ID_ADMIN])
    member = await hass.auth.async_create_user("Guest", group_ids=[GROUP_ID_USER])
    context = Context(user_id=member.id)
    saved = await call(hass, "save", context, content="Guests park on the left", type="household")
    found = await call(hass, "search", context, query="where do guests park")
    assert [m["id"] for m in found["memories"]] == [saved["memory"]["id"]]


def test_strings_name_every_memory_service() -> None:
    for service in ("save", "search", "patterns", "forget", "cleanup_archived"):
        assert f"memory_{service}" in STRINGS["services"]
    assert "corrupt_file" in STRINGS["issues"]


@pytest.mark.parametrize("api_style", [API_STYLE_DEPLOYMENT])
async def test_embeddings_on_deployment_urls(
    hass: HomeAssistant, embedding_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """The deployment URL style asks /openai/deployments/{name}/embeddings with api-version."""
    await call(hass, "save", content="Guests park on the left", type="household")
    found = await call(hass, "search", query="Where do guests park?")
    assert found["ranker"] == "hybrid"
    first, second = embedding_calls(azure)
    assert first.path == f"/openai/deployments/{EMBEDDINGS}/embeddings"
    assert first.query == {"api-version": "2025-04-01-preview"}
    assert second.body is not None
    assert second.body["input"] == ["Where do guests park?"]


async def test_a_model_that_cannot_shorten_its_vectors(
    hass: HomeAssistant,
    setup_ha: None,
    config_entry: MockConfigEntry,
    azure: AzureStub,
    hass_storage: dict[str, Any],
) -> None:
    """ada-002 refuses `dimensions`: asked again without, once; long vectors are cut to 512."""
    azure.embedding_deployments.add("ada")
    azure.fixed_size_embeddings.add("ada")
    azure.embedder = lambda texts: [
        [float(len(text) % 7 + i % 3) for i in range(1536)] for text in texts
    ]
    hass.config_entries.async_update_entry(
        config_entry, options={**config_entry.options, CONF_EMBEDDINGS_DEPLOYMENT: "ada"}
    )
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    saved = await call(hass, "save", content="Dinner is at seven", type="routine")
    await call(hass, "save", content="Lunch is at noon", type="routine")
    bodies = [c.body for c in embedding_calls(azure) if c.body]
    assert ["dimensions" in body for body in bodies] == [True, False, False]
    records = {m["id"]: m for m in (await stored_memories(hass, hass_storage))["memories"]}
    vector = stored_vector(records[saved["memory"]["id"]])
    assert vector is not None
    assert vector.shape == (512,)


async def test_a_deployment_change_during_re_embedding(
    hass: HomeAssistant,
    hass_storage: dict[str, Any],
    setup_ha: None,
    config_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """The old deployment's late answer is dropped; the new one embeds everything."""
    records = [
        memory_record(n, text, "preference", tags)
        for n, (text, tags) in enumerate(household_memories()[:100])
    ]
    hass_storage[MEMORIES_KEY] = memories_file(records, settings={"max_memories_per_type": 1000})
    azure.embedding_deployments.add("text-embedding-3-large")
    first_batch, answer = asyncio.Event(), asyncio.Event()
    azure.queue_embeddings(Reply(arrived=first_batch, gate=answer))
    hass.config_entries.async_update_entry(
        config_entry, options={**config_entry.options, CONF_EMBEDDINGS_DEPLOYMENT: EMBEDDINGS}
    )
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await asyncio.wait_for(first_batch.wait(), 10)
    assert len(embedding_calls(azure)) == 1  # the first batch, still on its way
    large = f"{azure.endpoint}|text-embedding-3-large"
    small = [1.0] + [0.0] * 255  # what the small deployment's late answer holds
    marker = [9.0] * 256  # what the large deployment answers: every vector alike
    azure.deployment_embedders[EMBEDDINGS] = lambda texts: [small for _ in texts]
    azure.deployment_embedders["text-embedding-3-large"] = lambda texts: [marker for _ in texts]
    hass.config_entries.async_update_entry(
        config_entry,
        options={**config_entry.options, CONF_EMBEDDINGS_DEPLOYMENT: "text-embedding-3-large"},
    )
    await hass.async_block_till_done()
    answer.set()  # the small deployment's answer arrives late, after the switch
    await hass.async_block_till_done(wait_background_tasks=True)
    stored = await stored_memories(hass, hass_storage)
    vectors = [stored_vector(m) for m in stored["memories"]]
    assert len(vectors) == 100
    expected = np.ones(256) / 16
    assert all(
        v is not None and float(np.abs(v.astype(np.float64) - expected).max()) < 1e-3
        for v in vectors
    )  # every vector from the large deployment, none from the small one's late answer
    assert stored["vectors_from"] == large
    models = [c.body["model"] for c in embedding_calls(azure) if c.body]
    assert models == [EMBEDDINGS, "text-embedding-3-large", "text-embedding-3-large"]


@pytest.mark.parametrize(
    ("failure", "error"),
    [
        (None, "embeddings_deployment_not_found"),
        (
            Reply.failure(500, "server_error", "The server had an error."),
            "embeddings_deployment_failed",
        ),
    ],
)
async def test_options_flow_proves_a_new_embeddings_deployment(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    failure: Reply | None,
    error: str,
) -> None:
    """One request before anything is saved; refused, the form says why and nothing changes."""
    before = dict(loaded_entry.options)
    if failure is not None:
        azure.queue_embeddings(failure)
        name = EMBEDDINGS
    else:
        name = "gpt-4o-mini"  # a chat deployment: no embeddings there
    result = await submit_options(
        hass, loaded_entry, embeddings_deployment=name, max_memories_per_type=7
    )
    assert result["type"] == "form"
    assert result["errors"] == {"memories": error}
    assert error in STRINGS["options"]["error"]
    assert dict(loaded_entry.options) == before
    assert (await options_shown(hass, loaded_entry))["max_memories_per_type"] == 10_000
    requests = len(embedding_calls(azure))
    await call(hass, "save", content="Guests park on the left", type="household")
    found = await call(hass, "search", query="Where do guests park?")
    assert found["ranker"] == "keyword"
    assert len(embedding_calls(azure)) == requests  # no deployment in use

    result = await submit_options(hass, loaded_entry, embeddings_deployment=f" {EMBEDDINGS} ")
    assert result["type"] == "create_entry"
    await hass.async_block_till_done(wait_background_tasks=True)
    assert loaded_entry.options["embeddings_deployment"] == EMBEDDINGS
    found = await call(hass, "search", query="Where do guests park?")
    assert found["ranker"] == "hybrid"
    assert models_of(azure)[-1] == EMBEDDINGS
