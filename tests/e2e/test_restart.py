"""Stopping Home Assistant loses nothing; killing it loses at most the delayed-save window.

Both against a real `hass` process set up as scripts/develop does; what is stored comes
from tables in examples.py, so memories and summaries are one more row each.
"""

import time
from typing import Any

import pytest

from custom_components.azure_openai_memory.lib.history.store import DEFAULT_BATCH_WINDOW
from custom_components.azure_openai_memory.storage import MAX_SAVE_WAIT

from ..devhome.client import spoken
from .examples import DOMAIN, KEPT_ACROSS_RESTART
from .harness import Home, wait_for_agents

pytestmark = [pytest.mark.timeout(300)]
# Writes a little longer than the longest a delayed save may wait, so one forced write
# happens during the burst and the kill catches the next one pending.
BURST_SECONDS = MAX_SAVE_WAIT + 5
# The write itself (an executor job, a file rename) after its timer fires.
WRITE_SLACK = 1.0


def context_of(home: Home) -> dict[str, Any]:
    return {"entry_id": home.dev.entry_id, "agent_id": home.dev.agent_id, "today": home.today}


def test_graceful_restart_keeps_everything(home: Home) -> None:
    client = home.client
    context = context_of(home)
    for kept in KEPT_ACROSS_RESTART.values():
        kept.write(client, context)
    before = {name: kept.read(client, context) for name, kept in KEPT_ACROSS_RESTART.items()}
    expected = {name: kept.expected(context) for name, kept in KEPT_ACROSS_RESTART.items()}
    assert before == expected

    home.hass.restart(home.dev.token)
    wait_for_agents(home, 1)

    after = {name: kept.read(client, context) for name, kept in KEPT_ACROSS_RESTART.items()}
    assert after == expected


def test_kill_9_after_a_burst_loses_at_most_the_delayed_save_window(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    """Series, a conversation and history written for BURST_SECONDS, then kill -9.

    A history_record call commits before it answers; the events of a conversation's turns
    are batched, so those are the ones the batch window can lose.
    """
    client = home.client
    agent = home.dev.agent_id
    series_done: list[float] = []
    turns_done: list[float] = []
    history_done: list[float] = []
    # The burst starts a conversation of its own: no earlier one of this user to continue.
    client.service(DOMAIN, "conversation_reset", {"config_entry_id": home.dev.entry_id})
    before = client.service(DOMAIN, "conversation_stats", {"config_entry_id": home.dev.entry_id})
    assert before["agents"][agent]["conversations"] == {}
    baseline = 0
    start = time.monotonic()
    while time.monotonic() - start < BURST_SECONDS:
        i = len(series_done)
        client.service(
            DOMAIN,
            "timeseries_merge",
            {
                "key": "burst",
                "entries": [
                    {"id": f"b{i}", "timestamp": f"2025-10-25T09:{i // 60:02}:{i % 60:02}Z"}
                ],
            },
        )
        series_done.append(time.monotonic())
        client.service(
            DOMAIN,
            "history_record",
            {"event_type": "action", "event_data": {"i": i}, "session_id": "burst-notes"},
        )
        history_done.append(time.monotonic())
        if i % 4 == 0:
            n = len(turns_done)
            said = spoken(client.converse(f"burst turn {n}", agent, "burst"))
            assert said.startswith(f"You said: burst turn {n} "), said
            turns_done.append(time.monotonic())
        time.sleep(0.2)
    home.hass.kill()
    killed = time.monotonic()

    home.hass.start()
    wait_for_agents(home, 1)

    entries = client.service(
        DOMAIN,
        "timeseries_query",
        {"key": "burst", "start_time": "2025-10-25T00:00:00Z", "end_time": "2025-10-26T00:00:00Z"},
    )["entries"]
    series_kept = len(entries)
    assert sorted(e["id"] for e in entries) == sorted(f"b{i}" for i in range(series_kept))
    stats = client.service(
        DOMAIN,
        "conversation_stats",
        {"config_entry_id": home.dev.entry_id, "conversation_id": "burst"},
    )
    conversations = stats["agents"][agent]["conversations"]
    window = conversations["burst"]["message_count"] if "burst" in conversations else baseline
    turns_kept = (window - baseline) // 2
    history = client.service(
        DOMAIN, "history_query", {"session_id": "burst-notes", "ascending": True, "limit": 10000}
    )["events"]
    history_kept = len(history)
    assert [e["event_data"]["i"] for e in history] == list(range(history_kept))
    turn_events = client.service(
        DOMAIN, "history_query", {"session_id": "burst", "ascending": True, "limit": 10000}
    )["events"]
    questions = [
        e["event_data"]["text"]
        for e in turn_events
        if e["event_type"] == "communication" and e["event_data"]["direction"] == "in"
    ]
    batched_kept = len(questions)
    assert questions == [f"burst turn {n}" for n in range(batched_kept)]

    lost = {
        "time series": loss(series_done, series_kept, killed),
        "conversation window": loss(turns_done, turns_kept, killed),
        "history (history_record, committed at once)": loss(history_done, history_kept, killed),
        "history (turns, batched)": loss(turns_done, batched_kept, killed),
    }
    with capsys.disabled():
        for kind, seconds in lost.items():
            print(
                f"\nkill -9 after {BURST_SECONDS:.0f} s of writes: {kind} lost at most {seconds:.1f} s of writes"
            )

    # Everything written longer ago than the longest delayed save survived.
    assert kept_older_than(series_done, series_kept, killed - MAX_SAVE_WAIT - WRITE_SLACK)
    assert kept_older_than(turns_done, turns_kept, killed - MAX_SAVE_WAIT - WRITE_SLACK)
    assert kept_older_than(history_done, history_kept, killed - WRITE_SLACK)
    assert kept_older_than(turns_done, batched_kept, killed - DEFAULT_BATCH_WINDOW - WRITE_SLACK)


def loss(done: list[float], kept: int, killed: float) -> float:
    """Seconds between the last write that survived and the kill (0: none was lost)."""
    if kept >= len(done):
        return 0.0
    return killed - (done[kept - 1] if kept else done[0])


def kept_older_than(done: list[float], kept: int, cutoff: float) -> bool:
    """Every write finished before cutoff is among the first `kept`."""
    return all(i < kept for i, t in enumerate(done) if t < cutoff)
