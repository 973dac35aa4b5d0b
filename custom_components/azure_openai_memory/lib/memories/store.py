"""What saving, searching, finding patterns and forgetting do with the memories: this
module owns MemoryStore, the rules applied to the records (MemoryRecords). A save reinforces
a memory with the same words, supersedes one about the same subject or adds a new one,
and keeps each type within its cap; a search ranks by BM25 over content and tag values
fused with the cosine similarity of embeddings when there are any, plus the confidence
and recency boosts, in a few numpy operations over rows and indexes rather than a scan
of every memory; patterns are read off the (type, tag) index; forgetting archives,
erasing deletes, and the clean-up drops archived records past their retention. A person's
own changes are decisions, not observations: an edit supersedes without any judgement, a pin
is no sighting, a restore brings an archived record back as it was.
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
import re
import time
from typing import Any
import uuid

import numpy as np
import numpy.typing as npt

from .models import (
    CONFIDENCE_BOOST,
    CONFIDENCE_ORDER,
    DAY,
    HOUSEHOLD_SCOPE,
    MAX_TAGS,
    MONTH_BOOST,
    MONTH_DAYS,
    RECENT_BOOST,
    RECENT_DAYS,
    ArchivedMemory,
    ForgetResult,
    Memory,
    MemoryConfidence,
    MemoryInputError,
    MemorySettings,
    MemorySource,
    MemoryType,
    PatternInsight,
    Provenance,
    SaveAction,
    SaveResult,
    SearchResult,
    parse_confidence,
    parse_source,
    parse_type,
    validate_content,
    validate_limit,
    validate_scope,
    validate_tag,
    validate_tags,
)
from .records import MemoryRecords, content_key
from .supersede import (
    CANDIDATE_SIMILARITY,
    SUPERSEDE_SIMILARITY,
    Relation,
    Verdict,
    conflicting,
    same_tags_similarity,
    same_words_alike,
)
from .text import numbers_of, terms
from .vectors import Vector, as_unit_vector

# Below this cosine similarity a memory is no answer to a question (unless words match).
MIN_SIMILARITY = 0.20
# How hybrid relevance weighs meaning against matching words (BM25 scaled to 0..1 by the
# best match). Measured on the labelled home (139 paraphrased questions, tuned on the odd
# question ids, checked on the even ones): 0.7/0.3 put the right memory in the top five
# for 85 %, 0.95/0.05 for 95.0 % (132), 0.995/0.005 for 95.7 % (133, the odd half 94.4 ->
# 95.8 %, the even half unchanged at 95.6 %); shared everyday words ("switch", "morning")
# outweigh small differences of meaning when words weigh more. So words break ties between
# memories of alike meaning, and answer alone for memories still without a vector.
VECTOR_WEIGHT = 0.995
KEYWORD_WEIGHT = 0.005
# Memories of one type sharing a tag value that make a pattern.
PATTERN_MIN_MEMORIES = 3
# Added to a pinned memory's score for ordering only: above any relevance and boosts.
PINNED_FIRST = 10.0
# What memory_export writes and memory_import reads: its name and schema version.
EXPORT_FORMAT = "azure_openai_memory.memories"
EXPORT_VERSION = 1
# Why a memory a person corrected went to the archive.
EDITED = "edited"
# Why a memory someone asked to forget went to the archive, unless they say otherwise.
FORGOTTEN = "Forgotten on request"

_OVERRIDE = re.compile(r"\boverr(id|ode)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ExportRecords:
    """The records an export holds, each read and checked."""

    memories: list[Memory]
    archived: list[ArchivedMemory]

    @property
    def scopes(self) -> frozenset[str]:
        """Every scope the records belong to."""
        return frozenset([m.scope for m in self.memories] + [a.memory.scope for a in self.archived])

    def rescoped(self, scope_of: Callable[[str], str]) -> "ExportRecords":
        """The records with each scope as scope_of names it now (an export of before people
        were known by their own id names a person's scope by their entity id)."""
        return ExportRecords(
            [replace(m, scope=scope_of(m.scope)) for m in self.memories],
            [
                replace(a, memory=replace(a.memory, scope=scope_of(a.memory.scope)))
                for a in self.archived
            ],
        )


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import added, found already there, refused to replace, and deduplicated."""

    added: list[str]
    unchanged: list[str]
    conflicts: list[str]
    duplicates: list[dict[str, str]]
    evicted: tuple[ArchivedMemory, ...] = ()
    dry_run: bool = False


def _new_id() -> str:
    return f"mem_{uuid.uuid4().hex[:16]}"


class MemoryStore(MemoryRecords):
    """Every memory of the installation: saved, searched, read for patterns, forgotten."""

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
        pinned: bool | None = None,
        verdict: Verdict | None = None,
        now: float | None = None,
        scope: str = HOUSEHOLD_SCOPE,
        provenance: Provenance | None = None,
        push_out: bool = True,
    ) -> SaveResult:
        """Save with the three-step deduplication; raises MemoryInputError on bad input.

        Everything is validated before anything changes: a refused save writes nothing.
        `pinned` pins (True) or unpins (False) the memory saved or reinforced; None leaves
        a reinforced memory as it was, and a new one takes the pin of what it replaces.
        A `verdict` (a model's, on the memory update_candidate offered) decides step 2
        instead of the offline rule, while that memory is still there.
        A memory is reinforced or replaced only by one of its own scope: one person's fact
        never archives another's, nor the household's. Each scope has its own cap; with
        push_out False, a new memory that would push another of its scope out of use is
        refused instead (memory_scope_full), nothing changed.
        """
        content = validate_content(content)
        kind = parse_type(memory_type)
        tag_tuple = validate_tags(tags)
        scope = validate_scope(scope)
        level = parse_confidence(confidence) if confidence is not None else None
        origin = parse_source(source)
        now = time.time() if now is None else now
        unit = as_unit_vector(vector) if vector is not None else None

        # 1. The same words again: seen once more.
        existing_id = self._by_content.get(content_key(scope, content))
        if existing_id is not None:
            return self._reinforce(self._active[existing_id], tag_tuple, level, pinned, unit, now)

        # 2. The same subject: the new memory replaces the old one, or repeats it.
        judged = self._active.get(verdict.memory_id) if verdict is not None else None
        if (
            verdict is not None
            and judged is not None
            and judged.type is kind
            and judged.scope == scope
        ):
            relation = verdict.relation
            if relation is Relation.REPEATS and numbers_of(content) != numbers_of(judged.content):
                relation = Relation.ADDS  # a changed number is never the same fact
            if relation is Relation.REPEATS:
                return self._reinforce(judged, tag_tuple, level, pinned, None, now)
            old = judged if relation is Relation.REPLACES else None
            action = SaveAction.UPDATED
        else:
            old = self._same_subject(kind, tag_tuple, unit, content, scope)
            action = SaveAction.SUPERSEDED

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
            pinned=bool(pinned),
            scope=scope,
            provenance=provenance,
        )
        # It inherits the old one's count (and its pin, unless this save says otherwise).
        archived = None
        if old is not None:
            memory.occurrences = old.occurrences + 1
            memory.pinned = old.pinned if pinned is None else pinned
            if memory.occurrences >= self.settings.high_confidence_threshold:
                memory.confidence = MemoryConfidence.HIGH
            shared = ", ".join(t for t in tag_tuple if t in old.tags)
            reason = (
                f"Updated by newer observation about {shared}"
                if action is SaveAction.SUPERSEDED
                else f"Replaced by a newer fact about {shared} (as the model judged)"
            )
            archived = self._archive(old, memory.id, reason, now)
        # 3. Otherwise a new memory.
        if old is None and not push_out:
            self._refuse_over_cap(kind, scope)
        self._index(memory, unit)
        evicted = self._evict_over_cap(kind, now, keep=memory.id, scope=scope)
        return SaveResult(action if archived else SaveAction.CREATED, memory, archived, evicted)

    def _reinforce(
        self,
        existing: Memory,
        tags: tuple[str, ...],
        level: MemoryConfidence | None,
        pinned: bool | None,
        unit: Vector | None,
        now: float,
    ) -> SaveResult:
        """A memory seen once more: counted, confident from the threshold, pinned as asked."""
        existing_id = existing.id
        existing.occurrences += 1
        existing.updated_at = now
        if (
            level is MemoryConfidence.HIGH
            or existing.occurrences >= self.settings.high_confidence_threshold
        ):
            existing.confidence = MemoryConfidence.HIGH
        if pinned is not None:
            existing.pinned = pinned
        self._refresh_row(existing)
        if unit is not None and not self._has_vector[self._row[existing_id]]:
            self._put_vector(self._row[existing_id], unit)
        if added := [t for t in tags if t not in existing.tags]:
            # The new save's tags too: forgetting or erasing by any of them finds it.
            vector = self.vector(existing_id)
            self._unindex(existing)
            existing.tags = (*existing.tags, *added)[:MAX_TAGS]
            self._index(existing, vector)
        return SaveResult(SaveAction.REINFORCED, existing)

    def update_candidate(
        self,
        content: str,
        memory_type: MemoryType | str,
        tags: Iterable[str] = (),
        *,
        vector: Sequence[float] | npt.NDArray[Any] | None = None,
        scope: str = HOUSEHOLD_SCOPE,
    ) -> Memory | None:
        """The memory a model should be asked about before this content is saved.

        The most alike memory of the type sharing a tag (none naming another person,
        room or device) at least CANDIDATE_SIMILARITY alike; without a comparable
        embedding, the memory the offline rule would supersede. None when the content
        repeats a memory word for word (step 1 of save decides) or nothing is close.
        """
        content = validate_content(content)
        kind = parse_type(memory_type)
        tag_tuple = validate_tags(tags)
        scope = validate_scope(scope)
        unit = as_unit_vector(vector) if vector is not None else None
        if content_key(scope, content) in self._by_content:
            return None
        if unit is not None and unit.shape[0] == self._dims:
            return self._alike_sharing_tags(kind, tag_tuple, unit, CANDIDATE_SIMILARITY, scope)
        return self._same_subject(kind, tag_tuple, unit, content, scope)

    def _same_subject(
        self,
        kind: MemoryType,
        tags: tuple[str, ...],
        vector: Vector | None,
        content: str,
        scope: str = HOUSEHOLD_SCOPE,
    ) -> Memory | None:
        """The memory a new one replaces by the offline rule: same tag set, or shared tags
        and alike embeddings.

        With embeddings on both sides, the same tag set needs same_tags_similarity;
        without, shared words (same_words_alike).
        """
        if not tags:
            return None
        comparable = vector is not None and vector.shape[0] == self._dims
        same = self._by_tag_set.get((kind, frozenset(tags)))
        if same:
            cut = same_tags_similarity(kind, tags)
            best: tuple[float, Memory] | None = None
            for same_id in same:
                if self._active[same_id].scope != scope:
                    continue
                row = self._row[same_id]
                if comparable and self._has_vector[row]:
                    assert vector is not None
                    alike = float(self._vectors[row] @ vector)
                    if alike < cut:
                        continue
                elif same_words_alike(kind, tags, content, self._active[same_id].content):
                    alike = 1.0
                else:
                    continue
                memory = self._active[same_id]
                if best is None or (alike, memory.updated_at) > (
                    best[0],
                    best[1].updated_at,
                ):
                    best = (alike, memory)
            if best is not None:
                return best[1]
        if vector is None or not comparable:
            return None
        return self._alike_sharing_tags(kind, tags, vector, SUPERSEDE_SIMILARITY, scope)

    def _alike_sharing_tags(
        self,
        kind: MemoryType,
        tags: tuple[str, ...],
        vector: Vector,
        cut: float,
        scope: str = HOUSEHOLD_SCOPE,
    ) -> Memory | None:
        """The most alike memory of a type and scope sharing a tag, at least `cut` alike,
        whose tags name no other person (room, device)."""
        candidates: set[str] = set()
        for tag in tags:
            candidates |= self._by_type_tag.get((kind, tag), set())
        candidates &= self._by_scope.get(scope, set())
        rows = np.fromiter(
            (self._row[i] for i in candidates), dtype=np.int64, count=len(candidates)
        )
        rows = rows[self._has_vector[rows]]
        if not rows.size:
            return None
        similarity = self._vectors[rows] @ vector
        close = np.flatnonzero(similarity >= cut)
        for index in close[np.argsort(-similarity[close])]:
            memory_id = self._ids[int(rows[index])]
            assert memory_id is not None
            if not conflicting(tags, self._active[memory_id].tags):
                return self._active[memory_id]
        return None

    def _of_scope(self, kind: MemoryType, scope: str) -> set[str]:
        """The active memories of one type and scope."""
        return self._by_type.get(kind, set()) & self._by_scope.get(scope, set())

    def _refuse_over_cap(self, kind: MemoryType, scope: str) -> None:
        """MemoryInputError (memory_scope_full) when one more memory of this type and scope would
        push another out of use."""
        cap = self.settings.cap(scope)
        if len(self._of_scope(kind, scope)) >= cap:
            raise MemoryInputError("memory_scope_full", type=kind.value, cap=cap)

    def _evict_over_cap(
        self, kind: MemoryType, now: float, keep: str | None = None, *, scope: str
    ) -> tuple[ArchivedMemory, ...]:
        """Beyond the scope's cap of a type, its least confident, oldest memories go first;
        other scopes' memories are never touched (each scope has its own cap).

        Pinned memories count towards the cap but never go: a type holds more than its
        cap only when they alone are more.
        """
        ids = self._of_scope(kind, scope)
        over = len(ids) - self.settings.cap(scope)
        if over <= 0:
            return ()
        active = self._active
        order = sorted(
            (active[i] for i in ids if i != keep and not active[i].pinned),
            key=lambda m: (CONFIDENCE_ORDER[m.confidence], m.updated_at, m.id),
        )
        return tuple(
            self._archive(m, None, "Over max_memories_per_type", now) for m in order[:over]
        )

    def apply_settings(
        self, settings: MemorySettings, now: float | None = None
    ) -> tuple[ArchivedMemory, ...]:
        """New settings; a lowered cap archives at once. Returns what it archived."""
        self.settings = settings
        now = time.time() if now is None else now
        return tuple(
            archived
            for kind in list(self._by_type)
            for scope in sorted(self._by_scope)
            for archived in self._evict_over_cap(kind, now, scope=scope)
        )

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
        scopes: Iterable[str] | None = None,
        min_similarity: float = MIN_SIMILARITY,
    ) -> SearchResult:
        """The best memories for a question and/or a type and tags, of these scopes (None:
        every scope).

        With a text: hybrid relevance (embeddings and BM25) when there are vectors, else
        BM25 alone, plus the confidence and recency boosts. Without: most confident first,
        then most recent. A memory answers a text when it shares its words (by the
        relevance threshold) or means alike (min_similarity or more, with vectors): a
        caller that acts on the matches (forgetting them) asks for a closer meaning.
        """
        validate_limit(limit)
        kind = parse_type(memory_type) if memory_type is not None else None
        wanted = validate_tags(tags or ())
        now = time.time() if now is None else now
        text = query.strip() if query else ""
        seen = frozenset(validate_scope(one) for one in scopes) if scopes is not None else None
        hidden = self._outside(seen)
        candidates = self._candidates(kind, wanted)
        if candidates is not None:
            candidates -= hidden
        if not text:
            found = [
                (m, self._plain_score(m, now))
                for m in self._filtered(candidates)
                if m.id not in hidden
            ]
            if include_archived:
                found += [
                    (a.memory, self._plain_score(a.memory, now))
                    for a in self._archived_matching(kind, wanted, seen)
                ]
            active = self._active
            found.sort(
                key=lambda pair: (
                    pair[0].pinned and pair[0].id in active,
                    CONFIDENCE_ORDER[pair[0].confidence],
                    pair[0].updated_at,
                    pair[0].id,
                ),
                reverse=True,
            )
            return SearchResult(found[:limit], "keyword")
        unit = as_unit_vector(query_vector) if query_vector is not None else None
        result = self._rank(text, unit, candidates, limit, now, hidden, min_similarity)
        if include_archived:
            extra = self._rank_archived(text, kind, wanted, now, seen)
            # Archived records keep the pin they had; only an active one is offered first.
            pinned = {m.id for m, _score in result.memories if m.pinned}
            merged = sorted(
                result.memories + extra,
                key=lambda pair: (pair[0].id in pinned, pair[1], pair[0].id),
                reverse=True,
            )
            result = SearchResult(merged[:limit], result.ranker)
        return result

    @staticmethod
    def _recency(updated: npt.NDArray[np.float64], now: float) -> npt.NDArray[np.float32]:
        age = (now - updated) / DAY
        return np.where(
            age < RECENT_DAYS, RECENT_BOOST, np.where(age < MONTH_DAYS, MONTH_BOOST, 0.0)
        ).astype(np.float32)

    def _plain_score(self, memory: Memory, now: float) -> float:
        recency = self._recency(np.array([memory.updated_at]), now)[0]
        return round(float(CONFIDENCE_BOOST[memory.confidence.value] + recency), 4)

    def _rank(
        self,
        text: str,
        vector: Vector | None,
        candidates: set[str] | None,
        limit: int,
        now: float,
        hidden: set[str] | None = None,
        min_similarity: float = MIN_SIMILARITY,
    ) -> SearchResult:
        size = len(self._ids)
        # What the caller may see is the whole collection searched: the words' statistics
        # and the best match that scales them are of it alone, so another scope's memories
        # change no score of this one's.
        visible = self._in_use.copy()
        if hidden:
            visible[[self._row[i] for i in hidden]] = False
        allowed = visible.copy()
        if candidates is not None:
            allowed[:] = False
            allowed[[self._row[i] for i in candidates]] = True
        keyword, hits = self._keywords.scores(terms(text), size, visible)
        keyword /= float(keyword[visible].max(initial=0.0)) or 1.0
        # A match by words needs relevance_score_threshold points, two per shared word.
        matched = 2 * hits >= self.settings.relevance_score_threshold
        matched &= hits > 0
        hybrid = (
            vector is not None
            and vector.shape[0] == self._dims
            and bool((self._has_vector & allowed).any())
        )
        if hybrid:
            assert vector is not None
            similarity = self._vectors @ vector
            similarity[~self._has_vector] = 0.0
            # A memory still waiting for its vector is ranked by its words alone, on the
            # same 0..1 scale, rather than as if it meant nothing.
            relevance = np.where(
                self._has_vector, VECTOR_WEIGHT * similarity + KEYWORD_WEIGHT * keyword, keyword
            )
            allowed &= matched | (similarity >= min_similarity)
        else:
            relevance = keyword
            allowed &= matched
        total = relevance + self._boost + self._recency(self._updated, now)
        # Pinned memories first among the matches, then by score (at most about 1.03).
        order = total + PINNED_FIRST * self._pinned
        rows = np.flatnonzero(allowed)
        if rows.size > limit:
            # Every row as good as the limit-th (ties included), then ordered by score and id:
            # never by row number, which reuses rows other scopes' memories left.
            kth = np.partition(-order[rows], limit - 1)[limit - 1]
            rows = rows[-order[rows] <= kth]
        ids = np.array([str(self._ids[int(row)]) for row in rows], dtype=str)
        rows = rows[np.lexsort((ids, -order[rows]))][:limit]
        found: list[tuple[Memory, float]] = []
        for row in rows:
            memory_id = self._ids[int(row)]
            assert memory_id is not None
            found.append((self._active[memory_id], round(float(total[row]), 4)))
        return SearchResult(found, "hybrid" if hybrid else "keyword")

    def _rank_archived(
        self,
        text: str,
        kind: MemoryType | None,
        tags: tuple[str, ...],
        now: float,
        scopes: frozenset[str] | None = None,
    ) -> list[tuple[Memory, float]]:
        """Archived memories match by words only: their vectors are not kept."""
        archived, index, boost, updated = self._archive_keywords(kind, tags, scopes)
        if not archived:
            return []
        scores, hits = index.scores(terms(text), len(archived))
        top = float(scores.max(initial=0.0)) or 1.0
        rows = np.flatnonzero((hits > 0) & (2 * hits >= self.settings.relevance_score_threshold))
        plain = np.round(boost[rows] + self._recency(updated[rows], now), 4)
        total = np.round(scores[rows].astype(np.float64) / top + plain, 4)
        return [
            (archived[int(n)].memory, float(score)) for n, score in zip(rows, total, strict=True)
        ]

    # -- patterns --

    def patterns(self, scopes: Iterable[str] | None = None) -> list[PatternInsight]:
        """Any tag value reported PATTERN_MIN_MEMORIES+ times in memories of a type, and
        overrides; among the memories of these scopes (None: every scope).

        Not only `body:` tags of injuries: a home has rooms, people and devices in any
        type, so every tag prefix of every type is looked at. What counts is what was
        reported, not what is still active: three knee reports that each updated the last
        leave one active memory, whose occurrences carry the three (and whose supersede
        chain, while the archive keeps it, is the evidence).
        """
        seen = frozenset(validate_scope(one) for one in scopes) if scopes is not None else None
        hidden = self._outside(seen)
        chains = self._supersede_chains()
        insights: list[PatternInsight] = []
        for (kind, tag), all_ids in sorted(self._by_type_tag.items()):
            ids = all_ids - hidden if hidden else all_ids
            if ":" not in tag or not ids:
                continue
            reported = sum(self._active[i].occurrences for i in ids)
            if reported < PATTERN_MIN_MEMORIES:
                continue
            prefix, value = tag.split(":", 1)
            shown = [m for i in ids for m in (*chains.get(i, ()), self._active[i])]
            evidence = [m.id for m in sorted(shown, key=lambda m: (m.created_at, m.id))]
            insights.append(
                PatternInsight(
                    pattern_type=f"recurring_{prefix}",
                    description=(
                        f"Recurring {prefix} {value} in {kind.value} memories "
                        f"({reported} occurrences)"
                    ),
                    evidence=evidence,
                    confidence=MemoryConfidence.HIGH,
                )
            )
        overrides = sorted(
            (
                m
                for m in self._active.values()
                if m.id not in hidden
                and (_OVERRIDE.search(m.content) or m.type is MemoryType.TRAINING_RESPONSE)
            ),
            key=lambda m: (m.created_at, m.id),
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

    def _supersede_chains(self) -> dict[str, list[Memory]]:
        """Active memory id -> the archived memories it replaced, directly or through others."""
        replaced_by: dict[str, list[Memory]] = {}
        for archived in self._archived.values():
            if archived.superseded_by is not None:
                replaced_by.setdefault(archived.superseded_by, []).append(archived.memory)
        chains: dict[str, list[Memory]] = {}
        for memory_id in replaced_by.keys() & self._active.keys():
            chain, seen, todo = [], {memory_id}, list(replaced_by[memory_id])
            while todo:
                older = todo.pop()
                if older.id in seen:
                    continue
                seen.add(older.id)
                chain.append(older)
                todo.extend(replaced_by.get(older.id, ()))
            chains[memory_id] = chain
        return chains

    # -- forgetting --

    def forget(
        self,
        memory_id: str | None = None,
        tag: str | None = None,
        *,
        erase: bool = False,
        now: float | None = None,
        scopes: Iterable[str] | None = None,
        reason: str | None = None,
    ) -> ForgetResult:
        """Archive a memory, or every memory with a tag; with erase, delete them outright.
        Only memories of these scopes (None: every scope): another scope's memory is
        unknown here, and a tag forgets none of its memories. The archive keeps why
        (reason; else "Forgotten on request"), which the person reading it is shown.

        Erasing a tag deletes archived records carrying it too: what a user asks us to
        forget for privacy does not linger in the archive.
        """
        now = time.time() if now is None else now
        seen = frozenset(validate_scope(one) for one in scopes) if scopes is not None else None

        def mine(memory: Memory | None) -> bool:
            return memory is not None and (seen is None or memory.scope in seen)

        if memory_id is not None:
            memory = self._active.get(memory_id)
            if not mine(memory):
                memory = None
            archived_one = self._archived.get(memory_id)
            if memory is None and not (
                erase and archived_one is not None and mine(archived_one.memory)
            ):
                raise MemoryInputError("memory_unknown", memory_id=memory_id)
            if erase:
                contents = []
                scopes = set()
                if memory is not None:
                    contents.append(memory.content)
                    scopes.add(memory.scope)
                    self._unindex(memory)
                if (gone := self._archived.pop(memory_id, None)) is not None:
                    contents.append(gone.original_content)
                    scopes.add(gone.memory.scope)
                    self._archive_generation += 1
                return ForgetResult([], [memory_id], contents, frozenset(scopes))
            assert memory is not None
            why = reason or FORGOTTEN
            return ForgetResult([self._archive(memory, None, why, now)])
        if tag is None:
            raise MemoryInputError("memory_forget_nothing")
        tag = validate_tag(tag)
        active = [m for m in self._active.values() if tag in m.tags and mine(m)]
        if erase:
            erased = [m.id for m in active]
            contents = [m.content for m in active]
            scopes = {m.scope for m in active}
            for memory in active:
                self._unindex(memory)
            for old in [
                a for a in self._archived.values() if tag in a.memory.tags and mine(a.memory)
            ]:
                del self._archived[old.id]
                self._archive_generation += 1
                erased.append(old.id)
                contents.append(old.original_content)
                scopes.add(old.memory.scope)
            return ForgetResult([], erased, contents, frozenset(scopes))
        return ForgetResult(
            [self._archive(m, None, reason or f"{FORGOTTEN} ({tag})", now) for m in active]
        )

    # -- a person's own changes --

    def edit(
        self,
        memory_id: str,
        content: str,
        tags: Iterable[str] | None = None,
        *,
        vector: Sequence[float] | npt.NDArray[Any] | None = None,
        now: float | None = None,
        provenance: Provenance | None = None,
    ) -> SaveResult | None:
        """A person's correction of a memory's words or tags: it supersedes the memory
        without any model's judgement; the old record goes to the archive as "edited".
        The new memory says who corrected it (`provenance`; None: the old one's).

        The new memory keeps the type, pin, count and reference of the old one and is
        high-confidence: a person said so. Words that repeat another memory make the two
        one memory: that one is reinforced and the edited one archived in its favour.
        None when neither words nor tags change. MemoryInputError on bad input, nothing changed.
        """
        old = self._active.get(memory_id)
        if old is None:
            raise MemoryInputError("memory_unknown", memory_id=memory_id)
        content = validate_content(content)
        tag_tuple = old.tags if tags is None else validate_tags(tags)
        now = time.time() if now is None else now
        unit = as_unit_vector(vector) if vector is not None else None
        if content == old.content and tag_tuple == old.tags:
            return None
        same_id = self._by_content.get(content_key(old.scope, content))
        if same_id is not None and same_id != memory_id:
            same = self._active[same_id]
            archived = self._archive(old, same_id, EDITED, now)
            pinned = True if old.pinned else None
            result = self._reinforce(same, tag_tuple, MemoryConfidence.HIGH, pinned, None, now)
            return SaveResult(SaveAction.REINFORCED, result.memory, archived)
        memory = Memory(
            id=_new_id(),
            type=old.type,
            content=content,
            source=MemorySource.MANUAL,
            created_at=now,
            updated_at=now,
            confidence=MemoryConfidence.HIGH,
            occurrences=old.occurrences,
            tags=tag_tuple,
            source_reference=old.source_reference,
            pinned=old.pinned,
            scope=old.scope,
            provenance=old.provenance if provenance is None else provenance,
        )
        archived = self._archive(old, memory.id, EDITED, now)
        self._index(memory, unit)
        return SaveResult(SaveAction.SUPERSEDED, memory, archived)

    def set_pinned(self, memory_id: str, pinned: bool) -> Memory:
        """Pin or unpin an active memory; neither a sighting nor an update of it."""
        memory = self._active.get(memory_id)
        if memory is None:
            raise MemoryInputError("memory_unknown", memory_id=memory_id)
        if memory.pinned != pinned:
            memory.pinned = pinned
            self._refresh_row(memory)
        return memory

    def restore(
        self, memory_id: str, now: float | None = None, *, push_out: bool = True
    ) -> SaveResult:
        """An archived memory back in use, as it was (its embedding is made again).

        Refused while an active memory says the same words: that one is the memory. The
        cap of its type and scope applies as to a new memory (push_out as save's).
        """
        archived = self._archived.get(memory_id)
        if archived is None:
            raise MemoryInputError("memory_unknown", memory_id=memory_id)
        memory = replace(archived.memory)
        same_id = self._by_content.get(content_key(memory.scope, memory.content))
        if same_id is not None:
            raise MemoryInputError("memory_restore_duplicate", memory_id=same_id)
        if not push_out:
            self._refuse_over_cap(memory.type, memory.scope)
        now = time.time() if now is None else now
        del self._archived[memory_id]
        self._archive_generation += 1
        memory.updated_at = now
        self._index(memory, None)
        evicted = self._evict_over_cap(memory.type, now, keep=memory.id, scope=memory.scope)
        return SaveResult(SaveAction.CREATED, memory, None, evicted)

    def cleanup_archived(
        self, retention_days: float | None = None, now: float | None = None
    ) -> list[str]:
        """Delete archived records older than the retention; returns their ids."""
        days = self.settings.archive_retention_days if retention_days is None else retention_days
        cutoff = (time.time() if now is None else now) - days * DAY
        old = [a.id for a in self._archived.values() if a.archived_at < cutoff]
        for memory_id in old:
            del self._archived[memory_id]
            self._archive_generation += 1
        return old

    # -- export and import --

    def export(self, scopes: Iterable[str] | None = None) -> dict[str, Any]:
        """Every memory and archived record of these scopes (None: all), as the versioned
        export memory_import reads back: records whole (times as POSIX seconds, so a round
        trip is exact), without their vectors (embedded again where they are imported)."""
        seen = frozenset(validate_scope(one) for one in scopes) if scopes is not None else None
        memories = [m for m in self._active.values() if seen is None or m.scope in seen]
        archived = [a for a in self._archived.values() if seen is None or a.memory.scope in seen]
        return {
            "format": EXPORT_FORMAT,
            "version": EXPORT_VERSION,
            "scopes": sorted(seen) if seen is not None else None,
            "memories": [m.as_dict() for m in memories],
            "archived": [a.as_dict() for a in archived],
        }

    def import_records(
        self,
        records: ExportRecords,
        *,
        dry_run: bool = False,
        own: frozenset[str] | None = None,
        now: float | None = None,
        push_out: Callable[[str], bool] | None = None,
    ) -> ImportResult:
        """Add what an export holds that the store lacks; never replace what it has.

        `own`: the scopes whose records the importer may change (None: every scope, for
        those who see everything). A record keeps its id when the store holds that id in
        one of those scopes (then it is unchanged when identical, else a conflict, kept as
        the store has it) or, for those who see everything, when the store does not hold
        it; every other record gets a new id, and links inside the export
        (`superseded_by`) follow it. So nothing answered depends on a record the importer
        may not see. A link to a memory neither in the export nor the importer's is
        dropped. Times after now are brought back to now: an import sets no date a save
        could not. An active memory with the same words in its scope as another is a
        duplicate (deduplication applies; the other stays), and so is an archived record
        alike in scope, words and archive time. With dry_run, what would happen is
        reported and nothing changes. `push_out` (None: every scope) says of which scopes
        the import may push older memories out at their cap; one that would push out
        another scope's is refused (memory_scope_full), nothing changed.
        """
        plan = _ImportPlan(self, records, own, time.time() if now is None else now)
        fresh = [m for m in map(plan.active, records.memories) if m is not None]
        old = [a for a in map(plan.archived, records.archived) if a is not None]
        if push_out is not None:
            coming: dict[tuple[MemoryType, str], int] = {}
            for memory in fresh:
                key = (memory.type, memory.scope)
                coming[key] = coming.get(key, 0) + 1
            for (kind, scope), count in sorted(coming.items()):
                cap = self.settings.cap(scope)
                if not push_out(scope) and len(self._of_scope(kind, scope)) + count > cap:
                    raise MemoryInputError("memory_scope_full", type=kind.value, cap=cap)
        evicted: tuple[ArchivedMemory, ...] = ()
        if not dry_run:
            for memory in fresh:
                self._index(memory, None)
            for archived in old:
                self._archived[archived.id] = archived
            if old:
                self._archive_generation += 1
            evicted = tuple(
                gone
                for kind, scope in sorted({(m.type, m.scope) for m in fresh})
                for gone in self._evict_over_cap(kind, plan.now, scope=scope)
            )
        return ImportResult(
            plan.added, plan.unchanged, plan.conflicts, plan.duplicates, evicted, dry_run
        )

    def same_words(self, scope: str, content: str) -> str | None:
        """The id of the active memory of this scope saying these words, if any."""
        return self._by_content.get(content_key(scope, content))

    def held_scope(self, memory_id: str) -> str | None:
        """The scope of the active or archived memory with this id; None when there is none."""
        if (active := self._active.get(memory_id)) is not None:
            return active.scope
        if (gone := self._archived.get(memory_id)) is not None:
            return gone.memory.scope
        return None


class _ImportPlan:
    """What an import does with each record of an export, decided one record at a time
    (MemoryStore.import_records): its id in the store, and whether it is added, unchanged,
    a conflict or a duplicate."""

    def __init__(
        self, store: MemoryStore, records: ExportRecords, own: frozenset[str] | None, now: float
    ) -> None:
        self.store = store
        self.in_export = {m.id for m in records.memories} | {a.id for a in records.archived}
        self.own = own
        self.now = now
        self.ids: dict[str, str] = {}
        self.added: list[str] = []
        self.unchanged: list[str] = []
        self.conflicts: list[str] = []
        self.duplicates: list[dict[str, str]] = []
        self.new_keys: dict[str, str] = {}
        self.new_ids: set[str] = set()
        self.archive_keys = {
            (a.memory.scope, a.original_content, a.archived_at): a.id
            for a in store.archived()
            if own is None or a.memory.scope in own
        }

    def _mine(self, memory_id: str) -> bool:
        """Whether the store holds this id in one of the importer's scopes."""
        held = self.store.held_scope(memory_id)
        return held is not None and (self.own is None or held in self.own)

    def id_of(self, memory_id: str) -> str:
        """The id a record of the export has in the store: its own, or a new one."""
        if (known := self.ids.get(memory_id)) is None:
            keeps = self._mine(memory_id) or (
                self.own is None and self.store.held_scope(memory_id) is None
            )
            known = self.ids[memory_id] = memory_id if keeps else _new_id()
        return known

    def link(self, target: str | None) -> str | None:
        """A link to another record: followed when it is in the export or the importer's."""
        if target is None:
            return None
        if target in self.in_export:
            return self.id_of(target)
        return target if self._mine(target) else None

    def dated(self, memory: Memory, memory_id: str) -> Memory:
        """The record with its id in the store and no time after now."""
        updated = min(memory.updated_at, self.now)
        return replace(
            memory, id=memory_id, updated_at=updated, created_at=min(memory.created_at, updated)
        )

    def _held(self, memory_id: str, as_dict: dict[str, Any]) -> bool:
        """Whether the store holds this id already (then unchanged or a conflict)."""
        store = self.store
        held = store.get(memory_id)
        kept = store.get_archived(memory_id)
        if held is None and kept is None and memory_id not in self.new_ids:
            return False
        same = (held.as_dict() if held is not None else None) == as_dict or (
            kept is not None and kept.as_dict() == as_dict
        )
        (self.unchanged if same else self.conflicts).append(memory_id)
        return True

    def active(self, record: Memory) -> Memory | None:
        """An active memory to add, or None (unchanged, a conflict, a duplicate)."""
        memory = self.dated(record, self.id_of(record.id))
        if self._held(memory.id, memory.as_dict()):
            return None
        key = content_key(memory.scope, memory.content)
        if (
            other := self.store.same_words(memory.scope, memory.content) or self.new_keys.get(key)
        ) is not None:
            self.duplicates.append({"id": memory.id, "existing": other})
            return None
        self.new_keys[key] = memory.id
        return self._add(memory)

    def archived(self, record: ArchivedMemory) -> ArchivedMemory | None:
        """An archived record to add, or None (unchanged, a conflict, a duplicate)."""
        memory_id = self.id_of(record.id)
        archived = ArchivedMemory(
            self.dated(record.memory, memory_id),
            self.link(record.superseded_by),
            min(record.archived_at, self.now),
            record.reason,
        )
        if self._held(archived.id, archived.as_dict()):
            return None
        alike = (archived.memory.scope, archived.original_content, archived.archived_at)
        if (other := self.archive_keys.get(alike)) is not None:
            self.duplicates.append({"id": archived.id, "existing": other})
            return None
        self.archive_keys[alike] = archived.id
        self._add(archived.memory)
        return archived

    def _add(self, memory: Memory) -> Memory:
        self.new_ids.add(memory.id)
        self.added.append(memory.id)
        return memory


def read_export(data: Any) -> ExportRecords:
    """The records of an export (memory_export's answer), every one checked; MemoryInputError for
    anything that is not such an export, before anything is imported."""
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        raise MemoryInputError("memory_import_invalid", reason="not a memory export")
    version = data.get("version")
    if not isinstance(version, int) or not 1 <= version <= EXPORT_VERSION:
        raise MemoryInputError("memory_import_invalid", reason=f"export version {version}")
    raw_memories, raw_archived = data.get("memories", []), data.get("archived", [])
    if not isinstance(raw_memories, list) or not isinstance(raw_archived, list):
        raise MemoryInputError("memory_import_invalid", reason="memories and archived are lists")
    try:
        memories = [_checked(Memory.from_dict(raw)) for raw in raw_memories]
        archived = [ArchivedMemory.from_dict(raw) for raw in raw_archived]
        for one in archived:
            _checked(one.memory)
    except MemoryInputError:
        raise
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        raise MemoryInputError("memory_import_invalid", reason=f"a record: {err}") from err
    return ExportRecords(memories, archived)


def _checked(memory: Memory) -> Memory:
    """A memory read from an export passes the checks a save does."""
    validate_content(memory.content)
    validate_tags(memory.tags)
    return memory
