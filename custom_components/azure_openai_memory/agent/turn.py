"""One conversation turn: how it begins (its history events, the turn the LLM answers),
what it produces, and how it enters the agent's windows.

A turn's messages stay pending until the turn completes: a failed or cut-off turn leaves
the window as it was, so the next request never carries half an exchange. The note a
conversation gains when it resumes after a pause is about time, not the exchange: it is
stored before the request, and stays when the request fails (the time has passed all the
same; the retry adds no second one).
"""

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
import json
from typing import Any
import weakref

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.util import dt as dt_util
import orjson

from ..compat import conversation_source, tool_intent, tool_result_data
from ..const import CONF_HISTORY_RECORDING, DOMAIN, LOGGER, RECOMMENDED_HISTORY_RECORDING
from ..data import DATA_HISTORY
from ..history.recorder import TurnRecording
from ..lib.summaries.book import HOME_GROUP
from ..lib.windows.window import ConversationMemoryManager, MessageEntry, ToolCallEntry
from ..people.speakers import Speaker
from ..summaries import speaker_groups
from .stats import ROUTE_LOCAL

TAG_INPUT = "input"
TAG_OUTPUT = "output"
TAG_TOOL_CALL = "tool_call"


def pending(
    role: str,
    content: str,
    tags: frozenset[str],
    tool_calls: tuple[ToolCallEntry, ...] = (),
    tool_call_id: str | None = None,
) -> MessageEntry:
    """A message of the running turn; counted and kept only if the turn completes."""
    return MessageEntry(role, content, 0.0, 0, tags, tool_calls, tool_call_id)


def pending_from_content(content: conversation.Content) -> MessageEntry:
    """What the chat log received (an answer, tool calls or a tool's result) as a message."""
    if isinstance(content, conversation.ToolResultContent):
        return pending(
            "tool",
            json.dumps(tool_result_data(content)),
            frozenset({TAG_TOOL_CALL}),
            tool_call_id=content.tool_call_id,
        )
    calls = tuple(
        ToolCallEntry(call.id, call.tool_name, call.tool_args)
        for call in getattr(content, "tool_calls", None) or ()
    )
    tags = frozenset({TAG_TOOL_CALL}) if calls else frozenset({TAG_OUTPUT})
    return pending("assistant", content.content or "", tags, calls)


type DeltaListener = Callable[[conversation.ChatLog, dict[str, Any]], None]


@dataclass
class Turn:
    """What one LLM turn needs and produces.

    The turn streams into a private copy of the chat log. While `attached`, its deltas
    reach the pipeline's listener (voice hears the answer as it comes); after an early
    answer the pipeline run is over, and nothing of the late answer goes near it.
    """

    conversation_id: str
    source: str | None
    user_text: str
    chat_log: conversation.ChatLog
    listener: DeltaListener | None
    recording: TurnRecording
    attached: bool = True
    spoken: bool = False
    pending: list[MessageEntry] = field(default_factory=list)
    answer: str = ""
    # The summaries' groups whose past comes with the turn, the speaker's own first: never
    # another person's.
    groups: tuple[str, ...] = (HOME_GROUP,)
    # Whose talk the turn is (None: nobody known), and whether it is kept past the talk.
    person_id: str | None = None
    incognito: bool = False
    # Of a turn begun incognito: whether that incognito still lasts (it may end meanwhile).
    incognito_lasts: Callable[[], bool] = lambda: True
    # Who speaks (resolved once per turn): whose memories the turn may see and save.
    speaker: Speaker = field(default_factory=Speaker)
    # When it was asked, in the home's time zone.
    asked_at: datetime = field(default_factory=dt_util.now)
    # The window the turn reads and writes (WindowWriter.resume): the conversation's own,
    # or one kept apart when the conversation is another person's.
    window_id: str = ""
    # The language the turn was asked in (the pipeline's; None: the home's).
    language: str | None = None

    def forward(self, _log: conversation.ChatLog, delta: dict[str, Any]) -> None:
        """The private log's delta listener; notes when words have reached the listener."""
        if self.attached and self.listener is not None:
            self.listener(self.chat_log, delta)
            self.spoken = self.spoken or bool(delta.get("content"))

    def record_tools(self) -> None:
        """Every tool call of the turn, with its result (also when the turn failed after it)."""
        results = {m.tool_call_id: m.content for m in self.pending if m.role == "tool"}
        api = self.chat_log.llm_api
        tools = {tool.name: tool for tool in api.tools} if api is not None else {}
        for message in self.pending:
            for call in message.tool_calls:
                raw = results.get(call.id)
                try:
                    result = orjson.loads(raw) if raw is not None else None
                except orjson.JSONDecodeError:
                    result = raw
                tool = tools.get(call.name)
                intent = tool_intent(tool) if tool is not None else None
                self.recording.used_tool(call.name, call.arguments, result, intent)


def user_of(user_input: conversation.ConversationInput) -> str | None:
    """The Home Assistant user who asked, if one did."""
    return user_input.context.user_id if user_input.context else None


def recording_of(
    hass: HomeAssistant,
    entry_options: Mapping[str, Any],
    agent_id: str,
    user_input: conversation.ConversationInput,
    conversation_id: str,
    person_id: str | None,
    incognito: bool,
) -> TurnRecording:
    """The turn's history events, beginning with its question: none recorded with the
    entry's recording off, or for an incognito turn (nothing of it is recorded or kept)."""
    recorder = None
    if not incognito and entry_options.get(CONF_HISTORY_RECORDING, RECOMMENDED_HISTORY_RECORDING):
        recorder = hass.data.get(DATA_HISTORY)
    recording = TurnRecording(recorder, agent_id, conversation_id, person_id)
    recording.asked(
        user_input.text,
        user_input.language,
        user_input.device_id,
        getattr(user_input, "satellite_id", None),
        user_of(user_input),
    )
    return recording


def llm_turn(
    hass: HomeAssistant,
    user_input: conversation.ConversationInput,
    chat_log: conversation.ChatLog,
    recording: TurnRecording,
    speaker: Speaker,
    incognito: bool,
    lasts: Callable[[], bool],
) -> Turn:
    """The turn the LLM answers, for its speaker and with the past of the speaker's groups."""
    return Turn(
        chat_log.conversation_id,
        conversation_source(user_input),
        user_input.text,
        chat_log,
        chat_log.delta_listener,
        recording,
        groups=speaker_groups(hass, user_input, speaker.person_id),
        person_id=speaker.person_id,
        incognito=incognito,
        incognito_lasts=lasts,
        speaker=speaker,
        language=user_input.language,
    )


class WindowWriter:
    """Writes an agent's completed turns into its windows, and saves them later.

    Turns of one speaker run one after another, in the order they were asked, keyed by
    who speaks (satellite, device, user) rather than by conversation id: a follow-up under
    a new id continues the same window, so it must wait for the turn still writing to it.
    A lock lives as long as a turn holds or awaits it.
    """

    def __init__(
        self, hass: HomeAssistant, windows: ConversationMemoryManager, save: Callable[[], None]
    ) -> None:
        self._hass = hass
        self._windows = windows
        self._save = save
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def lock(self, conversation_id: str, source: str | None) -> asyncio.Lock:
        """The lock a speaker's LLM turn holds from the request until its commit."""
        key = source or conversation_id
        if (lock := self._locks.get(key)) is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    def resume(
        self,
        conversation_id: str,
        source: str | None,
        person_id: str | None,
        *,
        incognito: bool = False,
    ) -> str:
        """Continue the speaker's window under this id; after a pause, note the time. The
        window's id: the conversation's, or one kept apart when the conversation is
        another person's. An incognito turn's window keeps what it adds in memory only."""
        windows = self._windows
        window_id = windows.window_for(conversation_id, person_id)
        windows.continue_conversation(window_id, source, person_id)
        if incognito and windows.get_stats(window_id) is not None:
            windows.go_incognito(window_id)
        note = windows.note_resumption(window_id, dt_util.get_default_time_zone())
        if note is not None:
            LOGGER.debug("Conversation %s resumed: %s", window_id, note.content)
            self._save()
        return window_id

    def commit(self, turn: Turn) -> None:
        """Record a completed turn in the window, in order, and save later."""
        windows = self._windows
        # Another person's turn may have begun the window since this one read it.
        window_id = turn.window_id = windows.window_for(
            turn.window_id or turn.conversation_id, turn.person_id
        )
        if turn.incognito:
            if not turn.incognito_lasts():
                # Incognito ended while the turn ran: what it said went with it.
                return
            windows.go_incognito(window_id)
        for message in turn.pending:
            windows.add_message(
                window_id,
                message.role,
                message.content,
                message.tags,
                tool_calls=message.tool_calls,
                tool_call_id=message.tool_call_id,
            )
        windows.set_person(window_id, turn.person_id)
        self._save()
        stats = windows.get_stats(window_id) or {}
        LOGGER.debug(
            "Window: conv=%s, msgs=%s, tokens=%s/%s (%s%%)",
            window_id,
            stats.get("message_count"),
            stats.get("current_tokens"),
            stats.get("max_tokens"),
            stats.get("utilization"),
        )

    def add_local_turn(
        self,
        conversation_id: str,
        source: str | None,
        text: str,
        speech: str,
        person_id: str | None = None,
        *,
        incognito: bool = False,
    ) -> None:
        """A turn Home Assistant answered itself; after any earlier turn of its speaker."""
        local = _LocalTurn(conversation_id, source, text, speech, person_id, incognito)
        lock = self._locks.get(source or conversation_id)
        if lock is None:
            self._add_local_turn(local)
        else:
            # An earlier turn of this speaker is still running: this one comes after.
            self._hass.async_create_task(
                self._async_add_local_turn_after(lock, local),
                f"{DOMAIN} local turn {conversation_id}",
            )

    async def _async_add_local_turn_after(self, lock: asyncio.Lock, local: "_LocalTurn") -> None:
        async with lock:
            self._add_local_turn(local)

    def _add_local_turn(self, local: "_LocalTurn") -> None:
        windows = self._windows
        window_id = self.resume(
            local.conversation_id, local.source, local.person_id, incognito=local.incognito
        )
        if local.incognito:
            windows.go_incognito(window_id)
        windows.add_message(window_id, "user", local.text, {TAG_INPUT, ROUTE_LOCAL})
        windows.add_message(window_id, "assistant", local.speech, {TAG_OUTPUT, ROUTE_LOCAL})
        windows.set_person(window_id, local.person_id)
        self._save()


@dataclass(frozen=True, slots=True)
class _LocalTurn:
    """A turn Home Assistant answered itself, as it enters the window."""

    conversation_id: str
    source: str | None
    text: str
    speech: str
    person_id: str | None
    incognito: bool
