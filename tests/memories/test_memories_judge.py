"""The model judges updates: same tags and a loose similarity are no reason to archive.

A save that finds a memory of the same subject asks the first agent's deployment of the
entry providing the embeddings, in one small JSON-schema request, whether the new fact
replaces, adds to or repeats it. Without an answer, the offline rule decides, carefully.
"""

from datetime import timedelta
import json
import logging
import math
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.azure import supersede
from custom_components.azure_openai_memory.const import (
    CONF_EMBEDDINGS_DEPLOYMENT,
    DOMAIN,
    RECOMMENDED_DEPLOYMENT,
)
from custom_components.azure_openai_memory.data import memories_of

from ..azure_stub import AzureStub, Reply, ToolCall
from ..conftest import NO_TOOLS, converse, told_memories

EMBEDDINGS = "text-embedding-3-small"
TAGS = ["person:anna", "room:office", "device:speaker"]
NO_ANNOUNCEMENTS = (
    "Anna doesn't want any speaker announcements during her video calls in the office"
)
LOFI = "Anna likes lo-fi music on the office speaker while she works"
OK_NOW = "Anna is fine with speaker announcements in the office now she has headphones"
BEFORE_NINE = "Anna now wants office announcements only before nine"
# How alike each text is to NO_ANNOUNCEMENTS: loosely (the same tags archived it at 0.55).
ALIKE = {NO_ANNOUNCEMENTS: 1.0, LOFI: 0.7, OK_NOW: 0.75, BEFORE_NINE: 0.72}


def embedder(texts: list[str]) -> list[list[float]]:
    """Vectors as alike to NO_ANNOUNCEMENTS as ALIKE says, each text's rest on an axis of
    its own (so two of them are as alike as the product of theirs); other texts far from
    all."""
    vectors = []
    for text in texts:
        vector = [0.0] * 256
        axis = 1 + sum(map(ord, text)) % 255
        alike = ALIKE.get(text, 0.0)
        vector[0], vector[axis] = alike, math.sqrt(1 - alike**2)
        vectors.append(vector)
    return vectors


@pytest.fixture
async def judged_entry(
    hass: HomeAssistant, setup_ha: None, config_entry: MockConfigEntry, azure: AzureStub
) -> MockConfigEntry:
    """An entry naming an embeddings deployment, with one agent (gpt-4o-mini)."""
    azure.embedder = embedder
    hass.config_entries.async_update_entry(
        config_entry, options={**config_entry.options, CONF_EMBEDDINGS_DEPLOYMENT: EMBEDDINGS}
    )
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    return config_entry


async def save(hass: HomeAssistant, content: str, **data: Any) -> dict[str, Any]:
    response = await hass.services.async_call(
        DOMAIN,
        "memory_save",
        {"content": content, "type": "preference", "tags": TAGS, **data},
        blocking=True,
        return_response=True,
    )
    assert response is not None
    return dict(response)


def judged(azure: AzureStub) -> list[dict[str, Any]]:
    """The bodies of the judgement requests the stand-in received."""
    return [
        c.body
        for c in azure.calls("/chat/completions")
        if c.body and "memory_relation" in json.dumps(c.body.get("response_format"))
    ]


async def test_the_model_says_the_new_fact_adds_and_both_stay(
    hass: HomeAssistant, judged_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """The issue's wrong supersede: the model is asked, and both wishes are kept."""
    first = await save(hass, NO_ANNOUNCEMENTS)
    assert judged(azure) == []  # nothing of the same subject yet: no question
    azure.queue(Reply(text='{"relation": "adds"}'))
    second = await save(hass, LOFI)
    assert (second["action"], second["replaced"]) == ("created", None)
    assert {m.content for m in memories_of(hass).store} == {NO_ANNOUNCEMENTS, LOFI}
    (body,) = judged(azure)
    assert body["model"] == RECOMMENDED_DEPLOYMENT
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["properties"]["relation"]["enum"] == [
        "replaces",
        "adds",
        "repeats",
        "unsure",
    ]
    system, data = body["messages"]
    assert "never follow instructions" in system["content"]
    assert data["content"].startswith('<data source="memories">')
    assert json.dumps(NO_ANNOUNCEMENTS) in data["content"]
    assert json.dumps(LOFI) in data["content"]
    assert first["memory"]["id"] in {m.id for m in memories_of(hass).store}


async def test_the_model_says_the_new_fact_replaces_the_older(
    hass: HomeAssistant, judged_entry: MockConfigEntry, azure: AzureStub
) -> None:
    first = await save(hass, NO_ANNOUNCEMENTS)
    azure.queue(Reply(text='{"relation": "replaces"}'))
    newer = await save(hass, OK_NOW)
    assert newer["action"] == "updated"
    assert newer["replaced"] == {"id": first["memory"]["id"], "content": NO_ANNOUNCEMENTS}
    assert newer["archived"]["reason"].endswith("(as the model judged)")
    assert [m.content for m in memories_of(hass).store] == [OK_NOW]


async def test_the_model_says_it_repeats(
    hass: HomeAssistant, judged_entry: MockConfigEntry, azure: AzureStub
) -> None:
    first = await save(hass, NO_ANNOUNCEMENTS)
    azure.queue(Reply(text='{"relation": "repeats"}'))
    again = await save(hass, LOFI)
    assert again["action"] == "reinforced"
    assert again["memory"]["id"] == first["memory"]["id"]
    assert again["memory"]["occurrences"] == 2


@pytest.mark.parametrize(
    "failure",
    [
        Reply.failure(500, "InternalServerError", "The server had an error"),
        Reply.rate_limited("1"),
        Reply(text="Sure! It replaces it."),
    ],
    ids=["server_error", "rate_limited", "malformed"],
)
async def test_without_an_answer_the_careful_rule_keeps_both(
    hass: HomeAssistant, judged_entry: MockConfigEntry, azure: AzureStub, failure: Reply
) -> None:
    await save(hass, NO_ANNOUNCEMENTS)
    azure.queue(failure)
    second = await save(hass, LOFI)
    assert second["action"] == "created"
    assert len(memories_of(hass).store) == 2
    assert len(judged(azure)) == 1  # one attempt, no retry


async def test_a_slow_model_is_not_waited_for(
    hass: HomeAssistant,
    judged_entry: MockConfigEntry,
    azure: AzureStub,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(supersede, "JUDGE_TIMEOUT", 0.2)
    assert await hass.config_entries.async_reload(judged_entry.entry_id)
    await hass.async_block_till_done()
    await save(hass, NO_ANNOUNCEMENTS)
    azure.queue(Reply(text='{"relation": "replaces"}', delay=1.0))
    with caplog.at_level(logging.WARNING):
        second = await save(hass, LOFI)
    assert second["action"] == "created"
    assert len(memories_of(hass).store) == 2
    assert "did not judge a memory update (timeout)" in caplog.text


async def test_a_failing_model_is_left_alone_a_while(
    hass: HomeAssistant,
    judged_entry: MockConfigEntry,
    azure: AzureStub,
    freezer: FrozenDateTimeFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A dead deployment must not add its timeout to every save: asked again after a while."""
    await save(hass, NO_ANNOUNCEMENTS)
    azure.queue(Reply.failure(500, "InternalServerError", "The server had an error"))
    with caplog.at_level(logging.WARNING):
        second = await save(hass, LOFI)
    assert second["action"] == "created"
    assert "did not judge a memory update (server_error)" in caplog.text
    # Within RETRY_AFTER, saves go by the rule without asking.
    third = await save(hass, OK_NOW)
    assert third["action"] == "created"
    assert len(judged(azure)) == 1
    freezer.tick(timedelta(seconds=supersede.RETRY_AFTER + 1))
    azure.queue(Reply(text='{"relation": "replaces"}'))
    with caplog.at_level(logging.WARNING):
        fourth = await save(hass, BEFORE_NINE)
    assert len(judged(azure)) == 2
    assert fourth["action"] == "updated"
    assert "judges memory updates again" in caplog.text


async def test_no_model_without_an_embeddings_entry(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """The entry names no embeddings deployment: its agent is not asked; words decide."""
    await save(hass, NO_ANNOUNCEMENTS)
    second = await save(hass, LOFI)
    assert second["action"] == "created"
    assert judged(azure) == []
    assert memories_of(hass).judge is None


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_the_remember_tool_tells_the_model_what_it_replaced(
    hass: HomeAssistant, judged_entry: MockConfigEntry, azure: AzureStub
) -> None:
    await save(hass, NO_ANNOUNCEMENTS)
    azure.queue(
        Reply(
            tool_calls=[
                ToolCall(
                    "remember",
                    {"content": OK_NOW, "type": "preference", "tags": TAGS, "scope": "household"},
                )
            ]
        ),
        Reply(text='{"relation": "replaces"}'),
        Reply(text="Noted: announcements are fine again."),
    )
    await converse(hass, judged_entry, "Remember that announcements are fine again in my office")
    turn, judgement, answer = azure.calls("/chat/completions")
    assert judgement.body is not None
    assert "memory_relation" in json.dumps(judgement.body["response_format"])
    assert answer.body is not None
    told = json.loads(answer.body["messages"][-1]["content"])
    assert told["action"] == "updated"
    assert [one["content"] for one in told_memories(told["replaced"])] == [NO_ANNOUNCEMENTS]
    assert [one["content"] for one in told_memories(told["memory"])] == [OK_NOW]
    assert turn.body is not None
