"""What a memory is, and what goes into and comes out of the store: this module owns
the memories' kinds, confidences and sources, the active and archived records and their
stored form, the settings a user tunes, the results of save, search and forget, the
limits on input and the checks every input passes before anything changes, and the
confidence and recency boosts that break ties between equally relevant memories. It
indexes and ranks nothing, so every other module of the package can build on it.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
import functools
from typing import Any
import unicodedata

from ..errors import InputError

MAX_CONTENT_LENGTH = 2000
MAX_TAG_LENGTH = 64
MAX_TAGS = 32
MAX_SEARCH_LIMIT = 50
# Everyone's memories; a person's private ones are "person:<the person's id>".
HOUSEHOLD_SCOPE = "household"
PERSON_SCOPE_PREFIX = "person:"
MAX_SCOPE_LENGTH = 255
# Provenance fields a caller names (ids of conversations, events, people, devices).
MAX_PROVENANCE_LENGTH = 255
DAY = 86_400.0
# Tie-breakers after relevance: confident and recent memories first. Kept small: cosine
# similarities of a right and a wrong answer are often 0.05 apart.
CONFIDENCE_BOOST = {"high": 0.02, "medium": 0.01, "low": 0.0}
RECENT_DAYS, RECENT_BOOST = 7, 0.01
MONTH_DAYS, MONTH_BOOST = 30, 0.005

# Apostrophes written alike (typographic, modifier letter) are one: the ASCII one.
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u02bc": "'", "\u2018": "'"})
# Besides letters, digits and combining marks of any script, what a tag may hold.
_PREFIX_CHARACTERS = frozenset("_-")
_VALUE_CHARACTERS = frozenset("_-.'")


class MemoryType(StrEnum):
    """What a memory is about: a person's injuries, preferences, circumstances, insights and
    responses to training, and a home's household facts and routines."""

    INJURY_HISTORY = "injury_history"
    PREFERENCE = "preference"
    CONTEXT = "context"
    INSIGHT = "insight"
    TRAINING_RESPONSE = "training_response"
    HOUSEHOLD = "household"
    ROUTINE = "routine"


class MemoryConfidence(StrEnum):
    """How sure we are: an explicit statement or repeated (high), once (medium), inferred (low)."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class MemorySource(StrEnum):
    """Where a memory came from."""

    ACTIVITY_NOTE = "activity_note"
    USER_MESSAGE = "user_message"
    CLAUDE_CODE = "claude_code"
    PATTERN_ANALYSIS = "pattern_analysis"
    MANUAL = "manual"
    CONVERSATION = "conversation"
    AUTOMATION = "automation"


class Origin(StrEnum):
    """Where a memory was said or made: a conversation turn, an automation or script, a
    service call by a person, or an import of an export."""

    CONVERSATION = "conversation"
    AUTOMATION = "automation"
    SERVICE = "service"
    IMPORT = "import"


class Authority(StrEnum):
    """Whether the person said it themselves, or the model (or an automation) concluded it."""

    STATED = "stated"
    INFERRED = "inferred"


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a memory came from, so a household can tell what it was told from what was
    concluded, and by whom. Memories saved before it was kept have none."""

    source: Origin
    conversation_id: str | None = None
    history_event_id: str | None = None
    # A person entity id, or the automation's or script's entity id.
    said_by: str | None = None
    # A satellite's or device's id, or "app".
    channel: str | None = None
    authority: Authority = Authority.STATED

    def as_dict(self) -> dict[str, Any]:
        """The stored and reported form."""
        return {
            "source": self.source.value,
            "conversation_id": self.conversation_id,
            "history_event_id": self.history_event_id,
            "said_by": self.said_by,
            "channel": self.channel,
            "authority": self.authority.value,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Provenance":
        """Read the stored form back; MemoryInputError for a value that is no provenance."""
        if not isinstance(data, dict):
            raise MemoryInputError("memory_provenance_invalid", value=type(data).__name__)
        texts = {
            name: _provenance_text(data.get(name), name)
            for name in ("conversation_id", "history_event_id", "said_by", "channel")
        }
        return cls(
            source=_enum(Origin, data.get("source"), "memory_provenance_invalid"),
            authority=parse_authority(data.get("authority", Authority.STATED.value)),
            **texts,
        )


def _provenance_text(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_PROVENANCE_LENGTH:
        raise MemoryInputError("memory_provenance_invalid", value=name)
    return value


class SaveAction(StrEnum):
    """What a save did: a new memory, the same one seen again, or a new memory replacing an
    older one of the same subject, by the offline rule (superseded) or as a model judged
    (updated)."""

    CREATED = "created"
    REINFORCED = "reinforced"
    SUPERSEDED = "superseded"
    UPDATED = "updated"


# Stored values to members without the enum constructor's cost (10,000 at start-up).
_TYPES = {kind.value: kind for kind in MemoryType}
_SOURCES = {source.value: source for source in MemorySource}
_CONFIDENCES = {level.value: level for level in MemoryConfidence}
CONFIDENCE_ORDER = {MemoryConfidence.HIGH: 3, MemoryConfidence.MEDIUM: 2, MemoryConfidence.LOW: 1}


class MemoryInputError(InputError):
    """Bad input to the memories."""


@dataclass(frozen=True, slots=True)
class MemorySettings:
    """What a user tunes: how long archived records stay, how many sightings make a memory
    high-confidence, how many memories of one type the household's scope keeps and each
    person's private scope keeps, and the points (two per shared word) a memory needs to
    answer a question by its words.

    Each scope has its own cap: one person's saves never push out another person's
    memories, nor the household's."""

    archive_retention_days: float = 90
    high_confidence_threshold: int = 3
    max_memories_per_type: int = 10_000
    relevance_score_threshold: float = 2
    max_private_memories_per_type: int = 10_000

    def cap(self, scope: str) -> int:
        """How many active memories of one type this scope keeps."""
        if scope == HOUSEHOLD_SCOPE:
            return self.max_memories_per_type
        return self.max_private_memories_per_type


@dataclass(slots=True)
class Memory:
    """One durable fact; times are POSIX seconds."""

    id: str
    type: MemoryType
    content: str
    source: MemorySource
    created_at: float
    updated_at: float
    confidence: MemoryConfidence
    occurrences: int = 1
    tags: tuple[str, ...] = ()
    source_reference: str | None = None
    # Never pushed out by a cap, and offered first among the memories a search finds.
    pinned: bool = False
    # Who may see it: the household, or one person ("person:<id>").
    scope: str = HOUSEHOLD_SCOPE
    provenance: Provenance | None = None

    def as_dict(self) -> dict[str, Any]:
        """The stored and reported form (times still as POSIX seconds)."""
        return {
            "id": self.id,
            "type": self.type.value,
            "content": self.content,
            "source": self.source.value,
            "source_reference": self.source_reference,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "confidence": self.confidence.value,
            "occurrences": self.occurrences,
            "tags": list(self.tags),
            "pinned": self.pinned,
            "scope": self.scope,
            "provenance": self.provenance.as_dict() if self.provenance is not None else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Memory":
        """Read the stored form back."""
        return cls(
            id=str(data["id"]),
            type=_TYPES[data["type"]],
            content=str(data["content"]),
            source=_SOURCES[data["source"]],
            created_at=float(data["created_at"]),
            updated_at=float(data["updated_at"]),
            confidence=_CONFIDENCES[data["confidence"]],
            occurrences=int(data.get("occurrences", 1)),
            # Folded as validate_tag folds them now: an earlier version only lowercased.
            tags=tuple(dict.fromkeys(map(fold_tag, data.get("tags", ())))),
            source_reference=data.get("source_reference"),
            # Records written before pinning existed have no such field: not pinned.
            pinned=data.get("pinned") is True,
            # Records written before scopes existed belong to the household.
            scope=validate_scope(data.get("scope", HOUSEHOLD_SCOPE)),
            provenance=(
                Provenance.from_dict(data["provenance"])
                if data.get("provenance") is not None
                else None
            ),
        )


@dataclass(frozen=True, slots=True)
class ArchivedMemory:
    """A memory taken out of use: superseded, evicted or forgotten, kept for the retention."""

    memory: Memory
    superseded_by: str | None
    archived_at: float
    reason: str

    @property
    def id(self) -> str:
        """The archived memory's id."""
        return self.memory.id

    @property
    def original_content(self) -> str:
        """What the memory said."""
        return self.memory.content

    def as_dict(self) -> dict[str, Any]:
        """The stored form: what was archived, by what, when and why, and the whole record
        (tags find it again)."""
        return {
            "id": self.id,
            "original_content": self.original_content,
            "superseded_by": self.superseded_by,
            "archived_at": self.archived_at,
            "reason": self.reason,
            "memory": self.memory.as_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ArchivedMemory":
        """Read the stored form back."""
        return cls(
            memory=Memory.from_dict(data["memory"]),
            superseded_by=data.get("superseded_by"),
            archived_at=float(data["archived_at"]),
            reason=str(data.get("reason", "")),
        )


@dataclass(frozen=True, slots=True)
class PatternInsight:
    """Something that recurs across memories, with the ids that show it."""

    pattern_type: str
    description: str
    evidence: list[str]
    confidence: MemoryConfidence

    def as_dict(self) -> dict[str, Any]:
        """The reported form."""
        return {
            "pattern_type": self.pattern_type,
            "description": self.description,
            "evidence": list(self.evidence),
            "confidence": self.confidence.value,
        }


@dataclass(frozen=True, slots=True)
class SaveResult:
    """What memory_save did, to which record, and what it archived."""

    action: SaveAction
    memory: Memory
    archived: ArchivedMemory | None = None
    # Also archived: memories over max_memories_per_type.
    evicted: tuple[ArchivedMemory, ...] = ()


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Memories best first with their scores, and which ranker scored them."""

    memories: list[tuple[Memory, float]]
    ranker: str


@dataclass(frozen=True, slots=True)
class ForgetResult:
    """What memory_forget archived, and (with erase) deleted."""

    archived: list[ArchivedMemory]
    erased: list[str] = field(default_factory=list)
    # What the erased records said, for the caller to erase its own copies.
    erased_contents: list[str] = field(default_factory=list)
    # Whose the erased records were.
    erased_scopes: frozenset[str] = frozenset()

    @property
    def scopes(self) -> frozenset[str]:
        """The scopes of every memory it archived or erased: whose memories they were."""
        return self.erased_scopes | {one.memory.scope for one in self.archived}


# -- validation -------------------------------------------------------------


def validate_content(content: Any) -> str:
    """Trimmed content, or MemoryInputError."""
    if not isinstance(content, str):
        raise MemoryInputError("memory_content_not_text", kind=type(content).__name__)
    if not content.strip():
        raise MemoryInputError("memory_content_empty")
    content = content.strip()
    if len(content) > MAX_CONTENT_LENGTH:
        raise MemoryInputError(
            "memory_content_too_long", length=len(content), max=MAX_CONTENT_LENGTH
        )
    return content


@functools.lru_cache(maxsize=16_384)
def fold_tag(tag: str) -> str:
    """A tag as stored and compared: composed (NFC), case folded, one apostrophe."""
    return unicodedata.normalize("NFC", tag.translate(_APOSTROPHES).casefold())


def _part_valid(part: str, allowed: frozenset[str]) -> bool:
    """Letters, digits and combining marks of any script, and the allowed punctuation;
    at least one letter or digit. No space, control or format character gets in."""
    return any(char.isalnum() for char in part) and all(
        char.isalnum() or char in allowed or unicodedata.category(char)[0] == "M" for char in part
    )


@functools.lru_cache(maxsize=16_384)
def _checked_tag(folded: str) -> bool:
    prefix, colon, value = folded.partition(":")
    if not _part_valid(prefix, _PREFIX_CHARACTERS):
        return False
    return not colon or _part_valid(value, _VALUE_CHARACTERS)


def validate_tag(tag: Any) -> str:
    """A tag, folded (fold_tag): `prefix:value` or a plain word, at most MAX_TAG_LENGTH.

    Names are written as the household writes them: `person:İlkay`, `person:o'brien`,
    `room:küche`, `person:张伟`. The prefix holds letters, digits, `_` and `-`; the
    value also `.` and apostrophes.
    """
    if not isinstance(tag, str):
        raise MemoryInputError("memory_tag_invalid", tag=tag)
    tag = tag.strip()
    # Composing can shorten a decomposed name, but not by half: nothing longer is folded.
    if len(tag) > 2 * MAX_TAG_LENGTH or len(tag := fold_tag(tag)) > MAX_TAG_LENGTH:
        raise MemoryInputError("memory_tag_too_long", tag=tag[:MAX_TAG_LENGTH], max=MAX_TAG_LENGTH)
    if not _checked_tag(tag):
        raise MemoryInputError("memory_tag_invalid", tag=tag)
    return tag


def validate_tags(tags: Iterable[Any]) -> tuple[str, ...]:
    """Valid tags, lowercased and without repeats, in the order given."""
    checked = tuple(dict.fromkeys(validate_tag(tag) for tag in tags))
    if len(checked) > MAX_TAGS:
        raise MemoryInputError("memory_too_many_tags", count=len(checked), max=MAX_TAGS)
    return checked


def validate_scope(scope: Any) -> str:
    """`household` or `person:<id>`, or MemoryInputError: a scope names whose a memory is."""
    if scope == HOUSEHOLD_SCOPE:
        return HOUSEHOLD_SCOPE
    if (
        not isinstance(scope, str)
        or not scope.startswith(PERSON_SCOPE_PREFIX)
        or len(scope) > MAX_SCOPE_LENGTH
        or not _part_valid(scope.removeprefix(PERSON_SCOPE_PREFIX), _VALUE_CHARACTERS)
    ):
        raise MemoryInputError("memory_scope_invalid", scope=str(scope))
    return scope


def validate_limit(limit: int) -> int:
    """A search limit between 1 and MAX_SEARCH_LIMIT, or MemoryInputError."""
    if not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise MemoryInputError("memory_limit_invalid", limit=limit, max=MAX_SEARCH_LIMIT)
    return limit


def _enum[E: StrEnum](kind: type[E], value: Any, key: str) -> E:
    try:
        return kind(value)
    except ValueError:
        raise MemoryInputError(key, value=value) from None


def parse_type(value: Any) -> MemoryType:
    """A MemoryType, or MemoryInputError."""
    return _enum(MemoryType, value, "memory_type_invalid")


def parse_confidence(value: Any) -> MemoryConfidence:
    """A MemoryConfidence, or MemoryInputError."""
    return _enum(MemoryConfidence, value, "memory_confidence_invalid")


def parse_source(value: Any) -> MemorySource:
    """A MemorySource, or MemoryInputError."""
    return _enum(MemorySource, value, "memory_source_invalid")


def parse_authority(value: Any) -> Authority:
    """An Authority, or MemoryInputError."""
    return _enum(Authority, value, "memory_authority_invalid")
