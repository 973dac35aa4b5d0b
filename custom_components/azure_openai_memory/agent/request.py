"""What one turn sends: the prompt, stored data and as much of the window as fits.

The context limit is shared out in this order: the answer's maximum, the question and the
clock note, the prompt with its tools, the turn's stored data, and the window's newest
messages with whatever is left. Stored data gets only what the window's last exchange
leaves, so a question is never sent without the exchange it follows up.

A request is laid out so that what changes least comes first, since Azure reuses the
processed beginning a request shares with an earlier one (its prompt cache): the prompt
(without the current time), the tools sorted by name, the window, the clock note, the
turn's stored data (next to the question it is for), the question. The current time that Home Assistant renders into the prompt
would make every request differ from its first line on; it travels as the clock note
instead, which changes nothing before it.
"""

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import datetime
import re
from typing import Any, Self

from homeassistant.core import HomeAssistant
from homeassistant.util import dt as dt_util
import orjson

from ..azure.client import Delta
from ..compat import CLOCK_PROMPT
from ..const import (
    CONF_SUMMARIES,
    CONF_SUMMARY_CONTEXT_TOKENS,
    CONF_TIMESERIES_CONTEXT,
    LOGGER,
    RECOMMENDED_OPTIONS,
    RECOMMENDED_SUMMARY_CONTEXT_TOKENS,
    RECOMMENDED_TIMESERIES_CONTEXT,
)
from ..lib.windows.window import MESSAGE_OVERHEAD_TOKENS, ConversationMemoryManager
from ..people.access import access
from ..summaries.keeper import summary_readable
from .context import MAX_CONTEXT_TOKENS, async_past_context, async_turn_data, memories_budget
from .turn import TAG_INPUT, Turn, pending

_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_TEMPLATE_FIELD = re.compile(r"\{\{.*?\}\}")


def _rendered(template: str) -> re.Pattern[str] | None:
    """What the template renders to: its text, any one-line value for each of its fields.

    A rendered prompt part may lose its last line break (2026.x strips each part).
    """
    if not (template := template.rstrip("\n")):
        return None
    texts = _TEMPLATE_FIELD.split(template)
    return re.compile(r"[^\n]+?".join(re.escape(text) for text in texts) + "\n?")


_CLOCK_SENTENCE = _rendered(CLOCK_PROMPT)


def without_clock(system_prompt: str) -> tuple[str, bool]:
    """The prompt without the current-time sentence Home Assistant put in, and if it had one.

    A time the user's own instructions render (a template of theirs) stays where it is.
    """
    if _CLOCK_SENTENCE is None:
        return system_prompt, False
    prompt, found = _CLOCK_SENTENCE.subn("", system_prompt, count=1)
    return prompt, found > 0


def clock_note(now: datetime) -> str:
    """The current time, to the minute, for the turn's messages after the window's."""
    date = f"{_WEEKDAYS[now.weekday()]} {now.day} {_MONTHS[now.month - 1]} {now.year}"
    return f"Now: {now:%H:%M}, {date} (Home Assistant's clock)."


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


def summaries_budget(entry_options: Mapping[str, Any]) -> int:
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
            summaries_budget(entry_options),
            bool(entry_options.get(CONF_TIMESERIES_CONTEXT, RECOMMENDED_TIMESERIES_CONTEXT)),
        )


class RequestBuilder:
    """Builds one agent's requests within its context limit."""

    def __init__(
        self, hass: HomeAssistant, windows: ConversationMemoryManager, budget: Budget
    ) -> None:
        self._hass = hass
        self._windows = windows
        self.budget = budget
        self._limit_warned = False

    async def async_prepare(
        self, turn: Turn, system_prompt: str, tools: list[dict[str, Any]], who: str
    ) -> Request:
        """The request: prompt, stored data, as much of the window as the context limit allows."""
        hass, windows, budget = self._hass, self._windows, self.budget
        conversation_id = turn.window_id or turn.conversation_id
        user = pending("user", turn.user_text, frozenset({TAG_INPUT}))
        turn.pending.append(user)

        system_prompt, had_clock = without_clock(system_prompt)
        note = clock_note(dt_util.now()) if had_clock else None
        prompt_text = system_prompt + (orjson.dumps(tools).decode() if tools else "")
        # The question and the clock note before it: always sent, whatever else fits.
        last = windows.count_tokens(turn.user_text)
        if note is not None:
            last += windows.count_tokens(note)
        room = budget.context_limit - budget.answer - last
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
                scopes=access(turn.speaker).turn_scopes(),
                speaker=turn.speaker.name if turn.speaker.person_id else None,
                language=turn.language,
            )
            past = budget.past
            readable = summary_readable(turn.speaker)
            for group in turn.groups:
                before = context.tokens if context is not None else 0
                context = await async_past_context(
                    hass, context, group, windows.counter, data_budget, past, readable
                )
                past -= (context.tokens if context is not None else 0) - before
        other = last
        if context is not None:
            other += context.tokens + MESSAGE_OVERHEAD_TOKENS
            room -= context.tokens + MESSAGE_OVERHEAD_TOKENS
        window_messages, left_out = windows.get_recent_messages(conversation_id, max(room, 0))
        if left_out:
            LOGGER.debug(
                "Context limit: %d older messages of %s left out of this request",
                left_out,
                conversation_id,
            )
        messages = [
            {"role": "system", "content": system_prompt},
            *(m.to_api_message() for m in window_messages),
        ]
        if note is not None:
            messages.append({"role": "user", "content": note})
        if context is not None:
            messages.append({"role": "user", "content": context.message})
        messages.append(user.to_api_message())
        window_tokens = sum(m.token_count for m in window_messages)
        return Request(messages, tools, prompt_text, other + window_tokens, left_out, prompt_tokens)

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

    def __init__(
        self, hass: HomeAssistant, windows: ConversationMemoryManager, request: Request
    ) -> None:
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
