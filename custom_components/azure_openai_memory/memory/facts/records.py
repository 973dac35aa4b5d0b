"""The memories' records and their stored form: this module owns FactRecords, the state
under FactStore and its bookkeeping. It keeps each active memory findable by normalised
content, by type, by (type, tag) and by (type, tag set), in the keyword index, and in
its row of parallel numpy arrays, all in step as memories come, change and go; it keeps
the archive and the archive's keyword index, answers which memories a type and tag
filter allows, and reads and writes the stored form (each record's cached until the
record changes) with its version. What a save, search or forget decides is FactStore's.
"""

import base64
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from .models import (
    CONFIDENCE_BOOST,
    HOUSEHOLD_SCOPE,
    ArchivedMemory,
    FactSettings,
    Memory,
    MemoryType,
)
from .text import KeywordIndex, document, normalize_for_comparison
from .vectors import Vector, as_unit_vector, encode_vector

# 2: the per-type cap's old default (50) is no longer kept as if a user had chosen it.
# 3: every memory has a scope (the household's, or one person's) and may have provenance.
FACTS_VERSION = 3
# The per-type cap every installation stored before version 2, chosen or not: saving the
# options form stored all four settings. Below the new default it archived a home's facts.
OLD_DEFAULT_CAP = 50

type _ArchiveKeywords = tuple[
    list[ArchivedMemory], KeywordIndex, npt.NDArray[np.float32], npt.NDArray[np.float64]
]


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


class FactRecords:
    """Every memory of the installation, indexed; FactStore adds what is done with them.

    Each active memory has a row in parallel numpy arrays (vector, confidence boost,
    last update, whether in use, whether pinned) so that ranking 10,000 memories is one matrix product
    and a few vector operations. Rows of removed memories are reused.
    """

    def __init__(self, settings: FactSettings | None = None) -> None:
        self.settings = settings or FactSettings()
        self._active: dict[str, Memory] = {}
        self._archived: dict[str, ArchivedMemory] = {}
        self._by_content: dict[str, str] = {}
        self._by_type_tag: dict[tuple[MemoryType, str], set[str]] = {}
        self._by_tag_set: dict[tuple[MemoryType, frozenset[str]], set[str]] = {}
        self._by_type: dict[MemoryType, set[str]] = {}
        self._by_scope: dict[str, set[str]] = {}
        self._keywords = KeywordIndex()
        # Each record's stored form, made on first save and dropped when the record changes.
        self._stored: dict[str, dict[str, Any]] = {}
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
        self._by_content.setdefault(content_key(memory.scope, memory.content), memory_id)
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
        self._keywords.add(row, document(memory.content, memory.tags))
        self._has_vector[row] = False
        if vector is not None:
            self._put_vector(row, vector)

    def _index_loaded(self, memories: list[Memory]) -> None:
        """Index memories read from storage into rows 0..n-1 of an empty store, in bulk."""
        count = len(memories)
        self._grow(count)
        self._free = list(range(len(self._ids) - 1, count - 1, -1))
        by_content, row_of, ids = self._by_content, self._row, self._ids
        by_type, by_type_tag, by_tag_set = self._by_type, self._by_type_tag, self._by_tag_set
        by_scope = self._by_scope
        documents: list[tuple[int, list[str]]] = []
        for row, memory in enumerate(memories):
            memory_id, kind, tags = memory.id, memory.type, memory.tags
            self._active[memory_id] = memory
            by_content.setdefault(content_key(memory.scope, memory.content), memory_id)
            _add_to(by_type, kind, memory_id)
            _add_to(by_scope, memory.scope, memory_id)
            for tag in tags:
                _add_to(by_type_tag, (kind, tag), memory_id)
            if tags:
                _add_to(by_tag_set, (kind, frozenset(tags)), memory_id)
            row_of[memory_id] = row
            ids[row] = memory_id
            documents.append((row, document(memory.content, tags)))
        self._keywords.add_new(documents)
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
        self._stored.pop(memory.id, None)
        del self._active[memory.id]
        normalized = content_key(memory.scope, memory.content)
        if self._by_content.get(normalized) == memory.id:
            del self._by_content[normalized]
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
        self._keywords.remove(row)
        self._ids[row] = None
        self._in_use[row] = False
        self._pinned[row] = False
        self._has_vector[row] = False
        self._free.append(row)

    def _put_vector(self, row: int, vector: Vector) -> None:
        if (memory_id := self._ids[row]) is not None:
            self._stored.pop(memory_id, None)
        if vector.shape[0] != self._dims:
            self._stored.clear()
            # A new embeddings model: the old vectors cannot be compared with its own.
            self._dims = vector.shape[0]
            self._vectors = np.zeros((len(self._ids), self._dims), dtype=np.float32)
            self._has_vector[:] = False
        self._vectors[row] = vector
        self._has_vector[row] = True

    def _load_vectors(self, encoded: dict[int, bytes]) -> None:
        """Every stored vector at once: one decode of all their bytes, not one per memory."""
        lengths = {len(raw) for raw in encoded.values()}
        if len(lengths) != 1 or (width := lengths.pop()) % 2:
            return  # none, or of mixed models: they are embedded again
        rows = np.fromiter(encoded.keys(), dtype=np.int64, count=len(encoded))
        matrix = np.frombuffer(b"".join(encoded.values()), dtype=np.float16)
        matrix = matrix.reshape(len(encoded), width // 2).astype(np.float32)
        norms = np.linalg.norm(matrix, axis=1)
        usable = np.isfinite(norms) & (norms > 0)
        self._dims = width // 2
        self._vectors = np.zeros((len(self._ids), self._dims), dtype=np.float32)
        self._vectors[rows[usable]] = matrix[usable] / norms[usable, None]
        self._has_vector[rows[usable]] = True

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
        self._stored.clear()
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

    # -- storage --

    def as_dict(self) -> dict[str, Any]:
        """The stored form, safe to hand to a writer thread.

        Built in the event loop at every save, so each record's form is kept until that
        record changes: the dicts are never changed once made, only replaced.
        """
        stored = self._stored
        memories = []
        for memory in self._active.values():
            if (data := stored.get(memory.id)) is None:
                data = memory.as_dict()
                row = self._row[memory.id]
                if self._has_vector[row]:
                    data["vector"] = encode_vector(self._vectors[row])
                stored[memory.id] = data
            memories.append(data)
        archived = []
        for one in self._archived.values():
            if (data := stored.get(one.id)) is None:
                data = stored[one.id] = one.as_dict()
            archived.append(data)
        return {"memories": memories, "archived": archived}

    @classmethod
    def from_dict(cls, data: dict[str, Any], settings: FactSettings | None = None) -> Self:
        """Read the stored form; a record that cannot be read is skipped (counted in
        `skipped`, for the caller to keep the file), not fatal."""
        store = cls(settings)
        memories = data.get("memories") or []
        loaded: dict[str, Memory] = {}
        raws: dict[str, dict[str, Any]] = {}
        encoded: dict[int, bytes] = {}
        for raw in memories:
            try:
                memory = Memory.from_dict(raw)
                vector = base64.b64decode(raw["vector"]) if raw.get("vector") else None
            except (AttributeError, KeyError, TypeError, ValueError):
                store.skipped += 1
                continue
            if memory.id in loaded:
                continue
            if vector:
                encoded[len(loaded)] = vector
            loaded[memory.id] = memory
            raws[memory.id] = raw
        store._index_loaded(list(loaded.values()))
        store._load_vectors(encoded)
        # What was read is what would be written, where the vector came through too.
        has_vector = store._has_vector
        store._stored = {
            memory_id: raw
            for row, (memory_id, raw) in enumerate(raws.items())
            if bool(has_vector[row]) == bool(raw.get("vector"))
        }
        for raw in data.get("archived") or []:
            try:
                archived = ArchivedMemory.from_dict(raw)
            except (AttributeError, KeyError, TypeError, ValueError):
                store.skipped += 1
                continue
            store._archived[archived.id] = archived
        return store


def migrate_facts(version: int, data: dict[str, Any]) -> dict[str, Any]:
    """1 -> 2: a stored cap of the old default goes, so the current default applies.
    2 -> 3: every memory, active or archived, is the household's (as every memory was),
    with no provenance (none was kept).

    A newer file is not ours to read.
    """
    if version > FACTS_VERSION:
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
