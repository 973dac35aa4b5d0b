"""The summary services: aggregate (run now), get, groups; bad values are translated errors.

A caller who is not an administrator reads their own person's group and the household's
summaries (keeper.may_read), never another person's.
"""

from collections.abc import Callable, Coroutine
from datetime import date, datetime
import math
from typing import Any

from homeassistant.core import HomeAssistant, ServiceCall, ServiceResponse, SupportsResponse
from homeassistant.util import dt as dt_util
import voluptuous as vol

from ..lib.summaries.book import (
    GroupProfile,
    PeriodType,
    SummaryError,
    validate_group,
    validate_period_type,
)
from ..people.refusals import Refused, translated
from ..people.speakers import async_caller, is_person_group
from ..services import Handler, ServiceSpec, async_register
from .keeper import SummaryKeeper, may_read, summary_readable

SERVICE_SUMMARY_AGGREGATE = "summary_aggregate"
SERVICE_SUMMARY_GET = "summary_get"
SERVICE_SUMMARY_GROUPS = "summary_groups"
SUMMARY_MAX_LIMIT = 1000
# Group ids, period types, limits and days are checked in the handlers, whose errors are
# translated: a schema error would not say which value was wrong in the user's words.
SUMMARY_AGGREGATE_SCHEMA = vol.Schema({vol.Optional("day"): object})
SUMMARY_GET_SCHEMA = vol.Schema(
    {
        vol.Optional("group"): object,
        vol.Optional("period_type"): object,
        vol.Optional("limit", default=10): object,
        vol.Optional("start"): object,
        vol.Optional("end"): object,
    }
)
SUMMARY_GROUPS_SCHEMA = vol.Schema({})


def _summary_day(value: Any, field: str) -> date:
    """A calendar day: a date, or its ISO text."""
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise SummaryError("invalid_day", field=field, value=value)


async def _async_summary_aggregate(keeper: SummaryKeeper, call: ServiceCall) -> ServiceResponse:
    day = None
    if "day" in call.data:
        day = _summary_day(call.data["day"], "day")
        if day > dt_util.now().date():
            raise SummaryError("day_in_future", day=day.isoformat())
    counts = await keeper.async_run(day)
    return dict(counts)


async def _async_summary_get(keeper: SummaryKeeper, call: ServiceCall) -> ServiceResponse:
    """The summaries asked for, of the groups the caller may read; naming another
    person's group is refused."""
    data = call.data
    caller = await async_caller(keeper.hass, call.context)
    readable = summary_readable(caller)
    book = keeper.store.book
    limit = data["limit"]
    if (
        isinstance(limit, bool)
        or not isinstance(limit, int | float)
        or not math.isfinite(limit)
        or not limit == int(limit)
    ):
        raise SummaryError("summary_limit_out_of_range", value=limit, max=SUMMARY_MAX_LIMIT)
    if not 1 <= int(limit) <= SUMMARY_MAX_LIMIT:
        raise SummaryError("summary_limit_out_of_range", value=limit, max=SUMMARY_MAX_LIMIT)
    types: list[PeriodType] = list(PeriodType)
    if "period_type" in data:
        types = [validate_period_type(data["period_type"])]
    groups = book.groups()
    if "group" in data:
        group = validate_group(data["group"])
        if is_person_group(group) and not may_read(caller, group, household=False):
            raise Refused(call.context, "summary_group_not_yours", group=group)
        # A group holding nothing the caller may read is, to them, one that does not exist.
        if group not in groups or not any(
            readable(summary) for kind in PeriodType for summary in book.of(group, kind)
        ):
            raise SummaryError("unknown_group", group=group)
        groups = [group]
    start = _summary_day(data["start"], "start").isoformat() if "start" in data else None
    end = _summary_day(data["end"], "end").isoformat() if "end" in data else None
    if start is not None and end is not None and end < start:
        raise SummaryError("summary_end_before_start", start=start, end=end)
    found = [
        summary
        for group in groups
        for kind in types
        for summary in book.of(group, kind)
        if readable(summary)
        and (start is None or summary.period_end >= start)
        and (end is None or summary.period_start <= end)
    ]
    found.sort(key=lambda s: (s.period_end, s.period_start), reverse=True)
    shown: list[Any] = [s.as_dict() for s in found[: int(limit)]]
    for summary in shown:
        del summary["aggregated_into"]
        del summary["rewrite_pending"]
        del summary["part_counts"]
    return {"summaries": shown}


def _profile_view(profile: GroupProfile, readable: bool) -> dict[str, Any]:
    """A group's profile as summary_groups answers it; empty where the caller may not read
    what shaped it."""
    shown = (profile if readable else GroupProfile(profile.group_id)).as_dict()
    del shown["household"]
    if shown["current_era"] is not None:
        shown["current_era"].pop("household", None)
    return shown


async def _async_summary_groups(keeper: SummaryKeeper, call: ServiceCall) -> ServiceResponse:
    """Each group the caller may read something of, with its profile and its counts (of
    what they may read)."""
    book = keeper.store.book
    caller = await async_caller(keeper.hass, call.context)
    readable = summary_readable(caller)
    groups: list[Any] = []
    for group in book.groups():
        counts = {
            kind.value: sum(1 for s in book.of(group, kind) if readable(s)) for kind in PeriodType
        }
        profile = book.profile(group)
        profile_readable = may_read(caller, group, profile.household)
        if not (any(counts.values()) or profile_readable):
            continue
        groups.append({**_profile_view(profile, profile_readable), "counts": counts})
    return {"groups": groups, "group_mode": keeper.group_mode}


def async_register_summary_services(hass: HomeAssistant, keeper: SummaryKeeper) -> None:
    """The summary services; a bad value is a translated error and nothing is written."""

    def bound(
        handler: Callable[[SummaryKeeper, ServiceCall], Coroutine[Any, Any, ServiceResponse]],
    ) -> Handler:
        async def call_handler(call: ServiceCall) -> ServiceResponse:
            try:
                return await handler(keeper, call)
            except SummaryError as err:
                raise translated(err) from err

        return call_handler

    async_register(
        hass,
        (
            ServiceSpec(
                SERVICE_SUMMARY_AGGREGATE,
                bound(_async_summary_aggregate),
                SUMMARY_AGGREGATE_SCHEMA,
                SupportsResponse.OPTIONAL,
                # It runs the model over every person's talk and counts what it wrote
                # for all of them: the installation's to do, not one person's.
                admin=True,
            ),
            ServiceSpec(
                SERVICE_SUMMARY_GET,
                bound(_async_summary_get),
                SUMMARY_GET_SCHEMA,
                SupportsResponse.ONLY,
            ),
            ServiceSpec(
                SERVICE_SUMMARY_GROUPS,
                bound(_async_summary_groups),
                SUMMARY_GROUPS_SCHEMA,
                SupportsResponse.ONLY,
            ),
        ),
    )
