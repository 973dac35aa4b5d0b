"""The tools a conversation turn is offered: its agent's LLM APIs, and the memory tools.

With the entry's memory context on, remember, recall, forget and past_talk join whatever
Home Assistant's APIs offer, all acting for the turn's speaker; an incognito turn's
remember refuses.
"""

from collections.abc import Mapping
from typing import Any

from homeassistant.components import conversation
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant

from ..compat import async_provide_llm_data
from ..const import CONF_MEMORY_CONTEXT, CONF_PROMPT, DOMAIN, RECOMMENDED_MEMORY_CONTEXT
from ..history.recorder import TurnRecording
from ..lib.tokens import TokenCounter
from ..memories.tools import MemoryTurn, async_add_memory_tools
from ..people.household import agent_llm_apis
from ..people.incognito import async_refuse_remember
from ..people.speakers import Speaker
from ..summaries import speaker_groups
from ..summaries.tools import async_add_past_talk
from .context import memories_budget


async def async_offer_tools(
    hass: HomeAssistant,
    user_input: conversation.ConversationInput,
    chat_log: conversation.ChatLog,
    agent_options: Mapping[str, Any],
    entry_options: Mapping[str, Any],
    counter: TokenCounter,
    speaker: Speaker,
    recording: TurnRecording,
    incognito: bool,
) -> None:
    """The prompt and the tools of the turn's chat log; ConverseError when an API fails."""
    await async_provide_llm_data(
        chat_log,
        user_input,
        DOMAIN,
        agent_llm_apis(agent_options.get(CONF_LLM_HASS_API)),
        agent_options.get(CONF_PROMPT),
    )
    if not entry_options.get(CONF_MEMORY_CONTEXT, RECOMMENDED_MEMORY_CONTEXT):
        return
    async_add_memory_tools(
        hass,
        chat_log,
        user_input,
        counter,
        memories_budget(entry_options),
        MemoryTurn(speaker, chat_log.conversation_id, recording.question_event_id),
    )
    async_add_past_talk(
        hass,
        chat_log,
        user_input,
        speaker_groups(hass, user_input, speaker.person_id)[0],
        speaker,
        counter,
        memories_budget(entry_options),
    )
    if incognito:
        async_refuse_remember(chat_log)
