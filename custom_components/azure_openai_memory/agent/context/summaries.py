"""The speaker's group's past: summaries of earlier days, weeks and months, as data."""

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from homeassistant.core import HomeAssistant

from ...data import DATA_SUMMARIES
from ...lib.summaries.book import GroupSummary, PeriodType
from ...lib.tokens import TokenCounter
from .base import CLOSE, DATA_NOTICE, TurnContext, json_line

PAST_TOPICS = 3
EARLIER_TOPICS = 5
_PAST_NOTE = (
    "What this place talked about before, newest first; each day talked about is in one "
    "line, older ones may be just topics."
)


def _period(summary: GroupSummary) -> dict[str, Any]:
    """The line's first key names the period: every token of the block counts."""
    match summary.period_type:
        case PeriodType.DAILY:
            return {"day": summary.period_start}
        case PeriodType.WEEKLY:
            return {"week_of": summary.period_start}
        case PeriodType.MONTHLY:
            return {"month": summary.period_start[:7]}
    return {"era": f"{summary.period_start} to {summary.period_end}"}


def _past_line(summary: GroupSummary, *, headline: bool) -> str:
    """A period in full (what was said and its topics), or as its headline (topics)."""
    line = _period(summary)
    if not headline:
        line["summary"] = summary.summary
    line["topics"] = summary.topics[:PAST_TOPICS]
    return json_line(line)


def _earlier_line(oldest: Sequence[GroupSummary]) -> str:
    """The oldest periods as one line: their span and their commonest topics.

    An era is carried after the monthlies it outlived, so the span ends with the last of
    the others (the era's own end is that of the newest month)."""
    ends = [s.period_end for s in oldest if s.period_type is not PeriodType.ERA]
    topics = Counter(topic for s in oldest for topic in s.topics[:PAST_TOPICS])
    first = min(s.period_start for s in oldest)
    last = max(ends or [s.period_end for s in oldest])
    return json_line(
        {
            "earlier": f"{first} to {last}",
            "topics": [topic for topic, _ in topics.most_common(EARLIER_TOPICS)],
        }
    )


# A period's lines change once a day at most while turns come and go: their costs are kept,
# by encoding and text (a count depends on nothing else), up to this many.
MAX_LINE_COSTS = 4096
_line_costs: dict[tuple[str, str], int] = {}


def _line_cost(counter: TokenCounter, line: str) -> int:
    """What a line adds to the block, its newline included (its count is kept)."""
    key = (counter.name, line)
    if (cost := _line_costs.get(key)) is None:
        if len(_line_costs) >= MAX_LINE_COSTS:
            _line_costs.clear()
        cost = _line_costs[key] = counter.count(line) + 1
    return cost


# Which periods are shortened first: the finest (a day's text tells of one day, a month's
# of thirty for about as many tokens), the oldest first among periods of a kind.
_SHORTENED_FIRST = {
    PeriodType.DAILY: 0,
    PeriodType.WEEKLY: 1,
    PeriodType.MONTHLY: 2,
    PeriodType.ERA: 3,
}


def _past_choices(
    cover: Sequence[GroupSummary], counter: TokenCounter
) -> Iterator[tuple[int, list[str]]]:
    """The past's lines, each choice shorter than the one before, with its estimated cost
    (counted line by line): all in full; then one more period at a time shortened to its
    headline (days first, the oldest first); then the oldest headlines joined into one
    line, one more at a time. No period is ever left out: the last choice is one line over
    the whole past."""
    lines = [_past_line(s, headline=False) for s in cover]
    costs = [_line_cost(counter, line) for line in lines]
    yield sum(costs), list(lines)
    order = sorted(
        range(len(cover)),
        key=lambda i: (_SHORTENED_FIRST[cover[i].period_type], cover[i].period_end),
    )
    for i in order:
        lines[i] = _past_line(cover[i], headline=True)
        costs[i] = _line_cost(counter, lines[i])
        yield sum(costs), list(lines)
    n = len(cover)
    for k in range(2, n + 1):
        earlier = _earlier_line(cover[n - k :])
        yield sum(costs[: n - k]) + _line_cost(counter, earlier), [*lines[: n - k], earlier]


def _render_past(group: str, lines: list[str]) -> str:
    head = f'<data source="summaries" group="{group}">'
    return "\n".join([head, _PAST_NOTE, *lines, CLOSE])


def build_past_context(
    context: TurnContext | None,
    group: str,
    cover: Sequence[GroupSummary],
    counter: TokenCounter,
    budget: int,
    summaries_budget: int,
) -> TurnContext | None:
    """The turn's data message with the group's past added; blocking, run in the executor.

    cover is the group's past, newest first (SummaryBook.context). The block keeps within
    summaries_budget and the whole message within budget: periods are shortened (days first,
    the oldest first) until it fits; none is left out while one line fits.
    """
    if not cover:
        return context
    base = context.message if context is not None else DATA_NOTICE
    room = min(summaries_budget, budget - counter.count(base) - 2)
    fixed = _line_cost(counter, _render_past(group, []))
    for cost, lines in _past_choices(cover, counter):
        if fixed + cost > room:
            continue
        # Counting lines one by one is close, not exact: check the whole message.
        block = _render_past(group, lines)
        message = f"{base}\n\n{block}"
        tokens = counter.count(message)
        if counter.count(block) <= summaries_budget and tokens <= budget:
            sources = context.sources if context is not None else ()
            return TurnContext(message, tokens, (*sources, f"summaries:{group}"))
    return context


async def async_past_context(
    hass: HomeAssistant,
    context: TurnContext | None,
    group: str,
    counter: TokenCounter,
    budget: int,
    summaries_budget: int,
    shown: Callable[[GroupSummary], bool],
) -> TurnContext | None:
    """The data message with what the speaker's group talked about, every day of it that
    the speaker may read (shown)."""
    if summaries_budget <= 0 or (keeper := hass.data.get(DATA_SUMMARIES)) is None:
        return context
    cover = keeper.store.book.context(group, shown)
    if not cover:
        return context
    return await hass.async_add_executor_job(
        build_past_context, context, group, cover, counter, budget, summaries_budget
    )
