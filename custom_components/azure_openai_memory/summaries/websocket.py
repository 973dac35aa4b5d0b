"""The summaries' WebSocket commands: each group's strip of periods, one summary, a run now.

A group's strip lists its dailies, weeklies, monthlies and eras without their text (the
decay and the era cap keep each short); one summary is read whole when opened. What each
caller may read is what summary_get and summary_groups show them (keeper.may_read): an
administrator everything, anyone else their own person's summaries and the household's, so
strips, pages and totals hold only those; another's summary is refused. Anyone may have
today summarised now, as anyone may call summary_aggregate (it answers counts only).
"""

from typing import Any

from homeassistant.core import Context, HomeAssistant, callback
from homeassistant.util import dt as dt_util
import voluptuous as vol

from ..lib.summaries.book import GroupSummary, PeriodType, SummaryError
from ..panel.commands import (
    PAGE_SCHEMA,
    CommandSpec,
    async_register_commands,
    calendar_day,
    ensure,
    page_of,
)
from ..people.access import access
from ..people.speakers import Speaker
from .keeper import SummaryKeeper, may_read, summary_readable

# Summary fields kept for the cycle's own bookkeeping, not shown.
_INTERNAL = ("aggregated_into", "rewrite_pending", "part_counts")


GROUPS_SCHEMA = dict(PAGE_SCHEMA)
GET_SCHEMA: dict[Any, Any] = {vol.Required("summary_id"): str}
RUN_SCHEMA: dict[Any, Any] = {vol.Optional("day"): calendar_day}


def _header(summary: GroupSummary) -> dict[str, Any]:
    """A summary as a strip shows it: its period, size and whether a model wrote it."""
    return {
        "summary_id": summary.summary_id,
        "period_type": summary.period_type.value,
        "period_start": summary.period_start,
        "period_end": summary.period_end,
        "message_count": summary.message_count,
        "extractive": summary.extractive,
        "topics": summary.topics[:5],
    }


def summary_view(summary: GroupSummary) -> dict[str, Any]:
    """A summary whole, as summary_get answers it."""
    shown = summary.as_dict()
    for name in _INTERNAL:
        del shown[name]
    return shown


class SummaryCommands:
    """The commands, bound to the installation's summaries."""

    def __init__(self, keeper: SummaryKeeper) -> None:
        self.keeper = keeper

    async def groups(self, speaker: Speaker, fields: dict[str, Any], _: Context) -> Any:
        """A page of the groups the caller may read, each with its strips (oldest period
        first)."""
        offset, limit = page_of(fields)
        book = self.keeper.store.book
        readable = summary_readable(speaker)
        strips_of = {
            group: {
                kind.value: [
                    _header(s)
                    for s in sorted(book.of(group, kind), key=lambda s: s.period_start)
                    if readable(s)
                ]
                for kind in PeriodType
            }
            for group in book.groups()
        }
        names = [
            group
            for group, strips in strips_of.items()
            if any(strips.values()) or may_read(speaker, group, book.profile(group).household)
        ]
        shown = []
        for group in names[offset : offset + limit]:
            profile = book.profile(group)
            shown.append(
                {
                    "group_id": group,
                    "profile": profile.summary
                    if may_read(speaker, group, profile.household)
                    else "",
                    "strips": strips_of[group],
                }
            )
        return {"groups": shown, "total": len(names), "group_mode": self.keeper.group_mode}

    async def get(self, speaker: Speaker, fields: dict[str, Any], context: Context) -> Any:
        """One summary, whole. Another person's is, to the caller, one that does not exist:
        summary ids are made from a group and a day, so a refusal would tell which days
        that person talked."""
        summary = self.keeper.store.book.get(fields["summary_id"])
        if summary is None or not summary_readable(speaker)(summary):
            raise SummaryError("summary_unknown", summary_id=fields["summary_id"])
        return {"summary": summary_view(summary)}

    async def run(self, speaker: Speaker, fields: dict[str, Any], _: Context) -> Any:
        """Summarise a day now (today unless another is named), then the cycle; counts.
        Administrators only, as summary_aggregate: it covers every person's talk."""
        ensure(access(speaker).sees_everything)
        today = dt_util.now().date()
        day = fields.get("day", today)
        if day > today:
            raise SummaryError("day_in_future", day=day.isoformat())
        counts = await self.keeper.async_run(day)
        return {"day": day.isoformat(), **counts}


@callback
def async_register_summary_commands(hass: HomeAssistant, keeper: SummaryKeeper) -> None:
    """summaries/groups, /get, /run."""
    commands = SummaryCommands(keeper)
    async_register_commands(
        hass,
        (
            CommandSpec("summaries/groups", commands.groups, GROUPS_SCHEMA),
            CommandSpec("summaries/get", commands.get, GET_SCHEMA),
            CommandSpec("summaries/run", commands.run, RUN_SCHEMA),
        ),
    )
