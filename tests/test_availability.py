"""A failing Azure is logged once and its recovery once; a refused key and an unknown
deployment raise Repairs issues that go away when fixed."""

import logging

from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.const import CONF_DEPLOYMENT, DOMAIN
from custom_components.azure_openai_memory.title import resource_title

from .azure_stub import AzureStub, Reply
from .conftest import LLM_ONLY, converse, speech

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
    title = resource_title(azure.endpoint)
    with caplog.at_level(logging.DEBUG, logger=LOGGER_NAME):
        for question in ("One?", "Two?", "Three?"):
            azure.queue(*SERVER_ERROR)
            result = await converse(hass, loaded_entry, question, "c")
            assert "had a problem" in speech(result)
        errors = _messages(caplog, logging.ERROR)
        assert len(errors) == 1
        assert "failed (server_error)" in errors[0]
        assert f"{title} is unavailable" in errors[0]
        assert len([m for m in _messages(caplog, logging.DEBUG) if "failed again" in m]) == 2
        assert loaded_entry.runtime_data.stats.errors == {"server_error": 3}
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
    assert loaded_entry.runtime_data.stats.errors == {"server_error": 4}


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
    assert loaded_entry.runtime_data.health.failing is False


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
