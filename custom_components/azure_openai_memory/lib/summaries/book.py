"""Hierarchical summaries of what was talked about: daily -> weekly -> monthly -> eras.

Kept in memory and persisted by the caller (Home Assistant's Store). Each
summary's id is derived from (group, period type, start), and a summary that was folded
into a larger one carries a link to it: rerunning an interrupted cycle rewrites the same
records instead of adding new ones, and "already aggregated?" is one attribute read.
"""

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from enum import StrEnum
import math
import re
from typing import Any, Final
import uuid

from ..errors import InputError


class PeriodType(StrEnum):
    """Summary period granularity."""

    DAILY = "daily"
    WEEKLY = "weekly"
    MONTHLY = "monthly"
    ERA = "era"


DECAY_CONFIG: Final[dict[str, dict[str, int]]] = {
    "daily": {
        "max_age_days": 14,  # Keep 2 weeks of daily
        "decay_start_days": 7,  # Start decay after 1 week
        "aggregate_after_days": 7,  # Aggregate to weekly after 7 days
    },
    "weekly": {
        "max_age_days": 90,  # Keep 3 months of weekly
        "decay_start_days": 30,  # Start decay after 1 month
        "aggregate_after_days": 30,  # Aggregate to monthly after 30 days
    },
    "monthly": {
        "max_age_days": 365,  # Keep 1 year of monthly
        "decay_start_days": 90,  # Start decay after 3 months
        "archive_after_days": 180,  # Archive (compress) after 6 months
    },
    "era": {
        "max_count": 10,  # Keep last 10 eras
        "min_duration_days": 14,  # Era must be at least 2 weeks
    },
}
PRUNE_BELOW: Final = 0.1
# A closed period is folded into the next one up with at least this many parts: a group
# that talks once a week keeps its past past the dailies' pruning. ("Two or more" would only
# avoid summarising nothing, which a closed bucket with a part never is.)
MIN_CHILDREN: Final = 1
# A monthly most of whose topic words (over this share) the era has never used has drifted
# away from it. Words are compared lightly stemmed, so rewording alone stays below it.
ERA_DRIFT_THRESHOLD: Final = 0.7
# An era remembers at most this many key topics, the most recent last.
ERA_MAX_KEY_TOPICS: Final = 30
TOPIC_EVOLUTION_WEEKS: Final = 12
# A day with this many messages is as active as a day gets (activity_score 1.0).
FULL_ACTIVITY_MESSAGES: Final = 50
SUMMARIES_VERSION: Final = 2
GROUP_PATTERN = re.compile(r"^[a-z0-9](?:[a-z0-9_]{0,126}[a-z0-9])?$")
HOME_GROUP: Final = "home"
_ID_NAMESPACE = uuid.UUID("7f0c5a52-3a43-4c1e-9b7e-6d2b6f1e0a04")


class SummaryError(InputError):
    """Bad input to the summaries."""


def validate_group(group_id: str) -> str:
    """A group id is a slug: users name it in service calls and it keys stored data."""
    if not isinstance(group_id, str) or not GROUP_PATTERN.match(group_id):
        raise SummaryError("invalid_group", group=group_id)
    return group_id


def validate_period_type(value: str) -> PeriodType:
    """A period type by its name, or a SummaryError."""
    try:
        return PeriodType(value)
    except ValueError as err:
        raise SummaryError("invalid_period_type", period_type=value) from err


def calculate_decay_score(created_at: str, period_type: str, now: datetime) -> float:
    """Returns 1.0 for fresh, decays to 0.0 at max_age.

    Uses exponential decay: score = e^(-λt) where λ = ln(2) / half_life_days. Eras do not
    decay: they are bounded by count instead.
    """
    config = DECAY_CONFIG[period_type]
    if "decay_start_days" not in config:
        return 1.0
    age_days = (now - datetime.fromisoformat(created_at.replace("Z", "+00:00"))).days
    if age_days < config["decay_start_days"]:
        return 1.0
    decay_period = config["max_age_days"] - config["decay_start_days"]
    half_life = decay_period / 3  # Reach ~0.125 at max_age
    effective_age = age_days - config["decay_start_days"]
    lambda_ = math.log(2) / half_life
    return max(0.0, math.exp(-lambda_ * effective_age))


def summary_id(group_id: str, period_type: PeriodType, period_start: str) -> str:
    """The same period of the same group always has the same id."""
    return str(uuid.uuid5(_ID_NAMESPACE, f"{group_id}|{period_type.value}|{period_start}"))


@dataclass(slots=True)
class GroupSummary:
    """One period of one group's talk: its text, topics, counts, decay and links."""

    summary_id: str
    agent_id: str
    group_id: str
    period_type: PeriodType
    period_start: str
    period_end: str
    summary: str
    topics: list[str] = field(default_factory=list)
    highlights: list[str] = field(default_factory=list)
    active_users: list[str] = field(default_factory=list)
    message_count: int = 0
    activity_score: float = 0.5
    decay_score: float = 1.0
    created_at: str = ""
    aggregated_from: list[str] = field(default_factory=list)
    # Ours: the summary this one was folded into, and whether no LLM wrote it.
    aggregated_into: str | None = None
    extractive: bool = False
    # Written without the model and still to be written again by it (False once its
    # parts or its talk are gone: nothing is left to rewrite it from).
    rewrite_pending: bool = False
    # The messages of each part as last folded in, kept after the part is pruned: a
    # summary's count is their sum, so it never shrinks with what is left.
    part_counts: dict[str, int] = field(default_factory=dict)
    # Everyone's to read: the talk of nobody known that came without a user (a shared
    # satellite, an automation), every part of it recorded since talk names its person.
    # False for a person's group, for the words of a user without a person, and for what
    # was written before (stored without it): that mixed everyone's talk.
    household: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The stored and service shape (fresh lists: safe to hand to another thread)."""
        return {
            "summary_id": self.summary_id,
            "agent_id": self.agent_id,
            "group_id": self.group_id,
            "period_type": self.period_type.value,
            "period_start": self.period_start,
            "period_end": self.period_end,
            "summary": self.summary,
            "topics": list(self.topics),
            "highlights": list(self.highlights),
            "active_users": list(self.active_users),
            "message_count": self.message_count,
            "activity_score": self.activity_score,
            "decay_score": self.decay_score,
            "created_at": self.created_at,
            "aggregated_from": list(self.aggregated_from),
            "aggregated_into": self.aggregated_into,
            "extractive": self.extractive,
            "rewrite_pending": self.rewrite_pending,
            "part_counts": dict(self.part_counts),
            "household": self.household,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GroupSummary":
        """A stored summary."""
        return cls(
            summary_id=str(data["summary_id"]),
            agent_id=str(data.get("agent_id", "")),
            group_id=str(data["group_id"]),
            period_type=PeriodType(data["period_type"]),
            period_start=str(data["period_start"]),
            period_end=str(data["period_end"]),
            summary=str(data.get("summary", "")),
            topics=[str(t) for t in data.get("topics", [])],
            highlights=[str(h) for h in data.get("highlights", [])],
            active_users=[str(u) for u in data.get("active_users", [])],
            message_count=int(data.get("message_count", 0)),
            activity_score=float(data.get("activity_score", 0.5)),
            decay_score=float(data.get("decay_score", 1.0)),
            created_at=str(data.get("created_at", "")),
            aggregated_from=[str(i) for i in data.get("aggregated_from", [])],
            aggregated_into=data.get("aggregated_into"),
            extractive=bool(data.get("extractive", False)),
            rewrite_pending=bool(data.get("rewrite_pending", data.get("extractive", False))),
            part_counts={str(i): int(n) for i, n in data.get("part_counts", {}).items()},
            household=data.get("household") is True,
        )

    def count_part(self, part: "GroupSummary") -> None:
        """A part folded in (again): its messages count, and the total follows."""
        self.part_counts[part.summary_id] = part.message_count
        self.message_count = sum(self.part_counts.values())


@dataclass(slots=True)
class GroupProfile:
    """What a group is about now: last summary, 12 weeks of topics, the current era."""

    group_id: str
    summary: str = ""
    topic_evolution: list[dict[str, Any]] = field(default_factory=list)
    current_era: dict[str, Any] | None = None
    # Everyone's to read (as GroupSummary.household): only while every summary that
    # shaped it was; a profile stored without it shaped by what was written before.
    household: bool = True

    def as_dict(self) -> dict[str, Any]:
        """The stored and service shape."""
        return {
            "group_id": self.group_id,
            "summary": self.summary,
            "topic_evolution": [
                {**week, "topics": list(week["topics"])} for week in self.topic_evolution
            ],
            "current_era": None
            if self.current_era is None
            else {**self.current_era, "key_topics": list(self.current_era["key_topics"])},
            "household": self.household,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GroupProfile":
        """A stored profile."""
        return cls(
            group_id=str(data["group_id"]),
            summary=str(data.get("summary", "")),
            topic_evolution=list(data.get("topic_evolution", [])),
            current_era=data.get("current_era"),
            household=data.get("household") is True,
        )


@dataclass(frozen=True, slots=True)
class AggregationJob:
    """One summary to (re)write from its parts: a week of dailies, a month of weeklies."""

    group_id: str
    period_type: PeriodType
    period_start: str
    period_end: str
    children: tuple[GroupSummary, ...]

    @property
    def summary_id(self) -> str:
        """The id the result gets."""
        return summary_id(self.group_id, self.period_type, self.period_start)


@dataclass(frozen=True, slots=True)
class Written:
    """What the text of a summary says, whoever wrote it."""

    summary: str
    topics: list[str]
    highlights: list[str]
    active_users: list[str]
    extractive: bool
    is_era_shift: bool = False
    theme: str = ""


def week_start(day: date) -> date:
    """The Monday of day's week."""
    return day - timedelta(days=day.weekday())


def month_end(first: date) -> date:
    """The last day of the month that starts at first."""
    following = date(first.year + first.month // 12, first.month % 12 + 1, 1)
    return following - timedelta(days=1)


def activity_score(message_count: int) -> float:
    """How busy a day was, 0-1."""
    return min(1.0, message_count / FULL_ACTIVITY_MESSAGES)


def _merge_into(kept: GroupSummary, other: GroupSummary) -> None:
    """One period of one group summarised twice (two groups became one): both, in one."""
    kept.summary = f"{kept.summary} {other.summary}".strip()
    kept.topics = list(dict.fromkeys([*kept.topics, *other.topics]))
    kept.highlights = list(dict.fromkeys([*kept.highlights, *other.highlights]))
    kept.active_users = list(dict.fromkeys([*kept.active_users, *other.active_users]))
    kept.aggregated_from = list(dict.fromkeys([*kept.aggregated_from, *other.aggregated_from]))
    kept.aggregated_into = kept.aggregated_into or other.aggregated_into
    for part, count in other.part_counts.items():
        kept.part_counts[part] = kept.part_counts.get(part, 0) + count
    kept.message_count += other.message_count
    kept.created_at = min(kept.created_at, other.created_at) or kept.created_at
    kept.extractive = kept.extractive or other.extractive
    kept.rewrite_pending = kept.rewrite_pending or other.rewrite_pending
    kept.household = kept.household and other.household


def merge_active_users(children: Iterable[GroupSummary]) -> list[str]:
    """Active users of the parts, the most often active first (top 5)."""
    counter: Counter[str] = Counter()
    for child in children:
        counter.update(child.active_users)
    return [user for user, _ in counter.most_common(5)]


class SummaryBook:
    """Every group's summaries and profile, indexed by group and period type."""

    def __init__(self) -> None:
        self._by_id: dict[str, GroupSummary] = {}
        self._by_kind: dict[tuple[str, PeriodType], dict[str, GroupSummary]] = {}
        self.profiles: dict[str, GroupProfile] = {}
        # The last local day whose dailies were written by the daily run.
        self.summarised_through: str | None = None

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self) -> Iterator[GroupSummary]:
        return iter(self._by_id.values())

    def get(self, summary_id_: str) -> GroupSummary | None:
        """One summary by id."""
        return self._by_id.get(summary_id_)

    def groups(self) -> list[str]:
        """Every group with a summary or a profile, sorted."""
        return sorted({group for group, _ in self._by_kind} | set(self.profiles))

    def of(self, group_id: str, period_type: PeriodType) -> list[GroupSummary]:
        """A group's summaries of one type, in no particular order."""
        return list(self._by_kind.get((group_id, period_type), {}).values())

    def newest(self, group_id: str, period_type: PeriodType, limit: int) -> list[GroupSummary]:
        """A group's latest summaries of one type, newest first."""
        found = self._by_kind.get((group_id, period_type), {}).values()
        return sorted(found, key=lambda s: s.period_start, reverse=True)[:limit]

    def put(self, summary: GroupSummary) -> None:
        """Add or replace (same id: same group, period and start)."""
        self._by_id[summary.summary_id] = summary
        self._by_kind.setdefault((summary.group_id, summary.period_type), {})[
            summary.summary_id
        ] = summary

    def remove(self, summary: GroupSummary) -> None:
        """Forget one summary."""
        self._by_id.pop(summary.summary_id, None)
        kind = self._by_kind.get((summary.group_id, summary.period_type))
        if kind is not None:
            kind.pop(summary.summary_id, None)
            if not kind:
                del self._by_kind[(summary.group_id, summary.period_type)]

    def profile(self, group_id: str) -> GroupProfile:
        """A group's profile, made on first use."""
        if (profile := self.profiles.get(group_id)) is None:
            profile = self.profiles[group_id] = GroupProfile(group_id)
        return profile

    def as_dict(self) -> dict[str, Any]:
        """Everything, as stored."""
        return {
            "summaries": [summary.as_dict() for summary in self._by_id.values()],
            "profiles": {group: p.as_dict() for group, p in self.profiles.items()},
            "summarised_through": self.summarised_through,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SummaryBook":
        """A stored book."""
        book = cls()
        for item in data.get("summaries", []):
            book.put(GroupSummary.from_dict(item))
        for group, profile in data.get("profiles", {}).items():
            book.profiles[group] = GroupProfile.from_dict({**profile, "group_id": group})
        book.summarised_through = data.get("summarised_through")
        return book

    def move_group(self, old: str, new: str) -> int:
        """Give every summary and the profile of group `old` to group `new`, nothing lost;
        how many summaries moved.

        A summary's id follows from its group, so each gets its new id and every link to
        it (folded into, folded from, part counts, an era's founder) follows. A period
        `new` already has is merged: both texts, every topic, highlight and person, the
        messages of both.
        """
        moving = [s for s in self._by_id.values() if s.group_id == old]
        renamed = {s.summary_id: summary_id(new, s.period_type, s.period_start) for s in moving}
        for summary in moving:
            self.remove(summary)
        for summary in moving:
            summary.summary_id = renamed[summary.summary_id]
            summary.group_id = new
            summary.aggregated_from = [renamed.get(i, i) for i in summary.aggregated_from]
            if summary.aggregated_into is not None:
                summary.aggregated_into = renamed.get(
                    summary.aggregated_into, summary.aggregated_into
                )
            summary.part_counts = {renamed.get(i, i): n for i, n in summary.part_counts.items()}
            if (present := self._by_id.get(summary.summary_id)) is not None:
                _merge_into(present, summary)
            else:
                self.put(summary)
        if (profile := self.profiles.pop(old, None)) is not None:
            if profile.current_era is not None and "founded_by" in profile.current_era:
                founder = profile.current_era["founded_by"]
                profile.current_era["founded_by"] = renamed.get(founder, founder)
            kept = self.profiles.get(new)
            if kept is None:
                profile.group_id = new
                self.profiles[new] = profile
            else:
                weeks = {p["week"]: p for p in profile.topic_evolution}
                weeks |= {p["week"]: p for p in kept.topic_evolution}
                kept.topic_evolution = [weeks[k] for k in sorted(weeks)][-TOPIC_EVOLUTION_WEEKS:]
                kept.summary = kept.summary or profile.summary
                kept.current_era = kept.current_era or profile.current_era
                kept.household = kept.household and profile.household
        return len(moving)

    def drop_group(self, group_id: str) -> int:
        """Forget every summary and the profile of a group (an erasure); how many went."""
        gone = [s for s in self._by_id.values() if s.group_id == group_id]
        for summary in gone:
            self.remove(summary)
        self.profiles.pop(group_id, None)
        return len(gone)

    def write_daily(
        self,
        group_id: str,
        day: date,
        written: Written,
        message_count: int,
        agent_id: str,
        now: str,
        *,
        household: bool = False,
    ) -> GroupSummary:
        """A group's day; written again for the same day, it keeps its id and age, and its
        week (if already folded) is written again with it on the next cycle. household:
        its talk is everyone's to read (GroupSummary.household)."""
        sid = summary_id(group_id, PeriodType.DAILY, day.isoformat())
        previous = self._by_id.get(sid)
        daily = GroupSummary(
            summary_id=sid,
            agent_id=agent_id,
            group_id=group_id,
            period_type=PeriodType.DAILY,
            period_start=day.isoformat(),
            period_end=day.isoformat(),
            summary=written.summary,
            topics=written.topics[:7],
            highlights=written.highlights[:3],
            active_users=written.active_users[:5],
            message_count=message_count,
            activity_score=activity_score(message_count),
            created_at=previous.created_at if previous is not None else now,
            extractive=written.extractive,
            rewrite_pending=written.extractive,
            household=household,
        )
        self.put(daily)
        profile = self.profile(group_id)
        if not profile.topic_evolution:
            profile.summary = daily.summary
            profile.household = profile.household and household
        return daily

    # -- The aggregation cycle ----------------------------------------------------------------

    def update_decay_scores(self, now: datetime) -> None:
        """Every summary's decay score, in place."""
        for summary in self._by_id.values():
            summary.decay_score = calculate_decay_score(
                summary.created_at, summary.period_type.value, now
            )

    def prune_expired(self, min_decay_score: float = PRUNE_BELOW) -> int:
        """Delete summaries whose decay score fell below the threshold; how many went."""
        expired = [s for s in self._by_id.values() if s.decay_score < min_decay_score]
        for summary in expired:
            self.remove(summary)
        return len(expired)

    def plan(self, group_id: str, period_type: PeriodType, today: date) -> list[AggregationJob]:
        """The summaries of the next type up that period_type's parts call for.

        Linear: parts bucketed by week (dailies) or month (weeklies). A bucket is folded once closed
        (its last day more than aggregate_after_days ago: a week is written once, not again
        each day while it fills), when it holds a part not yet folded in; parts already
        folded into it go in again, so a late part extends it instead of duplicating it.
        """
        target = PeriodType.WEEKLY if period_type is PeriodType.DAILY else PeriodType.MONTHLY
        after = DECAY_CONFIG[period_type.value]["aggregate_after_days"]
        cutoff = today - timedelta(days=after)
        buckets: dict[date, list[GroupSummary]] = {}
        for part in self._by_kind.get((group_id, period_type), {}).values():
            start = date.fromisoformat(part.period_start)
            key = week_start(start) if target is PeriodType.WEEKLY else start.replace(day=1)
            buckets.setdefault(key, []).append(part)
        jobs: list[AggregationJob] = []
        for start, parts in sorted(buckets.items()):
            end = start + timedelta(days=6) if target is PeriodType.WEEKLY else month_end(start)
            if end >= cutoff:
                continue
            start_text = start.isoformat()
            parent = summary_id(group_id, target, start_text)
            members = [p for p in parts if p.aggregated_into in (None, parent)]
            if len(members) < MIN_CHILDREN or all(p.aggregated_into for p in members):
                continue
            members.sort(key=lambda p: p.period_start)
            jobs.append(
                AggregationJob(group_id, target, start_text, end.isoformat(), tuple(members))
            )
        return jobs

    def earlier(self, job: AggregationJob) -> GroupSummary | None:
        """The job's summary as written before, if some of its parts are gone since (pruned):
        what they said reaches the new summary only through it."""
        previous = self._by_id.get(job.summary_id)
        if previous is None:
            return None
        present = {child.summary_id for child in job.children}
        return None if present.issuperset(previous.aggregated_from) else previous

    def fold(self, job: AggregationJob, written: Written, agent_id: str, now: str) -> GroupSummary:
        """Write a job's summary and link its parts to it, in one step (nothing half-done).

        Written again, it keeps the parts and the messages of the parts gone since (the
        union, never less), and the summary above it is written again in turn.
        """
        previous = self._by_id.get(job.summary_id)
        present = {child.summary_id for child in job.children}
        children = [c.summary_id for c in job.children]
        part_counts: dict[str, int] = {}
        if previous is not None:
            gone = [i for i in previous.aggregated_from if i not in present]
            part_counts = {i: n for i, n in previous.part_counts.items() if i not in present}
            children = [*gone, *children]
        part_counts |= {c.summary_id: c.message_count for c in job.children}
        parent = GroupSummary(
            summary_id=job.summary_id,
            agent_id=agent_id,
            group_id=job.group_id,
            period_type=job.period_type,
            period_start=job.period_start,
            period_end=job.period_end,
            summary=written.summary,
            topics=written.topics[:7],
            highlights=written.highlights[:4],
            active_users=written.active_users[:5] or merge_active_users(job.children),
            message_count=sum(part_counts.values()),
            activity_score=sum(c.activity_score for c in job.children) / len(job.children),
            created_at=previous.created_at if previous is not None else now,
            aggregated_from=children,
            extractive=written.extractive,
            rewrite_pending=written.extractive,
            part_counts=part_counts,
            # What it was written from: its parts, and its earlier text.
            household=all(c.household for c in job.children)
            and (previous is None or previous.household),
        )
        self.put(parent)
        for child in job.children:
            child.aggregated_into = parent.summary_id
        if parent.period_type is PeriodType.WEEKLY:
            self._note_week(parent)
        return parent

    def _note_week(self, weekly: GroupSummary) -> None:
        """The profile's topic evolution: one point per week, the last 12 weeks."""
        profile = self.profile(weekly.group_id)
        year, week, _ = date.fromisoformat(weekly.period_start).isocalendar()
        label = f"{year}-W{week:02d}"
        points = {p["week"]: p for p in profile.topic_evolution}
        points[label] = {
            "week": label,
            "topics": list(weekly.topics),
            "activity_score": weekly.activity_score,
        }
        profile.topic_evolution = [points[k] for k in sorted(points)][-TOPIC_EVOLUTION_WEEKS:]
        profile.summary = weekly.summary
        profile.household = profile.household and weekly.household

    def note_era(self, monthly: GroupSummary, written: Written) -> bool:
        """Era detection; True when this monthly started a new era.

        A group's first monthly starts its first era, on the first day talked about in it.
        Later, a monthly starts a new one when the LLM says the talk shifted or its topics
        drifted past ERA_DRIFT_THRESHOLD from every topic of the era so far, and the era
        has lasted min_duration_days by the monthly's start. A monthly older than the
        current era (an old month written again) only joins the era it belongs to.
        """
        profile = self.profile(monthly.group_id)
        profile.household = profile.household and monthly.household
        era = profile.current_era
        if era is not None and era.get("founded_by") == monthly.summary_id:
            era["household"] = era.get("household") is True and monthly.household
            era["key_topics"] = _key_topics(era["key_topics"], monthly.topics)
            era["theme"] = written.theme or era["theme"]
            self._write_era(monthly.group_id, era, monthly, monthly.created_at)
            return False
        if era is not None and monthly.period_end < era["started"]:
            return False
        lasted = (
            0
            if era is None
            else (date.fromisoformat(monthly.period_start) - date.fromisoformat(era["started"]))
        )
        long_enough = era is None or (
            isinstance(lasted, timedelta)
            and lasted.days >= DECAY_CONFIG["era"]["min_duration_days"]
        )
        drifted = era is None or (
            written.is_era_shift
            or topic_drift(monthly.topics, era["key_topics"]) > ERA_DRIFT_THRESHOLD
        )
        if era is not None and not (long_enough and drifted):
            era["key_topics"] = _key_topics(era["key_topics"], monthly.topics)
            era["household"] = era.get("household") is True and monthly.household
            self._extend_era(monthly.group_id, era, monthly)
            return False
        if era is not None:
            old = self._by_id.get(summary_id(monthly.group_id, PeriodType.ERA, era["started"]))
            if old is not None and monthly.summary_id in old.aggregated_from:
                old.aggregated_from.remove(monthly.summary_id)
                old.part_counts.pop(monthly.summary_id, None)
                old.message_count = sum(old.part_counts.values())
        first_talk = min(
            (c.period_start for i in monthly.aggregated_from if (c := self._by_id.get(i))),
            default=monthly.period_start,
        )
        profile.current_era = {
            "started": max(first_talk, monthly.period_start),
            "theme": written.theme or ", ".join(monthly.topics[:3]),
            "key_topics": _key_topics([], monthly.topics),
            "founded_by": monthly.summary_id,
            "household": monthly.household,
        }
        self._write_era(monthly.group_id, profile.current_era, monthly, monthly.created_at)
        self._keep_last_eras(monthly.group_id)
        return True

    def _extend_era(self, group_id: str, era: dict[str, Any], monthly: GroupSummary) -> None:
        record = self._by_id.get(summary_id(group_id, PeriodType.ERA, era["started"]))
        if record is None:
            return
        if monthly.summary_id not in record.aggregated_from:
            record.aggregated_from.append(monthly.summary_id)
        record.period_end = max(record.period_end, monthly.period_end)
        record.count_part(monthly)
        record.topics = list(era["key_topics"])
        record.household = record.household and era["household"]

    def _write_era(
        self, group_id: str, era: dict[str, Any], monthly: GroupSummary, now: str
    ) -> None:
        era_id = summary_id(group_id, PeriodType.ERA, era["started"])
        previous = self._by_id.get(era_id)
        children = list(previous.aggregated_from) if previous is not None else []
        if monthly.summary_id not in children:
            children.append(monthly.summary_id)
        record = GroupSummary(
            summary_id=era_id,
            agent_id=monthly.agent_id,
            group_id=group_id,
            period_type=PeriodType.ERA,
            period_start=era["started"],
            period_end=max(monthly.period_end, previous.period_end if previous else ""),
            summary=era["theme"] if not monthly.summary else monthly.summary,
            topics=list(era["key_topics"]),
            highlights=list(monthly.highlights),
            active_users=list(monthly.active_users),
            activity_score=monthly.activity_score,
            created_at=previous.created_at if previous is not None else now,
            aggregated_from=children,
            extractive=monthly.extractive,
            part_counts=dict(previous.part_counts) if previous is not None else {},
            # An era founded before it was known whose talk is whose stays so.
            household=era.get("household") is True and (previous is None or previous.household),
        )
        record.count_part(monthly)
        self.put(record)

    def _keep_last_eras(self, group_id: str) -> None:
        eras = self.newest(group_id, PeriodType.ERA, len(self._by_id))
        for old in eras[DECAY_CONFIG["era"]["max_count"] :]:
            self.remove(old)

    def context(
        self, group_id: str, shown: Callable[[GroupSummary], bool] | None = None
    ) -> list[GroupSummary]:
        """What a turn carries of the group's past: the coarsest summaries that together
        hold every day kept, newest first; of those shown (None: all), a summary not shown
        counting as gone.

        A day is held by its daily until its week is folded, then by the weekly, then by
        the monthly; a summary is left out only while the one it was folded into is kept
        (so none is carried twice, and a pruned parent leaves no hole). Monthlies are pruned
        before their era: an era is carried while one of its months has lost its monthly,
        after the monthlies (it stands for the months before them).
        """

        def kept(summary_id_: str | None) -> bool:
            found = self._by_id.get(summary_id_) if summary_id_ is not None else None
            return found is not None and (shown is None or shown(found))

        cover = [
            summary
            for kind in (PeriodType.DAILY, PeriodType.WEEKLY, PeriodType.MONTHLY)
            for summary in self.of(group_id, kind)
            if kept(summary.summary_id) and not kept(summary.aggregated_into)
        ]
        cover.extend(
            era
            for era in self.of(group_id, PeriodType.ERA)
            if kept(era.summary_id) and not all(kept(month) for month in era.aggregated_from)
        )
        return sorted(
            cover,
            key=lambda s: (s.period_type is not PeriodType.ERA, s.period_end, s.period_start),
            reverse=True,
        )


# -- Topic words and the extractive fallback ------------------------------------------------

_WORD = re.compile(r"[^\W\d_][\w'-]*", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
STOPWORDS: Final = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just let me more most my myself no nor not now of off on once only or other our
    ours ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves please thanks thank okay ok yes yeah hey hi hello what's it's i'm don't can't
    you're that's there's let's also get got go going want like know think tell said say
    today tomorrow yesterday would could should much many one two turn set""".split()  # noqa: SIM905
)


def topic_words(text: str) -> list[str]:
    """Lower-case words of three letters or more that are not filler."""
    return [
        w
        for w in (m.group().lower().strip("'-") for m in _WORD.finditer(text))
        if len(w) >= 3 and w not in STOPWORDS
    ]


_SUFFIXES: Final = ("ings", "ing", "ies", "es", "ed", "s")


def topic_stem(word: str) -> str:
    """A word without its commonest English ending (gardening, gardens -> garden)."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _related(stem: str, known: set[str]) -> bool:
    """Same stem, or one the start of the other (seed, seedling)."""
    if stem in known:
        return True
    return len(stem) >= 4 and any(
        len(other) >= 4 and (other.startswith(stem) or stem.startswith(other)) for other in known
    )


def topic_drift(topics: Iterable[str], key_topics: Iterable[str]) -> float:
    """The share of the new topics' words the era never used (stemmed): 0 same subject
    (however reworded), 1 nothing shared. Not Jaccard: the era's topics build up over its
    months, and a month is not new for talking about fewer of them."""
    new = {topic_stem(w) for w in topic_words(" ".join(topics))}
    if not new:
        return 0.0
    known = {topic_stem(w) for w in topic_words(" ".join(key_topics))}
    return sum(not _related(stem, known) for stem in new) / len(new)


def _key_topics(era_topics: Iterable[str], monthly_topics: Iterable[str]) -> list[str]:
    """The era's topics with the month's added, the most recent last, bounded."""
    merged = dict.fromkeys([*era_topics, *monthly_topics])
    return list(merged)[-ERA_MAX_KEY_TOPICS:]


def extractive_summary(
    texts: Iterable[str],
    max_sentences: int = 3,
    max_topics: int = 5,
    topic_hints: Iterable[str] = (),
) -> tuple[str, list[str], list[str]]:
    """(summary, topics, highlights) without an LLM: top sentences by topic-word weight.

    Sentences score by the frequency of their topic words across all the text (divided
    by their length, so long sentences do not win by size); the best keep their original
    order. Topics are the most frequent topic words, after any hints (the topics of the
    parts, when summarising summaries).
    """
    sentences: list[str] = []
    for text in texts:
        sentences.extend(s.strip() for s in _SENTENCE.split(text) if s.strip())
    counts: Counter[str] = Counter()
    for sentence in sentences:
        counts.update(topic_words(sentence))
    hinted = Counter(topic_hints)
    topics = [t for t, _ in hinted.most_common(max_topics)]
    for word, _ in counts.most_common():
        if len(topics) >= max_topics:
            break
        if word not in topics:
            topics.append(word)
    scored = []
    for index, sentence in enumerate(dict.fromkeys(sentences)):
        words = topic_words(sentence)
        if words:
            scored.append((sum(counts[w] for w in words) / math.sqrt(len(words)), index, sentence))
    best = sorted(scored, key=lambda item: (-item[0], item[1]))[:max_sentences]
    chosen = [sentence for _, _, sentence in sorted(best, key=lambda item: item[1])]
    summary = " ".join(chosen) if chosen else "No conversation worth summarising."
    return summary, topics, chosen[:4]


def transcript_lines(messages: Iterable[tuple[str, str, str]]) -> list[str]:
    """(time, speaker, text) as lines for the model; `<` escaped so no line closes a tag."""
    return [f"{when} {speaker}: {text}".replace("<", "\\u003c") for when, speaker, text in messages]


def summary_line(summary: GroupSummary) -> str:
    """One part, as the model sees it when summarising the period above."""
    text = (
        f"{summary.period_start} to {summary.period_end} ({summary.message_count} messages, "
        f"activity {summary.activity_score:.1f}): {summary.summary} "
        f"Topics: {', '.join(summary.topics)}. Highlights: {'; '.join(summary.highlights)}"
    )
    return text.replace("<", "\\u003c")


def migrate_summaries(version: int, data: dict[str, Any]) -> dict[str, Any]:
    """Stored summaries of an older version, in SUMMARIES_VERSION's form; a newer file is
    refused."""
    if version > SUMMARIES_VERSION:
        raise ValueError(f"summaries stored by a newer version ({version})")
    if version < 2:
        data = _with_part_counts(data)
    return data


def _with_part_counts(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 did not keep each part's messages. Every summary keeps the count it has:
    its parts still stored count what they count now, and those pruned since share what
    is left of it (they are gone for good, so only their sum matters).

    The migrated file is written at once, before it is read: one that is not summaries is
    refused here (a ValueError), so that it is set aside as it was.
    """
    try:
        stored = data.get("summaries", [])
        counts = {str(item["summary_id"]): int(item.get("message_count", 0)) for item in stored}
        summaries = []
        for item in stored:
            parts = [str(i) for i in item.get("aggregated_from", [])]
            part_counts = {i: counts[i] for i in parts if i in counts}
            gone = [i for i in parts if i not in counts]
            left = int(item.get("message_count", 0)) - sum(part_counts.values())
            if gone and left > 0:
                share, extra = divmod(left, len(gone))
                part_counts |= {i: share + (n < extra) for n, i in enumerate(gone)}
            summaries.append({**item, "part_counts": part_counts})
        migrated = {**data, "summaries": summaries}
        SummaryBook.from_dict(migrated)
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        raise ValueError(f"not summaries: {err}") from err
    return migrated
