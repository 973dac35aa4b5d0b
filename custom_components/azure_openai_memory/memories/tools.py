"""The agent's remember, recall and forget tools, offered whether or not it may control
the home.

They go through the same code as memory_save, memory_search and memory_forget. An agent
without Home Assistant's LLM API gets an API instance of its own holding just these
tools; one with it gets them beside Home Assistant's (on 2025.4 and 2026.x alike).

All act for the turn's speaker: recall finds the household's memories and the speaker's
own, never another person's (or, asked for the speaker's own, only theirs); remember
saves to the household or, for a known person, to their private scope; forget archives
the speaker's own memories, and the household's only for an administrator. The tools'
descriptions are the same for everyone (they are part of the prompt Azure caches); the
speaker's name reaches the model with the turn's data.
"""

from dataclasses import dataclass
from typing import Any

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import llm
from homeassistant.util.json import JsonObjectType
import voluptuous as vol

from ..agent.context import memories_shown
from ..agent.context.memories import memories_data
from ..compat import IntegrationTool, llm_context_of
from ..const import DOMAIN, MEMORY_CONTEXT_LIMIT, TOOL_FORGET, TOOL_RECALL, TOOL_REMEMBER
from ..data import DATA_MEMORIES
from ..lib.memories import (
    HOUSEHOLD_SCOPE,
    MAX_SEARCH_LIMIT,
    Authority,
    Memory,
    MemoryConfidence,
    MemoryInputError,
    MemorySource,
    MemoryType,
    Origin,
    Provenance,
    parse_authority,
)
from ..lib.tokens import TokenCounter
from ..people.access import PRIVATE, access
from ..people.refusals import translated
from ..people.speakers import Speaker
from .answers import async_save, async_search

_TYPES = [kind.value for kind in MemoryType]
# What the remember tool tells the model of the memory it saved.
_TOLD_FIELDS = ("id", "content", "type", "tags", "confidence", "occurrences", "pinned")
_SCOPES = [PRIVATE, HOUSEHOLD_SCOPE]
# Why a memory an agent was asked to forget is in the archive (the panel shows it).
FORGOTTEN_BY_VOICE = "Forgotten by voice"
# What one request to forget takes at most: the best matches, the others are named.
FORGET_MOST = 3
# A memory matches a request to forget when it shares its words (by the relevance
# threshold) or means nearly the same: a closer meaning than a question's answer needs.
FORGET_SIMILARITY = 0.5
# ... and scores at least this share of the best match: a weaker one is about else.
FORGET_SHARE = 0.6
_NOTHING_FORGOTTEN = (
    "Nothing remembered matches this, so nothing was forgotten. Tell the user so; they "
    "can name it in other words."
)


def _said_scope(memory: Memory) -> str:
    return HOUSEHOLD_SCOPE if memory.scope == HOUSEHOLD_SCOPE else PRIVATE


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


class RememberTool(IntegrationTool):
    """Save a fact, deduplicated like memory_save, with source conversation."""

    integration = DOMAIN

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

    async def async_answer(
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
        except MemoryInputError as err:
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
            visible=access(speaker).turn_scopes(),
            push_out=access(speaker).pushes_out(scope),
        )
        memory = result["memory"]
        replaced = [result["replaced"]] if result["replaced"] is not None else []
        evicted = [{"id": one["id"], "content": one["content"]} for one in result["evicted"]]
        # Stored words reach the model only as data: each part a delimited, escaped block.
        return {
            "action": result["action"],
            "scope": PRIVATE if scope != HOUSEHOLD_SCOPE else HOUSEHOLD_SCOPE,
            # The saved memory's id, also at the top as this tool always answered it.
            "id": memory["id"],
            # Every memory the answer names: an erasure finds this call in the history.
            "ids": [memory["id"], *(one["id"] for one in (*replaced, *evicted))],
            "memory": memories_data([{name: memory[name] for name in _TOLD_FIELDS}]),
            "replaced": memories_data(replaced) or None,
            "evicted": memories_data(evicted),
        }


class RecallTool(IntegrationTool):
    """Search like memory_search; the facts come back as a delimited, bounded data block."""

    integration = DOMAIN

    name = TOOL_RECALL
    description = (
        "Look up facts remembered about this household: people, rooms, preferences, "
        "routines and anything the user asked you to remember (the household's facts and "
        "the person speaking's own). For 'what do you remember about me?' set mine to "
        "true: only the person speaking's own private facts, all of them (the most certain "
        "first, as many as fit) when no query is given."
    )
    parameters = vol.Schema(
        {
            vol.Optional(
                "query",
                description="What to look for, as a question or words; leave out to list",
            ): str,
            vol.Optional("type"): vol.In(_TYPES),
            vol.Optional(
                "mine",
                description="true: only the person speaking's own private facts",
            ): bool,
        }
    )

    def __init__(self, counter: TokenCounter, budget: int, turn: MemoryTurn) -> None:
        """The agent's token counter, its memory token budget, and the turn."""
        self._counter = counter
        self._budget = budget
        self._speaker = turn.speaker

    async def async_answer(
        self, hass: HomeAssistant, tool_input: llm.ToolInput, llm_context: llm.LLMContext
    ) -> JsonObjectType:
        """Search (or list, without a query), and hand back the best memories that fit
        the budget; the speaker's own only are refused when nobody is known."""
        args = tool_input.tool_args
        scopes = access(self._speaker).turn_scopes()
        if args.get("mine"):
            if self._speaker.scope is None:
                raise HomeAssistantError(
                    translation_domain=DOMAIN, translation_key="memory_mine_nobody"
                )
            scopes = frozenset({self._speaker.scope})
        query = str(args.get("query") or "").strip()
        # A list is bounded by the budget: as many as fit, counted past that.
        limit = MEMORY_CONTEXT_LIMIT if query else MAX_SEARCH_LIMIT
        found = await async_search(
            hass.data[DATA_MEMORIES],
            {"query": query, "type": args.get("type"), "limit": limit},
            scopes,
        )
        block, shown = await hass.async_add_executor_job(
            memories_shown, found.memories, self._counter, self._budget
        )
        # The ids let an erasure find this call in the history (the block is escaped).
        return {
            "ranker": found.ranker,
            "found": len(found.memories),
            "shown": shown,
            "ids": [memory.id for memory, _score in found.memories[:shown]],
            "memories": block or "",
        }


class ForgetTool(IntegrationTool):
    """Archive what the speaker asks to be forgotten, found as recall finds it."""

    integration = DOMAIN

    name = TOOL_FORGET
    description = (
        "Forget facts when the user asks you to ('forget what I told you about the "
        "dentist'). The best matching facts of the person speaking's own (and the "
        "household's, when they are an administrator) go to the archive, at most 3 at a "
        "time. The answer lists what was forgotten: tell the user exactly which facts; "
        "when `also_matching` is not empty, ask whether those should go too (forget them "
        "by their words). When nothing was forgotten, say so."
    )
    parameters = vol.Schema(
        {
            vol.Required(
                "about",
                description="What to forget, in a few words: the dentist, my melatonin dose",
            ): str,
            vol.Optional("type"): vol.In(_TYPES),
        }
    )

    def __init__(self, turn: MemoryTurn) -> None:
        """The turn it forgets for."""
        self._speaker = turn.speaker

    async def async_answer(
        self, hass: HomeAssistant, tool_input: llm.ToolInput, llm_context: llm.LLMContext
    ) -> JsonObjectType:
        """Archive the best matches of the speaker's scopes; refused (nothing archived) for
        a speaker who is nobody known and no administrator."""
        scopes = access(self._speaker).spoken_forget_scopes()
        if not scopes:
            raise HomeAssistantError(
                translation_domain=DOMAIN, translation_key="memory_forget_nobody"
            )
        memories = hass.data[DATA_MEMORIES]
        about = str(tool_input.tool_args.get("about") or "").strip()
        matches: list[Memory] = []
        if about:
            found = await async_search(
                memories,
                {"query": about, "type": tool_input.tool_args.get("type")},
                scopes,
                min_similarity=FORGET_SIMILARITY,
            )
            best = max((score for _memory, score in found.memories), default=0.0)
            ranked = sorted(found.memories, key=lambda pair: pair[1], reverse=True)
            matches = [memory for memory, score in ranked if score >= FORGET_SHARE * best]
        forgotten: list[dict[str, str]] = []
        for memory in matches[:FORGET_MOST]:
            try:
                memories.forget(memory.id, scopes=scopes, reason=FORGOTTEN_BY_VOICE)
            except MemoryInputError:
                continue  # gone meanwhile (forgotten or replaced by another call)
            forgotten.append(
                {"id": memory.id, "content": memory.content, "scope": _said_scope(memory)}
            )
        also = [{"id": memory.id, "content": memory.content} for memory in matches[FORGET_MOST:]]
        # Stored words reach the model only as data: each part a delimited, escaped block.
        answer: JsonObjectType = {
            "forgotten": memories_data(forgotten),
            "also_matching": memories_data(also),
            # Every memory the answer names: an erasure finds this call in the history.
            "ids": [one["id"] for one in (*forgotten, *also)],
        }
        if not forgotten:
            answer["note"] = _NOTHING_FORGOTTEN
        return answer


@callback
def async_add_memory_tools(
    hass: HomeAssistant,
    chat_log: conversation.ChatLog,
    user_input: conversation.ConversationInput,
    counter: TokenCounter,
    budget: int,
    turn: MemoryTurn,
) -> None:
    """Offer remember, recall and forget on this turn, beside any tools the agent has."""
    tools: list[llm.Tool] = [
        RememberTool(turn),
        RecallTool(counter, budget, turn),
        ForgetTool(turn),
    ]
    if chat_log.llm_api is None:
        api = MemoriesAPI(hass=hass, id=f"{DOMAIN}_memories", name="Azure OpenAI Memory")
        chat_log.llm_api = llm.APIInstance(api, "", llm_context_of(user_input, DOMAIN), tools)
        return
    known = {tool.name for tool in chat_log.llm_api.tools}
    chat_log.llm_api.tools = [
        *chat_log.llm_api.tools,
        *(tool for tool in tools if tool.name not in known),
    ]
