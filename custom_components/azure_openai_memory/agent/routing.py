"""Which answers a turn: Home Assistant's own intents, or the LLM.

An Assist pipeline has its own "prefer handling commands locally": it has tried already
(leaving to an agent that controls the home what it should answer), or was told not to.
Only elsewhere is it ours to try.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent

from ..compat import async_handle_intents, in_assist_pipeline
from ..const import CONF_PREFER_LOCAL_INTENTS, RECOMMENDED_PREFER_LOCAL_INTENTS


@dataclass(frozen=True, slots=True)
class Route:
    """Home Assistant's own answer (None: the LLM answers), and why."""

    local: intent.IntentResponse | None
    reason: str


async def async_route(
    hass: HomeAssistant,
    user_input: conversation.ConversationInput,
    chat_log: conversation.ChatLog,
    agent_options: Mapping[str, Any],
) -> Route:
    """Home Assistant's answer when it is ours to try and it understands; else the LLM."""
    if not agent_options.get(CONF_PREFER_LOCAL_INTENTS, RECOMMENDED_PREFER_LOCAL_INTENTS):
        return Route(None, "local intents are off for this agent")
    if in_assist_pipeline(chat_log):
        return Route(None, "the Assist pipeline handles local intents itself")
    response = await async_handle_intents(hass, user_input, chat_log)
    if response is None:
        return Route(None, "no local intent matched")
    return Route(response, "a local intent matched")
