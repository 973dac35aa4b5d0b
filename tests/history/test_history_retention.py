"""The history through its services: snapshots go with the retention and are listed; a long
answer in any script is recorded, cut to fit; a refusal of our own event is a warning."""

import logging
import uuid

from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.azure_openai_memory.const import DOMAIN
from custom_components.azure_openai_memory.data import history_of
from custom_components.azure_openai_memory.history.recorder import (
    CUT_MARKER,
    MAX_RECORDED_TEXT,
)
from custom_components.azure_openai_memory.lib.history.store import (
    AgentHistoryEvent,
    HistorySnapshot,
)

from ..azure_stub import AzureStub, Reply
from ..conftest import NO_TOOLS, converse, family

DAY = 86400.0
GARDEN = "automation.garden"


call = family("history")


async def test_snapshots_are_listed_and_go_with_the_retention(hass: HomeAssistant) -> None:
    """A snapshot taken before the cut-off goes with the events; one taken since keeps
    the events that are left. history_snapshots lists them, newest first, page by page."""
    assert await async_setup_component(hass, DOMAIN, {})
    recorder = history_of(hass)
    now = dt_util.utcnow().timestamp()
    old = AgentHistoryEvent.new(GARDEN, "action", {"watered": 1}, timestamp=now - 40 * DAY)
    recent = AgentHistoryEvent.new(GARDEN, "action", {"watered": 2}, timestamp=now - DAY)
    await recorder.async_run(recorder.store.record_events, [old, recent])
    month_old = HistorySnapshot(str(uuid.uuid4()), GARDEN, now - 39 * DAY, (old,))
    await recorder.async_run(recorder.store.create_snapshot, month_old)
    today = (await call(hass, "snapshot", agent_id=GARDEN, description="after watering"))[
        "snapshot"
    ]
    assert [e["event_data"] for e in today["events"]] == [{"watered": 1}, {"watered": 2}]

    listed = await call(hass, "snapshots", agent_id=GARDEN)
    assert listed["total"] == 2
    assert [(s["snapshot_id"], s["event_count"]) for s in listed["snapshots"]] == [
        (today["snapshot_id"], 2),
        (month_old.snapshot_id, 1),
    ]
    assert listed["snapshots"][0]["description"] == "after watering"
    assert "events" not in listed["snapshots"][0]
    page = await call(hass, "snapshots", limit=1, offset=1)
    assert [s["snapshot_id"] for s in page["snapshots"]] == [month_old.snapshot_id]
    assert page["total"] == 2

    purged = await call(hass, "purge", keep_days=30)
    assert (purged["deleted"], purged["deleted_snapshots"]) == (1, 1)
    listed = await call(hass, "snapshots")
    assert [(s["snapshot_id"], s["event_count"]) for s in listed["snapshots"]] == [
        (today["snapshot_id"], 1)
    ]
    kept = (await call(hass, "snapshot", snapshot_id=today["snapshot_id"]))["snapshot"]
    assert [e["event_data"] for e in kept["events"]] == [{"watered": 2}]
    assert (await call(hass, "statistics"))["total_snapshots"] == 1


async def test_keeping_more_days_than_there_are_keeps_everything(hass: HomeAssistant) -> None:
    assert await async_setup_component(hass, DOMAIN, {})
    await call(hass, "record", event_type="action", event_data={"n": 1})
    purged = await call(hass, "purge", keep_days=float("inf"))
    assert purged == {"deleted": 0, "deleted_snapshots": 0, "cutoff": "0001-01-01T00:00:00Z"}
    assert (await call(hass, "statistics"))["total_events"] == 1


@pytest.mark.parametrize(
    "words",
    [
        pytest.param("这是一个很长的回答。", id="chinese"),
        pytest.param("Это очень длинный ответ. ", id="cyrillic"),
        # Chinese characters beyond the Basic Multilingual Plane: four bytes each.
        pytest.param("𠀀𠀁𠀂𠀃𠀄𠀅", id="chinese-four-bytes"),
    ],
)
@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_a_long_answer_in_any_script_is_recorded_cut(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub, words: str
) -> None:
    """20,000 characters: recorded, cut at a character to at most 16 KB as stored."""
    answer = (words * (20_000 // len(words) + 1))[:20_000]
    azure.queue(Reply(text=answer))
    await converse(hass, loaded_entry, "Tell me everything", "long")
    events = (await call(hass, "query", session_id="long", ascending=True))["events"]
    said = [e["event_data"]["text"] for e in events if e["event_data"].get("direction") == "out"]
    assert len(said) == 1
    (text,) = said
    assert text.endswith(CUT_MARKER)
    kept = text.removesuffix(CUT_MARKER)
    assert answer.startswith(kept)
    stored = len(text.encode())
    # As much as fits: the next character would not have.
    assert stored <= MAX_RECORDED_TEXT < stored + len(answer[len(kept)].encode())


@pytest.mark.parametrize("agent_options", [NO_TOOLS])
async def test_our_own_event_refused_is_a_warning(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A reset of a 70,000-character conversation id is done, but its event is over the
    store's limit: the log says so at warning, where a user sees it."""
    caplog.set_level(logging.DEBUG)
    huge = "c" * 70_000
    await hass.services.async_call(
        DOMAIN,
        "conversation_reset",
        {"config_entry_id": loaded_entry.entry_id, "conversation_id": huge},
        blocking=True,
        return_response=True,
    )
    (record,) = [r for r in caplog.records if "not recorded in the history" in r.getMessage()]
    assert record.levelno == logging.WARNING
    assert record.getMessage() == (
        "A state_change event of azure_openai_memory.conversation_reset was not recorded "
        "in the history (event_data_too_large)"
    )
