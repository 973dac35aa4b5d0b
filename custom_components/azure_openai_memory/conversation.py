"""The conversation agent: local intents first, then Azure OpenAI with the memory window."""

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
import json
import time
from typing import Any, Literal
import weakref

from homeassistant.components import conversation, persistent_notification
from homeassistant.components.conversation.models import AbstractConversationAgent
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_LLM_HASS_API, MATCH_ALL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr, intent, translation
import orjson

from .availability import async_request_failed, async_request_succeeded
from .compat import (
    AddConfigEntryEntitiesCallback,
    async_handle_intents,
    async_provide_llm_data,
    conversation_source,
    in_assist_pipeline,
    llm_api_ids,
)
from .const import (
    CONF_CONTEXT_LIMIT,
    CONF_DEPLOYMENT,
    CONF_EARLY_TIMEOUT,
    CONF_HISTORY_RECORDING,
    CONF_MEMORY_CONTEXT,
    CONF_PREFER_LOCAL_INTENTS,
    CONF_PROMPT,
    CONF_SUMMARIES,
    CONF_SUMMARY_CONTEXT_TOKENS,
    CONF_TIMESERIES_CONTEXT,
    DOMAIN,
    LOGGER,
    RECOMMENDED_EARLY_TIMEOUT,
    RECOMMENDED_HISTORY_RECORDING,
    RECOMMENDED_MEMORY_CONTEXT,
    RECOMMENDED_OPTIONS,
    RECOMMENDED_PREFER_LOCAL_INTENTS,
    RECOMMENDED_SUMMARY_CONTEXT_TOKENS,
    RECOMMENDED_TIMESERIES_CONTEXT,
    SUBENTRY_AGENT,
)
from .context import (
    MAX_CONTEXT_TOKENS,
    async_past_context,
    async_turn_data,
    memories_budget as memories_budget_of,
)
from .data import DATA_HISTORY, AzureOpenAIMemoryConfigEntry, Runtime
from .history.recorder import HistoryRecorder, TurnRecording
from .llm.client import (
    Delta,
    ILLMClient,
    RequestOptions,
    Usage,
    create_llm_client,
    request_options,
)
from .llm.errors import ErrorKind, classify_error
from .llm.tools import tool_spec
from .memories.tools import async_add_memory_tools
from .memory.summaries import HOME_GROUP
from .memory.tokens import context_limit_for_model
from .memory.window import (
    MESSAGE_OVERHEAD_TOKENS,
    AgentWindows,
    MessageEntry,
    ToolCallEntry,
)
from .stats import ROUTE_LLM, ROUTE_LOCAL
from .summaries import speaker_group

# Max number of back and forth with the LLM to generate a response
MAX_TOOL_ITERATIONS = 10
# Turns of different speakers run side by side; one speaker's are ordered by a lock.
PARALLEL_UPDATES = 0

TAG_INPUT = "input"
TAG_OUTPUT = "output"
TAG_TOOL_CALL = "tool_call"


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


class TurnFailed(Exception):
    """A turn could not be answered; kind says why."""

    def __init__(self, kind: ErrorKind) -> None:
        super().__init__(kind.value)
        self.kind = kind


def pending(
    role: str,
    content: str,
    tags: frozenset[str],
    tool_calls: tuple[ToolCallEntry, ...] = (),
    tool_call_id: str | None = None,
) -> MessageEntry:
    """A message of the running turn; counted and kept only if the turn completes."""
    return MessageEntry(role, content, 0.0, 0, tags, tool_calls, tool_call_id)


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
    # Where the talk happens (summaries' group): its past comes with the turn.
    group: str = HOME_GROUP

    def forward(self, _log: conversation.ChatLog, delta: dict[str, Any]) -> None:
        """The private log's delta listener; notes when words have reached the listener."""
        if self.attached and self.listener is not None:
            self.listener(self.chat_log, delta)
            self.spoken = self.spoken or bool(delta.get("content"))


@dataclass
class Request:
    """The messages and tools one turn sends, and what they cost in tokens."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    prompt_text: str
    other_tokens: int
    left_out: int
    # The prompt's exact count when preparing needed it; else counted while the model writes.
    prompt_tokens: int | None = None


def _pending_from_content(content: conversation.Content) -> MessageEntry:
    if isinstance(content, conversation.ToolResultContent):
        return pending(
            "tool",
            json.dumps(content.tool_result),
            frozenset({TAG_TOOL_CALL}),
            tool_call_id=content.tool_call_id,
        )
    calls = tuple(
        ToolCallEntry(call.id, call.tool_name, call.tool_args)
        for call in getattr(content, "tool_calls", None) or ()
    )
    tags = frozenset({TAG_TOOL_CALL}) if calls else frozenset({TAG_OUTPUT})
    return pending("assistant", content.content or "", tags, calls)


class AzureOpenAIMemoryAgent(conversation.ConversationEntity, AbstractConversationAgent):
    """An Assist agent backed by one Azure OpenAI deployment, with memory."""

    _attr_has_entity_name = True
    _attr_name = None
    _attr_supports_streaming = True

    def __init__(self, entry: AzureOpenAIMemoryConfigEntry, subentry: ConfigSubentry) -> None:
        """One agent per subentry."""
        self.entry = entry
        self.subentry = subentry
        self.options: dict[str, Any] = dict(subentry.data)
        self._attr_unique_id = subentry.subentry_id
        self._attr_device_info = dr.DeviceInfo(
            identifiers={(DOMAIN, subentry.subentry_id)},
            name=subentry.title,
            manufacturer="Microsoft",
            model=self.options.get(CONF_DEPLOYMENT),
            entry_type=dr.DeviceEntryType.SERVICE,
        )
        if llm_api_ids(self.options.get(CONF_LLM_HASS_API)):
            self._attr_supported_features = conversation.ConversationEntityFeature.CONTROL
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._limit_warned = False
        # Options change only through a reload, which makes a new entity: build once.
        self._llm: tuple[RequestOptions, ILLMClient] | None = None

    @property
    def supported_languages(self) -> list[str] | Literal["*"]:
        """Any language the model speaks."""
        return MATCH_ALL

    @property
    def runtime(self) -> Runtime:
        """The entry's runtime."""
        return self.entry.runtime_data

    @property
    def windows(self) -> AgentWindows:
        """This agent's conversation windows."""
        return self.runtime.windows[self.subentry.subentry_id]

    def _option(self, key: str, default: Any) -> Any:
        return self.options.get(key, default)

    def _recorder(self) -> HistoryRecorder | None:
        """The history, when this entry records."""
        if not self.entry.options.get(CONF_HISTORY_RECORDING, RECOMMENDED_HISTORY_RECORDING):
            return None
        return self.hass.data.get(DATA_HISTORY)

    async def _async_handle_message(
        self,
        user_input: conversation.ConversationInput,
        chat_log: conversation.ChatLog,
    ) -> conversation.ConversationResult:
        """Answer one turn: locally when Home Assistant understands it, else with the LLM."""
        started = time.perf_counter()
        conversation_id = chat_log.conversation_id
        source = conversation_source(user_input)
        recording = TurnRecording(self._recorder(), self.entity_id, conversation_id)
        recording.asked(
            user_input.text,
            user_input.language,
            user_input.device_id,
            getattr(user_input, "satellite_id", None),
            user_input.context.user_id if user_input.context else None,
        )
        # An Assist pipeline has its own "prefer handling commands locally": it has tried
        # already (leaving to an agent that controls the home what it should answer), or
        # was told not to. Only elsewhere is it ours to try.
        if not self._option(CONF_PREFER_LOCAL_INTENTS, RECOMMENDED_PREFER_LOCAL_INTENTS):
            reason = "local intents are off for this agent"
        elif in_assist_pipeline(chat_log):
            reason = "the Assist pipeline handles local intents itself"
        else:
            reason = "no local intent matched"
            response = await async_handle_intents(self.hass, user_input, chat_log)
            if response is not None:
                speech = response.speech.get("plain", {}).get("speech", "")
                recording.decided(ROUTE_LOCAL, "a local intent matched")
                recording.acted(response)
                recording.answered(speech)
                self._remember_local_turn(conversation_id, source, user_input.text, speech)
                self.runtime.stats.record_turn(ROUTE_LOCAL, _ms_since(started))
                return conversation.ConversationResult(
                    response=response, conversation_id=chat_log.conversation_id
                )
        recording.decided(ROUTE_LLM, reason)

        try:
            await async_provide_llm_data(
                chat_log,
                user_input,
                DOMAIN,
                self.options.get(CONF_LLM_HASS_API),
                self.options.get(CONF_PROMPT),
            )
        except conversation.ConverseError as err:
            recording.failed("llm_api")
            return err.as_conversation_result()
        if self._memories_on():
            async_add_memory_tools(
                self.hass, chat_log, user_input, self.windows.counter, self._memory_budget()
            )

        turn = Turn(
            conversation_id, source, user_input.text, chat_log, chat_log.delta_listener, recording
        )
        turn.group = speaker_group(self.hass, user_input)
        task = self.hass.async_create_background_task(
            self._async_run_turn(turn, user_input.agent_id),
            f"{DOMAIN} turn {conversation_id}",
        )
        early = float(self._option(CONF_EARLY_TIMEOUT, RECOMMENDED_EARLY_TIMEOUT))
        if early > 0:
            done, _ = await asyncio.wait({task}, timeout=early)
            # Once words are being spoken, the answer is on its way: let it finish.
            if not done and not turn.spoken:
                turn.attached = False
                self.runtime.stats.record_early_timeout()
                self.runtime.stats.record_turn(ROUTE_LLM, _ms_since(started))
                self.hass.async_create_background_task(
                    self._async_deliver_late(task, turn, user_input.language),
                    f"{DOMAIN} late answer {conversation_id}",
                )
                return await self._async_spoken(user_input, chat_log, "still_working", error=False)
        try:
            await task
        except TurnFailed as err:
            return await self._async_spoken(user_input, chat_log, f"api_{err.kind.value}")
        self.runtime.stats.record_turn(ROUTE_LLM, _ms_since(started))
        response = intent.IntentResponse(language=user_input.language)
        response.async_set_speech(
            turn.answer or await self._async_text(user_input.language, "no_answer")
        )
        return conversation.ConversationResult(
            response=response,
            conversation_id=chat_log.conversation_id,
            continue_conversation=chat_log.continue_conversation,
        )

    def _conversation_lock(self, conversation_id: str, source: str | None) -> asyncio.Lock:
        """Turns of one speaker run one after another, in the order they were asked.

        Keyed by who speaks (satellite, device, user) rather than by conversation id: a
        follow-up under a new id continues the same window, so it must wait for the turn
        still writing to it. A lock lives as long as a turn holds or awaits it.
        """
        key = source or conversation_id
        if (lock := self._locks.get(key)) is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    async def _async_run_turn(self, turn: Turn, agent_id: str | None) -> None:
        """Talk to the model (with tool rounds) and record the turn only if it completes."""
        options, client = self._llm_client()
        async with self._conversation_lock(turn.conversation_id, turn.source):
            self.windows.continue_conversation(turn.conversation_id, turn.source)
            usage = Usage()
            private = replace(
                turn.chat_log, content=turn.chat_log.content.copy(), delta_listener=turn.forward
            )
            first_new = len(private.content)
            try:
                async with asyncio.timeout(options.timeout):
                    request = await self._async_prepare(turn, private, options)
                    prompt_tokens = await self._async_converse(
                        turn, private, request, client, usage, agent_id
                    )
                    self._record_request(request, prompt_tokens)
                async_request_succeeded(self.hass, self.entry, self.runtime.health, self.subentry)
            except Exception as err:
                kind = ErrorKind.TIMEOUT if isinstance(err, TimeoutError) else classify_error(err)
                self._report_failure(kind, err)
                _record_tools(turn)  # what ran before the failure comes before it
                turn.recording.failed(kind.value)
                raise TurnFailed(kind) from err
            finally:
                self.runtime.stats.record_usage(usage.input_tokens, usage.output_tokens)
                if usage.input_tokens or usage.output_tokens:
                    private.async_trace(
                        {
                            "stats": {
                                "input_tokens": usage.input_tokens,
                                "output_tokens": usage.output_tokens,
                            }
                        }
                    )
            if turn.attached:
                turn.chat_log.content.extend(private.content[first_new:])
            _record_tools(turn)
            final = turn.pending[-1]
            turn.answer = final.content if final.role == "assistant" else ""
            self._commit(turn)
            turn.recording.answered(turn.answer, late=not turn.attached)

    async def _async_prepare(
        self, turn: Turn, chat_log: conversation.ChatLog, options: RequestOptions
    ) -> Request:
        """The request: prompt, stored data, as much history as the context limit allows."""
        tools: list[dict[str, Any]] = []
        if chat_log.llm_api is not None:
            tools = [
                tool_spec(tool, chat_log.llm_api.custom_serializer)
                for tool in chat_log.llm_api.tools
            ]
        system_prompt = getattr(chat_log.content[0], "content", None) or ""
        memory, conversation_id = self.windows, turn.conversation_id
        user = pending("user", turn.user_text, frozenset({TAG_INPUT}))
        turn.pending.append(user)

        prompt_text = system_prompt + (orjson.dumps(tools).decode() if tools else "")
        question = memory.count_tokens(turn.user_text)
        room = self._context_limit() - options.max_tokens - question
        # A token is at least one byte: the byte length bounds the prompt's cost, so the
        # exact count is needed here only when that bound does not fit.
        prompt = len(prompt_text.encode())
        prompt_tokens: int | None = None
        memories_budget = memories_budget_of(self.entry.options)
        past_budget = self._past_budget()
        most_data = MAX_CONTEXT_TOKENS + memories_budget + past_budget
        if prompt + memory.window_tokens(conversation_id) + most_data > room:
            prompt = prompt_tokens = await self.hass.async_add_executor_job(
                memory.counter.count, prompt_text
            )
        room -= prompt
        if room < 0:
            self._warn_limit_too_small(prompt, options.max_tokens)
        context = None
        data_budget = min(
            most_data,
            room - memory.last_exchange_tokens(conversation_id) - MESSAGE_OVERHEAD_TOKENS,
        )
        if data_budget > 0:
            context = await async_turn_data(
                self.hass,
                turn.user_text,
                memory.counter,
                data_budget,
                series=self.entry.options.get(
                    CONF_TIMESERIES_CONTEXT, RECOMMENDED_TIMESERIES_CONTEXT
                ),
                memories_budget=memories_budget,
            )
        if data_budget > 0:
            context = await async_past_context(
                self.hass, context, turn.group, memory.counter, data_budget, past_budget
            )
        other = question
        if context is not None:
            other += context.tokens + MESSAGE_OVERHEAD_TOKENS
            room -= context.tokens + MESSAGE_OVERHEAD_TOKENS
        history, left_out = memory.get_recent_messages(conversation_id, max(room, 0))
        if left_out:
            LOGGER.debug(
                "Context limit: %d older messages of %s left out of this request",
                left_out,
                turn.conversation_id,
            )
        messages = [
            {"role": "system", "content": system_prompt},
            *(m.to_api_message() for m in history),
        ]
        if context is not None:
            messages.append({"role": "user", "content": context.message})
        messages.append(user.to_api_message())
        history_tokens = sum(m.token_count for m in history)
        return Request(
            messages, tools, prompt_text, other + history_tokens, left_out, prompt_tokens
        )

    async def _async_converse(
        self,
        turn: Turn,
        chat_log: conversation.ChatLog,
        request: Request,
        client: ILLMClient,
        usage: Usage,
        agent_id: str | None,
    ) -> int:
        """Stream rounds until the model answers without asking for a tool.

        Returns the prompt's exact token count (for the statistics), taken while the model
        writes: counted beside the request, it held the request up.
        """
        counted: asyncio.Future[int] | None = None

        async def stream(messages: list[dict[str, Any]]) -> AsyncIterator[Delta]:
            nonlocal counted
            async for delta in client.stream(messages, request.tools, usage):
                if counted is None and request.prompt_tokens is None:
                    counted = self.hass.async_add_executor_job(
                        self.windows.counter.count, request.prompt_text
                    )
                yield delta

        messages = request.messages
        for _round in range(MAX_TOOL_ITERATIONS):
            async for content in chat_log.async_add_delta_content_stream(
                agent_id or self.entity_id, stream(messages)
            ):
                message = _pending_from_content(content)
                turn.pending.append(message)
                messages.append(message.to_api_message())
            if not chat_log.unresponded_tool_results:
                break
        if request.prompt_tokens is not None:
            return request.prompt_tokens
        if counted is None:
            return await self.hass.async_add_executor_job(
                self.windows.counter.count, request.prompt_text
            )
        return await counted

    def _memories_on(self) -> bool:
        """Use memories in conversations: the entry's option."""
        return bool(self.entry.options.get(CONF_MEMORY_CONTEXT, RECOMMENDED_MEMORY_CONTEXT))

    def _memory_budget(self) -> int:
        """Tokens of memories a request may carry."""
        return memories_budget_of(self.entry.options)

    def _warn_limit_too_small(self, prompt: int, max_tokens: int) -> None:
        """Once per agent: a limit that cannot be met is a setting to fix, not a debug line."""
        if self._limit_warned:
            return
        self._limit_warned = True
        LOGGER.warning(
            "The context limit of %s (%d tokens) is smaller than its prompt and tools "
            "(%d tokens) plus the answer's maximum (%d tokens): every request carries only "
            "the last exchange. Raise the context limit or lower the maximum tokens",
            self.entity_id,
            self._context_limit(),
            prompt,
            max_tokens,
        )

    def _record_request(self, request: Request, prompt_tokens: int) -> None:
        self.runtime.stats.record_request(
            prompt_tokens + request.other_tokens, prompt_tokens, request.left_out
        )

    def _past_budget(self) -> int:
        """Tokens of past summaries a request may carry (entry option; none with the
        entry's summaries off)."""
        if not self.entry.options.get(CONF_SUMMARIES, RECOMMENDED_OPTIONS[CONF_SUMMARIES]):
            return 0
        return int(
            self.entry.options.get(CONF_SUMMARY_CONTEXT_TOKENS, RECOMMENDED_SUMMARY_CONTEXT_TOKENS)
        )

    def _context_limit(self) -> int:
        """Tokens one request may carry: the agent's option, else the deployment's window."""
        return int(
            self.options.get(CONF_CONTEXT_LIMIT)
            or context_limit_for_model(self.options[CONF_DEPLOYMENT])
        )

    def _llm_client(self) -> tuple[RequestOptions, ILLMClient]:
        if self._llm is None:
            options = self._request_options()
            self._llm = (options, create_llm_client(self.runtime.client, options))
        return self._llm

    def _request_options(self) -> RequestOptions:
        return request_options(self.runtime.settings, self.options)

    def _report_failure(self, kind: ErrorKind, err: Exception) -> None:
        """Count every failure; log when the resource starts failing; ask for a new key."""
        self.runtime.stats.record_error(kind.value)
        async_request_failed(
            self.hass, self.entry, self.runtime.health, self.subentry, self.entity_id, kind, err
        )
        if kind is ErrorKind.INVALID_AUTH:
            self.entry.async_start_reauth(self.hass)

    def _commit(self, turn: Turn) -> None:
        """Record a completed turn in the window, in order, and save later."""
        memory = self.windows
        for message in turn.pending:
            memory.add_message(
                turn.conversation_id,
                message.role,
                message.content,
                message.tags,
                tool_calls=message.tool_calls,
                tool_call_id=message.tool_call_id,
            )
        self.runtime.windows_store.async_schedule_save()
        stats = memory.get_stats(turn.conversation_id) or {}
        LOGGER.debug(
            "Window: conv=%s, msgs=%s, tokens=%s/%s (%s%%)",
            turn.conversation_id,
            stats.get("message_count"),
            stats.get("current_tokens"),
            stats.get("max_tokens"),
            stats.get("utilization"),
        )

    def _remember_local_turn(
        self,
        conversation_id: str,
        source: str | None,
        text: str,
        speech: str,
    ) -> None:
        lock = self._locks.get(source or conversation_id)
        if lock is None:
            self._add_local_turn(conversation_id, source, text, speech)
        else:
            # An earlier turn of this speaker is still running: this one comes after.
            self.hass.async_create_task(
                self._async_add_local_turn_after(lock, conversation_id, source, text, speech),
                f"{DOMAIN} local turn {conversation_id}",
            )

    async def _async_add_local_turn_after(
        self, lock: asyncio.Lock, conversation_id: str, source: str | None, text: str, speech: str
    ) -> None:
        async with lock:
            self._add_local_turn(conversation_id, source, text, speech)

    def _add_local_turn(
        self, conversation_id: str, source: str | None, text: str, speech: str
    ) -> None:
        memory = self.windows
        memory.continue_conversation(conversation_id, source)
        memory.add_message(conversation_id, "user", text, {TAG_INPUT, ROUTE_LOCAL})
        memory.add_message(conversation_id, "assistant", speech, {TAG_OUTPUT, ROUTE_LOCAL})
        self.runtime.windows_store.async_schedule_save()

    async def _async_deliver_late(
        self, task: asyncio.Task[None], turn: Turn, language: str
    ) -> None:
        """The answer came after the early reply: it is in the window; show it too.

        The early reply promised a notification, so a turn that fails later says so there.
        """
        try:
            await task
        except TurnFailed as err:
            message = await self._async_text(language, f"api_{err.kind.value}")
        else:
            self.runtime.stats.record_late_answer()
            message = turn.answer or await self._async_text(language, "no_answer")
        title = await self._async_text(language, "late_answer_title", {"question": turn.user_text})
        persistent_notification.async_create(
            self.hass,
            message,
            title=title,
            notification_id=f"{DOMAIN}_{turn.conversation_id}",
        )

    async def _async_text(
        self, language: str, key: str, placeholders: dict[str, str] | None = None
    ) -> str:
        """A translated message from strings.json 'exceptions', English as fallback."""
        full_key = f"component.{DOMAIN}.exceptions.{key}.message"
        for lang in (language, "en"):
            texts = await translation.async_get_translations(
                self.hass, lang, "exceptions", [DOMAIN]
            )
            if full_key in texts:
                text = texts[full_key]
                for name, value in (placeholders or {}).items():
                    text = text.replace(f"{{{name}}}", value)
                return text
        return key

    async def _async_spoken(
        self,
        user_input: conversation.ConversationInput,
        chat_log: conversation.ChatLog,
        key: str,
        *,
        error: bool = True,
    ) -> conversation.ConversationResult:
        """A friendly, translated answer instead of a traceback."""
        text = await self._async_text(user_input.language, key)
        response = intent.IntentResponse(language=user_input.language)
        if error:
            response.async_set_error(intent.IntentResponseErrorCode.UNKNOWN, text)
        else:
            response.async_set_speech(text)
        return conversation.ConversationResult(
            response=response, conversation_id=chat_log.conversation_id
        )


def _record_tools(turn: Turn) -> None:
    """Every tool call of the turn, with its result (also when the turn failed after it)."""
    results = {m.tool_call_id: m.content for m in turn.pending if m.role == "tool"}
    for message in turn.pending:
        for call in message.tool_calls:
            raw = results.get(call.id)
            try:
                result = orjson.loads(raw) if raw is not None else None
            except orjson.JSONDecodeError:
                result = raw
            turn.recording.used_tool(call.name, call.arguments, result)


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000
