"""A real `hass` on scripts/develop's configuration, with the stand-in as Azure.

Everything a user and an automation do, over HTTP as a browser or an automation would:
the set-up scripts/develop makes, the options flow, a second agent through the subentry
flow, the local and the LLM route controlling a demo light, and every service of the
integration with response data.
"""

from pathlib import Path
import re
from typing import Any

import pytest

from ..azure_stub import DEFAULT_KEY
from ..conftest import ASSIST_CLOCK_NOTES, assist_tool
from ..devhome import ResourceSettings, agents_of, prepare
from ..devhome.client import HomeAssistantError, spoken
from .examples import DOMAIN, SERVICE_EXAMPLES, service_of
from .harness import Home, wait_for_agents

pytestmark = [pytest.mark.timeout(300)]
# The clock note a request carries, or none where the Assist API offers the time as a tool.
CLOCK = len(ASSIST_CLOCK_NOTES)


def shown(form: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What a form shows in its fields, by section ("" for fields outside any section)."""

    def values(fields: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            field["name"]: field["description"]["suggested_value"]
            for field in fields
            if "suggested_value" in (field.get("description") or {})
        }

    sections = {"": values(form["data_schema"])}
    for field in form["data_schema"]:
        if field.get("type") == "expandable":
            sections[field["name"]] = values(field["schema"])
    return sections


def fill(form: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """What a user sends after changing some fields of a form shown with suggested values."""
    sections = shown(form)
    sent = {**sections.pop(""), **changes}
    for name, part in sections.items():
        sent[name] = {key: sent.pop(key, value) for key, value in part.items()}
    return sent


def test_set_up_as_scripts_develop_leaves_it(home: Home) -> None:
    """Onboarded, demo home in areas and exposed, one agent preferred by Assist."""
    client = home.client
    assert home.dev.created[0] == "created the user 'dev' through onboarding"
    steps = client.get("/api/onboarding", auth=False)
    assert {s["step"]: s["done"] for s in steps} == {
        "user": True,
        "core_config": True,
        "analytics": True,
        "integration": True,
    }
    (pipelines,) = client.ws({"type": "assist_pipeline/pipeline/list"})
    (preferred,) = [p for p in pipelines["pipelines"] if p["id"] == pipelines["preferred_pipeline"]]
    assert preferred["conversation_engine"] == home.dev.agent_id
    areas, entities, exposed = client.ws(
        {"type": "config/area_registry/list"},
        {"type": "config/entity_registry/list"},
        {"type": "homeassistant/expose_entity/list"},
    )
    area_names = {a["area_id"]: a["name"] for a in areas}
    kitchen = {e["entity_id"] for e in entities if area_names.get(e["area_id"]) == "Kitchen"}
    assert kitchen == {"light.kitchen_light", "switch.coffee_maker"}
    conversation = {
        entity_id
        for entity_id, assistants in exposed["exposed_entities"].items()
        if assistants.get("conversation")
    }
    assert {
        "light.kitchen_light",
        "lock.front_door",
        "climate.living_room_thermostat",
        "sensor.living_room_temperature",
    } <= conversation

    # Run again, as a second scripts/develop does: nothing new.
    again = prepare(
        home.hass.base_url, home.hass.config, ResourceSettings(home.stand_in.endpoint, DEFAULT_KEY)
    )
    assert again.created == []
    assert (again.entry_id, again.agent_id, again.token) == (
        home.dev.entry_id,
        home.dev.agent_id,
        home.dev.token,
    )
    entries = client.get(f"/api/config/config_entries/entry?domain={DOMAIN}")
    assert [e["entry_id"] for e in entries] == [home.dev.entry_id]


def test_local_route_turns_on_the_kitchen_light(home: Home) -> None:
    before = home.llm_requests()
    answer = home.client.converse("turn on the kitchen light", home.dev.agent_id, "e2e-local")
    assert spoken(answer) == "Turned on the light"
    assert home.state("light.kitchen_light") == "on"
    assert home.llm_requests() == before  # Home Assistant answered, not the model

    # The model then sees the local turn as context.
    answer = home.client.converse("what did I just ask?", home.dev.agent_id, "e2e-local")
    assert spoken(answer) == (
        f"You said: what did I just ask? (I see {4 + CLOCK} messages of context)"
    )


def test_second_agent_through_the_subentry_flow_and_the_llm_route(home: Home) -> None:
    """An agent that always asks the model: it turns the light off with a tool call."""
    client = home.client
    form = client.post(
        "/api/config/config_entries/subentries/flow",
        {"handler": [home.dev.entry_id, "agent"]},
    )
    assert form["step_id"] == "user"
    created = client.post(
        f"/api/config/config_entries/subentries/flow/{form['flow_id']}",
        fill(form, name="Model only", prefer_local_intents=False, early_timeout=0),
    )
    assert created["type"] == "create_entry", created
    agents = wait_for_agents(home, 2)
    model_only = agents[1]

    home.client.post("/api/services/light/turn_on", {"entity_id": "light.kitchen_light"})
    before = home.llm_requests()
    answer = client.converse("Please turn off the Kitchen light", model_only, "e2e-llm")
    assert spoken(answer) == f"Done: Kitchen light. (I see {4 + CLOCK} messages of context)"
    assert home.state("light.kitchen_light") == "off"
    first, second = home.stand_in.calls("/chat/completions")[before:]
    assert first.body is not None
    assert assist_tool("HassTurnOff") in {t["function"]["name"] for t in first.body["tools"]}
    assert "names: Kitchen light" in first.body["messages"][0]["content"]
    assert second.body is not None
    assert second.body["messages"][-1]["role"] == "tool"

    # Two questions in a row: the second carries the first and its tool call.
    answer = client.converse("what did I just ask?", model_only, "e2e-llm")
    assert spoken(answer) == (
        f"You said: what did I just ask? (I see {6 + CLOCK} messages of context)"
    )


def test_options_flow_changes_and_keeps_the_memory_options(home: Home) -> None:
    client = home.client
    said = spoken(client.converse("before the change", home.dev.agent_id, "e2e-options"))
    seen = re.fullmatch(r"You said: before the change \(I see (\d+) messages? of context\)", said)
    assert seen is not None, said
    form = client.post("/api/config/config_entries/options/flow", {"handler": home.dev.entry_id})
    assert form["step_id"] == "init"
    assert shown(form)["conversations"]["conversation_idle_minutes"] == {
        "days": 1,
        "hours": 0,
        "minutes": 0,
        "seconds": 0,
    }
    done = client.post(
        f"/api/config/config_entries/options/flow/{form['flow_id']}",
        fill(form, conversation_idle_minutes={"hours": 2}, timeseries_keep_days=30),
    )
    assert done["type"] == "create_entry", done
    wait_for_agents(home, len(agents_of(client, home.dev.entry_id)))

    again = client.post("/api/config/config_entries/options/flow", {"handler": home.dev.entry_id})
    sections = shown(again)
    assert sections["conversations"]["conversation_idle_minutes"] == {
        "days": 0,
        "hours": 2,
        "minutes": 0,
        "seconds": 0,
    }
    assert sections["timeseries"]["timeseries_keep_days"] == 30
    client.request("DELETE", f"/api/config/config_entries/options/flow/{again['flow_id']}")
    # The reloaded entry still answers, and its window survived the reload: the question
    # and answer before it are seen too.
    answer = client.converse("hello there", home.dev.agent_id, "e2e-options")
    assert spoken(answer) == (
        f"You said: hello there (I see {int(seen.group(1)) + 2} messages of context)"
    )


def test_every_service_answers_with_response_data(home: Home) -> None:
    """One example call per service; the table covers every service hass lists."""
    client = home.client
    (listed,) = [d["services"] for d in client.get("/api/services") if d["domain"] == DOMAIN]
    assert set(listed) == {service_of(row) for row in SERVICE_EXAMPLES}, (
        "add a row to tests/e2e/examples.py SERVICE_EXAMPLES for each new service"
    )
    said = spoken(client.converse("Tell me about owls", home.dev.agent_id, "e2e-services"))
    seen = re.fullmatch(r"You said: Tell me about owls \(I see (\d+) messages of context\)", said)
    assert seen is not None, said
    context: dict[str, Any] = {
        "entry_id": home.dev.entry_id,
        "agent_id": home.dev.agent_id,
        "today": home.today,
        "seen": int(seen.group(1)),
    }
    for row, example in SERVICE_EXAMPLES.items():
        answer = client.service(DOMAIN, service_of(row), example.data(context))
        example.check(answer, context)
        context[row] = answer


def test_bad_service_input_is_refused_and_writes_nothing(home: Home) -> None:
    """As the UI calls a service (WebSocket): a translated refusal, no file, no series.

    (Over REST, Home Assistant itself answers any refused call with a bare 500.)
    """
    client = home.client
    with pytest.raises(HomeAssistantError) as refused:
        client.ws(
            {
                "type": "call_service",
                "domain": DOMAIN,
                "service": "timeseries_merge",
                "service_data": {
                    "key": "../escape",
                    "entries": [{"id": "x", "timestamp": "2025-10-25T09:30:00Z"}],
                },
                "return_response": True,
            }
        )
    assert refused.value.error["code"] == "service_validation_error"
    assert refused.value.error["translation_domain"] == DOMAIN
    assert refused.value.error["translation_key"] == "invalid_key"
    keys = [k["key"] for k in client.service(DOMAIN, "timeseries_list")["keys"]]
    assert "../escape" not in keys
    assert not list(Path(home.hass.config).rglob("*escape*"))
