"""What one turn sends: the prompt, stored data and as much of the window as fits.

The context limit is shared out in this order: the answer's maximum, the question, the
prompt with its tools, the turn's stored data, and the window's newest messages with
whatever is left. Stored data gets only what the window's last exchange leaves, so a
question is never sent without the exchange it follows up.
"""

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Self

from homeassistant.core import HomeAssistant
import orjson

from .const import (
    CONF_SUMMARIES,
    CONF_SUMMARY_CONTEXT_TOKENS,
    CONF_TIMESERIES_CONTEXT,
    LOGGER,
    RECOMMENDED_OPTIONS,
    RECOMMENDED_SUMMARY_CONTEXT_TOKENS,
    RECOMMENDED_TIMESERIES_CONTEXT,
)
from .context import MAX_CONTEXT_TOKENS, async_past_context, async_turn_data, memories_budget
from .llm.client import Delta
from .memory.window import MESSAGE_OVERHEAD_TOKENS, AgentWindows
from .turn import TAG_INPUT, Turn, pending


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


def past_budget(entry_options: Mapping[str, Any]) -> int:
    """Tokens of past summaries a request may carry: none with the entry's summaries off."""
    if not entry_options.get(CONF_SUMMARIES, RECOMMENDED_OPTIONS[CONF_SUMMARIES]):
        return 0
    return int(entry_options.get(CONF_SUMMARY_CONTEXT_TOKENS, RECOMMENDED_SUMMARY_CONTEXT_TOKENS))


@dataclass(frozen=True)
class Budget:
    """What one agent's requests may carry, in tokens; options change only by a reload."""

    context_limit: int
    answer: int
    memories: int
    past: int
    series: bool

    @classmethod
    def of(cls, entry_options: Mapping[str, Any], context_limit: int, answer: int) -> Self:
        """The agent's limit and answer maximum with the entry's data options."""
        return cls(
            context_limit,
            answer,
            memories_budget(entry_options),
            past_budget(entry_options),
            bool(entry_options.get(CONF_TIMESERIES_CONTEXT, RECOMMENDED_TIMESERIES_CONTEXT)),
        )


class RequestBuilder:
    """Builds one agent's requests within its context limit."""

    def __init__(self, hass: HomeAssistant, windows: AgentWindows, budget: Budget) -> None:
        self._hass = hass
        self._windows = windows
        self.budget = budget
        self._limit_warned = False

    async def async_prepare(
        self, turn: Turn, system_prompt: str, tools: list[dict[str, Any]], who: str
    ) -> Request:
        """The request: prompt, stored data, as much history as the context limit allows."""
        hass, windows, budget = self._hass, self._windows, self.budget
        conversation_id = turn.conversation_id
        user = pending("user", turn.user_text, frozenset({TAG_INPUT}))
        turn.pending.append(user)

        prompt_text = system_prompt + (orjson.dumps(tools).decode() if tools else "")
        question = windows.count_tokens(turn.user_text)
        room = budget.context_limit - budget.answer - question
        # A token is at least one byte: the byte length bounds the prompt's cost, so the
        # exact count is needed here only when that bound does not fit.
        prompt = len(prompt_text.encode())
        prompt_tokens: int | None = None
        most_data = MAX_CONTEXT_TOKENS + budget.memories + budget.past
        if prompt + windows.window_tokens(conversation_id) + most_data > room:
            prompt = prompt_tokens = await hass.async_add_executor_job(
                windows.counter.count, prompt_text
            )
        room -= prompt
        if room < 0:
            self._warn_limit_too_small(who, prompt)
        context = None
        data_budget = min(
            most_data,
            room - windows.last_exchange_tokens(conversation_id) - MESSAGE_OVERHEAD_TOKENS,
        )
        if data_budget > 0:
            context = await async_turn_data(
                hass,
                turn.user_text,
                windows.counter,
                data_budget,
                series=budget.series,
                memories_budget=budget.memories,
            )
            context = await async_past_context(
                hass, context, turn.group, windows.counter, data_budget, budget.past
            )
        other = question
        if context is not None:
            other += context.tokens + MESSAGE_OVERHEAD_TOKENS
            room -= context.tokens + MESSAGE_OVERHEAD_TOKENS
        history, left_out = windows.get_recent_messages(conversation_id, max(room, 0))
        if left_out:
            LOGGER.debug(
                "Context limit: %d older messages of %s left out of this request",
                left_out,
                conversation_id,
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

    def _warn_limit_too_small(self, who: str, prompt: int) -> None:
        """Once per agent: a limit that cannot be met is a setting to fix, not a debug line."""
        if self._limit_warned:
            return
        self._limit_warned = True
        LOGGER.warning(
            "The context limit of %s (%d tokens) is smaller than its prompt and tools "
            "(%d tokens) plus the answer's maximum (%d tokens): every request carries only "
            "the last exchange. Raise the context limit or lower the maximum tokens",
            who,
            self.budget.context_limit,
            prompt,
            self.budget.answer,
        )


class PromptCount:
    """A request's exact prompt tokens, taken while the model writes.

    Counted beside the request, it would hold the request up; a request that had to
    count it while preparing has it already.
    """

    def __init__(self, hass: HomeAssistant, windows: AgentWindows, request: Request) -> None:
        self._hass = hass
        self._windows = windows
        self._request = request
        self._counted: asyncio.Future[int] | None = None

    async def while_streaming(self, deltas: AsyncIterator[Delta]) -> AsyncIterator[Delta]:
        """The model's deltas, unchanged; the count starts with the first of them."""
        async for delta in deltas:
            if self._counted is None and self._request.prompt_tokens is None:
                self._counted = self._count()
            yield delta

    async def async_tokens(self) -> int:
        """The prompt's exact token count."""
        if self._request.prompt_tokens is not None:
            return self._request.prompt_tokens
        if self._counted is None:
            return await self._count()
        return await self._counted

    def _count(self) -> asyncio.Future[int]:
        return self._hass.async_add_executor_job(
            self._windows.counter.count, self._request.prompt_text
        )
