"""The summaries' Home Assistant side: read the day's talk, ask the model, run the cycle.

One SummaryKeeper for the installation. The entry whose options turn summaries on
writes them with its first agent's deployment (the first such entry loaded; another takes
over when it unloads); with none, or the model unreachable, summaries are extractive and
are written again by the model on a later cycle. The day's talk is read back from the
history database's Communication events.
"""

import asyncio
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
import logging
import math
from typing import Any

from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers.event import async_track_time_change
from homeassistant.util import dt as dt_util, slugify

from ..azure.summarize import Summarizer, SummaryUnavailable
from ..const import (
    DOMAIN,
    RECOMMENDED_SUMMARY_GROUP_MODE,
    SUMMARY_GROUP_DEVICE,
    SUMMARY_GROUP_USER,
)
from ..history.recorder import HistoryRecorder
from ..lib.history.models import MAX_QUERY_LIMIT
from ..lib.history.store import PERSON_KEY, HistoryEventType, HistoryQuery
from ..lib.summaries.book import (
    HOME_GROUP,
    AggregationJob,
    GroupSummary,
    PeriodType,
    Written,
    extractive_summary,
    summary_line,
    transcript_lines,
)
from ..people.access import access
from ..people.speakers import (
    PERSON_DOMAIN,
    Speaker,
    is_person_group,
    person_group,
    person_id_of,
    person_name,
    person_of_user,
)
from .store import SummaryStore

_LOGGER = logging.getLogger(__name__)

# On the first run (nothing summarised yet), this many finished days are summarised. Later
# runs go on from the last day summarised, however long ago (the history's retention
# permitting): talk recorded while summaries were off or Home Assistant was down is not lost.
CATCH_UP_DAYS = 14
# Extractive summaries the model rewrites per cycle, at most.
MAX_REWRITES = 10


@dataclass(frozen=True)
class SummaryWriter:
    """The entry (and its first agent) that writes the summaries, and how."""

    entry_id: str
    agent_id: str
    summarizer: Summarizer | None
    group_mode: str
    daily_time: time


@dataclass(frozen=True)
class DayMessage:
    """One message of the day, as the summary sees it."""

    when: float
    group: str
    speaker: str
    text: str
    # Said where everyone may hear it, by no one known (GroupSummary.household).
    household: bool


def may_read(speaker: Speaker, group: str, household: bool) -> bool:
    """Whether a summary (or a group's profile) of this group is the speaker's to read, in
    a service's answer, a turn's context and past_talk alike: everything for those who
    see everything; else their own person's group, and of the rest only what is the
    household's (`household`: said by no one known, without a user, since talk names
    its person). Like the history, the talk of nobody known that is someone's (a user
    without a person) and all that was summarised before are for administrators."""
    return access(speaker).reads_group(group, household)


def summary_readable(speaker: Speaker) -> Callable[[GroupSummary], bool]:
    """may_read, for the summaries themselves."""
    return lambda summary: may_read(speaker, summary.group_id, summary.household)


def _said_by_household(data: dict[str, Any]) -> bool:
    """A question of nobody known, with no user: words everyone may hear (a shared
    satellite, an automation). One recorded before questions named their person is not:
    whose it was is not known."""
    return PERSON_KEY in data and not data[PERSON_KEY] and not data.get("user_id")


def group_of(
    mode: str,
    device_id: str | None,
    satellite_id: str | None,
    user_id: str | None,
    person_id: str | None = None,
) -> str:
    """Whose or where talk is, as a slug: a known person's own group whatever the mode (no
    group mixes two people's words); else the satellite/device, the user, or the home."""
    if person_id:
        return person_group(person_id)
    if mode == SUMMARY_GROUP_DEVICE and (satellite_id or device_id):
        return slugify(satellite_id or device_id) or HOME_GROUP
    if mode == SUMMARY_GROUP_USER and user_id:
        return slugify(user_id) or HOME_GROUP
    return HOME_GROUP


def _empty_counts() -> dict[str, int]:
    return {"daily": 0, "weekly": 0, "monthly": 0, "pruned": 0, "eras": 0}


class SummaryKeeper:
    """The installation's summaries: daily run, catch-up, on-demand runs, one at a time."""

    def __init__(self, hass: HomeAssistant, store: SummaryStore, recorder: HistoryRecorder) -> None:
        self.hass = hass
        self.store = store
        self.recorder = recorder
        self.writers: dict[str, SummaryWriter] = {}
        self.lock = asyncio.Lock()
        self._cancel_schedule: CALLBACK_TYPE | None = None
        self._scheduled_writer: SummaryWriter | None = None
        # Whether the model failed since the flag was last cleared (the rewrites stop then).
        self._model_failed = False

    @property
    def writer(self) -> SummaryWriter | None:
        """The entry that writes, if any: the first one loaded with summaries on."""
        return next(iter(self.writers.values()), None)

    @property
    def group_mode(self) -> str:
        """How talk is grouped: by the writer's option."""
        writer = self.writer
        return writer.group_mode if writer is not None else RECOMMENDED_SUMMARY_GROUP_MODE

    @callback
    def async_add_writer(self, writer: SummaryWriter) -> None:
        """An entry with summaries on is loaded: it may write, and missed days catch up."""
        self.writers[writer.entry_id] = writer
        self._async_reschedule()

    @callback
    def async_remove_writer(self, entry_id: str) -> None:
        """The entry unloads; the next one with summaries on takes over."""
        if self.writers.pop(entry_id, None) is not None:
            self._async_reschedule()

    @callback
    def _async_reschedule(self) -> None:
        writer = self.writer
        if writer == self._scheduled_writer:
            return
        if self._cancel_schedule is not None:
            self._cancel_schedule()
            self._cancel_schedule = None
        self._scheduled_writer = writer
        if writer is None:
            return
        self._cancel_schedule = async_track_time_change(
            self.hass,
            self._async_daily,
            hour=writer.daily_time.hour,
            minute=writer.daily_time.minute,
            second=writer.daily_time.second,
        )
        # Days missed while Home Assistant was down; set-up does not wait for them.
        self.hass.async_create_background_task(self.async_run(), f"{DOMAIN} summaries catch-up")

    async def _async_daily(self, _now: datetime) -> None:
        await self.async_run()

    @callback
    def async_stop(self) -> None:
        """No more daily runs (the last entry unloaded, or Home Assistant stops)."""
        self.writers.clear()
        self._async_reschedule()

    async def async_run(self, day: date | None = None) -> dict[str, int]:
        """Summarise day (any day, today included), or every finished day not yet done; then
        the aggregation cycle. Counts per period type."""
        counts = _empty_counts()
        async with self.lock:
            self.async_adopt_person_groups()
            book = self.store.book
            # Earlier summaries the model could not write, before today's new ones.
            await self._async_rewrite_extractive()
            if day is not None:
                counts["daily"] += await self._async_summarise_day(day) or 0
            else:
                yesterday = dt_util.now().date() - timedelta(days=1)
                current = await self._async_first_day(yesterday)
                while current is not None and current <= yesterday:
                    written = await self._async_summarise_day(current)
                    if written is None:
                        break  # the history is unavailable: this day again next run
                    counts["daily"] += written
                    book.summarised_through = current.isoformat()
                    self.store.async_changed()
                    current += timedelta(days=1)
            await self._async_cycle(counts)
        return counts

    # -- Dailies ---------------------------------------------------------------------------

    async def _async_first_day(self, yesterday: date) -> date | None:
        """The first day the run summarises: the one after the last summarised, else (first
        install) CATCH_UP_DAYS back; never before the history keeps. None: unreadable."""
        through = self.store.book.summarised_through
        if through is None:
            return yesterday - timedelta(days=CATCH_UP_DAYS - 1)
        try:
            keep_days = await self.recorder.async_retention_days()
        except HomeAssistantError as err:
            _LOGGER.warning("Summaries wait for the history to be available (%s)", err)
            return None
        oldest = dt_util.now().date() - timedelta(days=math.ceil(keep_days))
        return max(date.fromisoformat(through) + timedelta(days=1), oldest)

    async def _async_session_group(self, session_id: str | None, before: float) -> tuple[str, bool]:
        """The group of a conversation that began before the day (a reply after midnight),
        and whether its question was the household's."""
        if session_id is None:
            return HOME_GROUP, False
        query = HistoryQuery(
            session_id=session_id,
            event_type=HistoryEventType.COMMUNICATION,
            end_time=before,
            limit=MAX_QUERY_LIMIT,
        )
        page, _ = await self.recorder.async_run(self.recorder.store.query_events, query)
        for event in page:  # newest first
            data = event.event_data if isinstance(event.event_data, dict) else {}
            if data.get("direction") == "in":
                return self._group_of_question(data), _said_by_household(data)
        return HOME_GROUP, False

    def _person_of_question(self, data: dict[str, Any]) -> str | None:
        """Whose words a question is: the person it names, else (recorded before questions
        named one) the person linked to its user now; None: nobody known."""
        if PERSON_KEY in data:
            person = data[PERSON_KEY]
            return person if isinstance(person, str) and person else None
        user_id = data.get("user_id")
        if isinstance(user_id, str) and (state := person_of_user(self.hass, user_id)):
            return person_id_of(state)
        return None

    def _group_of_question(self, data: dict[str, Any]) -> str:
        user_id = data.get("user_id")
        return group_of(
            self.group_mode,
            data.get("device_id"),
            data.get("satellite_id"),
            user_id if isinstance(user_id, str) else None,
            self._person_of_question(data),
        )

    @callback
    def async_adopt_person_groups(self) -> int:
        """The groups of users (talk grouped per user before people had groups) become
        the groups of the persons linked to those users, nothing lost; how many moved."""
        book = self.store.book
        groups = set(book.groups())
        moved = 0
        for state in self.hass.states.async_all(PERSON_DOMAIN):
            user_id = state.attributes.get("user_id")
            person_id = person_id_of(state)
            if (
                not isinstance(user_id, str)
                or person_id is None
                or (old := slugify(user_id)) not in groups
            ):
                continue
            new = person_group(person_id)
            _LOGGER.debug("Summaries of user %s now belong to %s", user_id, person_id)
            book.move_group(old, new)
            groups.discard(old)
            moved += 1
        if moved:
            self.store.async_changed()
        return moved

    @callback
    def async_rename_groups(self, renamed: Callable[[str], str | None]) -> int:
        """People's groups take their new names (`renamed`: a group's new name, or None
        when it stays), nothing lost; how many groups moved."""
        book = self.store.book
        moved = 0
        for group in book.groups():
            if (new := renamed(group)) is not None and new != group:
                book.move_group(group, new)
                moved += 1
        if moved:
            self.store.async_changed()
        return moved

    @callback
    def async_drop_group(self, group: str) -> int:
        """Forget a group's summaries and profile (an erasure); how many summaries went."""
        gone = self.store.book.drop_group(group)
        self.store.async_changed()
        return gone

    async def _async_day_messages(self, day: date) -> list[DayMessage]:
        """The day's Communication events (local day), grouped by the writer's mode."""
        start = dt_util.start_of_local_day(day)
        end = dt_util.start_of_local_day(day + timedelta(days=1))
        events = []
        offset = 0
        while True:
            query = HistoryQuery(
                event_type=HistoryEventType.COMMUNICATION,
                start_time=start.timestamp(),
                end_time=end.timestamp() - 1e-6,
                limit=MAX_QUERY_LIMIT,
                offset=offset,
                ascending=True,
            )
            page, total = await self.recorder.async_run(self.recorder.store.query_events, query)
            events.extend(page)
            offset += len(page)
            if not page or offset >= total:
                break
        sessions: dict[str | None, tuple[str, bool]] = {}
        names: dict[str, str] = {}
        messages: list[DayMessage] = []
        for event in events:
            data = event.event_data if isinstance(event.event_data, dict) else {}
            text = data.get("text")
            if not isinstance(text, str) or not text.strip():
                continue
            if data.get("direction") == "in":
                user_id = data.get("user_id")
                group = self._group_of_question(data)
                household = _said_by_household(data)
                sessions[event.session_id] = group, household
                speaker = "user"
                if (person := self._person_of_question(data)) is not None:
                    speaker = person_name(self.hass, person)
                elif isinstance(user_id, str):
                    if user_id not in names:
                        user = await self.hass.auth.async_get_user(user_id)
                        names[user_id] = user.name if user is not None and user.name else "user"
                    speaker = names[user_id]
            else:
                if event.session_id not in sessions:
                    sessions[event.session_id] = await self._async_session_group(
                        event.session_id, start.timestamp()
                    )
                group, household = sessions[event.session_id]
                # An answer names whose turn it was: two people's turns under one
                # conversation id never share a group.
                if isinstance(person := data.get(PERSON_KEY), str) and person:
                    group, household = person_group(person), False
                speaker = "assistant"
            messages.append(DayMessage(event.timestamp, group, speaker, text.strip(), household))
        return messages

    async def _async_summarise_day(self, day: date, only: set[str] | None = None) -> int | None:
        """Write each group's daily summary of day; how many were written (None: the
        history could not be read)."""
        try:
            messages = await self._async_day_messages(day)
        except HomeAssistantError as err:
            _LOGGER.warning("Summaries of %s wait: the history is unavailable (%s)", day, err)
            return None
        by_group: dict[str, list[DayMessage]] = {}
        for message in messages:
            by_group.setdefault(message.group, []).append(message)
        writer = self.writer
        written_count = 0
        for group, talk in sorted(by_group.items()):
            if only is not None and group not in only:
                continue
            tz = dt_util.get_default_time_zone()
            lines = transcript_lines(
                (datetime.fromtimestamp(m.when, tz).strftime("%H:%M"), m.speaker, m.text)
                for m in talk
            )
            users = [
                u
                for u, _ in Counter(
                    m.speaker for m in talk if m.speaker != "assistant"
                ).most_common(5)
            ]
            asking = None
            if writer is not None and writer.summarizer is not None:
                request = await self.hass.async_add_executor_job(
                    writer.summarizer.daily_request, group, day.isoformat(), lines
                )
                asking = writer.summarizer.daily(request)
            written = await self._async_write(
                f"{group} {day}",
                asking,
                [m.text for m in talk if m.speaker != "assistant"],
                [],
                users,
            )
            if written is None:
                continue
            self.store.book.write_daily(
                group,
                day,
                written,
                len(talk),
                writer.agent_id if writer else "",
                _now_text(),
                household=not is_person_group(group) and all(m.household for m in talk),
            )
            self.store.async_changed()
            written_count += 1
        return written_count

    async def _async_write(
        self,
        what: str,
        asking: Any,
        texts: list[str],
        hints: list[str],
        users: list[str],
        *,
        fallback: bool = True,
    ) -> Written | None:
        """The model's summary, else (when fallback) an extractive one."""
        if asking is not None:
            try:
                answer = await asking
            except SummaryUnavailable as err:
                self._model_failed = True
                _LOGGER.warning(
                    "Summary of %s written without the model (%s); it is rewritten later",
                    what,
                    err.reason,
                )
                if not fallback:
                    return None
            else:
                return Written(
                    answer["summary"],
                    answer["topics"],
                    answer["highlights"],
                    answer["active_users"] or users,
                    extractive=False,
                    is_era_shift=answer.get("is_era_shift", False),
                    theme=answer.get("theme", ""),
                )
        elif not fallback:
            return None
        summary, topics, highlights = await self.hass.async_add_executor_job(
            extractive_summary, texts, 3, 5, hints
        )
        return Written(summary, topics, highlights, users, extractive=True)

    # -- The cycle -------------------------------------------------------------------------

    def _ask_for(self, job: AggregationJob) -> Any:
        writer = self.writer
        if writer is None or writer.summarizer is None:
            return None
        lines = [summary_line(child) for child in job.children]
        if (earlier := self.store.book.earlier(job)) is not None:
            lines.insert(0, f"(This period's earlier summary) {summary_line(earlier)}")
        if job.period_type is PeriodType.WEEKLY:
            return writer.summarizer.weekly(job.group_id, job.period_start, job.period_end, lines)
        return writer.summarizer.monthly(job.group_id, job.period_start[:7], lines)

    async def _async_fold(
        self, job: AggregationJob, *, fallback: bool = True
    ) -> tuple[GroupSummary, Written] | None:
        earlier = self.store.book.earlier(job)
        written = await self._async_write(
            f"{job.group_id} {job.period_type} {job.period_start}",
            self._ask_for(job),
            [
                *([earlier.summary] if earlier is not None else []),
                *(c.summary for c in job.children),
            ],
            [topic for child in job.children for topic in child.topics],
            [],
            fallback=fallback,
        )
        if written is None:
            return None
        writer = self.writer
        summary = self.store.book.fold(job, written, writer.agent_id if writer else "", _now_text())
        self.store.async_changed()
        return summary, written

    async def _async_cycle(self, counts: dict[str, int]) -> None:
        """One aggregation cycle for every group: decay, weekly, monthly, prune."""
        book = self.store.book
        book.update_decay_scores(dt_util.utcnow())
        today = dt_util.now().date()
        for group in book.groups():
            for job in book.plan(group, PeriodType.DAILY, today):
                if await self._async_fold(job) is not None:
                    counts["weekly"] += 1
            for job in book.plan(group, PeriodType.WEEKLY, today):
                if (folded := await self._async_fold(job)) is not None:
                    counts["monthly"] += 1
                    if book.note_era(*folded):
                        counts["eras"] += 1
        counts["pruned"] += book.prune_expired()
        self.store.async_changed()

    async def _async_rewrite_extractive(self) -> None:
        """Summaries written without the model, written again by it (a few per cycle)."""
        writer = self.writer
        if writer is None or writer.summarizer is None:
            return
        book = self.store.book
        pending: list[GroupSummary] = []
        for summary in sorted(
            (s for s in book if s.rewrite_pending and s.period_type is not PeriodType.ERA),
            key=lambda s: s.period_start,
        ):
            children = [book.get(i) for i in summary.aggregated_from]
            if summary.period_type is not PeriodType.DAILY and not (children and all(children)):
                summary.rewrite_pending = False  # its parts were pruned: nothing to rewrite from
                self.store.async_changed()
                continue
            pending.append(summary)
            if len(pending) == MAX_REWRITES:
                break
        for summary in pending:
            self._model_failed = False
            if summary.period_type is PeriodType.DAILY:
                day = date.fromisoformat(summary.period_start)
                if await self._async_summarise_day(day, only={summary.group_id}) is None:
                    return  # the history is unavailable: next cycle
                if self._model_failed:
                    return  # the model is still unreachable: next cycle
                if (again := book.get(summary.summary_id)) is not None and again.extractive:
                    again.rewrite_pending = False  # its talk is gone from the history
                    self.store.async_changed()
                continue
            job = AggregationJob(
                summary.group_id,
                summary.period_type,
                summary.period_start,
                summary.period_end,
                tuple(c for i in summary.aggregated_from if (c := book.get(i)) is not None),
            )
            folded = await self._async_fold(job, fallback=False)
            if folded is None:
                return
            if folded[0].period_type is PeriodType.MONTHLY:
                book.note_era(*folded)


def _now_text() -> str:
    return dt_util.utcnow().isoformat()
