"""The conversation agent: local intents first, then Azure OpenAI with the memory window.

An answer that takes longer than the agent's early timeout is promised ("still working on
it"); it still enters the window, and a notification says it is ready. Every user of the
home reads persistent notifications, so it holds neither the question nor the answer, and
an incognito turn posts none. An answer that asks the user something keeps a voice
satellite listening; the promise never does.
"""

import asyncio
from dataclasses import replace
import time
from typing import Literal

from homeassistant.components import conversation, persistent_notification
from homeassistant.components.conversation.models import AbstractConversationAgent
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_LLM_HASS_API, MATCH_ALL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent

from .agent.context import memories_budget
from .agent.request import Budget, PromptCount, RequestBuilder
from .agent.speech import asks_user, async_spoken, async_text
from .agent.stats import ROUTE_LLM, ROUTE_LOCAL
from .agent.turn import Turn, WindowWriter
from .azure.client import ILLMClient, RequestOptions, Usage, create_llm_client
from .compat import (
    AddConfigEntryEntitiesCallback,
    async_handle_intents,
    async_provide_llm_data,
    conversation_source,
    in_assist_pipeline,
)
from .const import (
    CONF_EARLY_TIMEOUT,
    CONF_HISTORY_RECORDING,
    CONF_MEMORY_CONTEXT,
    CONF_PREFER_LOCAL_INTENTS,
    CONF_PROMPT,
    DOMAIN,
    RECOMMENDED_EARLY_TIMEOUT,
    RECOMMENDED_HISTORY_RECORDING,
    RECOMMENDED_MEMORY_CONTEXT,
    RECOMMENDED_PREFER_LOCAL_INTENTS,
    SUBENTRY_AGENT,
)
from .data import DATA_HISTORY, AzureOpenAIMemoryConfigEntry
from .entity import AzureOpenAIMemoryBaseLLMEntity, RequestFailed, tool_specs
from .history.recorder import HistoryRecorder, TurnRecording
from .lib.windows.window import ConversationMemoryManager
from .memories.tools import MemoryTurn, async_add_memory_tools
from .people.household import agent_llm_apis
from .people.incognito import async_refuse_remember, incognito_lasts, is_incognito
from .summaries import speaker_groups
from .summaries.tools import async_add_past_talk

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
    _llm: tuple[RequestOptions, ILLMClient]
    _requests: RequestBuilder
    _writer: WindowWriter

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
        """Build the client, the request builder and the window writer once."""
        await super().async_added_to_hass()
        options = self.request_options()
        self._llm = (options, create_llm_client(self.runtime.client, options))
        budget = Budget.of(self.entry.options, self.context_limit, options.max_tokens)
        self._requests = RequestBuilder(self.hass, self.windows, budget)
        self._writer = WindowWriter(
            self.hass, self.windows, self.runtime.windows_store.async_schedule_save
        )

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
        speaker = await self.async_speaker(
            user_input.context.user_id if user_input.context else None, user_input.device_id
        )
        # Incognito: answered as always, but nothing of the turn is recorded or kept.
        incognito = is_incognito(self.runtime, self.subentry.subentry_id)
        recording = TurnRecording(
            None if incognito else self._recorder(),
            self.entity_id,
            conversation_id,
            speaker.person_id,
        )
        recording.asked(
            user_input.text,
            user_input.language,
            user_input.device_id,
            getattr(user_input, "satellite_id", None),
            user_input.context.user_id if user_input.context else None,
        )
        options = self.subentry.data
        # An Assist pipeline has its own "prefer handling commands locally": it has tried
        # already (leaving to an agent that controls the home what it should answer), or
        # was told not to. Only elsewhere is it ours to try.
        if not options.get(CONF_PREFER_LOCAL_INTENTS, RECOMMENDED_PREFER_LOCAL_INTENTS):
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
                self._writer.add_local_turn(
                    conversation_id,
                    source,
                    user_input.text,
                    speech,
                    speaker.person_id,
                    # As it is now: the intent may have just turned incognito on or off.
                    incognito=is_incognito(self.runtime, self.subentry.subentry_id),
                )
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
                agent_llm_apis(options.get(CONF_LLM_HASS_API)),
                options.get(CONF_PROMPT),
            )
        except conversation.ConverseError as err:
            recording.failed("llm_api")
            return err.as_conversation_result()
        if self.entry.options.get(CONF_MEMORY_CONTEXT, RECOMMENDED_MEMORY_CONTEXT):
            async_add_memory_tools(
                self.hass,
                chat_log,
                user_input,
                self.windows.counter,
                memories_budget(self.entry.options),
                MemoryTurn(speaker, conversation_id, recording.question_event_id),
            )
            async_add_past_talk(
                self.hass,
                chat_log,
                user_input,
                speaker_groups(self.hass, user_input, speaker.person_id)[0],
                speaker,
                self.windows.counter,
                memories_budget(self.entry.options),
            )
            if incognito:
                async_refuse_remember(chat_log)

        turn = Turn(
            conversation_id,
            source,
            user_input.text,
            chat_log,
            chat_log.delta_listener,
            recording,
            groups=speaker_groups(self.hass, user_input, speaker.person_id),
            person_id=speaker.person_id,
            incognito=incognito,
            incognito_lasts=incognito_lasts(self.runtime, self.subentry.subentry_id),
            language=user_input.language,
        )
        turn.speaker = speaker
        task = self.hass.async_create_background_task(
            self._async_run_turn(turn, user_input.agent_id),
            f"{DOMAIN} turn {conversation_id}",
        )
        early = float(options.get(CONF_EARLY_TIMEOUT, RECOMMENDED_EARLY_TIMEOUT))
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
                return await async_spoken(
                    self.hass,
                    user_input,
                    chat_log,
                    "still_working_incognito" if turn.incognito else "still_working",
                    error=False,
                )
        try:
            await task
        except RequestFailed as err:
            return await async_spoken(self.hass, user_input, chat_log, f"api_{err.kind.value}")
        self.runtime.stats.record_turn(ROUTE_LLM, _ms_since(started))
        response = intent.IntentResponse(language=user_input.language)
        response.async_set_speech(
            turn.answer or await async_text(self.hass, user_input.language, "no_answer")
        )
        # A satellite listens again when the answer asks something. Home Assistant's own
        # reading of the chat log is not used: it takes a final ";" in every language, and a
        # question the answer only quotes, as a question.
        return conversation.ConversationResult(
            response=response,
            conversation_id=chat_log.conversation_id,
            continue_conversation=asks_user(turn.answer, user_input.language),
        )

    async def _async_run_turn(self, turn: Turn, agent_id: str | None) -> None:
        """Talk to the model (with tool rounds) and record the turn only if it completes."""
        options, client = self._llm
        async with self._writer.lock(turn.conversation_id, turn.source):
            turn.window_id = self._writer.resume(
                turn.conversation_id, turn.source, turn.person_id, incognito=turn.incognito
            )
            usage = Usage()
            private = replace(
                turn.chat_log, content=turn.chat_log.content.copy(), delta_listener=turn.forward
            )
            first_new = len(private.content)
            try:
                async with self.async_request(options, usage):
                    system_prompt = getattr(private.content[0], "content", None) or ""
                    request = await self._requests.async_prepare(
                        turn, system_prompt, tool_specs(private), self.entity_id
                    )
                    count = PromptCount(self.hass, self.windows, request)
                    await self.async_tool_rounds(
                        private,
                        request.messages,
                        lambda messages: count.while_streaming(
                            client.stream(messages, request.tools, usage)
                        ),
                        turn.pending,
                        agent_id,
                    )
                    prompt_tokens = await count.async_tokens()
                    self.runtime.stats.record_request(
                        prompt_tokens + request.other_tokens, prompt_tokens, request.left_out
                    )
            except RequestFailed as err:
                turn.record_tools()  # what ran before the failure comes before it
                turn.recording.failed(err.kind.value)
                raise
            finally:
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
            turn.record_tools()
            final = turn.pending[-1]
            turn.answer = final.content if final.role == "assistant" else ""
            self._writer.commit(turn)
            turn.recording.answered(turn.answer, late=not turn.attached)

    async def _async_deliver_late(
        self, task: asyncio.Task[None], turn: Turn, language: str
    ) -> None:
        """The answer came after the early reply: it is in the window; say it is ready
        (an incognito turn leaves no trace outside its conversation: no notification).

        The early reply promised a notification, so a turn that fails later says so there.
        """
        try:
            await task
        except RequestFailed as err:
            if turn.incognito:
                return
            message = await async_text(self.hass, language, f"api_{err.kind.value}")
        else:
            self.runtime.stats.record_late_answer()
            if turn.incognito:
                return
            message = await async_text(self.hass, language, "late_answer_ready")
        state = self.hass.states.get(self.entity_id) if self.entity_id else None
        title = await async_text(
            self.hass,
            language,
            "late_answer_title",
            {
                "agent": state.name if state is not None else self.subentry.title,
                "time": f"{turn.asked_at:%H:%M}",
            },
        )
        persistent_notification.async_create(
            self.hass,
            message,
            title=title,
            notification_id=f"{DOMAIN}_{turn.conversation_id}",
        )


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000
