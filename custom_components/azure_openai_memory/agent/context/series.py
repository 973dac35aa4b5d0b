"""Stored time series a question names, as bounded data blocks."""

from contextlib import AsyncExitStack
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.util import dt as dt_util

from ...data import DATA_SERIES
from ...lib.series.store import Series, matching_keys
from ...lib.spoken_time import spoken_range
from ...lib.tokens import TokenCounter
from .base import CLOSE, DATA_NOTICE, FOOTER_TOKENS, MAX_CONTEXT_TOKENS, TurnContext, json_line

# Gaps listed by name in a series' block; the rest are counted.
MAX_GAPS_SHOWN = 5


def _notes(result: dict[str, Any]) -> list[str]:
    """What we (not the data) say about a series' coverage for the asked range."""
    if result["coverage"] == "full" and result.get("coverage_approximate"):
        return [
            "Fetched over the asked range, but some short gaps may have been merged away "
            "(the key's coverage is approximate): answer from it, and say so if precision matters."
        ]
    if result["coverage"] == "full":
        return ["Complete for the asked range: answer from it, no fetching needed."]
    gaps = result["gaps"]
    if not gaps:
        return []
    missing = ", ".join(f"{gap['start']} to {gap['end']}" for gap in gaps[:MAX_GAPS_SHOWN])
    if len(gaps) > MAX_GAPS_SHOWN:
        missing += f" and {len(gaps) - MAX_GAPS_SHOWN} more gaps"
    return [f"Not fetched yet, so unknown: {missing}. Say so if it matters."]


def _render(key: str, result: dict[str, Any], entries: list[str]) -> str:
    head = (
        f'<data source="timeseries" key="{key}" coverage="{result["coverage"]}" '
        f'entries="{result["count"]}">'
    )
    lines = [head, *_notes(result), *entries]
    if len(entries) < result["count"]:
        lines.append(f"({result['count'] - len(entries)} older entries not shown.)")
    lines.append(CLOSE)
    return "\n".join(lines)


def _series_block(
    key: str, result: dict[str, Any], counter: TokenCounter, budget: int
) -> str | None:
    """One series for the asked range in at most budget tokens, newest entries first."""
    used = counter.count(_render(key, {**result, "count": 0}, [])) + FOOTER_TOKENS
    if used > budget:
        return None
    entries: list[str] = []
    for entry in result["entries"]:  # newest first
        line = json_line(entry)
        cost = counter.count(line) + 1
        if used + cost > budget:
            break
        entries.append(line)
        used += cost
    # Counting lines one by one is close, not exact: check the whole block.
    block = _render(key, result, entries)
    while counter.count(block) > budget:
        if not entries:
            return None
        entries.pop()
        block = _render(key, result, entries)
    return block


def build_turn_context(
    series: list[Series], start: float, end: float, counter: TokenCounter, budget: int
) -> TurnContext | None:
    """The data message for these series over [start, end]; blocking, run in the executor.

    Every line counts against budget: the notice, each block's tags and notes, entries.
    """
    parts = [DATA_NOTICE]
    sources: list[str] = []
    used = counter.count(DATA_NOTICE)
    for index, one in enumerate(series):
        # Each series gets an equal share of what is left, so the first cannot take it all.
        share = (budget - used - 2) // (len(series) - index)
        block = _series_block(one.key, one.query(start, end), counter, share)
        if block is not None:
            parts.append(block)
            sources.append(f"timeseries:{one.key}")
            used += counter.count(block) + 2  # and the blank line before it
    if len(parts) == 1:
        return None
    # Counting parts one by one is close, not exact: check the whole message.
    message = "\n\n".join(parts)
    tokens = counter.count(message)
    while tokens > budget:
        parts.pop()
        sources.pop()
        if len(parts) == 1:
            return None
        message = "\n\n".join(parts)
        tokens = counter.count(message)
    return TurnContext(message, tokens, tuple(sources))


async def async_turn_context(
    hass: HomeAssistant,
    text: str,
    counter: TokenCounter,
    budget: int = MAX_CONTEXT_TOKENS,
    language: str | None = None,
) -> TurnContext | None:
    """Stored series a request names (a spoken range and a series' words), as a data message.

    The range is read in the home's time zone ("yesterday" is the home's yesterday) and in
    the turn's language (None: the home's).
    """
    if budget <= 0 or (store := hass.data.get(DATA_SERIES)) is None:
        return None
    asked = spoken_range(
        text,
        dt_util.utcnow().timestamp(),
        dt_util.get_default_time_zone(),
        language or hass.config.language,
    )
    if asked is None:
        return None
    keys = matching_keys(store.known_keys(), text)
    if not keys:
        return None
    async with AsyncExitStack() as stack:
        # Held while the executor reads the series, so no merge changes them meanwhile.
        series: list[Series] = []
        for key in sorted(keys):
            await stack.enter_async_context(store.lock(key))
            if (one := await store.async_get(key)) is not None:
                series.append(one)
        context = await hass.async_add_executor_job(
            build_turn_context, series, asked.start, asked.end, counter, budget
        )
    return context
