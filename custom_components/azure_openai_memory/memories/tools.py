"""The agent's remember and recall tools, offered whether or not it may control the home.

They go through the same code as memory_save and memory_search. An agent without Home
Assistant's LLM API gets an API instance of its own holding just these two tools; one
with it gets them beside Home Assistant's (on 2025.4 and 2026.x alike).

Both act for the turn's speaker: recall finds the household's memories and the speaker's
own, never another person's; remember saves to the household or, for a known person, to
their private scope. The tools' descriptions are the same for everyone (they are part of
the prompt Azure caches); the speaker's name reaches the model with the turn's data.
"""

from dataclasses import dataclass
from typing import Any

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import llm
from homeassistant.util.json import JsonObjectType
import voluptuous as vol

from ..compat import llm_context_of
from ..const import DOMAIN, MEMORY_CONTEXT_LIMIT, TOOL_RECALL, TOOL_REMEMBER
from ..context import memories_block
from ..data import DATA_MEMORIES
from ..memory.facts import (
    HOUSEHOLD_SCOPE,
    Authority,
    FactError,
    MemoryConfidence,
    MemorySource,
    MemoryType,
    Origin,
    Provenance,
    parse_authority,
)
from ..memory.tokens import TokenCounter
from ..people import Speaker
from ..services import translated
from .answers import async_save, async_search
from .scopes import PRIVATE

_TYPES = [kind.value for kind in MemoryType]
# What the remember tool tells the model of the memory it saved.
_TOLD_FIELDS = ("id", "content", "type", "tags", "confidence", "occurrences", "pinned")
_SCOPES = [PRIVATE, HOUSEHOLD_SCOPE]


@dataclass(frozen=True, slots=True)
class MemoryTurn:
    """The turn the tools act in: who speaks, the conversation, and the history event of
    the user's words (where a remembered fact was said)."""

    speaker: Speaker
    conversation_id: str | None = None
    history_event_id: str | None = None


class MemoriesAPI(llm.API):
    """Holds the memory tools for an agent that has no Home Assistant LLM API."""

    async def async_get_api_instance(self, llm_context: llm.LLMContext) -> llm.APIInstance:
        """Not offered for selection: instances are made per turn by async_add_memory_tools."""
        return llm.APIInstance(self, "", llm_context, [])


class RememberTool(llm.Tool):
    """Save a fact, deduplicated like memory_save, with source conversation."""

    name = TOOL_REMEMBER
    description = (
        "Save a lasting fact about this household when the user asks you to remember "
        "something or states a lasting preference, routine or fact. Tag it with "
        "prefix:value tags naming who and what it is about (person:anna, room:guest_room, "
        "topic:coffee); a newer fact about the same thing replaces the older. The answer "
        "says what happened (action: created, reinforced, superseded or updated): when "
        "`replaced` is set, tell the user which older fact it replaced; when `evicted` is "
        "not empty, tell the user which facts were archived to make room. "
        "Scope private keeps a fact for the person speaking alone (their health, "
        'appointments, own preferences: "I take 2.5 mg of melatonin", "my dentist is on '
        'Friday"); scope household is for facts everyone in the home may hear ("the bins '
        'go out on Tuesday"). When unsure whether others may hear it, choose private. A '
        "tag never makes a fact private."
    )
    parameters = vol.Schema(
        {
            vol.Required("content", description="The fact, in one sentence"): str,
            vol.Required("type", description="What kind of fact it is"): vol.In(_TYPES),
            vol.Required(
                "scope",
                description="private: only the person speaking; household: everyone",
            ): vol.In(_SCOPES),
            vol.Optional(
                "authority",
                description="stated (the user said it, the default) or inferred (you concluded it)",
            ): vol.In([one.value for one in Authority]),
            vol.Optional("tags", description="prefix:value tags"): [str],
            vol.Optional("confidence"): vol.In([level.value for level in MemoryConfidence]),
            vol.Optional(
                "pinned",
                description="true when the user wants this fact kept for good: it is "
                "never archived to make room and is offered first",
            ): bool,
        }
    )

    def __init__(self, turn: MemoryTurn) -> None:
        """The turn it saves for."""
        self._turn = turn

    async def async_call(
        self, hass: HomeAssistant, tool_input: llm.ToolInput, llm_context: llm.LLMContext
    ) -> JsonObjectType:
        """Save it; a refused fact comes back to the model as a translated error.

        A private fact with nobody known is refused (nothing saved): the model can say so,
        and save it for the household if the user wants that.
        """
        args: dict[str, Any] = dict(tool_input.tool_args)
        turn = self._turn
        speaker = turn.speaker
        # Home Assistant hands a tool its arguments unchecked: the scope is checked here.
        choice = args.pop("scope", None)
        if choice not in _SCOPES:
            raise HomeAssistantError(
                translation_domain=DOMAIN, translation_key="memory_scope_missing"
            )
        scope = HOUSEHOLD_SCOPE
        if choice == PRIVATE:
            if speaker.scope is None:
                raise HomeAssistantError(
                    translation_domain=DOMAIN, translation_key="memory_private_nobody"
                )
            scope = speaker.scope
        try:
            authority = parse_authority(args.pop("authority", Authority.STATED.value))
        except FactError as err:
            raise translated(err) from err
        provenance = Provenance(
            Origin.CONVERSATION,
            turn.conversation_id,
            turn.history_event_id,
            speaker.person_id,
            speaker.channel,
            authority,
        )
        result = await async_save(
            hass.data[DATA_MEMORIES],
            args,
            source=MemorySource.CONVERSATION.value,
            scope=scope,
            provenance=provenance,
            visible=speaker.turn_scopes,
        )
        memory = result["memory"]
        return {
            "action": result["action"],
            "scope": PRIVATE if scope != HOUSEHOLD_SCOPE else HOUSEHOLD_SCOPE,
            # The saved memory's id, also at the top as this tool always answered it.
            "id": memory["id"],
            "memory": {name: memory[name] for name in _TOLD_FIELDS},
            "replaced": result["replaced"],
            "evicted": [{"id": one["id"], "content": one["content"]} for one in result["evicted"]],
        }


class RecallTool(llm.Tool):
    """Search like memory_search; the facts come back as a delimited, bounded data block."""

    name = TOOL_RECALL
    description = (
        "Look up facts remembered about this household: people, rooms, preferences, "
        "routines and anything the user asked you to remember (the household's facts and "
        "the person speaking's own)."
    )
    parameters = vol.Schema(
        {
            vol.Required("query", description="What to look for, as a question or words"): str,
            vol.Optional("type"): vol.In(_TYPES),
        }
    )

    def __init__(self, counter: TokenCounter, budget: int, turn: MemoryTurn) -> None:
        """The agent's token counter, its memory token budget, and the turn."""
        self._counter = counter
        self._budget = budget
        self._scopes = turn.speaker.turn_scopes

    async def async_call(
        self, hass: HomeAssistant, tool_input: llm.ToolInput, llm_context: llm.LLMContext
    ) -> JsonObjectType:
        """Search, and hand back the best memories that fit the budget."""
        args = tool_input.tool_args
        found = await async_search(
            hass.data[DATA_MEMORIES],
            {"query": args.get("query"), "type": args.get("type"), "limit": MEMORY_CONTEXT_LIMIT},
            self._scopes,
        )
        block = await hass.async_add_executor_job(
            memories_block, found.memories, self._counter, self._budget
        )
        # The ids let an erasure find this call in the history (the block is escaped).
        return {
            "ranker": found.ranker,
            "found": len(found.memories),
            "ids": [memory.id for memory, _score in found.memories],
            "memories": block or "",
        }


@callback
def async_add_memory_tools(
    hass: HomeAssistant,
    chat_log: conversation.ChatLog,
    user_input: conversation.ConversationInput,
    counter: TokenCounter,
    budget: int,
    turn: MemoryTurn,
) -> None:
    """Offer remember and recall on this turn, beside any tools the agent already has."""
    tools: list[llm.Tool] = [RememberTool(turn), RecallTool(counter, budget, turn)]
    if chat_log.llm_api is None:
        api = MemoriesAPI(hass=hass, id=f"{DOMAIN}_memories", name="Azure OpenAI Memory")
        chat_log.llm_api = llm.APIInstance(api, "", llm_context_of(user_input, DOMAIN), tools)
        return
    known = {tool.name for tool in chat_log.llm_api.tools}
    chat_log.llm_api.tools = [
        *chat_log.llm_api.tools,
        *(tool for tool in tools if tool.name not in known),
    ]
