"""How much of each request Azure can read from its prompt cache: ours against core's OpenAI agent.

Twenty consecutive turns of one conversation, three seconds apart on a frozen clock, in a
home with 100 entities exposed to Assist, go to our agent (Assist and the memory tools)
and to Home Assistant's own openai_conversation agent (its recommended options, Assist),
both answered by the stand-in. Core's agent speaks the Responses API through the openai
SDK, which takes its base URL from OPENAI_BASE_URL (its config flow has no such field):
that points at the stand-in's v1 base. For each agent:
  beginning - per request, the share of its instructions and messages (tokens, as the
              stand-in reads them) that repeats the previous request's beginning; median;
  tools     - whether every request carried the very same tools, in the same order;
  cached    - the stand-in's cached tokens over all prompt tokens of the 20 requests
              (what the "Cached input share" sensor shows), and the median per request.
Targets, for ours: beginning >= 90 %, identical tools, cached >= 80 %.

Run by scripts/bench (pytest -s); not collected by the test suite.
"""

from datetime import timedelta
from itertools import pairwise
import statistics
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components import conversation
from homeassistant.components.homeassistant.exposed_entities import async_should_expose
from homeassistant.const import __version__ as HA_VERSION
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import area_registry as ar, entity_registry as er, intent
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from benchmarks.bench_assist_pipeline import add_core_agent
from tests.azure_stub import AzureStub
from tests.azure_stub.caching import prompt_tokens
from tests.azure_stub.server import RecordedRequest
from tests.conftest import LLM_ONLY, agent_entity_id

TURNS = 20
SECONDS_APART = 3
ROOMS = (
    "Kitchen",
    "Living Room",
    "Dining Room",
    "Bedroom",
    "Guest Room",
    "Office",
    "Hallway",
    "Bathroom",
    "Garage",
    "Garden",
)
# Ten a room: lights, sockets, a blind, a fan, and the sensors Assist exposes by default.
DEVICES: tuple[tuple[str, str, str, dict[str, Any]], ...] = (
    ("light", "ceiling", "on", {}),
    ("light", "lamp", "off", {}),
    ("light", "spots", "off", {}),
    ("light", "strip", "on", {}),
    ("switch", "socket", "off", {}),
    ("switch", "heater", "off", {}),
    ("cover", "blind", "open", {}),
    ("fan", "fan", "off", {}),
    ("sensor", "temperature", "21.5", {"device_class": "temperature", "unit_of_measurement": "°C"}),
    ("sensor", "humidity", "48", {"device_class": "humidity", "unit_of_measurement": "%"}),
)
QUESTIONS = (
    "Which lights are on in the kitchen?",
    "Is it warm enough in the office?",
    "What is the humidity in the bathroom?",
    "Are the blinds in the bedroom open?",
    "Is the garage heater on?",
    "How many lamps are on downstairs?",
    "Is the fan in the guest room running?",
    "What was the last thing I asked you?",
    "Should I open a window in the living room?",
    "Is anything on in the garden?",
    "How warm is the dining room?",
    "Which sockets are on?",
    "Is the hallway strip light on?",
    "What is the warmest room?",
    "Which room is the most humid?",
    "Are all the blinds open?",
    "Is the bedroom lamp off?",
    "What did I ask about the garage?",
    "Is it a good time to air the kitchen?",
    "Thanks, that is all for now.",
)


def add_home(hass: HomeAssistant) -> int:
    """A home of 100 entities, each in its room; returns how many Assist sees."""
    areas, entities = ar.async_get(hass), er.async_get(hass)
    for room in ROOMS:
        area = areas.async_get_or_create(room)
        slug = room.lower().replace(" ", "_")
        for domain, name, state, attributes in DEVICES:
            entry = entities.async_get_or_create(domain, "bench", f"{slug}_{name}")
            entities.async_update_entity(entry.entity_id, area_id=area.id)
            hass.states.async_set(
                entry.entity_id, state, {"friendly_name": f"{room} {name}", **attributes}
            )
    return sum(
        async_should_expose(hass, conversation.DOMAIN, state.entity_id)
        for state in hass.states.async_all()
    )


def without_tools(body: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in body.items() if key != "tools"}


def shared_beginning(before: list[str], now: list[str]) -> int:
    shared = 0
    for mine, theirs in zip(before, now, strict=False):
        if mine != theirs:
            break
        shared += 1
    return shared


def figures(requests: list[RecordedRequest]) -> dict[str, Any]:
    """The three figures of one agent's requests."""
    bodies = [request.body or {} for request in requests]
    read = [prompt_tokens(without_tools(body)) for body in bodies]
    beginning = [shared_beginning(before, now) / len(now) for before, now in pairwise(read)]
    usage = [request.usage or (0, 0, 0) for request in requests]
    return {
        "requests": len(requests),
        "beginning": statistics.median(beginning),
        "tools_identical": all(body.get("tools") == bodies[0].get("tools") for body in bodies),
        "tools": len(bodies[0].get("tools") or ()),
        "prompt_tokens": statistics.median(prompt for prompt, _, _ in usage),
        "cached_total": sum(cached for _, _, cached in usage) / sum(p for p, _, _ in usage),
        "cached_median": statistics.median(cached / prompt for prompt, _, cached in usage[1:]),
    }


async def converse(hass: HomeAssistant, agent_id: str, text: str, conversation_id: str) -> None:
    result = await conversation.async_converse(
        hass, text, conversation_id, Context(), language="en", agent_id=agent_id
    )
    assert result.response.response_type is not intent.IntentResponseType.ERROR, (
        result.response.speech
    )


@pytest.mark.timeout(600)
@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_prompt_cache_over_twenty_turns(
    hass: HomeAssistant,
    loaded_entry: MockConfigEntry,
    azure: AzureStub,
    freezer: FrozenDateTimeFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Ours and core's, the same 20 questions, the same home, the same stand-in."""
    hass.loop.set_debug(False)  # the test harness turns asyncio debug on; HA runs without
    freezer.move_to("2026-11-26 13:05:00+00:00")
    exposed = add_home(hass)
    assert exposed == 100
    azure.prompt_caching = True
    agents = {
        "ours": agent_entity_id(hass, loaded_entry),
        "core openai_conversation": await add_core_agent(hass, azure, monkeypatch),
    }
    results: dict[str, dict[str, Any]] = {}
    for name, agent_id in agents.items():
        seen = len(azure.requests)
        azure.prompt_caches.clear()  # each agent starts cold, as on a resource of its own
        for question in QUESTIONS:
            await converse(hass, agent_id, question, f"bench-{name}")
            freezer.tick(timedelta(seconds=SECONDS_APART))
        requests = [r for r in azure.requests[seen:] if r.method == "POST"]
        assert len(requests) == TURNS, [r.path for r in requests]
        results[name] = figures(requests)

    lines = [
        f"prompt cache, Home Assistant {HA_VERSION}: {TURNS} turns {SECONDS_APART} s apart, "
        f"{exposed} exposed entities"
    ]
    for name, got in results.items():
        lines.append(
            f"{name:<25} beginning repeated (median) {100 * got['beginning']:5.1f} %   "
            f"tools identical {'yes' if got['tools_identical'] else 'NO'} ({got['tools']})   "
            f"cached {100 * got['cached_total']:5.1f} % of all input "
            f"(median {100 * got['cached_median']:5.1f} % per request after the first)   "
            f"prompt {got['prompt_tokens']:.0f} tokens (median)"
        )
    mine = results["ours"]
    verdicts = {
        "beginning >= 90 %": mine["beginning"] >= 0.9,
        "tools identical": mine["tools_identical"],
        "cached >= 80 %": mine["cached_total"] >= 0.8,
    }
    lines.append(
        "ours against the targets: "
        + ", ".join(f"{target} {'OK' if ok else 'MISSED'}" for target, ok in verdicts.items())
    )
    with capsys.disabled():  # the figures, without Home Assistant's log
        print("\n" + "\n".join(lines))
    assert all(verdicts.values()), verdicts
