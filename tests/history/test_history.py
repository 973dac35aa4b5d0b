"""The history: the agent records itself, services read and write it, retention purges it."""

from datetime import timedelta
from pathlib import Path
import sqlite3
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.auth.const import GROUP_ID_ADMIN, GROUP_ID_USER
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import Context, Event, HomeAssistant, callback
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError, Unauthorized
from homeassistant.helpers import issue_registry as ir
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_time_changed,
    async_mock_service,
)
from pytest_homeassistant_custom_component.components.diagnostics import (
    get_diagnostics_for_config_entry,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.azure_openai_memory.compat import llm_api_option
from custom_components.azure_openai_memory.const import (
    CONF_EARLY_TIMEOUT,
    CONF_HISTORY_RECORDING,
    CONF_REQUEST_TIMEOUT,
    DOMAIN,
    RECOMMENDED_OPTIONS,
)

from ..azure_stub import DEFAULT_KEY, AzureStub, Reply, ToolCall
from ..conftest import (
    LLM_ONLY,
    NO_TOOLS,
    agent_entity_id,
    assist_tool,
    converse,
    family,
    history_schema_version,
    options_shown,
    submit_options,
)
from ..options_form import filled

# What automations trigger on: fired for every recorded event.
EVENT_HISTORY = f"{DOMAIN}_event"


call = family("history")


async def session_events(hass: HomeAssistant, session_id: str) -> list[dict[str, Any]]:
    result = await call(hass, "query", session_id=session_id, ascending=True)
    assert result["total"] == len(result["events"])
    return list(result["events"])


def shape(events: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    """(type, parent type) of each event: the chain at a glance."""
    types = {e["event_id"]: e["event_type"] for e in events}
    return [(e["event_type"], types.get(e["parent_event_id"])) for e in events]


@pytest.fixture
def kitchen_light(hass: HomeAssistant) -> list[Any]:
    hass.states.async_set("light.kitchen", "off", {"friendly_name": "Kitchen"})
    return async_mock_service(hass, "light", "turn_on")


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_llm_turn_leaves_its_chain(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub, kitchen_light: list[Any]
) -> None:
    """Question, decision, tool use, device action, answer: chained, one session, one agent."""
    fired: list[Event] = []

    @callback
    def heard(event: Event) -> None:
        fired.append(event)

    hass.bus.async_listen(EVENT_HISTORY, heard)
    azure.queue(
        Reply(tool_calls=[ToolCall(assist_tool("HassTurnOn"), {"name": "Kitchen"})]),
        Reply(text="The kitchen light is on."),
    )
    await converse(hass, loaded_entry, "It is dark in the kitchen", "c1", device_id="d1")
    events = await session_events(hass, "c1")
    assert shape(events) == [
        ("communication", None),
        ("decision", "communication"),
        ("tool_use", "decision"),
        ("action", "tool_use"),
        ("communication", "decision"),
    ]
    agent = agent_entity_id(hass, loaded_entry)
    assert {e["agent_id"] for e in events} == {agent}
    question, decision, tool, action, answer = (e["event_data"] for e in events)
    assert question == {
        "direction": "in",
        "text": "It is dark in the kitchen",
        "language": "en",
        "device_id": "d1",
        "satellite_id": None,
        "user_id": None,
        # Nobody known speaks: every event of the turn says so.
        "person_id": None,
    }
    assert decision == {
        "route": "llm",
        "reason": "local intents are off for this agent",
        "person_id": None,
    }
    assert tool["tool"] == assist_tool("HassTurnOn")
    assert tool["arguments"] == {"name": "Kitchen"}
    assert tool["result"]["response_type"] == "action_done"
    assert action == {
        "intent": "HassTurnOn",
        "target": "light.kitchen",
        "name": "Kitchen",
        "type": "entity",
        "person_id": None,
    }
    assert tool["person_id"] is None
    assert answer == {
        "direction": "out",
        "text": "The kitchen light is on.",
        "late": False,
        "person_id": None,
    }
    chain = await call(hass, "event_chain", event_id=events[3]["event_id"])
    assert [e["event_type"] for e in chain["events"]] == [
        "communication",
        "decision",
        "tool_use",
        "action",
    ]
    # The bus hears of every event: ids and type, never the data.
    assert [e.data["event_type"] for e in fired] == [e["event_type"] for e in events]
    assert fired[0].data == {
        "event_id": events[0]["event_id"],
        "event_type": "communication",
        "agent_id": agent,
        "session_id": "c1",
        "parent_event_id": None,
    }


async def test_local_turn_and_failure_are_recorded(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub, kitchen_light: list[Any]
) -> None:
    """The local route says why; a failed LLM turn leaves its kind, never the key."""
    await converse(hass, loaded_entry, "turn on the kitchen", "local")
    assert shape(await session_events(hass, "local")) == [
        ("communication", None),
        ("decision", "communication"),
        ("action", "decision"),
        ("communication", "decision"),
    ]
    decision = (await session_events(hass, "local"))[1]["event_data"]
    assert decision == {"route": "local", "reason": "a local intent matched", "person_id": None}

    azure.queue(Reply.failure(401, "401", "Access denied"))
    await converse(hass, loaded_entry, "Write me a poem", "failed")
    events = await session_events(hass, "failed")
    assert shape(events) == [
        ("communication", None),
        ("decision", "communication"),
        ("error", "decision"),
    ]
    assert events[1]["event_data"]["reason"] == "no local intent matched"
    assert events[2]["event_data"] == {"kind": "invalid_auth", "person_id": None}
    assert DEFAULT_KEY not in str(events)


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_recording_can_be_switched_off(
    hass: HomeAssistant, azure: AzureStub, config_entry: MockConfigEntry
) -> None:
    """Entry option off: turns leave nothing."""
    hass.config_entries.async_update_entry(
        config_entry, options={**RECOMMENDED_OPTIONS, CONF_HISTORY_RECORDING: False}
    )
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    await converse(hass, config_entry, "Tell me a joke", "quiet")
    assert await session_events(hass, "quiet") == []
    assert (await call(hass, "statistics"))["total_events"] == 0


async def test_record_query_and_chain_services(hass: HomeAssistant, loaded_entry: Any) -> None:
    """An automation records its own events; every query field filters."""
    first = (
        await call(
            hass,
            "record",
            event_type="action",
            event_data={"watered": "garden", "minutes": 12},
            agent_id="automation.garden",
            session_id="s1",
            tags=["garden", "water"],
            ref="v1.2",
        )
    )["event"]
    second = (
        await call(
            hass,
            "record",
            event_type="state_change",
            event_data={"valve": "closed"},
            agent_id="automation.garden",
            session_id="s1",
            parent_event_id=first["event_id"],
            tags=["garden"],
        )
    )["event"]
    third = (
        await call(hass, "record", event_type="thought", event_data={"idea": 1}, session_id="s2")
    )["event"]
    assert first["tags"] == ["garden", "water"]
    assert first["ref"] == "v1.2"

    async def ids(**query: Any) -> list[str]:
        return [e["event_id"] for e in (await call(hass, "query", **query))["events"]]

    both = [second["event_id"], first["event_id"]]  # newest first
    assert await ids(agent_id="automation.garden") == both
    assert await ids(agent_id="automation.garden", ascending=True) == both[::-1]
    assert await ids(session_id="s1", event_type="action") == [first["event_id"]]
    assert await ids(tags=["garden", "water"]) == [first["event_id"]]
    assert await ids(agent_id="automation.garden", limit=1, offset=1) == [first["event_id"]]
    assert (await call(hass, "query", agent_id="automation.garden", limit=1))["total"] == 2
    future = (dt_util.utcnow() + timedelta(hours=1)).isoformat()
    assert await ids(start_time=future) == []
    assert await ids(agent_id="automation", session_id="s2") == [third["event_id"]]
    chain = await call(hass, "event_chain", event_id=second["event_id"])
    assert [e["event_id"] for e in chain["events"]] == both[::-1]
    stats = await call(hass, "statistics", agent_id="automation.garden")
    assert stats["total_events"] == 2
    assert {t: n for t, n in stats["events_by_type"].items() if n} == {
        "action": 1,
        "state_change": 1,
    }
    assert set(stats["events_by_type"]) == {
        "thought",
        "action",
        "tool_use",
        "state_change",
        "communication",
        "decision",
        "error",
        "system",
    }
    assert stats["unique_sessions"] == 1
    assert stats["refs"] == ["v1.2"]


@pytest.mark.parametrize(
    ("service", "data", "key"),
    [
        ("record", {"event_type": "dream", "event_data": {}}, "unknown_event_type"),
        (
            "record",
            {"event_type": "action", "event_data": {}, "parent_event_id": "not-a-uuid"},
            "invalid_event_id",
        ),
        (
            "record",
            {"event_type": "action", "event_data": {"x": "y" * 70_000}},
            "event_data_too_large",
        ),
        ("record", {"event_type": "action", "event_data": {"x": {1, 2}}}, "event_data_not_json"),
        ("query", {"event_type": "dream"}, "unknown_event_type"),
        ("query", {"limit": 0}, "history_limit_out_of_range"),
        ("query", {"limit": 10_001}, "history_limit_out_of_range"),
        (
            "query",
            {"start_time": "2026-01-02T00:00:00Z", "end_time": "2026-01-01T00:00:00Z"},
            "history_end_before_start",
        ),
        ("query", {"start_time": "yesterday"}, "invalid_time"),
        (
            "record",
            {
                "event_type": "action",
                "event_data": {},
                "parent_event_id": "3f2b9c4e-1d2a-4b8e-9f00-0c1d2e3f4a5b",
            },
            "unknown_event",
        ),
        ("event_chain", {"event_id": "not-a-uuid"}, "invalid_event_id"),
        ("event_chain", {"event_id": "3f2b9c4e-1d2a-4b8e-9f00-0c1d2e3f4a5b"}, "unknown_event"),
    ],
)
async def test_bad_input_is_translated_and_writes_nothing(
    hass: HomeAssistant, loaded_entry: Any, service: str, data: dict[str, Any], key: str
) -> None:
    """Each refusal names its problem; nothing is recorded."""
    with pytest.raises(ServiceValidationError) as caught:
        await call(hass, service, **data)
    assert caught.value.translation_key == key
    assert (await call(hass, "statistics"))["total_events"] == 0


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_snapshot_keeps_events_and_agent_state(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """A snapshot: the agent's recent events with its window statistics and options."""
    await converse(hass, loaded_entry, "Remember the blue door", "c")
    agent = agent_entity_id(hass, loaded_entry)
    snapshot = (
        await call(hass, "snapshot", agent_id=agent, description="before the update", limit=3)
    )["snapshot"]
    assert snapshot["description"] == "before the update"
    events = snapshot["events"]  # oldest first: the question, the decision, the answer
    assert [e["event_type"] for e in events] == ["communication", "decision", "communication"]
    assert [e["event_data"]["direction"] for e in (events[0], events[2])] == ["in", "out"]
    state = snapshot["agent_state"]
    assert state["conversations"]["c"]["message_count"] == 2
    assert state["options"]["deployment"] == "gpt-4o-mini"
    assert (await call(hass, "statistics"))["total_snapshots"] == 1


async def record_at(
    hass: HomeAssistant, freezer: FrozenDateTimeFactory, days_ago: float, **data: Any
) -> dict[str, Any]:
    """An event recorded that many days ago (the clock goes back, then forward again)."""
    now = dt_util.utcnow()
    freezer.move_to(now - timedelta(days=days_ago))
    recorded = await call(hass, "record", agent_id="a", event_type="system", event_data=data)
    freezer.move_to(now)
    return dict(recorded["event"])


async def test_purge_is_exact_and_admin_only(
    hass: HomeAssistant, loaded_entry: Any, freezer: FrozenDateTimeFactory
) -> None:
    """Events older than the days kept go; newer ones stay; only administrators may purge."""
    await record_at(hass, freezer, 10 + 60 / 86400, n=1)
    kept = await record_at(hass, freezer, 10 - 60 / 86400, n=2)
    # The first user is the owner; the second a plain household member.
    await hass.auth.async_create_user("Owner", group_ids=[GROUP_ID_ADMIN])
    user = await hass.auth.async_create_user("Guest", group_ids=[GROUP_ID_USER])
    assert not user.is_admin
    with pytest.raises(Unauthorized):
        await call(hass, "purge", context=Context(user_id=user.id), keep_days=10)
    assert (await call(hass, "statistics"))["total_events"] == 2
    result = await call(hass, "purge", keep_days=10)
    assert result["deleted"] == 1
    remaining = (await call(hass, "query", agent_id="a"))["events"]
    assert [e["event_id"] for e in remaining] == [kept["event_id"]]


async def test_daily_purge_applies_the_retention(
    hass: HomeAssistant, loaded_entry: Any, freezer: FrozenDateTimeFactory
) -> None:
    """The retention set in the options flow is what the daily purge keeps."""
    for days in (1, 5, 40):
        await record_at(hass, freezer, days + 60 / 86400, days=days)
    await submit_options(hass, loaded_entry, history_retention_days=3)
    assert (await options_shown(hass, loaded_entry))["history_retention_days"] == 3
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(days=1, seconds=1))
    await hass.async_block_till_done(wait_background_tasks=True)
    remaining = (await call(hass, "query", agent_id="a"))["events"]
    assert [e["event_data"]["days"] for e in remaining] == [1]


async def test_series_merge_is_recorded(hass: HomeAssistant, loaded_entry: Any) -> None:
    """A service call that changes state leaves a state_change event."""
    context = Context()
    await hass.services.async_call(
        DOMAIN,
        "timeseries_merge",
        {"key": "kudos_timeseries", "entries": [{"id": "k1", "timestamp": 1761300000}]},
        blocking=True,
        context=context,
    )
    (event,) = (await call(hass, "query", event_type="state_change"))["events"]
    assert event["agent_id"] == f"{DOMAIN}.timeseries_merge"
    assert event["session_id"] == context.id
    assert event["event_data"]["key"] == "kudos_timeseries"
    assert event["event_data"]["added"] == 1


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_diagnostics_count_the_history(
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
) -> None:
    """Size, counts and schema version; no event content."""
    await converse(hass, loaded_entry, "Secret plans for the party", "c")
    diagnostics = await get_diagnostics_for_config_entry(hass, hass_client, loaded_entry)
    history: Any = diagnostics["history"]
    assert history["total_events"] == 3
    assert {t: n for t, n in history["events_by_type"].items() if n} == {
        "communication": 2,
        "decision": 1,
    }
    assert history["schema_version"] >= 1
    assert history["size_bytes"] > 0
    assert "Secret plans" not in str(history)


async def test_corrupt_database_is_set_aside(hass: HomeAssistant, azure: AzureStub) -> None:
    """An unreadable file is moved aside (kept), a fresh one starts, and a repair says so."""
    folder = Path(hass.config.path(DOMAIN))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "history.db").write_bytes(b"this is not a database" * 100)
    assert await async_setup_component(hass, DOMAIN, {})
    (moved,) = folder.glob("history.db.corrupt.*")
    assert moved.read_bytes().startswith(b"this is not a database")
    assert ir.async_get(hass).async_get_issue(DOMAIN, "history_corrupt") is not None
    await call(hass, "record", event_type="system", event_data={"fresh": True})
    assert (await call(hass, "statistics"))["total_events"] == 1


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_history_that_cannot_open_leaves_the_agent_answering(
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    azure: AzureStub,
    config_entry: MockConfigEntry,
) -> None:
    """A database from a newer version (after a downgrade): no history, the rest works."""
    history_schema_version(hass, 99)
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    result = await converse(hass, config_entry, "Still there?", "c")
    assert result.response.speech["plain"]["speech"] == "You said: Still there?"
    assert ir.async_get(hass).async_get_issue(DOMAIN, "history_unavailable") is not None
    with pytest.raises(HomeAssistantError) as caught:
        await call(hass, "query")
    assert caught.value.translation_key == "history_unavailable"
    diagnostics: Any = await get_diagnostics_for_config_entry(hass, hass_client, config_entry)
    assert diagnostics["history"]["available"] is False
    # The options still save; only a changed retention would need the database.
    result = await hass.config_entries.options.async_init(config_entry.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], filled(result, history_retention_days=7)
    )
    assert result["errors"] == {"history": "history_unavailable"}
    result = await hass.config_entries.options.async_configure(
        result["flow_id"],
        filled(result, history_retention_days=90, **{CONF_HISTORY_RECORDING: False}),
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert config_entry.options[CONF_HISTORY_RECORDING] is False


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_locked_database_keeps_the_agent_answering_and_recovers(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """Another program locks the file: answers go on, a repair says so, nothing is lost."""
    lock = sqlite3.connect(hass.config.path(DOMAIN, "history.db"), isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        result = await converse(hass, loaded_entry, "Tell me a joke", "locked")
        assert result.response.speech["plain"]["speech"] == "You said: Tell me a joke"
        # A read writes what is queued first: that gives up after the busy timeout.
        await call(hass, "statistics")
        await hass.async_block_till_done()
        assert ir.async_get(hass).async_get_issue(DOMAIN, "history_write_failed") is not None
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    # Any write comes after what is queued: the queued events are written now.
    assert (await call(hass, "purge", keep_days=3650))["deleted"] == 0
    await converse(hass, loaded_entry, "And another", "locked")
    assert [e["event_data"].get("text") for e in await session_events(hass, "locked")] == [
        "Tell me a joke",
        None,
        "You said: Tell me a joke",
        "And another",
        None,
        "You said: And another",
    ]
    assert ir.async_get(hass).async_get_issue(DOMAIN, "history_write_failed") is None


@pytest.mark.parametrize(
    "agent_options", [{**NO_TOOLS, CONF_EARLY_TIMEOUT: 0.2, CONF_REQUEST_TIMEOUT: 5}]
)
async def test_late_answer_is_recorded_in_the_returned_session(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """session_id is the conversation id the caller got back; a late answer says it was late."""
    azure.queue(Reply(text="Forty-two.", delay=0.5))
    result = await converse(hass, loaded_entry, "What is the answer?")
    await hass.async_block_till_done(wait_background_tasks=True)
    events = await session_events(hass, result.conversation_id)
    assert shape(events) == [
        ("communication", None),
        ("decision", "communication"),
        ("communication", "decision"),
    ]
    assert events[2]["event_data"] == {
        "direction": "out",
        "text": "Forty-two.",
        "late": True,
        "person_id": None,
    }


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_tool_before_failure_keeps_its_order(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub, kitchen_light: list[Any]
) -> None:
    """A tool ran, then the next request failed: the tool's events come before the error."""
    azure.queue(
        Reply(tool_calls=[ToolCall(assist_tool("HassTurnOn"), {"name": "Kitchen"})]),
        Reply.failure(401, "401", "Access denied"),
    )
    await converse(hass, loaded_entry, "Light the kitchen", "c")
    assert [e["event_type"] for e in await session_events(hass, "c")] == [
        "communication",
        "decision",
        "tool_use",
        "action",
        "error",
    ]


@pytest.mark.parametrize(
    "agent_options", [{**NO_TOOLS, CONF_LLM_HASS_API: llm_api_option("no_such_api")}]
)
async def test_llm_api_that_fails_leaves_an_error(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """A turn refused before any request (its LLM API is gone) still ends its chain."""
    await converse(hass, loaded_entry, "Anything", "c")
    events = await session_events(hass, "c")
    assert [e["event_type"] for e in events] == ["communication", "decision", "error"]
    assert events[2]["event_data"] == {"kind": "llm_api", "person_id": None}


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_snapshots_are_read_back(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """A snapshot taken can be read by its id; an unknown id or no agent is refused."""
    await converse(hass, loaded_entry, "Hello", "c")
    taken = (await call(hass, "snapshot", agent_id=agent_entity_id(hass, loaded_entry)))["snapshot"]
    assert "prompt" not in taken["agent_state"]["options"]
    read = (await call(hass, "snapshot", snapshot_id=taken["snapshot_id"]))["snapshot"]
    assert read == taken
    for data, key in (
        ({"snapshot_id": "3f2b9c4e-1d2a-4b8e-9f00-0c1d2e3f4a5b"}, "unknown_snapshot"),
        ({}, "snapshot_needs_agent"),
    ):
        with pytest.raises(ServiceValidationError) as caught:
            await call(hass, "snapshot", **data)
        assert caught.value.translation_key == key


async def test_query_forgives_case_and_refuses_absurd_input(
    hass: HomeAssistant, loaded_entry: Any
) -> None:
    """'Action' is action; a time beyond year 9999 or a negative offset is a clear error."""
    await call(hass, "record", event_type="Action", event_data={"n": 1})
    assert (await call(hass, "query", event_type="Action"))["total"] == 1
    for data, key in (
        ({"start_time": 1e300}, "invalid_time"),
        ({"offset": -1}, "history_limit_out_of_range"),
    ):
        with pytest.raises(ServiceValidationError) as caught:
            await call(hass, "query", **data)
        assert caught.value.translation_key == key
