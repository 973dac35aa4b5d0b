"""Tables the end-to-end suite is driven by; a new service or a new kind of stored data is
one more row here (the suite fails, naming it, until it has one).
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..conftest import ASSIST_CLOCK_NOTES
from ..devhome import HomeAssistantClient

DOMAIN = "azure_openai_memory"
Context = dict[str, Any]


@dataclass(frozen=True)
class ServiceExample:
    """One call with response data, as an automation makes it, and what it must answer."""

    data: Callable[[Context], dict[str, Any]]
    check: Callable[[dict[str, Any], Context], None]
    # A second call of a service has a row name of its own and names the service here.
    service: str = ""


def _merged(answer: dict[str, Any], _: Context) -> None:
    assert answer == {
        "success": True,
        "added": 2,
        "duplicates": 0,
        "updated": 0,
        "total_count": 2,
        "evicted": 0,
    }


def _queried(answer: dict[str, Any], _: Context) -> None:
    assert [(e["id"], e["who"]) for e in answer["entries"]] == [("v2", "Bob"), ("v1", "Alice")]
    assert answer["count"] == 2
    assert answer["coverage"] == "partial"


def _listed(answer: dict[str, Any], _: Context) -> None:
    assert [(k["key"], k["count"]) for k in answer["keys"]] == [("e2e_visits", 2)]


def _cleaned(answer: dict[str, Any], _: Context) -> None:
    assert (answer["success"], answer["removed"], answer["kept"]) == (True, 0, 2)


def _recorded(answer: dict[str, Any], _: Context) -> None:
    event = answer["event"]
    assert (event["agent_id"], event["event_type"], event["event_data"]) == (
        "automation.water_the_garden",
        "action",
        {"action": "watered", "minutes": 12},
    )


def _recorded_child(answer: dict[str, Any], context: Context) -> None:
    assert answer["event"]["parent_event_id"] == context["history_record"]["event"]["event_id"]


def _history(answer: dict[str, Any], _: Context) -> None:
    assert [e["event_type"] for e in answer["events"]] == ["action", "decision"]
    assert answer["total"] == 2


def _statistics(answer: dict[str, Any], _: Context) -> None:
    assert answer["total_events"] == 2
    assert answer["unique_sessions"] == 1
    assert {k: v for k, v in answer["events_by_type"].items() if v} == {"action": 1, "decision": 1}


def _snapshot(answer: dict[str, Any], _: Context) -> None:
    snapshot = answer["snapshot"]
    assert snapshot["description"] == "after watering"
    assert [e["event_type"] for e in snapshot["events"]] == ["action", "decision"]


def _snapshots(answer: dict[str, Any], context: Context) -> None:
    (listed,) = answer["snapshots"]
    assert listed["snapshot_id"] == context["history_snapshot"]["snapshot"]["snapshot_id"]
    assert (listed["event_count"], answer["total"]) == (2, 1)


def _chain(answer: dict[str, Any], context: Context) -> None:
    ids = [e["event_id"] for e in answer["events"]]
    assert ids == [
        context["history_record"]["event"]["event_id"],
        context["history_record_child"]["event"]["event_id"],
    ]


def _purged(answer: dict[str, Any], _: Context) -> None:
    assert answer["deleted"] == 0


def _stats(answer: dict[str, Any], context: Context) -> None:
    agent = answer["agents"][context["agent_id"]]
    # What the model saw of the conversation (the question included) but the clock note (where
    # the prompt carries one) and the turn's data message (who speaks), which are not kept,
    # and its answer.
    clock = len(ASSIST_CLOCK_NOTES)
    assert (
        agent["conversations"]["e2e-services"]["message_count"] == context["seen"] - clock - 1 + 1
    )


def _reset(answer: dict[str, Any], _: Context) -> None:
    assert answer == {"reset": 1}


def _saved(answer: dict[str, Any], _: Context) -> None:
    memory = answer["memory"]
    assert (answer["action"], answer["archived"], answer["evicted"]) == ("created", None, [])
    assert (memory["content"], memory["type"], memory["tags"], memory["occurrences"]) == (
        "The guest room is Anna's",
        "household",
        ["person:anna", "room:guest_room"],
        1,
    )


def _reinforced(answer: dict[str, Any], context: Context) -> None:
    assert answer["action"] == "reinforced"
    assert answer["memory"]["id"] == context["memory_save"]["memory"]["id"]
    assert answer["memory"]["occurrences"] == 2


def _found(answer: dict[str, Any], context: Context) -> None:
    # No embeddings deployment in the development entry: words alone rank.
    assert answer["ranker"] == "keyword"
    assert [m["id"] for m in answer["memories"]] == [context["memory_save"]["memory"]["id"]]


def _exported(answer: dict[str, Any], context: Context) -> None:
    assert answer["format"] == "azure_openai_memory.memories"
    assert [m["id"] for m in answer["memories"]] == [context["memory_save"]["memory"]["id"]]


def _import_checked(answer: dict[str, Any], context: Context) -> None:
    # The export's memory is here already: a dry run would change nothing.
    assert answer["dry_run"] is True
    assert answer["added"] == []
    assert answer["unchanged"] == [context["memory_save"]["memory"]["id"]]


def _patterns(answer: dict[str, Any], _: Context) -> None:
    # One memory is no pattern (a pattern needs three).
    assert answer == {"patterns": []}


def _forgotten(answer: dict[str, Any], context: Context) -> None:
    assert [m["id"] for m in answer["archived"]] == [context["memory_save"]["memory"]["id"]]
    assert answer["erased"] == []


def _cleaned_archive(answer: dict[str, Any], context: Context) -> None:
    assert answer == {"deleted": 1, "ids": [context["memory_save"]["memory"]["id"]]}


def today() -> str:
    """The development configuration's time zone is UTC.

    Taken once before a module's first conversation (context["today"]): a run across
    midnight still aggregates and expects the day it talked on.
    """
    return datetime.now(UTC).date().isoformat()


def _today(context: Context) -> dict[str, Any]:
    return {"day": context["today"]}


def _aggregated(answer: dict[str, Any], _: Context) -> None:
    # Today's talk, all from the token's user with no device, is one group's day.
    assert answer == {"daily": 1, "weekly": 0, "monthly": 0, "pruned": 0, "eras": 0}


def _summaries(answer: dict[str, Any], context: Context) -> None:
    (daily,) = answer["summaries"]
    assert daily["period_type"] == "daily"
    assert daily["period_start"] == context["today"]
    # The develop stand-in answers a request for JSON with an object of the asked shape.
    assert daily["extractive"] is False
    assert daily["summary"]


def _groups(answer: dict[str, Any], context: Context) -> None:
    (group,) = answer["groups"]
    assert group["group_id"] == context["summary_get"]["summaries"][0]["group_id"]
    assert group["counts"]["daily"] == 1


def _incognito(answer: dict[str, Any], context: Context) -> None:
    assert answer["agent"] == context["agent_id"]
    assert answer["until"] is not None


# Every service of the integration, in the order an automation could call them; each
# answer is kept in the context under its row's name for later rows.
SERVICE_EXAMPLES: dict[str, ServiceExample] = {
    "timeseries_merge": ServiceExample(
        lambda _: {
            "key": "e2e_visits",
            "entries": [
                {"id": "v1", "timestamp": "2025-10-25T09:30:00Z", "who": "Alice"},
                {"id": "v2", "timestamp": "2025-10-25T10:30:00Z", "who": "Bob"},
            ],
        },
        _merged,
    ),
    "timeseries_query": ServiceExample(
        lambda _: {
            "key": "e2e_visits",
            "start_time": "2025-10-25T00:00:00Z",
            "end_time": "2025-10-26T00:00:00Z",
        },
        _queried,
    ),
    "timeseries_list": ServiceExample(lambda _: {}, _listed),
    "timeseries_cleanup": ServiceExample(
        lambda _: {"key": "e2e_visits", "keep_days": 3650}, _cleaned
    ),
    "history_record": ServiceExample(
        lambda _: {
            "event_type": "action",
            "event_data": {"action": "watered", "minutes": 12},
            "agent_id": "automation.water_the_garden",
            "session_id": "garden",
        },
        _recorded,
    ),
    "history_record_child": ServiceExample(
        lambda c: {
            "event_type": "decision",
            "event_data": {"why": "the soil was dry"},
            "agent_id": "automation.water_the_garden",
            "session_id": "garden",
            "parent_event_id": c["history_record"]["event"]["event_id"],
        },
        _recorded_child,
        service="history_record",
    ),
    "history_query": ServiceExample(
        lambda _: {"session_id": "garden", "ascending": True}, _history
    ),
    "history_statistics": ServiceExample(
        lambda _: {"agent_id": "automation.water_the_garden"}, _statistics
    ),
    "history_snapshot": ServiceExample(
        lambda _: {"agent_id": "automation.water_the_garden", "description": "after watering"},
        _snapshot,
    ),
    "history_snapshots": ServiceExample(
        lambda _: {"agent_id": "automation.water_the_garden"}, _snapshots
    ),
    "history_event_chain": ServiceExample(
        lambda c: {"event_id": c["history_record_child"]["event"]["event_id"]}, _chain
    ),
    "history_purge": ServiceExample(lambda _: {"keep_days": 3650}, _purged),
    "conversation_stats": ServiceExample(
        lambda c: {"config_entry_id": c["entry_id"], "conversation_id": "e2e-services"}, _stats
    ),
    "conversation_reset": ServiceExample(
        lambda c: {"config_entry_id": c["entry_id"], "conversation_id": "e2e-services"}, _reset
    ),
    "memory_save": ServiceExample(
        lambda _: {
            "content": "The guest room is Anna's",
            "type": "household",
            "tags": ["person:anna", "room:guest_room"],
        },
        _saved,
    ),
    "memory_save_again": ServiceExample(
        lambda _: {"content": "the guest room is anna's", "type": "household"},
        _reinforced,
        service="memory_save",
    ),
    "memory_search": ServiceExample(lambda _: {"query": "Whose is the guest room?"}, _found),
    "memory_patterns": ServiceExample(lambda _: {}, _patterns),
    "memory_export": ServiceExample(lambda _: {}, _exported),
    "memory_import": ServiceExample(
        lambda c: {"export": c["memory_export"], "dry_run": True}, _import_checked
    ),
    "memory_forget": ServiceExample(
        lambda c: {"memory_id": c["memory_save"]["memory"]["id"]}, _forgotten
    ),
    "memory_cleanup_archived": ServiceExample(lambda _: {"retention_days": 0}, _cleaned_archive),
    "summary_aggregate": ServiceExample(_today, _aggregated),
    "summary_get": ServiceExample(lambda _: {"period_type": "daily"}, _summaries),
    "summary_groups": ServiceExample(lambda _: {}, _groups),
    # Last: the agent's turns are incognito for a minute after it.
    "incognito": ServiceExample(lambda c: {"entity_id": c["agent_id"], "minutes": 1}, _incognito),
}


def service_of(row: str) -> str:
    """The service a row calls."""
    return SERVICE_EXAMPLES[row].service or row


@dataclass(frozen=True)
class KeptData:
    """Something the integration stores, written before a restart and read after it."""

    write: Callable[[HomeAssistantClient, Context], None]
    read: Callable[[HomeAssistantClient, Context], Any]
    # What read gives right after write, and after the restart.
    expected: Callable[[Context], Any]


def _window(client: HomeAssistantClient, context: Context) -> Any:
    stats = client.service(
        DOMAIN,
        "conversation_stats",
        {"config_entry_id": context["entry_id"], "conversation_id": "kept"},
    )
    conversation = stats["agents"][context["agent_id"]]["conversations"]["kept"]
    return conversation["message_count"]


def _write_window(client: HomeAssistantClient, context: Context) -> None:
    client.converse("Remember the owls", context["agent_id"], "kept")
    client.converse("And the bats", context["agent_id"], "kept")


def _write_series(client: HomeAssistantClient, _: Context) -> None:
    client.service(
        DOMAIN,
        "timeseries_merge",
        {"key": "kept_owls", "entries": [{"id": "o1", "timestamp": "2025-10-25T09:30:00Z"}]},
    )


def _series(client: HomeAssistantClient, _: Context) -> Any:
    answer = client.service(
        DOMAIN,
        "timeseries_query",
        {
            "key": "kept_owls",
            "start_time": "2025-10-25T00:00:00Z",
            "end_time": "2025-10-26T00:00:00Z",
        },
    )
    return [e["id"] for e in answer["entries"]]


def _write_history(client: HomeAssistantClient, _: Context) -> None:
    client.service(
        DOMAIN,
        "history_record",
        {"event_type": "thought", "event_data": {"note": "owls"}, "session_id": "kept-notes"},
    )


def _history_kept(client: HomeAssistantClient, _: Context) -> Any:
    answer = client.service(
        DOMAIN, "history_query", {"session_id": "kept-notes", "ascending": True}
    )
    return [e["event_type"] for e in answer["events"]]


def _write_summary(client: HomeAssistantClient, context: Context) -> None:
    client.service(DOMAIN, "summary_aggregate", _today(context))


def _summaries_kept(client: HomeAssistantClient, _: Context) -> Any:
    answer = client.service(DOMAIN, "summary_get", {})
    return [(s["period_type"], s["period_start"]) for s in answer["summaries"]]


def _write_memory(client: HomeAssistantClient, _: Context) -> None:
    client.service(
        DOMAIN, "memory_save", {"content": "The owls nest in the barn", "type": "household"}
    )


def _memories_kept(client: HomeAssistantClient, _: Context) -> Any:
    answer = client.service(DOMAIN, "memory_search", {"query": "owls"})
    return [m["content"] for m in answer["memories"]]


# What a graceful restart keeps.
KEPT_ACROSS_RESTART: dict[str, KeptData] = {
    # Two questions and their answers (the restart module's first conversation).
    "conversation window": KeptData(_write_window, _window, lambda _: 4),
    "time series": KeptData(_write_series, _series, lambda _: ["o1"]),
    "history": KeptData(_write_history, _history_kept, lambda _: ["thought"]),
    "memories": KeptData(_write_memory, _memories_kept, lambda _: ["The owls nest in the barn"]),
    # Today's talk (the window's two questions) as one daily summary.
    "summaries": KeptData(_write_summary, _summaries_kept, lambda c: [("daily", c["today"])]),
}
