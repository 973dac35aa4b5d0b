"""What a turn adds beyond the window: stored data, delimited and bounded in tokens.

Series entries, memories and summaries are third-party text (written by APIs, devices,
automations and what people said), never instructions. They reach the model as one
user-role message that says it is data, with every source between <data> tags and every
entry as JSON in which `<` is escaped, so no entry can close its tag or pass for an
instruction.
"""

from collections.abc import Iterable

from homeassistant.core import HomeAssistant

from ...const import MEMORY_CONTEXT_LIMIT
from ...data import DATA_MEMORIES
from ...lib.tokens import TokenCounter
from .base import DATA_NOTICE, MAX_CONTEXT_TOKENS, TurnContext
from .memories import (
    MEMORIES_NOTE,
    joined_message,
    memories_block,
    memories_budget,
    memories_part,
    memories_shown,
)
from .series import async_turn_context, build_turn_context
from .speaker import speaker_block
from .summaries import async_past_context, build_past_context

__all__ = [
    "DATA_NOTICE",
    "MAX_CONTEXT_TOKENS",
    "MEMORIES_NOTE",
    "TurnContext",
    "async_past_context",
    "async_turn_context",
    "async_turn_data",
    "build_past_context",
    "build_turn_context",
    "memories_block",
    "memories_budget",
    "memories_shown",
]


async def async_turn_data(
    hass: HomeAssistant,
    text: str,
    counter: TokenCounter,
    budget: int,
    *,
    series: bool,
    memories_budget: int,
    scopes: Iterable[str] | None = None,
    speaker: str | None = None,
    language: str | None = None,
) -> TurnContext | None:
    """The turn's data message: who speaks (their name, with memories on), the relevant
    memories of these scopes (None: all; within their budget), then stored series (the
    range the text names read in the turn's language; None: the home's).

    The memories come first and take at most memories_budget of the budget; the series
    get what is left. The whole message is counted once more and fits budget.
    """
    block: str | None = None
    used = 0
    memories = hass.data.get(DATA_MEMORIES)
    about = speaker_block(speaker) if speaker is not None and memories_budget > 0 else None
    if memories is not None and memories_budget > 0:
        await memories.async_loaded()  # just after a start, the file may still be read
    if memories_budget > 0 and memories is not None and len(memories.store) and budget > 0:
        found = await memories.async_search(text, limit=MEMORY_CONTEXT_LIMIT, scopes=scopes)
        if found.memories:
            block, used = await hass.async_add_executor_job(
                memories_part, found.memories, counter, memories_budget, budget, about
            )
    if about is not None:
        used += await hass.async_add_executor_job(counter.count, about) + 2
    series_context = None
    if series and budget - used > 0:
        series_context = await async_turn_context(
            hass, text, counter, min(MAX_CONTEXT_TOKENS, budget - used), language=language
        )
    return await hass.async_add_executor_job(
        joined_message, block, series_context, counter, budget, about
    )
