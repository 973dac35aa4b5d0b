"""The memories' records and their stored form: this module owns MemoryRecords, the state
under MemoryStore and its bookkeeping. It keeps each active memory findable by normalised
content, by type, by (type, tag) and by (type, tag set), in the keyword index, and in
its row of parallel numpy arrays, all in step as memories come, change and go; it keeps
the archive and the archive's keyword index, answers which memories a type and tag
filter allows, and reads and writes the stored form with its version. What a save,
search or forget decides is MemoryStore's.

Loading leaves the words of what it read unindexed (build_keywords indexes them, in any
thread): reading the words of 10,000 memories is most of what a load costs, and a
home's start should not wait for it. Until then the loop's changes to those indexes are
noted and applied once they are built; whatever needs them first builds them.
"""

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
import threading
import time
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from .models import (
    CONFIDENCE_BOOST,
    HOUSEHOLD_SCOPE,
    PERSON_SCOPE_PREFIX,
    ArchivedMemory,
    Memory,
    MemorySettings,
    MemoryType,
    Provenance,
)
from .text import KeywordIndex, document, normalize_for_comparison
from .vectors import Vector, as_unit_vector, decode_raw_vector, encode_vectors, normalize_rows

# 2: the per-type cap's old default (50) is no longer kept as if a user had chosen it.
# 3: every memory has a scope (the household's, or one person's) and may have provenance.
MEMORIES_VERSION = 3
# The per-type cap every installation stored before version 2, chosen or not: saving the
# options form stored all four settings. Below the new default it archived a home's facts.
OLD_DEFAULT_CAP = 50

type _ArchiveKeywords = tuple[
    list[ArchivedMemory], KeywordIndex, npt.NDArray[np.float32], npt.NDArray[np.float64]
]
# A memory's words as indexed: id, scope, content, tags (None: taken out of the indexes).
type _Words = tuple[str, str, str, tuple[str, ...] | None]


# Why a memory handed over to a person who already had its words went to the archive.
HANDED_OVER = "Handed over: the same words were already there"


def content_key(scope: str, content: str) -> str:
    """What finds a memory with the same words in the same scope: one person's words never
    reinforce another's, nor the household's. (Normalised content holds no line break.)"""
    normalized = normalize_for_comparison(content)
    return normalized if scope == HOUSEHOLD_SCOPE else f"{scope}\n{normalized}"


def _add_to[K](index: dict[K, set[str]], key: K, memory_id: str) -> None:
    """Add to an index's set, creating the set only when the key is new."""
    if (ids := index.get(key)) is None:
        index[key] = {memory_id}
    else:
        ids.add(memory_id)


class MemoryRecords:
    """Every memory of the installation, indexed; MemoryStore adds what is done with them.

    Each active memory has a row in parallel numpy arrays (vector, confidence boost,
    last update, whether in use, whether pinned) so that ranking 10,000 memories is one matrix product
    and a few vector operations. Rows of removed memories are reused.
    """

    def __init__(self, settings: MemorySettings | None = None) -> None:
        self.settings = settings or MemorySettings()
        self._active: dict[str, Memory] = {}
        self._archived: dict[str, ArchivedMemory] = {}
        self._by_type_tag: dict[tuple[MemoryType, str], set[str]] = {}
        self._by_tag_set: dict[tuple[MemoryType, frozenset[str]], set[str]] = {}
        self._by_type: dict[MemoryType, set[str]] = {}
        # The words' indexes (normalised content -> id, and BM25); None until the words
        # of the memories a load read are indexed (_by_content and _keywords build them).
        self._content_index: dict[str, str] | None = {}
        self._keyword_index: KeywordIndex | None = KeywordIndex()
        # Those memories' words (rows 0..n-1), what the loop changed meanwhile (row and
        # words), and the indexes build_keywords made of them until they are installed.
        self._unindexed: list[tuple[str, str, str, tuple[str, ...]]] | None = None
        self._word_changes: list[tuple[int, _Words]] = []
        self._built: tuple[KeywordIndex, dict[str, str]] | None = None
        self._build_lock = threading.Lock()
        self._by_scope: dict[str, set[str]] = {}
        # Records from_dict could not read (gone from the file at the next save).
        self.skipped = 0
        # The archive's keyword index for the last filter searched with include_archived,
        # kept until the archive changes (its generation moves on).
        self._archive_generation = 0
        self._archive_index: tuple[tuple[Any, ...], int, _ArchiveKeywords] | None = None
        self._row: dict[str, int] = {}
        self._ids: list[str | None] = []
        self._free: list[int] = []
        self._dims = 0
        self._vectors: npt.NDArray[np.float32] = np.zeros((0, 0), dtype=np.float32)
        # Whether a stored form being made may still read _vectors (stored_form).
        self._vectors_shared = False
        self._has_vector: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self._boost: npt.NDArray[np.float32] = np.zeros(0, dtype=np.float32)
        self._updated: npt.NDArray[np.float64] = np.zeros(0, dtype=np.float64)
        self._in_use: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self._pinned: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)

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

    # -- the words' indexes --

    @property
    def keywords_ready(self) -> bool:
        """Whether a search or save can start without indexing the loaded words first."""
        return self._keyword_index is not None or self._built is not None

    def build_keywords(self) -> None:
        """Index the words of the memories read from storage; nothing when they are.

        Safe in another thread while the store is used in its own: it reads only what
        the load noted, and the loop's changes meanwhile are applied when the result is
        taken into use, by the first search or save.
        """
        with self._build_lock:
            pending = self._unindexed
            if pending is None or self._built is not None:
                return
            self._built = _words_indexed(pending)

    @property
    def _by_content(self) -> dict[str, str]:
        """Normalised content -> the active memory saying it."""
        return self._words_indexes()[1]

    @property
    def _keywords(self) -> KeywordIndex:
        """BM25 over the active memories' content and tag values, by row."""
        return self._words_indexes()[0]

    def _words_indexes(self) -> tuple[KeywordIndex, dict[str, str]]:
        keywords, by_content = self._keyword_index, self._content_index
        if keywords is not None and by_content is not None:
            return keywords, by_content
        self.build_keywords()  # waits for a build under way in another thread
        with self._build_lock:
            built, self._built, self._unindexed = self._built, None, None
        assert built is not None
        keywords, by_content = built
        for row, words in self._word_changes:
            _apply(keywords, by_content, row, words)
        self._word_changes = []
        self._keyword_index, self._content_index = keywords, by_content
        return keywords, by_content

    def _index_words(self, row: int, words: _Words) -> None:
        keywords, by_content = self._keyword_index, self._content_index
        if keywords is None or by_content is None:
            self._word_changes.append((row, words))
        else:
            _apply(keywords, by_content, row, words)

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
        self._pinned = np.concatenate([self._pinned, np.zeros(new - size, dtype=bool)])
        self._free.extend(range(new - 1, size - 1, -1))
        self._ids.extend([None] * (new - size))

    def _index(self, memory: Memory, vector: Vector | None) -> None:
        memory_id, kind = memory.id, memory.type
        self._active[memory_id] = memory
        _add_to(self._by_type, kind, memory_id)
        _add_to(self._by_scope, memory.scope, memory_id)
        by_type_tag = self._by_type_tag
        for tag in memory.tags:
            _add_to(by_type_tag, (kind, tag), memory_id)
        if memory.tags:
            _add_to(self._by_tag_set, (kind, frozenset(memory.tags)), memory_id)
        if not self._free:
            self._grow(len(self._ids) + 1)
        row = self._free.pop()
        self._row[memory.id] = row
        self._ids[row] = memory.id
        self._in_use[row] = True
        self._refresh_row(memory)
        self._index_words(row, (memory_id, memory.scope, memory.content, memory.tags))
        self._has_vector[row] = False
        if vector is not None:
            self._put_vector(row, vector)

    def _index_loaded(self, memories: list[Memory]) -> None:
        """Index memories read from storage into rows 0..n-1 of an empty store, in bulk;
        their words wait for build_keywords."""
        count = len(memories)
        self._grow(count)
        self._free = list(range(len(self._ids) - 1, count - 1, -1))
        active, row_of, ids = self._active, self._row, self._ids
        # Grouped by type and tags first: a home's memories share a few hundred tag sets,
        # so each index is filled a group at a time.
        groups: dict[tuple[MemoryType, tuple[str, ...]], list[str]] = {}
        for row, memory in enumerate(memories):
            memory_id = memory.id
            active[memory_id] = memory
            row_of[memory_id] = row
            ids[row] = memory_id
            key = (memory.type, memory.tags)
            if (group := groups.get(key)) is None:
                groups[key] = [memory_id]
            else:
                group.append(memory_id)
        by_scope = self._by_scope
        for memory in memories:
            _add_to(by_scope, memory.scope, memory.id)
        by_type, by_type_tag, by_tag_set = self._by_type, self._by_type_tag, self._by_tag_set
        for (kind, tags), members in groups.items():
            if (known := by_type.get(kind)) is None:
                by_type[kind] = set(members)
            else:
                known.update(members)
            for tag in tags:
                if (known := by_type_tag.get(tag_key := (kind, tag))) is None:
                    by_type_tag[tag_key] = set(members)
                else:
                    known.update(members)
            if tags:
                if (known := by_tag_set.get(key_set := (kind, frozenset(tags)))) is None:
                    by_tag_set[key_set] = set(members)
                else:
                    known.update(members)
        if memories:
            self._unindexed = [(m.id, m.scope, m.content, m.tags) for m in memories]
            self._keyword_index = self._content_index = None
        self._in_use[:count] = True
        self._boost[:count] = [CONFIDENCE_BOOST[m.confidence.value] for m in memories]
        self._updated[:count] = [m.updated_at for m in memories]
        self._pinned[:count] = [m.pinned for m in memories]

    def _refresh_row(self, memory: Memory) -> None:
        row = self._row[memory.id]
        self._boost[row] = CONFIDENCE_BOOST[memory.confidence.value]
        self._updated[row] = memory.updated_at
        self._pinned[row] = memory.pinned

    def _unindex(self, memory: Memory) -> None:
        del self._active[memory.id]
        self._by_type[memory.type].discard(memory.id)
        in_scope = self._by_scope[memory.scope]
        in_scope.discard(memory.id)
        if not in_scope:
            del self._by_scope[memory.scope]
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
        self._index_words(row, (memory.id, memory.scope, memory.content, None))
        self._ids[row] = None
        self._in_use[row] = False
        self._pinned[row] = False
        self._has_vector[row] = False
        self._free.append(row)

    def _put_vector(self, row: int, vector: Vector) -> None:
        if vector.shape[0] != self._dims:
            # A new embeddings model: the old vectors cannot be compared with its own.
            self._dims = vector.shape[0]
            self._vectors = np.zeros((len(self._ids), self._dims), dtype=np.float32)
            self._has_vector[:] = False
        elif self._vectors_shared:
            # A stored form still being made reads the matrix as it was.
            self._vectors = self._vectors.copy()
        self._vectors_shared = False
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

    # -- the archive and filters --

    def _archive(
        self, memory: Memory, superseded_by: str | None, reason: str, now: float
    ) -> ArchivedMemory:
        self._unindex(memory)
        archived = ArchivedMemory(replace(memory), superseded_by, now, reason)
        self._archived[memory.id] = archived
        self._archive_generation += 1
        return archived

    def _outside(self, scopes: frozenset[str] | None) -> set[str]:
        """Active memories of scopes other than these; none when scopes is None (all)."""
        if scopes is None:
            return set()
        return {i for scope, ids in self._by_scope.items() if scope not in scopes for i in ids}

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
        self,
        kind: MemoryType | None,
        tags: tuple[str, ...],
        scopes: frozenset[str] | None = None,
    ) -> list[ArchivedMemory]:
        return [
            a
            for a in self._archived.values()
            if (kind is None or a.memory.type is kind)
            and all(t in a.memory.tags for t in tags)
            and (scopes is None or a.memory.scope in scopes)
        ]

    def _archive_keywords(
        self,
        kind: MemoryType | None,
        tags: tuple[str, ...],
        scopes: frozenset[str] | None = None,
    ) -> _ArchiveKeywords:
        """The archived memories a filter allows, their keyword index, confidence boosts
        and update times, built once per archive change: at 10,000 archived memories a
        build takes about 90 ms, a search with it under 5 ms."""
        key = (kind, tags, scopes)
        cached = self._archive_index
        if cached is not None and cached[0] == key and cached[1] == self._archive_generation:
            return cached[2]
        archived = self._archived_matching(kind, tags, scopes)
        index = KeywordIndex()
        for number, one in enumerate(archived):
            index.add(number, document(one.memory.content, one.memory.tags))
        boost = np.array(
            [CONFIDENCE_BOOST[one.memory.confidence.value] for one in archived], dtype=np.float32
        )
        updated = np.array([one.memory.updated_at for one in archived], dtype=np.float64)
        built = (archived, index, boost, updated)
        self._archive_index = (key, self._archive_generation, built)
        return built

    # -- people's keys --

    def rename_people(self, renamed: Callable[[str], str | None]) -> int:
        """Give every memory, active or archived, of a person whose key changes its new
        key: its scope (`person:<key>`) and who said it (provenance `said_by`). `renamed`
        answers a key's new key, or None when it stays. Nothing else changes (content,
        dates, pins, vectors); how many records changed.

        A memory whose scope changes is taken out of the indexes and put back under its
        new scope (the same words in two scopes are two memories). One whose words the new
        scope already holds (a hand-over to a person who said the same) becomes one memory
        with that one: counted there, and archived in its favour (when the words are
        indexed; at a load, before they are, no scope holds another's words yet).
        """
        changed = 0
        for memory in list(self._active.values()):
            scope, provenance = _renamed(memory, renamed)
            if scope is None and provenance is None:
                continue
            changed += 1
            if provenance is not None:
                memory.provenance = provenance
            if scope is None:
                continue
            vector = self.vector(memory.id)
            self._unindex(memory)
            memory.scope = scope
            same = (
                self._by_content.get(content_key(scope, memory.content))
                if self.keywords_ready
                else None
            )
            if same is not None and same in self._active:
                held = self._active[same]
                held.occurrences += memory.occurrences
                self._refresh_row(held)
                self._archived[memory.id] = ArchivedMemory(
                    replace(memory), same, time.time(), HANDED_OVER
                )
                continue
            self._index(memory, vector)
        for archived in self._archived.values():
            scope, provenance = _renamed(archived.memory, renamed)
            if scope is None and provenance is None:
                continue
            changed += 1
            if scope is not None:
                archived.memory.scope = scope
            if provenance is not None:
                archived.memory.provenance = provenance
        if changed:
            self._archive_generation += 1
        return changed

    def scope_ids(self, scope: str) -> list[str]:
        """The ids of every memory of a scope, active or archived, sorted."""
        return sorted(
            {*self._by_scope.get(scope, set())}
            | {a.id for a in self._archived.values() if a.memory.scope == scope}
        )

    # -- storage --

    def as_dict(self) -> dict[str, Any]:
        """The stored form, made afresh (see stored_form)."""
        return self.stored_form()()

    def stored_form(self) -> Callable[[], dict[str, Any]]:
        """The stored form in two parts: what this takes now, in the thread that changes the
        records, is cheap (which records there are, their rows, and the vectors' matrix,
        shared until a vector is next written, which copies it first); the function it
        returns makes the stored form of that in any thread (the executor, where a save
        writes the file): encoding 10,000 vectors takes far longer than the event loop
        may be held.

        Nothing of it is kept between saves: the records' stored forms, vectors in
        base64, would take more memory than the records themselves. A record changed
        while the function runs (a sighting counted) is written as it is then; the change
        asked for a save of its own, which follows.
        """
        active = list(self._active.values())
        archived = list(self._archived.values())
        row_of = self._row
        rows = np.fromiter((row_of[m.id] for m in active), dtype=np.int64, count=len(active))
        with_vector = self._has_vector[rows]
        matrix = self._vectors
        self._vectors_shared = True

        def stored() -> dict[str, Any]:
            encoded = iter(encode_vectors(matrix, rows[with_vector]))
            memories = []
            for memory, has_vector in zip(active, map(bool, with_vector), strict=True):
                data = memory.as_dict()
                if has_vector:
                    data["vector"] = next(encoded)
                memories.append(data)
            return {"memories": memories, "archived": [one.as_dict() for one in archived]}

        return stored

    @classmethod
    def from_dict(cls, data: dict[str, Any], settings: MemorySettings | None = None) -> Self:
        """Read the stored form; a record that cannot be read is skipped (counted in
        `skipped`, for the caller to keep the file), not fatal.

        Each vector goes straight into its row of the matrix: no copy of them all is made
        on the way. Vectors of more than one length (of two models) are all dropped, to
        be embedded again.
        """
        store = cls(settings)
        memories = data.get("memories") or []
        store._grow(len(memories))
        loaded: dict[str, Memory] = {}
        # One copy of each tag and tag set: a home's 10,000 memories share a few hundred.
        tags: dict[str, str] = {}
        tag_sets: dict[tuple[str, ...], tuple[str, ...]] = {}
        matrix: npt.NDArray[np.float32] | None = None
        mixed = False
        for raw in memories:
            try:
                memory = Memory.from_dict(raw)
                vector = decode_raw_vector(raw["vector"]) if raw.get("vector") else b""
            except (AttributeError, KeyError, OverflowError, TypeError, ValueError):
                store.skipped += 1
                continue
            if memory.id in loaded:
                continue
            if (shared := tag_sets.get(memory.tags)) is None:
                shared = tag_sets[memory.tags] = tuple(tags.setdefault(t, t) for t in memory.tags)
            memory.tags = shared
            if vector and not mixed:
                if matrix is None:
                    matrix = np.zeros((len(store._ids), len(vector) // 2), dtype=np.float32)
                if len(vector) != 2 * matrix.shape[1]:
                    mixed = True
                else:
                    matrix[len(loaded)] = np.frombuffer(vector, dtype=np.float16)
            loaded[memory.id] = memory
        store._index_loaded(list(loaded.values()))
        if matrix is not None and not mixed and matrix.shape[1]:
            store._dims = matrix.shape[1]
            store._vectors = matrix
            store._has_vector = normalize_rows(matrix)
        for raw in data.get("archived") or []:
            try:
                archived = ArchivedMemory.from_dict(raw)
            except (AttributeError, KeyError, OverflowError, TypeError, ValueError):
                store.skipped += 1
                continue
            store._archived[archived.id] = archived
        return store


def _renamed(
    memory: Memory, renamed: Callable[[str], str | None]
) -> tuple[str | None, Provenance | None]:
    """A memory's new scope and provenance when a person's key in them changes (None:
    that part stays)."""
    scope = None
    if memory.scope.startswith(PERSON_SCOPE_PREFIX):
        new = renamed(memory.scope.removeprefix(PERSON_SCOPE_PREFIX))
        scope = f"{PERSON_SCOPE_PREFIX}{new}" if new is not None else None
    provenance = None
    said_by = memory.provenance.said_by if memory.provenance is not None else None
    if memory.provenance is not None and said_by is not None:
        new = renamed(said_by)
        provenance = replace(memory.provenance, said_by=new) if new is not None else None
    return scope, provenance


def _words_indexed(
    memories: Sequence[tuple[str, str, str, tuple[str, ...]]],
) -> tuple[KeywordIndex, dict[str, str]]:
    """The keyword index (rows in order) and the exact-repeat lookup of these memories."""
    keywords = KeywordIndex()
    keywords.add_new(
        (row, document(content, tags)) for row, (_id, _scope, content, tags) in enumerate(memories)
    )
    by_content: dict[str, str] = {}
    for memory_id, scope, content, _tags in memories:
        by_content.setdefault(content_key(scope, content), memory_id)
    return keywords, by_content


def _apply(keywords: KeywordIndex, by_content: dict[str, str], row: int, words: _Words) -> None:
    """A memory's words into the indexes at its row, or (tags None) out of them."""
    memory_id, scope, content, tags = words
    normalized = content_key(scope, content)
    if tags is None:
        keywords.remove(row)
        if by_content.get(normalized) == memory_id:
            del by_content[normalized]
    else:
        by_content.setdefault(normalized, memory_id)
        keywords.add(row, document(content, tags))


def migrate_memories(version: int, data: dict[str, Any]) -> dict[str, Any]:
    """1 -> 2: a stored cap of the old default goes, so the current default applies.
    2 -> 3: every memory, active or archived, is the household's (as every memory was),
    with no provenance (none was kept).

    A newer file is not ours to read.
    """
    if version > MEMORIES_VERSION:
        raise ValueError(f"memories stored by a newer version ({version})")
    # A file of another shape is refused here, before it is written again as migrated:
    # it is set aside as it was.
    if not isinstance(data, dict):
        raise ValueError(f"memories file holds {type(data).__name__}, not an object")
    settings = data.get("settings")
    if settings is not None and not isinstance(settings, dict):
        raise ValueError(f"settings is {type(settings).__name__}, not an object")
    for part in ("memories", "archived"):
        if not isinstance(data.get(part, []), list):
            raise ValueError(f"{part} is {type(data[part]).__name__}, not a list")
    if (
        version < 2
        and isinstance(settings, dict)
        and settings.get("max_memories_per_type") == OLD_DEFAULT_CAP
    ):
        data = {
            **data,
            "settings": {k: v for k, v in settings.items() if k != "max_memories_per_type"},
        }
    if version < 3:
        data = {
            **data,
            "memories": [_household(raw) for raw in data.get("memories") or []],
            "archived": [
                {**raw, "memory": _household(raw["memory"])}
                if isinstance(raw, dict) and "memory" in raw
                else raw
                for raw in data.get("archived") or []
            ],
        }
    return data


def _household(raw: Any) -> Any:
    """A record of before scopes, as the household's; what is no record stays as it was
    (reading skips it and keeps a copy of the file)."""
    if not isinstance(raw, dict):
        return raw
    return {"scope": HOUSEHOLD_SCOPE, "provenance": None, **raw}
