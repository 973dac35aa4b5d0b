"""The conversation agent: local intents first, then Azure OpenAI with the conversation window.

The turn's steps live in agent/: routing (agent/routing.py), the tools it is offered
(agent/tools.py), the request and its tool rounds, the early answer and the late one
(agent/runner.py), and what it says (agent/speech.py). An answer that asks the user
something keeps a voice satellite listening; the early "still working on it" never does.
"""

import time
from typing import Literal

from homeassistant.components import conversation
from homeassistant.components.conversation.models import AbstractConversationAgent
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_LLM_HASS_API, MATCH_ALL
from homeassistant.core import HomeAssistant

from .agent.rounds import RequestFailed
from .agent.routing import async_route
from .agent.runner import TurnRunner
from .agent.speech import async_answered, async_spoken
from .agent.stats import ROUTE_LLM, ms_since
from .agent.tools import async_offer_tools
from .agent.turn import llm_turn, recording_of, user_of
from .compat import AddConfigEntryEntitiesCallback
from .const import SUBENTRY_AGENT
from .data import AzureOpenAIMemoryConfigEntry
from .entity import AzureOpenAIMemoryBaseLLMEntity
from .lib.windows.window import ConversationMemoryManager
from .people.household import agent_llm_apis
from .people.incognito import incognito_lasts, is_incognito

# Turns of different speakers run side by side; one speaker's are ordered by a lock.
PARALLEL_UPDATES = 0


async def async_setup_entry(
    hass: HomeAssistant,
    entry: AzureOpenAIMemoryConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """One conversation entity per agent subentry."""
    for subentry in entry.subentries.values():
        if subentry.subentry_type == SUBENTRY_AGENT:
            async_add_entities(
                [AzureOpenAIMemoryAgent(entry, subentry)],
                config_subentry_id=subentry.subentry_id,
            )


class AzureOpenAIMemoryAgent(
    conversation.ConversationEntity, AbstractConversationAgent, AzureOpenAIMemoryBaseLLMEntity
):
    """An Assist agent backed by one Azure OpenAI deployment, with memory."""

    _attr_supports_streaming = True
    # Options change only through a reload, which makes a new entity: built once, when added.
    _turns: TurnRunner

    def __init__(self, entry: AzureOpenAIMemoryConfigEntry, subentry: ConfigSubentry) -> None:
        """One agent per subentry."""
        super().__init__(entry, subentry)
        if agent_llm_apis(subentry.data.get(CONF_LLM_HASS_API)):
            self._attr_supported_features = conversation.ConversationEntityFeature.CONTROL

    @property
    def supported_languages(self) -> list[str] | Literal["*"]:
        """Any language the model speaks."""
        return MATCH_ALL

    @property
    def windows(self) -> ConversationMemoryManager:
        """This agent's conversation windows."""
        return self.runtime.windows[self.subentry.subentry_id]

    async def async_added_to_hass(self) -> None:
        """Build the turn runner (client, request builder, window writer) once."""
        await super().async_added_to_hass()
        self._turns = TurnRunner(self, self.windows)

    async def _async_handle_message(
        self,
        user_input: conversation.ConversationInput,
        chat_log: conversation.ChatLog,
    ) -> conversation.ConversationResult:
        """Answer one turn: locally when Home Assistant understands it, else with the LLM."""
        started = time.perf_counter()
        agent_options, hass, turns = self.subentry.data, self.hass, self._turns
        speaker = await self.async_speaker(user_of(user_input), user_input.device_id)
        # Incognito: answered as always, but nothing of the turn is recorded or kept.
        incognito = is_incognito(self.runtime, self.subentry.subentry_id)
        recording = recording_of(
            hass,
            self.entry.options,
            self.entity_id,
            user_input,
            chat_log.conversation_id,
            speaker.person_id,
            incognito,
        )
        route = await async_route(hass, user_input, chat_log, agent_options)
        if route.local is not None:
            return turns.answered_locally(
                user_input,
                chat_log,
                route.local,
                route.reason,
                recording,
                speaker.person_id,
                started,
            )
        recording.decided(ROUTE_LLM, route.reason)
        try:
            await async_offer_tools(
                hass,
                user_input,
                chat_log,
                agent_options,
                self.entry.options,
                self.windows.counter,
                speaker,
                recording,
                incognito,
            )
        except conversation.ConverseError as err:
            recording.failed("llm_api")
            return err.as_conversation_result()
        lasts = incognito_lasts(self.runtime, self.subentry.subentry_id)
        turn = llm_turn(hass, user_input, chat_log, recording, speaker, incognito, lasts)
        task = turns.start(turn, user_input.agent_id)
        if await turns.async_promised(task, turn, user_input.language, started):
            key = "still_working_incognito" if turn.incognito else "still_working"
            return await async_spoken(hass, user_input, chat_log, key, error=False)
        try:
            await task
        except RequestFailed as err:
            return await async_spoken(hass, user_input, chat_log, f"api_{err.kind.value}")
        self.runtime.stats.record_turn(ROUTE_LLM, ms_since(started))
        return await async_answered(hass, user_input, chat_log, turn.answer)
