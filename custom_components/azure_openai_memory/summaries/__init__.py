"""Summaries of past talk: daily, folded into weekly, monthly and eras, with decay.

One keeper for the installation, set up with the integration; the entry whose options
turn summaries on writes them with its first agent's deployment.
"""

from datetime import time
from typing import Any

from homeassistant.const import EVENT_HOMEASSISTANT_STARTED, EVENT_HOMEASSISTANT_STOP
from homeassistant.core import CoreState, Event, HomeAssistant, callback
from homeassistant.helpers import entity_registry as er
from homeassistant.util import dt as dt_util

from ..azure.client import context_limit, request_options
from ..azure.summarize import Summarizer
from ..const import (
    CONF_SUMMARIES,
    CONF_SUMMARY_GROUP_MODE,
    CONF_SUMMARY_TIME,
    DOMAIN,
    RECOMMENDED_OPTIONS,
    RECOMMENDED_SUMMARY_GROUP_MODE,
    SUBENTRY_AGENT,
)
from ..data import DATA_SUMMARIES, AzureOpenAIMemoryConfigEntry
from ..history.recorder import HistoryRecorder
from .keeper import SummaryKeeper, SummaryWriter, group_of
from .services import async_register_summary_services
from .store import SummaryStore
from .websocket import async_register_summary_commands


async def async_setup_summaries(hass: HomeAssistant, history: HistoryRecorder) -> None:
    """Load the summaries, register their services; the daily run stops with Home Assistant."""
    store = SummaryStore(hass, f"{DOMAIN}.summaries")
    await store.async_load()
    keeper = hass.data[DATA_SUMMARIES] = SummaryKeeper(hass, store, history)
    async_register_summary_services(hass, keeper)
    async_register_summary_commands(hass, keeper)

    # The people are known once Home Assistant has started (and at every run after).
    @callback
    def _async_adopt(_event: Event | None = None) -> None:
        keeper.async_adopt_person_groups()

    if hass.state is CoreState.running:
        _async_adopt()
    else:
        hass.bus.async_listen_once(EVENT_HOMEASSISTANT_STARTED, _async_adopt)

    @callback
    def _async_stop(_event: Event) -> None:
        keeper.async_stop()

    hass.bus.async_listen_once(EVENT_HOMEASSISTANT_STOP, _async_stop)


@callback
def async_attach_writer(hass: HomeAssistant, entry: AzureOpenAIMemoryConfigEntry) -> None:
    """An entry whose options turn summaries on writes them with its first agent."""
    options = {**RECOMMENDED_OPTIONS, **entry.options}
    keeper = hass.data.get(DATA_SUMMARIES)
    if keeper is None or not options[CONF_SUMMARIES]:
        return
    agent = next(
        (sub for sub in entry.subentries.values() if sub.subentry_type == SUBENTRY_AGENT), None
    )
    summarizer = None
    agent_id = ""
    if agent is not None:
        runtime = entry.runtime_data
        windows = runtime.windows.get(agent.subentry_id)
        summarizer = Summarizer(
            runtime.client,
            request_options(runtime.settings, agent.data),
            windows.counter if windows is not None else None,
            context_limit(agent.data),
        )
        agent_id = (
            er.async_get(hass).async_get_entity_id("conversation", DOMAIN, agent.subentry_id)
            or agent.title
        )
    keeper.async_add_writer(
        SummaryWriter(
            entry.entry_id,
            agent_id,
            summarizer,
            options[CONF_SUMMARY_GROUP_MODE],
            dt_util.parse_time(options[CONF_SUMMARY_TIME]) or time(3, 30),
        )
    )
    entry.async_on_unload(lambda: keeper.async_remove_writer(entry.entry_id))


@callback
def speaker_groups(hass: HomeAssistant, user_input: Any, person_id: str | None) -> tuple[str, ...]:
    """The groups whose past a conversation turn carries (talk_groups of its request)."""
    context = getattr(user_input, "context", None)
    return talk_groups(
        hass,
        user_input.device_id,
        getattr(user_input, "satellite_id", None),
        context.user_id if context is not None else None,
        person_id,
    )


@callback
def talk_groups(
    hass: HomeAssistant,
    device_id: str | None,
    satellite_id: str | None,
    user_id: str | None,
    person_id: str | None,
) -> tuple[str, ...]:
    """The groups whose past a request may carry: the speaker's own (their person's, when
    known), then the place's talk of nobody known (the device's, or the home's). Never
    another person's: a person's talk is summarised in their own group only.

    The one reading of "whose talk" for turns, the past_talk tool and the household API.
    """
    keeper = hass.data.get(DATA_SUMMARIES)
    mode = keeper.group_mode if keeper is not None else RECOMMENDED_SUMMARY_GROUP_MODE
    own = group_of(mode, device_id, satellite_id, user_id, person_id)
    if person_id is None:
        return (own,)
    place = group_of(mode, device_id, satellite_id, None, None)
    return (own,) if place == own else (own, place)
