"""Whose talk, on the Memory panel: every panel command shows a person who is not an
administrator what the services show them (their own talk and the household's), pages and
totals count only that, and asking for another person's is refused as the services refuse
it. An automation's change to a private memory is that person's in the history."""

from dataclasses import dataclass
import json
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, MockUser
from pytest_homeassistant_custom_component.typing import (
    MockHAClientWebSocket,
    WebSocketGenerator,
)

from custom_components.azure_openai_memory.const import DOMAIN

from ..azure_stub import AzureStub
from ..conftest import (
    add_people,
    agent_entity_id,
    as_user,
    echoing_model,
    exception_text,
    say,
)
from ..panel_commands import answer, not_allowed, refused_as, translated

ANNA_SAYS = "My dentist appointment is on Friday"
BEN_SAYS = "Is it going to rain tomorrow"
AUTOMATION_SAYS = "The bins went out"
ANNA_PRIVATE = "Anna takes 2.5 mg of melatonin at night"
BEN_PRIVATE = "Ben keeps his passport in the desk drawer"
ANNA, BEN = "anna", "ben"


@dataclass
class Clients:
    """Anna's connection (an administrator) and Ben's (not one), and their users."""

    anna: MockHAClientWebSocket
    ben: MockHAClientWebSocket
    anna_user: MockUser
    ben_user: MockUser


@pytest.fixture
async def clients(
    hass: HomeAssistant,
    azure: AzureStub,
    config_entry: MockConfigEntry,
    hass_admin_user: MockUser,
    hass_read_only_user: MockUser,
    hass_ws_client: WebSocketGenerator,
    hass_read_only_access_token: str,
) -> Clients:
    """Anna and Ben, each with a person (set up before any connection: the person
    integration registers an HTTP view, which a running server no longer takes), each
    talked to the agent; an automation recorded an event of the household; the day's talk
    is summarised, per person."""
    await add_people(hass, hass_admin_user, hass_read_only_user)
    azure.responder = echoing_model
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)
    await say(hass, config_entry, ANNA_SAYS, "anna-talk", hass_admin_user)
    await say(hass, config_entry, BEN_SAYS, "ben-talk", hass_read_only_user)
    automation = as_user(hass, None)
    await automation("history_record", event_type="system", event_data={"note": AUTOMATION_SAYS})
    await automation("summary_aggregate", day=dt_util.now().date().isoformat())
    return Clients(
        await hass_ws_client(hass),
        await hass_ws_client(hass, hass_read_only_access_token),
        hass_admin_user,
        hass_read_only_user,
    )


def words(result: Any) -> str:
    return json.dumps(result)


async def refused(
    client: MockHAClientWebSocket, key: str, name: str, /, **fields: Any
) -> dict[str, Any]:
    """Refused as the services refuse another person's data: `unauthorized`, with their
    translation key, placeholders and message."""
    error = await refused_as(client, "unauthorized", name, **fields)
    assert (error["translation_domain"], error["translation_key"]) == (DOMAIN, key), error
    placeholders = dict(error["translation_placeholders"])
    assert error["message"] == exception_text(key, **placeholders).rstrip(".")
    return placeholders


async def pages(client: MockHAClientWebSocket, name: str, key: str, **fields: Any) -> list[Any]:
    """Every row of a paged command, one row a page, each page's total the same."""
    rows: list[Any] = []
    first = await answer(client, name, offset=0, limit=1, **fields)
    total = first["total"]
    rows += first[key]
    for offset in range(1, total + 1):
        page = await answer(client, name, offset=offset, limit=1, **fields)
        assert page["total"] == total
        rows += page[key]
    assert len(rows) == total
    return rows


async def test_ben_never_receives_anna_s_words_from_the_panel(
    hass: HomeAssistant, clients: Clients, config_entry: MockConfigEntry
) -> None:
    ben, anna = clients.ben, clients.anna
    as_ben = as_user(hass, clients.ben_user)
    received: list[Any] = []

    async def got(name: str, **fields: Any) -> Any:
        result = await answer(ben, name, **fields)
        received.append(result)
        return result

    access = await got("panel/access")
    assert access["tabs"] == dict.fromkeys(
        ("memories", "conversations", "history", "summaries", "series"), True
    )
    assert (access["user"]["person_id"], access["user"]["is_admin"]) == (BEN, False)

    # History: his turn and the household's event, as history_query shows him; the pages
    # and totals count only those.
    timeline = await got("history/events")
    service = await as_ben("history_query")
    assert [e["event_id"] for e in timeline["events"]] == [e["event_id"] for e in service["events"]]
    assert timeline["total"] == service["total"] == 4
    assert BEN_SAYS in words(timeline)
    assert AUTOMATION_SAYS in words(timeline)
    paged = await pages(ben, "history/events", "events")
    received.append(paged)
    assert [e["event_id"] for e in paged] == [e["event_id"] for e in timeline["events"]]
    agent_id = agent_entity_id(hass, config_entry)
    assert (await got("history/events", agent_id=agent_id))["total"] == 3
    statistics = await got("history/statistics")
    assert {k: v for k, v in statistics.items() if k != "agents"} == await as_ben(
        "history_statistics"
    )
    assert (statistics["total_events"], statistics["unique_sessions"]) == (4, 1)
    own_answer = next(e for e in timeline["events"] if e["session_id"] == "ben-talk")
    turn = await got("history/turn", event_id=own_answer["event_id"])
    assert [e["event_type"] for e in turn["events"]] == [
        "communication",
        "decision",
        "communication",
    ]
    assert BEN_SAYS in words(turn)

    # Summaries: his group only (today's talk has no household group), read whole.
    groups = await got("summaries/groups")
    assert [g["group_id"] for g in groups["groups"]] == [
        g["group_id"] for g in (await as_ben("summary_groups"))["groups"]
    ]
    assert (groups["total"], groups["groups"][0]["group_id"]) == (1, "person_ben")
    (daily,) = groups["groups"][0]["strips"]["daily"]
    read = await got("summaries/get", summary_id=daily["summary_id"])
    assert BEN_SAYS in read["summary"]["summary"]
    # Summarising now covers every person's talk: an administrator's to do.
    await not_allowed(ben, "summaries/run")

    # Conversations: his own, with its figures; the agent's totals are everyone's.
    listed = await got("conversations/list")
    (agent,) = listed["agents"]
    assert [c["conversation_id"] for c in agent["conversations"]] == ["ben-talk"]
    assert agent["total"] == 1
    assert agent["totals"]["conversations"] == 2
    where = {"entry_id": agent["entry_id"], "subentry_id": agent["subentry_id"]}
    window = await got("conversations/read", conversation_id="ben-talk", **where)
    assert window["messages"][0]["content"] == BEN_SAYS

    # Memories: the household's and his own.
    await as_user(hass, clients.anna_user)(
        "memory_save", content=ANNA_PRIVATE, type="context", scope="private"
    )
    memories = await got("memories/list")
    assert ANNA_PRIVATE not in words(memories)
    assert ANNA_PRIVATE not in words(await got("memories/list", query="melatonin"))

    # Nothing he received holds Anna's words.
    assert ANNA_SAYS not in words(received)
    assert ANNA_PRIVATE not in words(received)

    # Anna, an administrator, reads everything.
    everything = await answer(anna, "history/events")
    assert everything["total"] == (await as_user(hass, None)("history_query"))["total"]
    assert ANNA_SAYS in words(everything)
    assert BEN_SAYS in words(everything)
    assert [g["group_id"] for g in (await answer(anna, "summaries/groups"))["groups"]] == [
        "person_anna",
        "person_ben",
    ]
    (all_agents,) = (await answer(anna, "conversations/list"))["agents"]
    assert {c["conversation_id"] for c in all_agents["conversations"]} == {
        "anna-talk",
        "ben-talk",
    }


async def test_ben_asking_the_panel_for_anna_s_talk_is_refused(
    hass: HomeAssistant, clients: Clients
) -> None:
    ben, anna = clients.ben, clients.anna
    automation = as_user(hass, None)
    anna_question = (await automation("history_query", session_id="anna-talk"))["events"][-1]
    event_id = anna_question["event_id"]
    # Her turn is, to him, one that does not exist.
    assert await translated(ben, "unknown_event", "history/turn", event_id=event_id) == {
        "event_id": event_id
    }
    assert ANNA_SAYS in words(await answer(anna, "history/turn", event_id=event_id))

    (anna_group,) = [
        g
        for g in (await answer(anna, "summaries/groups"))["groups"]
        if g["group_id"] == "person_anna"
    ]
    (daily,) = anna_group["strips"]["daily"]
    # Her summary is, to him, one that does not exist (its id tells a group and a day).
    assert await translated(
        ben, "summary_unknown", "summaries/get", summary_id=daily["summary_id"]
    ) == {"summary_id": daily["summary_id"]}

    (agent,) = (await answer(anna, "conversations/list"))["agents"]
    where = {"entry_id": agent["entry_id"], "subentry_id": agent["subentry_id"]}
    assert await translated(
        ben, "unknown_conversation", "conversations/read", conversation_id="anna-talk", **where
    ) == {"conversation_id": "anna-talk"}
    # Reset stays an administrator's, even of his own conversation; nothing is reset.
    await not_allowed(ben, "conversations/reset", conversation_id="ben-talk", **where)
    await not_allowed(ben, "conversations/reset", **where)
    assert agent["total"] == (await answer(anna, "conversations/list"))["agents"][0]["total"] == 2


async def test_an_automation_s_change_to_a_private_memory_is_that_person_s(
    hass: HomeAssistant, clients: Clients
) -> None:
    """Saved, forgotten, erased or imported by an automation (no user), an event naming a
    private memory is its person's talk: Ben never reads Anna's through the history."""
    automation = as_user(hass, None)
    as_anna, as_ben = as_user(hass, clients.anna_user), as_user(hass, clients.ben_user)

    async def memory_events() -> list[tuple[str, str | None]]:
        """Each memory service's event, newest first: (service, whose; "-": the household's)."""
        found = await automation("history_query", event_type="state_change")
        return [
            (e["agent_id"].removeprefix(f"{DOMAIN}."), e["event_data"].get("person_id", "-"))
            for e in found["events"]
            if e["agent_id"].startswith(f"{DOMAIN}.memory_")
        ]

    async def ben_reads() -> list[str]:
        """Everything Ben may read of the history, by the service and on the panel."""
        return [
            words(await as_ben("history_query", limit=1000)),
            words(await answer(clients.ben, "history/events", limit=100)),
        ]

    saved = await automation(
        "memory_save", content=ANNA_PRIVATE, type="context", scope=f"person:{ANNA}"
    )
    memory_id = saved["memory"]["id"]
    household = await automation(
        "memory_save", content="The bins go out on Tuesday", type="routine"
    )
    await automation("memory_forget", memory_id=memory_id)
    assert await memory_events() == [
        ("memory_forget", ANNA),
        ("memory_save", "-"),  # the household's bins: anyone's to read
        ("memory_save", ANNA),
    ]
    assert memory_id in words(await as_anna("history_query"))
    assert memory_id in words(await answer(clients.anna, "history/events"))
    for seen in await ben_reads():
        assert memory_id not in seen
        assert ANNA_PRIVATE not in seen
        assert household["memory"]["id"] in seen

    # An erasure deletes the events naming the memory; its own event, and an import's
    # (of her archived memory), are Anna's too.
    exported = await automation("memory_export", scopes=[f"person:{ANNA}"])
    await automation("memory_forget", memory_id=memory_id, erase=True)
    assert (await automation("memory_import", export=exported))["added"] == [memory_id]
    await automation("memory_forget", memory_id=memory_id, erase=True)
    assert await memory_events() == [
        ("memory_forget", ANNA),
        ("memory_import", ANNA),
        ("memory_forget", ANNA),
        ("memory_save", "-"),
    ]
    for seen in await ben_reads():
        assert "memory_import" not in seen
        assert "memory_forget" not in seen

    # Private memories of two people at once: nobody's, read by administrators only.
    for content, person in ((ANNA_PRIVATE, ANNA), (BEN_PRIVATE, BEN)):
        await automation(
            "memory_save",
            content=content,
            type="context",
            scope=f"person:{person}",
            tags=["paper"],
        )
    await automation("memory_forget", tag="paper")
    newest = await automation("history_query", agent_id=f"{DOMAIN}.memory_forget", limit=1)
    (both,) = newest["events"]
    assert both["event_data"]["person_id"] is None
    for seen in await ben_reads():
        assert both["event_id"] not in seen
    assert both["event_id"] in words(await as_anna("history_query", limit=1000))


async def test_a_change_made_on_the_panel_is_the_caller_s(
    hass: HomeAssistant, clients: Clients
) -> None:
    """Ben's change on the panel is his in the history, as his service call would be."""
    saved = await as_user(hass, clients.ben_user)(
        "memory_save", content=BEN_PRIVATE, type="household", scope="private"
    )
    await answer(clients.ben, "memories/pin", memory_id=saved["memory"]["id"], pinned=True)
    (pinned,) = (await as_user(hass, None)("history_query", agent_id=f"{DOMAIN}.memory_pin"))[
        "events"
    ]
    assert pinned["event_data"] == {"id": saved["memory"]["id"], "pinned": True, "person_id": BEN}
    assert pinned["tags"] == ["panel"]
