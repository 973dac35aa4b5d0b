"""A failing Azure is logged once and its recovery once; a refused key and an unknown
deployment raise Repairs issues that go away when fixed."""

import logging

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er, issue_registry as ir
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.const import CONF_DEPLOYMENT, DOMAIN, SUBENTRY_AGENT

from ..azure_stub import AzureStub, Reply
from ..conftest import LLM_ONLY, agent_entity_id, converse, exception_text, speech, statistics

LOGGER_NAME = "custom_components.azure_openai_memory"
SERVER_ERROR = [Reply.failure(500, "500", "Internal error", headers={"retry-after-ms": "5"})] * 3
REFUSED_KEY = Reply.failure(401, "401", "Access denied due to invalid subscription key")
NO_DEPLOYMENT = Reply.failure(404, "DeploymentNotFound", "The API deployment does not exist")


def _messages(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER_NAME and r.levelno == level]


def _agent_subentry_id(entry: MockConfigEntry) -> str:
    (subentry_id,) = entry.subentries
    return subentry_id


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_an_outage_is_logged_once_and_its_end_once(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Three failed turns: one error line, the rest at debug; every failure still counted."""
    title = f"Azure OpenAI 127.0.0.1:{azure.port}"
    assert loaded_entry.title == title
    with caplog.at_level(logging.DEBUG, logger=LOGGER_NAME):
        for question in ("One?", "Two?", "Three?"):
            azure.queue(*SERVER_ERROR)
            result = await converse(hass, loaded_entry, question, "c")
            assert speech(result) == exception_text("api_server_error")
        errors = _messages(caplog, logging.ERROR)
        assert len(errors) == 1
        assert "failed (server_error)" in errors[0]
        assert f"{title} is unavailable" in errors[0]
        assert len([m for m in _messages(caplog, logging.DEBUG) if "failed again" in m]) == 2
        assert (await statistics(hass, loaded_entry))["errors"] == {"server_error": 3}
        assert _messages(caplog, logging.INFO) == []

        azure.queue(Reply(text="Back."))
        assert speech(await converse(hass, loaded_entry, "Four?", "c")) == "Back."
        azure.queue(Reply(text="Still here."))
        await converse(hass, loaded_entry, "Five?", "c")
        assert _messages(caplog, logging.INFO) == [f"{title} is answering again"]

        caplog.clear()
        azure.queue(*SERVER_ERROR)
        await converse(hass, loaded_entry, "Six?", "c")
        # A new outage is news again.
        assert len(_messages(caplog, logging.ERROR)) == 1
    assert (await statistics(hass, loaded_entry))["errors"] == {"server_error": 4}


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_one_refused_request_is_not_an_outage(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A content filter refuses one question: logged each time, the resource stays up."""
    with caplog.at_level(logging.DEBUG, logger=LOGGER_NAME):
        for _ in range(2):
            azure.queue(Reply.prompt_filtered())
            await converse(hass, loaded_entry, "Something rude", "c")
    errors = _messages(caplog, logging.ERROR)
    assert len(errors) == 2
    assert all("failed (content_filter)" in m for m in errors)
    assert not any("is unavailable" in m for m in errors)
    # The resource was never marked failing: answering again is no news.
    with caplog.at_level(logging.DEBUG, logger=LOGGER_NAME):
        azure.queue(Reply(text="Fine."))
        assert speech(await converse(hass, loaded_entry, "Something kind", "c")) == "Fine."
    assert _messages(caplog, logging.INFO) == []


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_refused_key_raises_a_repair_removed_once_a_request_succeeds(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """The issue names the entry and says how to fix it; a working request clears it."""
    issue_id = f"api_key_refused_{loaded_entry.entry_id}"
    azure.queue(REFUSED_KEY)
    await converse(hass, loaded_entry, "Hello?", "c")
    issue = ir.async_get(hass).async_get_issue(DOMAIN, issue_id)
    assert issue is not None
    assert issue.translation_key == "api_key_refused"
    assert issue.severity is ir.IssueSeverity.ERROR
    assert issue.translation_placeholders == {"title": loaded_entry.title}
    # Asking again with the same key does not duplicate it.
    azure.queue(REFUSED_KEY)
    await converse(hass, loaded_entry, "Hello again?", "c")
    assert [i for (d, i) in ir.async_get(hass).issues if d == DOMAIN] == [issue_id]

    azure.queue(Reply(text="Hi."))
    await converse(hass, loaded_entry, "Hello once more?", "c")
    assert ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is None


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_refused_key_repair_is_removed_when_the_entry_sets_up_again(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """A new key (reauthentication reloads the entry) proves itself at set-up."""
    issue_id = f"api_key_refused_{loaded_entry.entry_id}"
    azure.queue(REFUSED_KEY)
    await converse(hass, loaded_entry, "Hello?", "c")
    assert ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is not None
    assert await hass.config_entries.async_reload(loaded_entry.entry_id)
    await hass.async_block_till_done()
    assert ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is None


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_unknown_deployment_repair_stays_until_the_deployment_changes(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """Restarting changes nothing, so the issue stays; a new deployment name clears it."""
    subentry_id = _agent_subentry_id(loaded_entry)
    issue_id = f"unknown_deployment_{subentry_id}"
    azure.queue(NO_DEPLOYMENT)
    await converse(hass, loaded_entry, "Hello?", "c")
    issue = ir.async_get(hass).async_get_issue(DOMAIN, issue_id)
    assert issue is not None
    assert issue.translation_key == "unknown_deployment"
    assert issue.translation_placeholders == {
        "title": loaded_entry.title,
        "agent": "Azure OpenAI agent",
        "deployment": "gpt-4o-mini",
    }
    assert await hass.config_entries.async_reload(loaded_entry.entry_id)
    await hass.async_block_till_done()
    assert ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is not None

    subentry = loaded_entry.subentries[subentry_id]
    hass.config_entries.async_update_subentry(
        loaded_entry, subentry, data={**subentry.data, CONF_DEPLOYMENT: "o4-mini"}
    )
    await hass.async_block_till_done()
    assert ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is None


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_unknown_deployment_repair_goes_when_the_agent_answers(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """The deployment was created meanwhile: the next answer clears the issue."""
    issue_id = f"unknown_deployment_{_agent_subentry_id(loaded_entry)}"
    azure.queue(NO_DEPLOYMENT)
    await converse(hass, loaded_entry, "Hello?", "c")
    assert ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is not None
    azure.queue(Reply(text="Here now."))
    await converse(hass, loaded_entry, "Hello?", "c")
    assert ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is None


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_removing_the_entry_removes_its_repairs(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """Nothing is left to repair of an entry that is gone."""
    azure.queue(NO_DEPLOYMENT)
    await converse(hass, loaded_entry, "Hello?", "c")
    azure.queue(REFUSED_KEY)
    await converse(hass, loaded_entry, "Hello?", "c")
    assert len([i for (d, i) in ir.async_get(hass).issues if d == DOMAIN]) == 2
    assert await hass.config_entries.async_remove(loaded_entry.entry_id)
    await hass.async_block_till_done()
    assert [i for (d, i) in ir.async_get(hass).issues if d == DOMAIN] == []


async def _add_agent(
    hass: HomeAssistant, entry: MockConfigEntry, title: str, deployment: str
) -> str:
    """A second agent on the same resource (the entry reloads); its conversation entity."""
    hass.config_entries.async_add_subentry(
        entry,
        ConfigSubentry(
            data={**LLM_ONLY, CONF_DEPLOYMENT: deployment},
            subentry_type=SUBENTRY_AGENT,
            title=title,
            unique_id=None,
        ),
    )
    await hass.async_block_till_done()
    (subentry_id,) = [s for s, sub in entry.subentries.items() if sub.title == title]
    entity_id = er.async_get(hass).async_get_entity_id("conversation", DOMAIN, subentry_id)
    assert entity_id is not None
    return entity_id


async def _ask(hass: HomeAssistant, entity_id: str, text: str) -> str:
    result = await conversation.async_converse(
        hass, text, None, Context(), language="en", agent_id=entity_id
    )
    return speech(result)


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_a_missing_deployment_does_not_flip_a_healthy_agent(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two agents, one deployment missing, turns alternating: one error line, no recovery."""
    broken = await _add_agent(hass, loaded_entry, "Broken", "gone")
    healthy = agent_entity_id(hass, loaded_entry)
    title = loaded_entry.title
    with caplog.at_level(logging.DEBUG, logger=LOGGER_NAME):
        for turn in range(3):
            assert await _ask(hass, broken, f"Broken {turn}?") == exception_text("api_not_found")
            azure.queue(Reply(text="Fine."))
            assert await _ask(hass, healthy, f"Healthy {turn}?") == "Fine."
    errors = _messages(caplog, logging.ERROR)
    assert len(errors) == 1
    assert "failed (not_found)" in errors[0]
    assert f"Deployment gone of {title} is unavailable" in errors[0]
    assert _messages(caplog, logging.INFO) == []
    assert len([m for m in _messages(caplog, logging.DEBUG) if "failed again" in m]) == 2
    assert (await statistics(hass, loaded_entry))["errors"] == {"not_found": 3}

    # The deployment is created: its recovery is news, once.
    azure.deployments.add("gone")
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger=LOGGER_NAME):
        azure.queue(Reply(text="Here."))
        assert await _ask(hass, broken, "Broken again?") == "Here."
    assert _messages(caplog, logging.INFO) == [f"Deployment gone of {title} is answering again"]


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_an_outage_of_the_resource_is_cleared_by_any_agent(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A server error is the resource's: another agent's answer proves it is back."""
    other = await _add_agent(hass, loaded_entry, "Other", "gpt-4o-mini")
    with caplog.at_level(logging.DEBUG, logger=LOGGER_NAME):
        azure.queue(*SERVER_ERROR)
        await converse(hass, loaded_entry, "One?", "c")
        azure.queue(*SERVER_ERROR)
        await _ask(hass, other, "Two?")
        azure.queue(Reply(text="Back."))
        assert await _ask(hass, other, "Three?") == "Back."
    assert len(_messages(caplog, logging.ERROR)) == 1
    assert _messages(caplog, logging.INFO) == [f"{loaded_entry.title} is answering again"]


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_deleting_an_agent_removes_its_repair(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """The agent whose deployment was missing is deleted: nothing is left to repair."""
    first = _agent_subentry_id(loaded_entry)
    azure.queue(NO_DEPLOYMENT)
    await converse(hass, loaded_entry, "Hello?", "c")
    await _add_agent(hass, loaded_entry, "Other", "gpt-4o-mini")
    assert ir.async_get(hass).async_get_issue(DOMAIN, f"unknown_deployment_{first}") is not None

    assert hass.config_entries.async_remove_subentry(loaded_entry, first)
    await hass.async_block_till_done()
    assert [i for (d, i) in ir.async_get(hass).issues if d == DOMAIN] == []


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_set_up_removes_repairs_of_agents_that_no_longer_exist(
    hass: HomeAssistant, loaded_entry: MockConfigEntry
) -> None:
    """An issue left by an agent deleted while the integration was not running goes too.

    The issue of an agent that still exists stays.
    """
    kept = f"unknown_deployment_{_agent_subentry_id(loaded_entry)}"
    for issue_id in ("unknown_deployment_01JDELETEDAGENT", kept):
        ir.async_create_issue(
            hass,
            DOMAIN,
            issue_id,
            is_fixable=False,
            severity=ir.IssueSeverity.ERROR,
            translation_key="unknown_deployment",
            translation_placeholders={"title": "t", "agent": "a", "deployment": "gpt-4o-mini"},
        )
    assert await hass.config_entries.async_reload(loaded_entry.entry_id)
    await hass.async_block_till_done()
    assert [i for (d, i) in ir.async_get(hass).issues if d == DOMAIN] == [kept]
