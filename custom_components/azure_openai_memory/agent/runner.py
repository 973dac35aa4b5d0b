"""An agent's turns once routed: Home Assistant's own answers enter the window; an LLM
turn runs apart from the caller's wait, under its speaker's lock.

An answer that takes longer than the agent's early timeout is promised ("still working on
it"); it still enters the window, and a notification says it is ready. Every user of the
home reads persistent notifications, so it holds neither the question nor the answer, and
an incognito turn posts none.
"""

import asyncio
from dataclasses import replace

from homeassistant.components import conversation, persistent_notification
from homeassistant.helpers import intent

from ..azure.client import Usage, create_llm_client
from ..compat import conversation_source
from ..const import CONF_EARLY_TIMEOUT, DOMAIN, RECOMMENDED_EARLY_TIMEOUT
from ..entity import AzureOpenAIMemoryBaseLLMEntity
from ..history.recorder import TurnRecording
from ..lib.windows.window import ConversationMemoryManager
from ..people.incognito import is_incognito
from .request import Budget, PromptCount, RequestBuilder
from .rounds import RequestFailed, async_tool_rounds, tool_specs
from .speech import async_text
from .stats import ROUTE_LLM, ROUTE_LOCAL, ms_since
from .turn import Turn, WindowWriter


class TurnRunner:
    """Runs one agent's turns; built when the agent is added (options change only through
    a reload, which makes a new agent)."""

    def __init__(
        self, agent: AzureOpenAIMemoryBaseLLMEntity, windows: ConversationMemoryManager
    ) -> None:
        self._agent = agent
        self._hass = hass = agent.hass
        self._runtime = agent.runtime
        self._options = options = agent.request_options()
        self._client = create_llm_client(agent.runtime.client, options)
        budget = Budget.of(agent.entry.options, agent.context_limit, options.max_tokens)
        self._windows = windows
        self._requests = RequestBuilder(hass, windows, budget)
        self._writer = WindowWriter(hass, windows, agent.runtime.windows_store.async_schedule_save)

    def answered_locally(
        self,
        user_input: conversation.ConversationInput,
        chat_log: conversation.ChatLog,
        response: intent.IntentResponse,
        reason: str,
        recording: TurnRecording,
        person_id: str | None,
        started: float,
    ) -> conversation.ConversationResult:
        """Home Assistant's own answer: recorded, and in the window after its speaker's
        earlier turns."""
        speech = response.speech.get("plain", {}).get("speech", "")
        recording.decided(ROUTE_LOCAL, reason)
        recording.acted(response)
        recording.answered(speech)
        self._writer.add_local_turn(
            chat_log.conversation_id,
            conversation_source(user_input),
            user_input.text,
            speech,
            person_id,
            # As it is now: the intent may have just turned incognito on or off.
            incognito=is_incognito(self._runtime, self._agent.subentry.subentry_id),
        )
        self._runtime.stats.record_turn(ROUTE_LOCAL, ms_since(started))
        return conversation.ConversationResult(
            response=response, conversation_id=chat_log.conversation_id
        )

    def start(self, turn: Turn, agent_id: str | None) -> asyncio.Task[None]:
        """The turn's request, tool rounds and commit, apart from the caller's wait."""
        return self._hass.async_create_background_task(
            self._async_run(turn, agent_id), f"{DOMAIN} turn {turn.conversation_id}"
        )

    async def async_promised(
        self, task: asyncio.Task[None], turn: Turn, language: str, started: float
    ) -> bool:
        """Whether the answer is only promised: the early timeout passed with no word of it
        spoken. It then comes late, detached from the caller, with a notification."""
        early = float(self._agent.subentry.data.get(CONF_EARLY_TIMEOUT, RECOMMENDED_EARLY_TIMEOUT))
        if early <= 0:
            return False
        done, _ = await asyncio.wait({task}, timeout=early)
        # Once words are being spoken, the answer is on its way: let it finish.
        if done or turn.spoken:
            return False
        turn.attached = False
        self._runtime.stats.record_early_timeout()
        self._runtime.stats.record_turn(ROUTE_LLM, ms_since(started))
        self._hass.async_create_background_task(
            self._async_deliver_late(task, turn, language),
            f"{DOMAIN} late answer {turn.conversation_id}",
        )
        return True

    async def _async_run(self, turn: Turn, agent_id: str | None) -> None:
        """Talk to the model (with tool rounds) and record the turn only if it completes."""
        client, agent = self._client, self._agent
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
                async with agent.async_request(self._options, usage):
                    system_prompt = getattr(private.content[0], "content", None) or ""
                    request = await self._requests.async_prepare(
                        turn, system_prompt, tool_specs(private), agent.entity_id
                    )
                    count = PromptCount(self._hass, self._windows, request)
                    await async_tool_rounds(
                        private,
                        request.messages,
                        lambda messages: count.while_streaming(
                            client.stream(messages, request.tools, usage)
                        ),
                        agent_id or agent.entity_id,
                        turn.pending,
                    )
                    prompt_tokens = await count.async_tokens()
                    self._runtime.stats.record_request(
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
        hass = self._hass
        try:
            await task
        except RequestFailed as err:
            if turn.incognito:
                return
            message = await async_text(hass, language, f"api_{err.kind.value}")
        else:
            self._runtime.stats.record_late_answer()
            if turn.incognito:
                return
            message = await async_text(hass, language, "late_answer_ready")
        entity_id = self._agent.entity_id
        state = hass.states.get(entity_id) if entity_id else None
        title = await async_text(
            hass,
            language,
            "late_answer_title",
            {
                "agent": state.name if state is not None else self._agent.subentry.title,
                "time": f"{turn.asked_at:%H:%M}",
            },
        )
        persistent_notification.async_create(
            hass, message, title=title, notification_id=f"{DOMAIN}_{turn.conversation_id}"
        )
