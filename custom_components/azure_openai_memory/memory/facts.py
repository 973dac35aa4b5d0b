"""Durable facts about the household: deduplication, confidence, archive, retrieval, patterns.

Seed 002 (M13) scans every memory on each save and ranks by shared words. A home that
remembers for years needs neither: saves go through indexes (normalised content, and
(type, tag)), and relevance is BM25 over content and tag values fused with the cosine
similarity of embeddings when there are any, all in a few numpy operations.

The seed's step 2 (same type and any shared tag supersedes) would let "Anna prefers 19
degrees at night" archive "Anna takes her coffee black". Here a new memory supersedes an
old one only when it is about the same thing: the same tag set, or shared tags and
embeddings at least SUPERSEDE_SIMILARITY alike.
"""

import base64
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
import math
import re
import time
from typing import Any
import uuid

import numpy as np
import numpy.typing as npt

FACTS_VERSION = 1

# Shared tags alone do not make two memories the same fact: their embeddings must be at
# least this alike too (measured on the retrieval benchmark's labelled set).
SUPERSEDE_SIMILARITY = 0.80
# Below this cosine similarity a memory is no answer to a question (unless words match).
MIN_SIMILARITY = 0.25
# How hybrid relevance weighs meaning against matching words.
VECTOR_WEIGHT = 0.7
KEYWORD_WEIGHT = 0.3
# Tie-breakers after relevance, as in the seed: confident and recent memories first.
CONFIDENCE_BOOST = {"high": 0.1, "medium": 0.05, "low": 0.0}
RECENT_DAYS, RECENT_BOOST = 7, 0.05
MONTH_DAYS, MONTH_BOOST = 30, 0.02
# Memories of one type sharing a tag value that make a pattern.
PATTERN_MIN_MEMORIES = 3

MAX_CONTENT_LENGTH = 2000
MAX_TAG_LENGTH = 64
MAX_TAGS = 32
MAX_SEARCH_LIMIT = 50
DAY = 86_400.0

_TAG = re.compile(r"^[\w-]+(:[\w.-]+)?$")
_WORD = re.compile(r"\w+")
_OVERRIDE = re.compile(r"\boverr(id|ode)", re.IGNORECASE)
_STOP_TEXT = (
    "a an and are as at be been by can do does did for from has have how i in is it its "
    "me my of on or our should so that the their them there these they this to was we "
    "were what when where which who why will with you your about know tell"
)
_STOP_WORDS = frozenset(_STOP_TEXT.split())


class MemoryType(StrEnum):
    """What a memory is about; the seed's five, and a home's own two."""

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


class SaveAction(StrEnum):
    """What a save did."""

    CREATED = "created"
    REINFORCED = "reinforced"
    SUPERSEDED = "superseded"


_CONFIDENCE_ORDER = {MemoryConfidence.HIGH: 3, MemoryConfidence.MEDIUM: 2, MemoryConfidence.LOW: 1}


class FactError(ValueError):
    """Bad input; `key` is the translation key, `placeholders` fill its message."""

    def __init__(self, translation_key: str, **placeholders: Any) -> None:
        super().__init__(translation_key, placeholders)
        self.key = translation_key
        self.placeholders = {name: str(value) for name, value in placeholders.items()}


@dataclass(frozen=True, slots=True)
class FactSettings:
    """The seed's MEMORY_CONFIG."""

    archive_retention_days: float = 90
    high_confidence_threshold: int = 3
    max_memories_per_type: int = 50
    relevance_score_threshold: float = 2


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
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Memory":
        """Read the stored form back."""
        return cls(
            id=str(data["id"]),
            type=MemoryType(data["type"]),
            content=str(data["content"]),
            source=MemorySource(data["source"]),
            created_at=float(data["created_at"]),
            updated_at=float(data["updated_at"]),
            confidence=MemoryConfidence(data["confidence"]),
            occurrences=int(data.get("occurrences", 1)),
            tags=tuple(data.get("tags", ())),
            source_reference=data.get("source_reference"),
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
        """The stored form: the seed's fields and the whole record (tags find it again)."""
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


# -- validation -------------------------------------------------------------


def validate_content(content: Any) -> str:
    """Trimmed content, or FactError."""
    if not isinstance(content, str) or not content.strip():
        raise FactError("memory_content_empty")
    content = content.strip()
    if len(content) > MAX_CONTENT_LENGTH:
        raise FactError("memory_content_too_long", length=len(content), max=MAX_CONTENT_LENGTH)
    return content


def validate_tag(tag: Any) -> str:
    """A tag, lowercased: `prefix:value` or a plain word, at most MAX_TAG_LENGTH."""
    if not isinstance(tag, str):
        raise FactError("memory_tag_invalid", tag=tag)
    tag = tag.strip().lower()
    if len(tag) > MAX_TAG_LENGTH:
        raise FactError("memory_tag_too_long", tag=tag[:MAX_TAG_LENGTH], max=MAX_TAG_LENGTH)
    if not _TAG.match(tag):
        raise FactError("memory_tag_invalid", tag=tag)
    return tag


def validate_tags(tags: Iterable[Any]) -> tuple[str, ...]:
    """Valid tags, lowercased and without repeats, in the order given."""
    checked = tuple(dict.fromkeys(validate_tag(tag) for tag in tags))
    if len(checked) > MAX_TAGS:
        raise FactError("memory_too_many_tags", count=len(checked), max=MAX_TAGS)
    return checked


def _enum[E: StrEnum](kind: type[E], value: Any, key: str) -> E:
    try:
        return kind(value)
    except ValueError:
        raise FactError(key, value=value) from None


def parse_type(value: Any) -> MemoryType:
    """A MemoryType, or FactError."""
    return _enum(MemoryType, value, "memory_type_invalid")


def parse_confidence(value: Any) -> MemoryConfidence:
    """A MemoryConfidence, or FactError."""
    return _enum(MemoryConfidence, value, "memory_confidence_invalid")


def parse_source(value: Any) -> MemorySource:
    """A MemorySource, or FactError."""
    return _enum(MemorySource, value, "memory_source_invalid")


# -- text -------------------------------------------------------------------


def normalize_for_comparison(content: str) -> str:
    """The seed's normalisation: lowercase, punctuation gone, whitespace collapsed."""
    normalized = re.sub(r"[^\w\s]", "", content.lower())
    return re.sub(r"\s+", " ", normalized).strip()


def _stem(word: str) -> str:
    """A light English stem, so 'sleeps' finds 'sleep' and 'prefers' finds 'prefer'."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    """The words that carry meaning, stemmed."""
    return [
        _stem(word)
        for word in _WORD.findall(text.lower())
        if word not in _STOP_WORDS and (len(word) > 1 or word.isdigit())
    ]


def _tag_terms(tags: Iterable[str]) -> list[str]:
    """A tag's value is words of the memory too: `person:anna` is about Anna."""
    words: list[str] = []
    for tag in tags:
        words.extend(terms(tag.rsplit(":", 1)[-1].replace("_", " ")))
    return words


def _document(content: str, tags: Iterable[str]) -> list[str]:
    return terms(content) + _tag_terms(tags)


class KeywordIndex:
    """BM25 over an inverted index: the cost of a query is its terms' postings, not the store."""

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._postings: dict[str, dict[int, int]] = {}
        self._lengths: dict[int, int] = {}
        self._words: dict[int, tuple[str, ...]] = {}
        self._total_length = 0

    def __len__(self) -> int:
        return len(self._lengths)

    def add(self, doc: int, words: Sequence[str]) -> None:
        """Index a document under a number."""
        self.remove(doc)
        for word in words:
            posting = self._postings.setdefault(word, {})
            posting[doc] = posting.get(doc, 0) + 1
        self._lengths[doc] = len(words)
        self._words[doc] = tuple(dict.fromkeys(words))
        self._total_length += len(words)

    def remove(self, doc: int) -> None:
        """Forget a document."""
        if (length := self._lengths.pop(doc, None)) is None:
            return
        self._total_length -= length
        for word in self._words.pop(doc):
            posting = self._postings[word]
            del posting[doc]
            if not posting:
                del self._postings[word]

    def scores(self, query: Sequence[str]) -> tuple[dict[int, float], dict[int, int]]:
        """BM25 score and number of distinct query terms matched, per matching document."""
        scores: dict[int, float] = {}
        hits: dict[int, int] = {}
        count = len(self._lengths)
        if not count:
            return scores, hits
        average = self._total_length / count or 1.0
        k1, b = self.k1, self.b
        for word in dict.fromkeys(query):
            posting = self._postings.get(word)
            if not posting:
                continue
            idf = math.log(1 + (count - len(posting) + 0.5) / (len(posting) + 0.5))
            lengths = self._lengths
            for doc, tf in posting.items():
                norm = tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[doc] / average))
                scores[doc] = scores.get(doc, 0.0) + idf * norm
                hits[doc] = hits.get(doc, 0) + 1
        return scores, hits


def bm25(query: str, documents: Sequence[str], *, k1: float = 1.5, b: float = 0.75) -> list[float]:
    """BM25 score of each document for the query (0.0 where no word matches)."""
    index = KeywordIndex(k1, b)
    for number, document in enumerate(documents):
        index.add(number, terms(document))
    scores, _hits = index.scores(terms(query))
    return [scores.get(number, 0.0) for number in range(len(documents))]


# -- vectors ----------------------------------------------------------------

type Vector = npt.NDArray[np.float32]


def as_unit_vector(values: Sequence[float] | npt.NDArray[Any]) -> Vector | None:
    """A unit-length float32 copy, or None for an empty or all-zero vector."""
    vector = np.asarray(values, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(vector))
    if not vector.size or not math.isfinite(norm) or norm == 0.0:
        return None
    return vector / norm


def encode_vector(vector: Vector) -> str:
    """float16, base64: 256 dimensions in 684 characters."""
    return base64.b64encode(vector.astype(np.float16).tobytes()).decode("ascii")


def decode_vector(text: str) -> Vector | None:
    """Back from encode_vector (renormalised after float16's rounding)."""
    return as_unit_vector(np.frombuffer(base64.b64decode(text), dtype=np.float16))


# -- the store --------------------------------------------------------------


def _conflicting(new: Iterable[str], old: Iterable[str]) -> bool:
    """Tags naming different things of one kind: `person:anna` and `person:ben`, no shared one.

    Two such memories are about different people (rooms, devices) however alike they read.
    """
    values: dict[str, set[str]] = {}
    for tag in new:
        if ":" in tag:
            prefix, value = tag.split(":", 1)
            values.setdefault(prefix, set()).add(value)
    theirs: dict[str, set[str]] = {}
    for tag in old:
        if ":" in tag:
            prefix, value = tag.split(":", 1)
            theirs.setdefault(prefix, set()).add(value)
    return any(prefix in theirs and not mine & theirs[prefix] for prefix, mine in values.items())


def _new_id() -> str:
    return f"mem_{uuid.uuid4().hex[:16]}"


class FactStore:
    """Every memory of the installation, indexed for saving and ranking.

    Each active memory has a row in parallel numpy arrays (vector, confidence boost,
    last update, type) so that ranking 10,000 memories is one matrix product and a few
    vector operations. Rows of removed memories are reused.
    """

    def __init__(self, settings: FactSettings | None = None) -> None:
        self.settings = settings or FactSettings()
        self._active: dict[str, Memory] = {}
        self._archived: dict[str, ArchivedMemory] = {}
        self._by_content: dict[str, str] = {}
        self._by_type_tag: dict[tuple[MemoryType, str], set[str]] = {}
        self._by_tag_set: dict[tuple[MemoryType, frozenset[str]], set[str]] = {}
        self._by_type: dict[MemoryType, set[str]] = {}
        self._keywords = KeywordIndex()
        self._row: dict[str, int] = {}
        self._ids: list[str | None] = []
        self._free: list[int] = []
        self._dims = 0
        self._vectors: npt.NDArray[np.float32] = np.zeros((0, 0), dtype=np.float32)
        self._has_vector: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self._boost: npt.NDArray[np.float32] = np.zeros(0, dtype=np.float32)
        self._updated: npt.NDArray[np.float64] = np.zeros(0, dtype=np.float64)
        self._in_use: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)

    # -- reading --

    def __len__(self) -> int:
        return len(self._active)

    def __iter__(self) -> Iterator[Memory]:
        return iter(list(self._active.values()))

    def get(self, memory_id: str) -> Memory | None:
        """An active memory by id."""
        return self._active.get(memory_id)

    def archived(self) -> list[ArchivedMemory]:
        """Every archived memory, oldest archive first."""
        return sorted(self._archived.values(), key=lambda a: a.archived_at)

    def get_archived(self, memory_id: str) -> ArchivedMemory | None:
        """An archived memory by id."""
        return self._archived.get(memory_id)

    def vector(self, memory_id: str) -> Vector | None:
        """A memory's embedding, if it has one."""
        row = self._row.get(memory_id)
        if row is None or not self._has_vector[row]:
            return None
        vector: Vector = self._vectors[row].copy()
        return vector

    @property
    def dimensions(self) -> int:
        """The embeddings' length; 0 while there are none."""
        return self._dims

    def without_vector(self) -> list[Memory]:
        """Active memories that still need an embedding."""
        return [m for m in self._active.values() if not self._has_vector[self._row[m.id]]]

    # -- rows and indexes --

    def _grow(self, needed: int) -> None:
        size = len(self._ids)
        if needed <= size:
            return
        new = max(needed, 2 * size, 64)
        vectors = np.zeros((new, self._dims), dtype=np.float32)
        vectors[:size] = self._vectors
        self._vectors = vectors
        self._has_vector = np.concatenate([self._has_vector, np.zeros(new - size, dtype=bool)])
        self._boost = np.concatenate([self._boost, np.zeros(new - size, dtype=np.float32)])
        self._updated = np.concatenate([self._updated, np.zeros(new - size)])
        self._in_use = np.concatenate([self._in_use, np.zeros(new - size, dtype=bool)])
        self._free.extend(range(new - 1, size - 1, -1))
        self._ids.extend([None] * (new - size))

    def _index(self, memory: Memory, vector: Vector | None) -> None:
        self._active[memory.id] = memory
        self._by_content.setdefault(normalize_for_comparison(memory.content), memory.id)
        self._by_type.setdefault(memory.type, set()).add(memory.id)
        for tag in memory.tags:
            self._by_type_tag.setdefault((memory.type, tag), set()).add(memory.id)
        if memory.tags:
            key = (memory.type, frozenset(memory.tags))
            self._by_tag_set.setdefault(key, set()).add(memory.id)
        if not self._free:
            self._grow(len(self._ids) + 1)
        row = self._free.pop()
        self._row[memory.id] = row
        self._ids[row] = memory.id
        self._in_use[row] = True
        self._refresh_row(memory)
        self._keywords.add(row, _document(memory.content, memory.tags))
        self._has_vector[row] = False
        if vector is not None:
            self._put_vector(row, vector)

    def _refresh_row(self, memory: Memory) -> None:
        row = self._row[memory.id]
        self._boost[row] = CONFIDENCE_BOOST[memory.confidence.value]
        self._updated[row] = memory.updated_at

    def _unindex(self, memory: Memory) -> None:
        del self._active[memory.id]
        normalized = normalize_for_comparison(memory.content)
        if self._by_content.get(normalized) == memory.id:
            del self._by_content[normalized]
        self._by_type[memory.type].discard(memory.id)
        for tag in memory.tags:
            ids = self._by_type_tag[(memory.type, tag)]
            ids.discard(memory.id)
            if not ids:
                del self._by_type_tag[(memory.type, tag)]
        if memory.tags:
            key = (memory.type, frozenset(memory.tags))
            self._by_tag_set[key].discard(memory.id)
            if not self._by_tag_set[key]:
                del self._by_tag_set[key]
        row = self._row.pop(memory.id)
        self._keywords.remove(row)
        self._ids[row] = None
        self._in_use[row] = False
        self._has_vector[row] = False
        self._free.append(row)

    def _put_vector(self, row: int, vector: Vector) -> None:
        if vector.shape[0] != self._dims:
            # A new embeddings model: the old vectors cannot be compared with its own.
            self._dims = vector.shape[0]
            self._vectors = np.zeros((len(self._ids), self._dims), dtype=np.float32)
            self._has_vector[:] = False
        self._vectors[row] = vector
        self._has_vector[row] = True

    def set_vector(self, memory_id: str, vector: Sequence[float] | npt.NDArray[Any]) -> bool:
        """Give an active memory its embedding; False when it is gone or the vector is empty."""
        row = self._row.get(memory_id)
        unit = as_unit_vector(vector)
        if row is None or unit is None:
            return False
        self._put_vector(row, unit)
        return True

    def clear_vectors(self) -> None:
        """Forget every embedding (the embeddings deployment changed or is gone)."""
        self._dims = 0
        self._vectors = np.zeros((len(self._ids), 0), dtype=np.float32)
        self._has_vector[:] = False

    # -- saving --

    def save(
        self,
        content: str,
        memory_type: MemoryType | str,
        tags: Iterable[str] = (),
        *,
        confidence: MemoryConfidence | str | None = None,
        source: MemorySource | str = MemorySource.MANUAL,
        source_reference: str | None = None,
        vector: Sequence[float] | npt.NDArray[Any] | None = None,
        now: float | None = None,
    ) -> SaveResult:
        """Save with the three-step deduplication; raises FactError on bad input.

        Everything is validated before anything changes: a refused save writes nothing.
        """
        content = validate_content(content)
        kind = parse_type(memory_type)
        tag_tuple = validate_tags(tags)
        level = parse_confidence(confidence) if confidence is not None else None
        origin = parse_source(source)
        now = time.time() if now is None else now
        unit = as_unit_vector(vector) if vector is not None else None
        threshold = self.settings.high_confidence_threshold

        # 1. The same words again: seen once more.
        existing_id = self._by_content.get(normalize_for_comparison(content))
        if existing_id is not None:
            existing = self._active[existing_id]
            existing.occurrences += 1
            existing.updated_at = now
            if level is MemoryConfidence.HIGH or existing.occurrences >= threshold:
                existing.confidence = MemoryConfidence.HIGH
            self._refresh_row(existing)
            if unit is not None and not self._has_vector[self._row[existing_id]]:
                self._put_vector(self._row[existing_id], unit)
            return SaveResult(SaveAction.REINFORCED, existing)

        memory = Memory(
            id=_new_id(),
            type=kind,
            content=content,
            source=origin,
            created_at=now,
            updated_at=now,
            confidence=level or MemoryConfidence.MEDIUM,
            tags=tag_tuple,
            source_reference=source_reference,
        )
        # 2. The same subject: the new memory replaces the old, and inherits its count.
        archived = None
        if (old := self._same_subject(kind, tag_tuple, unit)) is not None:
            memory.occurrences = old.occurrences + 1
            if memory.occurrences >= threshold:
                memory.confidence = MemoryConfidence.HIGH
            shared = ", ".join(t for t in tag_tuple if t in old.tags)
            archived = self._archive(
                old, memory.id, f"Updated by newer observation about {shared}", now
            )
        # 3. Otherwise a new memory.
        self._index(memory, unit)
        evicted = self._evict_over_cap(kind, now, keep=memory.id)
        return SaveResult(
            SaveAction.SUPERSEDED if archived else SaveAction.CREATED, memory, archived, evicted
        )

    def _same_subject(
        self, kind: MemoryType, tags: tuple[str, ...], vector: Vector | None
    ) -> Memory | None:
        """The memory a new one replaces: same tag set, or shared tags and alike embeddings."""
        if not tags:
            return None
        same = self._by_tag_set.get((kind, frozenset(tags)))
        if same:
            return max((self._active[i] for i in same), key=lambda m: m.updated_at)
        if vector is None or vector.shape[0] != self._dims:
            return None
        candidates: set[str] = set()
        for tag in tags:
            candidates |= self._by_type_tag.get((kind, tag), set())
        rows = [
            self._row[i]
            for i in candidates
            if self._has_vector[self._row[i]] and not _conflicting(tags, self._active[i].tags)
        ]
        if not rows:
            return None
        similarity = self._vectors[rows] @ vector
        best = int(np.argmax(similarity))
        if float(similarity[best]) < SUPERSEDE_SIMILARITY:
            return None
        memory_id = self._ids[rows[best]]
        assert memory_id is not None
        return self._active[memory_id]

    def _archive(
        self, memory: Memory, superseded_by: str | None, reason: str, now: float
    ) -> ArchivedMemory:
        self._unindex(memory)
        archived = ArchivedMemory(replace(memory), superseded_by, now, reason)
        self._archived[memory.id] = archived
        return archived

    def _evict_over_cap(
        self, kind: MemoryType, now: float, keep: str | None = None
    ) -> tuple[ArchivedMemory, ...]:
        """Beyond max_memories_per_type, the least confident, oldest memories go first."""
        ids = self._by_type.get(kind, set())
        over = len(ids) - self.settings.max_memories_per_type
        if over <= 0:
            return ()
        order = sorted(
            (self._active[i] for i in ids if i != keep),
            key=lambda m: (_CONFIDENCE_ORDER[m.confidence], m.updated_at),
        )
        return tuple(
            self._archive(m, None, "Over max_memories_per_type", now) for m in order[:over]
        )

    def apply_settings(self, settings: FactSettings, now: float | None = None) -> int:
        """New settings; a lowered cap archives at once. Returns how many were archived."""
        self.settings = settings
        now = time.time() if now is None else now
        return sum(len(self._evict_over_cap(kind, now)) for kind in list(self._by_type))

    # -- searching --

    def search(
        self,
        query: str | None,
        *,
        query_vector: Sequence[float] | npt.NDArray[Any] | None = None,
        memory_type: MemoryType | str | None = None,
        tags: Iterable[str] | None = None,
        limit: int = 10,
        include_archived: bool = False,
        now: float | None = None,
    ) -> SearchResult:
        """The best memories for a question and/or a type and tags.

        With a text: hybrid relevance (embeddings and BM25) when there are vectors, else
        BM25 alone, plus the seed's confidence and recency boosts. Without: the seed's
        order, most confident then most recent.
        """
        if not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise FactError("memory_limit_invalid", limit=limit, max=MAX_SEARCH_LIMIT)
        kind = parse_type(memory_type) if memory_type is not None else None
        wanted = validate_tags(tags or ())
        now = time.time() if now is None else now
        text = query.strip() if query else ""
        candidates = self._candidates(kind, wanted)
        if not text:
            found = [(m, self._plain_score(m, now)) for m in self._filtered(candidates)]
            if include_archived:
                found += [
                    (a.memory, self._plain_score(a.memory, now))
                    for a in self._archived_matching(kind, wanted)
                ]
            found.sort(
                key=lambda pair: (_CONFIDENCE_ORDER[pair[0].confidence], pair[0].updated_at),
                reverse=True,
            )
            return SearchResult(found[:limit], "keyword")
        unit = as_unit_vector(query_vector) if query_vector is not None else None
        result = self._rank(text, unit, candidates, limit, now)
        if include_archived:
            extra = self._rank_archived(text, kind, wanted, now)
            merged = sorted(result.memories + extra, key=lambda pair: pair[1], reverse=True)
            result = SearchResult(merged[:limit], result.ranker)
        return result

    def _candidates(self, kind: MemoryType | None, tags: tuple[str, ...]) -> set[str] | None:
        """The ids a filter allows; None for every memory."""
        if not tags:
            return None if kind is None else set(self._by_type.get(kind, set()))
        kinds = [kind] if kind is not None else list(self._by_type)
        allowed: set[str] = set()
        for one in kinds:
            sets = [self._by_type_tag.get((one, tag), set()) for tag in tags]
            allowed |= set.intersection(*sets)
        return allowed

    def _filtered(self, candidates: set[str] | None) -> Iterator[Memory]:
        if candidates is None:
            return iter(self._active.values())
        return (self._active[i] for i in candidates)

    def _archived_matching(
        self, kind: MemoryType | None, tags: tuple[str, ...]
    ) -> list[ArchivedMemory]:
        return [
            a
            for a in self._archived.values()
            if (kind is None or a.memory.type is kind) and all(t in a.memory.tags for t in tags)
        ]

    @staticmethod
    def _recency(updated: npt.NDArray[np.float64], now: float) -> npt.NDArray[np.float32]:
        age = (now - updated) / DAY
        return np.where(
            age < RECENT_DAYS, RECENT_BOOST, np.where(age < MONTH_DAYS, MONTH_BOOST, 0.0)
        ).astype(np.float32)

    def _plain_score(self, memory: Memory, now: float) -> float:
        recency = self._recency(np.array([memory.updated_at]), now)[0]
        return round(float(CONFIDENCE_BOOST[memory.confidence.value] + recency), 4)

    def _relevant_words(self, hits: int) -> bool:
        """The seed's threshold: two points per shared word."""
        return 2 * hits >= self.settings.relevance_score_threshold

    def _rank(
        self,
        text: str,
        vector: Vector | None,
        candidates: set[str] | None,
        limit: int,
        now: float,
    ) -> SearchResult:
        size = len(self._ids)
        allowed = self._in_use.copy()
        if candidates is not None:
            allowed[:] = False
            allowed[[self._row[i] for i in candidates]] = True
        keyword = np.zeros(size, dtype=np.float32)
        matched = np.zeros(size, dtype=bool)
        scores, hits = self._keywords.scores(terms(text))
        if scores:
            rows = np.fromiter(scores, dtype=np.int64, count=len(scores))
            keyword[rows] = np.fromiter(scores.values(), dtype=np.float32, count=len(scores))
            keyword /= float(keyword.max()) or 1.0
            matched[rows] = [self._relevant_words(hits[row]) for row in scores]
        hybrid = (
            vector is not None
            and vector.shape[0] == self._dims
            and bool((self._has_vector & allowed).any())
        )
        if hybrid:
            assert vector is not None
            similarity = self._vectors @ vector
            similarity[~self._has_vector] = 0.0
            relevance = VECTOR_WEIGHT * similarity + KEYWORD_WEIGHT * keyword
            allowed &= matched | (similarity >= MIN_SIMILARITY)
        else:
            relevance = keyword
            allowed &= matched
        total = relevance + self._boost + self._recency(self._updated, now)
        rows = np.flatnonzero(allowed)
        if rows.size > limit:
            rows = rows[np.argpartition(-total[rows], limit - 1)[:limit]]
        rows = rows[np.argsort(-total[rows], kind="stable")]
        found: list[tuple[Memory, float]] = []
        for row in rows:
            memory_id = self._ids[int(row)]
            assert memory_id is not None
            found.append((self._active[memory_id], round(float(total[row]), 4)))
        return SearchResult(found, "hybrid" if hybrid else "keyword")

    def _rank_archived(
        self, text: str, kind: MemoryType | None, tags: tuple[str, ...], now: float
    ) -> list[tuple[Memory, float]]:
        """Archived memories match by words only: their vectors are not kept."""
        archived = self._archived_matching(kind, tags)
        if not archived:
            return []
        index = KeywordIndex()
        for number, one in enumerate(archived):
            index.add(number, _document(one.memory.content, one.memory.tags))
        scores, hits = index.scores(terms(text))
        top = max(scores.values(), default=1.0) or 1.0
        return [
            (archived[n].memory, round(score / top + self._plain_score(archived[n].memory, now), 4))
            for n, score in scores.items()
            if self._relevant_words(hits[n])
        ]

    # -- patterns --

    def patterns(self) -> list[PatternInsight]:
        """Any tag value recurring in PATTERN_MIN_MEMORIES+ memories of a type, and overrides.

        The seed looks for `body:` tags in injuries; a home has rooms, people and devices
        in any type, so every tag prefix of every type is looked at.
        """
        insights: list[PatternInsight] = []
        for (kind, tag), ids in sorted(self._by_type_tag.items()):
            if len(ids) < PATTERN_MIN_MEMORIES or ":" not in tag:
                continue
            prefix, value = tag.split(":", 1)
            evidence = sorted(ids, key=lambda i: self._active[i].created_at)
            insights.append(
                PatternInsight(
                    pattern_type=f"recurring_{prefix}",
                    description=(
                        f"Recurring {prefix} {value} in {kind.value} memories "
                        f"({len(ids)} occurrences)"
                    ),
                    evidence=evidence,
                    confidence=MemoryConfidence.HIGH,
                )
            )
        overrides = sorted(
            (
                m
                for m in self._active.values()
                if _OVERRIDE.search(m.content) or m.type is MemoryType.TRAINING_RESPONSE
            ),
            key=lambda m: m.created_at,
        )
        if len(overrides) >= PATTERN_MIN_MEMORIES:
            insights.append(
                PatternInsight(
                    pattern_type="override_tendency",
                    description=(f"Suggestions are often overridden ({len(overrides)} memories)"),
                    evidence=[m.id for m in overrides[:5]],
                    confidence=MemoryConfidence.MEDIUM,
                )
            )
        return insights

    # -- forgetting --

    def forget(
        self,
        memory_id: str | None = None,
        tag: str | None = None,
        *,
        erase: bool = False,
        now: float | None = None,
    ) -> ForgetResult:
        """Archive a memory, or every memory with a tag; with erase, delete them outright.

        Erasing a tag deletes archived records carrying it too: what a user asks us to
        forget for privacy does not linger in the archive.
        """
        now = time.time() if now is None else now
        if memory_id is not None:
            memory = self._active.get(memory_id)
            if memory is None and not (erase and memory_id in self._archived):
                raise FactError("memory_unknown", memory_id=memory_id)
            if erase:
                if memory is not None:
                    self._unindex(memory)
                self._archived.pop(memory_id, None)
                return ForgetResult([], [memory_id])
            assert memory is not None
            return ForgetResult([self._archive(memory, None, "Forgotten on request", now)])
        if tag is None:
            raise FactError("memory_forget_nothing")
        tag = validate_tag(tag)
        active = [m for m in self._active.values() if tag in m.tags]
        if erase:
            erased = [m.id for m in active]
            for memory in active:
                self._unindex(memory)
            for old in [a for a in self._archived.values() if tag in a.memory.tags]:
                del self._archived[old.id]
                erased.append(old.id)
            return ForgetResult([], erased)
        return ForgetResult(
            [self._archive(m, None, f"Forgotten on request ({tag})", now) for m in active]
        )

    def cleanup_archived(
        self, retention_days: float | None = None, now: float | None = None
    ) -> list[str]:
        """Delete archived records older than the retention; returns their ids."""
        days = self.settings.archive_retention_days if retention_days is None else retention_days
        cutoff = (time.time() if now is None else now) - days * DAY
        old = [a.id for a in self._archived.values() if a.archived_at < cutoff]
        for memory_id in old:
            del self._archived[memory_id]
        return old

    # -- storage --

    def as_dict(self) -> dict[str, Any]:
        """The stored form: a new dict, safe to hand to a writer thread."""
        memories = []
        for memory in self._active.values():
            data = memory.as_dict()
            row = self._row[memory.id]
            if self._has_vector[row]:
                data["vector"] = encode_vector(self._vectors[row])
            memories.append(data)
        return {
            "memories": memories,
            "archived": [a.as_dict() for a in self._archived.values()],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], settings: FactSettings | None = None) -> "FactStore":
        """Read the stored form; a record that cannot be read is skipped, not fatal."""
        store = cls(settings)
        memories = data.get("memories") or []
        store._grow(len(memories))
        for raw in memories:
            try:
                memory = Memory.from_dict(raw)
                vector = decode_vector(raw["vector"]) if raw.get("vector") else None
            except (KeyError, TypeError, ValueError):
                continue
            if memory.id in store._active:
                continue
            store._index(memory, vector)
        for raw in data.get("archived") or []:
            try:
                archived = ArchivedMemory.from_dict(raw)
            except (KeyError, TypeError, ValueError):
                continue
            store._archived[archived.id] = archived
        return store


def migrate_facts(version: int, data: dict[str, Any]) -> dict[str, Any]:
    """Only version 1 exists; a newer file is not ours to read."""
    if version > FACTS_VERSION:
        raise ValueError(f"memories stored by a newer version ({version})")
    return data
