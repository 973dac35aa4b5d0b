"""What saving, searching, finding patterns and forgetting do with the memories: this
module owns FactStore, the rules applied to the records (FactRecords). A save reinforces
a memory with the same words, supersedes one about the same subject or adds a new one,
and keeps each type within its cap; a search ranks by BM25 over content and tag values
fused with the cosine similarity of embeddings when there are any, plus the confidence
and recency boosts, in a few numpy operations over rows and indexes rather than a scan
of every memory; patterns are read off the (type, tag) index; forgetting archives,
erasing deletes, and the clean-up drops archived records past their retention.
"""

from collections.abc import Iterable, Sequence
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
    MAX_TAGS,
    MONTH_BOOST,
    MONTH_DAYS,
    RECENT_BOOST,
    RECENT_DAYS,
    ArchivedMemory,
    FactError,
    FactSettings,
    ForgetResult,
    Memory,
    MemoryConfidence,
    MemorySource,
    MemoryType,
    PatternInsight,
    SaveAction,
    SaveResult,
    SearchResult,
    parse_confidence,
    parse_source,
    parse_type,
    validate_content,
    validate_limit,
    validate_tag,
    validate_tags,
)
from .records import FactRecords
from .supersede import (
    CANDIDATE_SIMILARITY,
    SUPERSEDE_SIMILARITY,
    Relation,
    Verdict,
    conflicting,
    same_tags_similarity,
    same_words_alike,
)
from .text import normalize_for_comparison, numbers_of, terms
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

_OVERRIDE = re.compile(r"\boverr(id|ode)", re.IGNORECASE)


def _new_id() -> str:
    return f"mem_{uuid.uuid4().hex[:16]}"


class FactStore(FactRecords):
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
    ) -> SaveResult:
        """Save with the three-step deduplication; raises FactError on bad input.

        Everything is validated before anything changes: a refused save writes nothing.
        `pinned` pins (True) or unpins (False) the memory saved or reinforced; None leaves
        a reinforced memory as it was, and a new one takes the pin of what it replaces.
        A `verdict` (a model's, on the memory update_candidate offered) decides step 2
        instead of the offline rule, while that memory is still there.
        """
        content = validate_content(content)
        kind = parse_type(memory_type)
        tag_tuple = validate_tags(tags)
        level = parse_confidence(confidence) if confidence is not None else None
        origin = parse_source(source)
        now = time.time() if now is None else now
        unit = as_unit_vector(vector) if vector is not None else None

        # 1. The same words again: seen once more.
        existing_id = self._by_content.get(normalize_for_comparison(content))
        if existing_id is not None:
            return self._reinforce(self._active[existing_id], tag_tuple, level, pinned, unit, now)

        # 2. The same subject: the new memory replaces the old one, or repeats it.
        judged = self._active.get(verdict.memory_id) if verdict is not None else None
        if verdict is not None and judged is not None and judged.type is kind:
            relation = verdict.relation
            if relation is Relation.REPEATS and numbers_of(content) != numbers_of(judged.content):
                relation = Relation.ADDS  # a changed number is never the same fact
            if relation is Relation.REPEATS:
                return self._reinforce(judged, tag_tuple, level, pinned, None, now)
            old = judged if relation is Relation.REPLACES else None
            action = SaveAction.UPDATED
        else:
            old = self._same_subject(kind, tag_tuple, unit, content)
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
        self._index(memory, unit)
        evicted = self._evict_over_cap(kind, now, keep=memory.id)
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
        unit = as_unit_vector(vector) if vector is not None else None
        if normalize_for_comparison(content) in self._by_content:
            return None
        if unit is not None and unit.shape[0] == self._dims:
            return self._alike_sharing_tags(kind, tag_tuple, unit, CANDIDATE_SIMILARITY)
        return self._same_subject(kind, tag_tuple, unit, content)

    def _same_subject(
        self, kind: MemoryType, tags: tuple[str, ...], vector: Vector | None, content: str
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
        return self._alike_sharing_tags(kind, tags, vector, SUPERSEDE_SIMILARITY)

    def _alike_sharing_tags(
        self, kind: MemoryType, tags: tuple[str, ...], vector: Vector, cut: float
    ) -> Memory | None:
        """The most alike memory of a type sharing a tag, at least `cut` alike, whose tags
        name no other person (room, device)."""
        candidates: set[str] = set()
        for tag in tags:
            candidates |= self._by_type_tag.get((kind, tag), set())
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

    def _evict_over_cap(
        self, kind: MemoryType, now: float, keep: str | None = None
    ) -> tuple[ArchivedMemory, ...]:
        """Beyond max_memories_per_type, the least confident, oldest memories go first.

        Pinned memories count towards the cap but never go: a type holds more than its
        cap only when they alone are more.
        """
        ids = self._by_type.get(kind, set())
        over = len(ids) - self.settings.max_memories_per_type
        if over <= 0:
            return ()
        active = self._active
        order = sorted(
            (active[i] for i in ids if i != keep and not active[i].pinned),
            key=lambda m: (CONFIDENCE_ORDER[m.confidence], m.updated_at),
        )
        return tuple(
            self._archive(m, None, "Over max_memories_per_type", now) for m in order[:over]
        )

    def apply_settings(
        self, settings: FactSettings, now: float | None = None
    ) -> tuple[ArchivedMemory, ...]:
        """New settings; a lowered cap archives at once. Returns what it archived."""
        self.settings = settings
        now = time.time() if now is None else now
        return tuple(
            archived for kind in list(self._by_type) for archived in self._evict_over_cap(kind, now)
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
    ) -> SearchResult:
        """The best memories for a question and/or a type and tags.

        With a text: hybrid relevance (embeddings and BM25) when there are vectors, else
        BM25 alone, plus the confidence and recency boosts. Without: most confident first,
        then most recent.
        """
        validate_limit(limit)
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
            active = self._active
            found.sort(
                key=lambda pair: (
                    pair[0].pinned and pair[0].id in active,
                    CONFIDENCE_ORDER[pair[0].confidence],
                    pair[0].updated_at,
                ),
                reverse=True,
            )
            return SearchResult(found[:limit], "keyword")
        unit = as_unit_vector(query_vector) if query_vector is not None else None
        result = self._rank(text, unit, candidates, limit, now)
        if include_archived:
            extra = self._rank_archived(text, kind, wanted, now)
            # Archived records keep the pin they had; only an active one is offered first.
            pinned = {m.id for m, _score in result.memories if m.pinned}
            merged = sorted(
                result.memories + extra,
                key=lambda pair: (pair[0].id in pinned, pair[1]),
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
    ) -> SearchResult:
        size = len(self._ids)
        allowed = self._in_use.copy()
        if candidates is not None:
            allowed[:] = False
            allowed[[self._row[i] for i in candidates]] = True
        keyword, hits = self._keywords.scores(terms(text), size)
        keyword /= float(keyword.max(initial=0.0)) or 1.0
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
            allowed &= matched | (similarity >= MIN_SIMILARITY)
        else:
            relevance = keyword
            allowed &= matched
        total = relevance + self._boost + self._recency(self._updated, now)
        # Pinned memories first among the matches, then by score (at most about 1.03).
        order = total + PINNED_FIRST * self._pinned
        rows = np.flatnonzero(allowed)
        if rows.size > limit:
            rows = rows[np.argpartition(-order[rows], limit - 1)[:limit]]
        rows = rows[np.argsort(-order[rows], kind="stable")]
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
        archived, index, boost, updated = self._archive_keywords(kind, tags)
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

    def patterns(self) -> list[PatternInsight]:
        """Any tag value reported PATTERN_MIN_MEMORIES+ times in memories of a type, and
        overrides.

        Not only `body:` tags of injuries: a home has rooms, people and devices in any
        type, so every tag prefix of every type is looked at. What counts is what was
        reported, not what is still active: three knee reports that each updated the last
        leave one active memory, whose occurrences carry the three (and whose supersede
        chain, while the archive keeps it, is the evidence).
        """
        chains = self._supersede_chains()
        insights: list[PatternInsight] = []
        for (kind, tag), ids in sorted(self._by_type_tag.items()):
            if ":" not in tag:
                continue
            reported = sum(self._active[i].occurrences for i in ids)
            if reported < PATTERN_MIN_MEMORIES:
                continue
            prefix, value = tag.split(":", 1)
            shown = [m for i in ids for m in (*chains.get(i, ()), self._active[i])]
            evidence = [m.id for m in sorted(shown, key=lambda m: m.created_at)]
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
                contents = []
                if memory is not None:
                    contents.append(memory.content)
                    self._unindex(memory)
                if (gone := self._archived.pop(memory_id, None)) is not None:
                    contents.append(gone.original_content)
                    self._archive_generation += 1
                return ForgetResult([], [memory_id], contents)
            assert memory is not None
            return ForgetResult([self._archive(memory, None, "Forgotten on request", now)])
        if tag is None:
            raise FactError("memory_forget_nothing")
        tag = validate_tag(tag)
        active = [m for m in self._active.values() if tag in m.tags]
        if erase:
            erased = [m.id for m in active]
            contents = [m.content for m in active]
            for memory in active:
                self._unindex(memory)
            for old in [a for a in self._archived.values() if tag in a.memory.tags]:
                del self._archived[old.id]
                self._archive_generation += 1
                erased.append(old.id)
                contents.append(old.original_content)
            return ForgetResult([], erased, contents)
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
            self._archive_generation += 1
        return old
