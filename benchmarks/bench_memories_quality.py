"""Retrieval quality and the supersede threshold of the memory store (issue 8).

On a labelled home (benchmarks/data/household_memories.json: 233 memories, 139 questions
asking for what one memory states in other words, 73 supersede pairs) this prints
hit@1 / hit@5 / MRR for three rankers, next to the reference measured in the same run:

- the naive reference scorer (the specification's get_relevant_memories, re-implemented as
  written: shared words x2, tag value
  in the question +5, confidence and recency boosts);
- lib/memories' keyword ranker (BM25 over content and tag values, the boosts), which answers
  when there is no embeddings deployment or Azure fails;
- MemoryStore's hybrid ranker, with vectors from a real sentence-embedding model
  (all-MiniLM-L6-v2, cached in benchmarks/data/household_embeddings.npz by
  scripts/bench-embeddings-env);

and, for comparison, the embeddings alone (cosine similarity, nothing else). A question is
answered when its memory, or one of the memories listed as `also` answering it, is found.
Each ranker is also shown on the two halves of the questions, odd and even ids: MemoryStore's
constants were tuned on the odd half only, so the even half is held out and a gap between
the two would show overfitting.
The labelled set's multi-hop questions (`multi_hop_questions`: the subject named by a
role the memory does not state, "the dog" for Bruno) are measured on a line of their own
and count towards no target: they test knowing a second fact, not paraphrase.

Then, for the supersede decision: the cosine similarity of same-subject and
different-subject pairs, the threshold that separates them best, and whether
MemoryStore.save gets every labelled pair right (the seed's knee example included); and
whether a household saved fact by fact stays whole (every labelled memory is a distinct
fact, so none may be archived).

Quality does not depend on the machine, so these figures are exact, not medians.
"""

from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise
import json
from pathlib import Path
import statistics
import sys
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks.minilm_embedder import CACHE, MODEL_NAME, EmbeddingsUnavailable, load_cache
from custom_components.azure_openai_memory.lib import memories as memory_lib
from custom_components.azure_openai_memory.lib.memories import (
    MemorySettings,
    MemoryStore,
    SaveAction,
    encode_vector,
)

DATA = Path(__file__).resolve().parent / "data" / "household_memories.json"
# The labelled set's "now": each memory was last updated `days_ago` before it.
NOW = datetime(2026, 6, 1, 12, tzinfo=UTC).timestamp()
DAY = 86_400.0
DEPTH = memory_lib.MAX_SEARCH_LIMIT  # MRR counts a memory found in the top 50
# Enough room for the whole labelled home whatever the default cap (an earlier default,
# 50 per type, archived part of it before any ranking was measured; reported below).
ROOMY = MemorySettings(max_memories_per_type=10_000)
TARGET_HYBRID_HIT5 = 0.95
TARGET_KEYWORD_HIT5 = 0.5


def report(name: str, value: float, unit: str, target: str, ok: bool) -> bool:
    shown = f"{value:>8}" if isinstance(value, int) else f"{value:>8.3f}"
    print(f"{name:<58} {shown} {unit:<4} target {target:<14} {'OK' if ok else 'MISSED'}")
    return ok


def info(name: str, value: str) -> None:
    print(f"{name:<58} {value}")


@dataclass(frozen=True, slots=True)
class Quality:
    hit1: float
    hit5: float
    mrr: float

    def line(self) -> str:
        return f"hit@1 {self.hit1:.3f}   hit@5 {self.hit5:.3f}   MRR {self.mrr:.3f}"


def quality(ranks: Sequence[int | None]) -> Quality:
    """From the rank of each question's memory (1 = first; None = not in the top DEPTH)."""
    n = len(ranks)
    return Quality(
        sum(r == 1 for r in ranks) / n,
        sum(r is not None and r <= 5 for r in ranks) / n,
        sum(1 / r for r in ranks if r is not None) / n,
    )


def halves(
    questions: Sequence[dict[str, Any]], ranks: Sequence[int | None]
) -> tuple[Quality, Quality]:
    """The odd-id questions (the half MemoryStore was tuned on) and the even-id ones (held out)."""
    odd = [r for q, r in zip(questions, ranks, strict=True) if int(q["id"].lstrip("q")) % 2]
    even = [r for q, r in zip(questions, ranks, strict=True) if not int(q["id"].lstrip("q")) % 2]
    return quality(odd), quality(even)


def show(name: str, questions: Sequence[dict[str, Any]], ranks: Sequence[int | None]) -> Quality:
    """A ranker's figures on every question, then on the tuning and held-out halves."""
    whole = quality(ranks)
    info(name, whole.line())
    odd, even = halves(questions, ranks)
    info("  ... odd ids (tuned on)", odd.line())
    info("  ... even ids (held out)", even.line())
    return whole


def answers(question: dict[str, Any]) -> set[str]:
    """The ids of the memories that answer a question: its own, and any listed as `also`."""
    return {question["memory"], *question.get("also", ())}


def rank_of(wanted: Collection[str], ranked: Sequence[str]) -> int | None:
    """The rank of the first of the wanted memories (None: none in the top DEPTH)."""
    return next((n for n, id_ in enumerate(ranked[:DEPTH], start=1) if id_ in wanted), None)


# -- the naive reference scorer (get_relevant_memories), as written -----------------------


def seed_relevant(context: str, memories: list[dict[str, Any]], limit: int) -> list[str]:
    """Every labelled memory counts as the seed's MEDIUM confidence (what a save gives)."""
    scored = []
    context_lower = context.lower()
    for memory in memories:
        score = 0
        memory_words = set(memory["content"].lower().split())
        context_words = set(context_lower.split())
        score += len(memory_words & context_words) * 2
        for tag in memory["tags"]:
            if tag.split(":")[-1] in context_lower:
                score += 5
        score += 1  # MemoryConfidence.MEDIUM
        days_old = int(memory["days_ago"])
        if days_old < 7:
            score += 2
        elif days_old < 30:
            score += 1
        if score > 0:
            scored.append((memory, score))
    scored.sort(key=lambda pair: pair[1], reverse=True)
    return [m["id"] for m, _ in scored[:limit]]


# -- MemoryStore ---------------------------------------------------------------------------


def stored_home(
    memories: list[dict[str, Any]], vectors: dict[str, npt.NDArray[np.float32]] | None
) -> MemoryStore:
    """The labelled home as MemoryStore reads it at start-up (ids kept, vectors as float16)."""
    records = []
    for memory in memories:
        updated = NOW - memory["days_ago"] * DAY
        record = {
            "id": memory["id"],
            "type": memory["type"],
            "content": memory["content"],
            "source": "manual",
            "created_at": updated,
            "updated_at": updated,
            "confidence": "medium",
            "tags": memory["tags"],
        }
        if vectors is not None:
            record["vector"] = encode_vector(vectors[memory["content"]])
        records.append(record)
    store = MemoryStore.from_dict({"memories": records}, ROOMY)
    assert len(store) == len(memories), "the labelled home did not load whole"
    return store


def store_ranks(
    store: MemoryStore,
    questions: list[dict[str, Any]],
    vectors: dict[str, npt.NDArray[np.float32]] | None,
    ranker: str,
) -> list[int | None]:
    ranks = []
    for question in questions:
        query_vector = vectors[question["question"]] if vectors is not None else None
        result = store.search(question["question"], query_vector=query_vector, limit=DEPTH, now=NOW)
        assert result.ranker == ranker, f"expected the {ranker} ranker, got {result.ranker}"
        ranks.append(rank_of(answers(question), [m.id for m, _ in result.memories]))
    return ranks


def cosine_ranks(
    memories: list[dict[str, Any]],
    questions: list[dict[str, Any]],
    vectors: dict[str, npt.NDArray[np.float32]],
) -> list[int | None]:
    """The embeddings alone: memories by cosine similarity to the question, nothing else."""
    ids = [m["id"] for m in memories]
    matrix = np.stack([vectors[m["content"]] for m in memories])
    ranks = []
    for question in questions:
        order = np.argsort(-(matrix @ vectors[question["question"]]), kind="stable")
        ranks.append(rank_of(answers(question), [ids[i] for i in order]))
    return ranks


def print_misses(
    name: str,
    questions: list[dict[str, Any]],
    ranks: Sequence[int | None],
    memories: list[dict[str, Any]],
) -> None:
    by_id = {m["id"]: m["content"] for m in memories}
    for question, rank in zip(questions, ranks, strict=True):
        if rank is None or rank > 5:
            print(
                f"  {name} miss (rank {rank}) {question['id']}: {question['question']!r} -> "
                f"{by_id[question['memory']]!r}"
            )


@contextmanager
def constants(**values: float) -> Iterator[None]:
    """What-if: the memories package's tuning constants set for a block (they are read at each call).

    Each module of the package that reads a constant holds its own name for it, so the
    constant is set wherever it is held.
    """
    modules = [
        memory_lib,
        *(one for one in vars(memory_lib).values() if isinstance(one, ModuleType)),
    ]
    saved = [
        (one, name, getattr(one, name)) for name in values for one in modules if hasattr(one, name)
    ]
    for one, name, _value in saved:
        setattr(one, name, values[name])
    try:
        yield
    finally:
        for one, name, value in saved:
            setattr(one, name, value)


# -- the supersede decision -------------------------------------------------------------


def spread(values: Sequence[float]) -> str:
    q1, median, q3 = statistics.quantiles(values, n=4)
    return (
        f"n={len(values):<3} min {min(values):.3f}  q1 {q1:.3f}  median {median:.3f}  "
        f"q3 {q3:.3f}  max {max(values):.3f}"
    )


def best_threshold(same: Sequence[float], different: Sequence[float]) -> tuple[float, int]:
    """The cut with fewest errors (supersede at >= cut); among equals, the widest margin."""
    points = sorted({0.0, 1.0, *same, *different})
    best: tuple[int, float, float] = (len(same) + len(different) + 1, 0.0, 0.0)
    for low, high in pairwise(points):
        cut = (low + high) / 2
        errors = sum(s < cut for s in same) + sum(d >= cut for d in different)
        if (errors, -(high - low)) < (best[0], -best[2]):
            best = (errors, cut, high - low)
    return round(best[1], 2), best[0]


def pair_verdicts(
    pairs: list[dict[str, Any]], vectors: dict[str, npt.NDArray[np.float32]] | None
) -> list[tuple[dict[str, Any], bool]]:
    """Each pair saved into an empty store, old then new a day later: did new supersede?"""
    verdicts = []
    for pair in pairs:
        store = MemoryStore(ROOMY)
        old, new = pair["old"], pair["new"]
        first = store.save(
            old["content"],
            pair["type"],
            old["tags"],
            vector=vectors[old["content"]] if vectors is not None else None,
            now=NOW - DAY,
        )
        second = store.save(
            new["content"],
            pair["type"],
            new["tags"],
            vector=vectors[new["content"]] if vectors is not None else None,
            now=NOW,
        )
        superseded = second.action is SaveAction.SUPERSEDED
        assert first.action is SaveAction.CREATED
        assert not superseded or (second.archived and second.archived.id == first.memory.id)
        verdicts.append((pair, superseded))
    return verdicts


def saved_one_by_one(
    memories: list[dict[str, Any]],
    vectors: dict[str, npt.NDArray[np.float32]] | None,
    settings: MemorySettings = ROOMY,
) -> tuple[int, list[str]]:
    """The labelled home saved fact by fact, oldest first: how many stay active."""
    store = MemoryStore(settings)
    archived: list[str] = []
    for memory in sorted(memories, key=lambda m: -m["days_ago"]):
        result = store.save(
            memory["content"],
            memory["type"],
            memory["tags"],
            vector=vectors[memory["content"]] if vectors is not None else None,
            now=NOW - memory["days_ago"] * DAY,
        )
        archived += [a.original_content for a in (result.archived, *result.evicted) if a]
    return len(store), archived


def different_subject_neighbours(
    memories: list[dict[str, Any]], vectors: dict[str, npt.NDArray[np.float32]]
) -> list[float]:
    """Cosines of labelled memories that could be mistaken for one another.

    Every labelled memory is a distinct fact, so each same-type pair sharing a tag (and not
    naming two different people, rooms, ...) is one more different-subject example.
    """
    cosines = []
    for i, a in enumerate(memories):
        for b in memories[i + 1 :]:
            if a["type"] != b["type"] or not set(a["tags"]) & set(b["tags"]):
                continue
            if memory_lib.conflicting(a["tags"], b["tags"]):
                continue
            cosines.append(float(vectors[a["content"]] @ vectors[b["content"]]))
    return cosines


# -- the run ----------------------------------------------------------------------------


def embeddings(labelled: dict[str, Any]) -> dict[str, npt.NDArray[np.float32]] | None:
    try:
        cache = load_cache()
    except EmbeddingsUnavailable as err:
        print(f"hybrid ranker and supersede threshold skipped: {err}")
        return None
    from benchmarks.minilm_embedder import labelled_texts

    missing = [t for t in labelled_texts(labelled) if t not in cache]
    if missing:
        print(
            f"hybrid ranker and supersede threshold skipped: {CACHE.name} lacks "
            f"{len(missing)} texts of the labelled set (first: {missing[0]!r}); "
            "run scripts/bench-embeddings-env"
        )
        return None
    return cache


def rankers(labelled: dict[str, Any], vectors: dict[str, Any] | None) -> bool:
    memories, questions = labelled["memories"], labelled["questions"]
    print(f"{len(memories)} memories, {len(questions)} questions; MRR over the top {DEPTH}")
    seed = show(
        "naive scorer (reference)",
        questions,
        [rank_of(answers(q), seed_relevant(q["question"], memories, DEPTH)) for q in questions],
    )
    keyword_store = stored_home(memories, None)
    keyword = show(
        "MemoryStore keyword (BM25 + alike words + boosts)",
        questions,
        store_ranks(keyword_store, questions, None, "keyword"),
    )
    ok = report("keyword hit@5", keyword.hit5, "", f">= {TARGET_KEYWORD_HIT5}", keyword.hit5 >= 0.5)
    ok &= report(
        "keyword hit@5 / seed hit@5",
        keyword.hit5 / seed.hit5,
        "x",
        "> 1",
        keyword.hit5 > seed.hit5,
    )
    if vectors is None:
        return ok
    hybrid_store = stored_home(memories, vectors)
    hybrid_ranks = store_ranks(hybrid_store, questions, vectors, "hybrid")
    hybrid = show(f"MemoryStore hybrid ({MODEL_NAME.split('/')[-1]})", questions, hybrid_ranks)
    ok &= report("hybrid hit@5", hybrid.hit5, "", f">= {TARGET_HYBRID_HIT5}", hybrid.hit5 >= 0.95)
    info("hybrid hit@5 / seed hit@5", f"{hybrid.hit5 / seed.hit5:.2f} x")
    print_misses("hybrid", questions, hybrid_ranks, memories)
    cosine = cosine_ranks(memories, questions, vectors)
    show("embeddings alone (cosine, for comparison)", questions, cosine)
    print_misses("embeddings", questions, cosine, memories)
    multi_hop = labelled.get("multi_hop_questions", [])
    if multi_hop:
        hop_hybrid = quality(store_ranks(hybrid_store, multi_hop, vectors, "hybrid"))
        hop_cosine = quality(cosine_ranks(memories, multi_hop, vectors))
        info(
            f"multi-hop questions (n={len(multi_hop)}, no target): hybrid",
            hop_hybrid.line(),
        )
        info("  ... embeddings alone", hop_cosine.line())
    what_if(hybrid_store, questions, vectors, memories)
    return ok


def what_if(
    store: MemoryStore,
    questions: list[dict[str, Any]],
    vectors: dict[str, Any],
    memories: list[dict[str, Any]],
) -> None:
    """The same questions under other fusion weights and BM25 parameters, for tuning."""
    print("what if (MemoryStore constants changed for this block only):")
    for min_similarity in dict.fromkeys((memory_lib.MIN_SIMILARITY, 0.2)):
        for vector_weight in dict.fromkeys((memory_lib.VECTOR_WEIGHT, 1.0, 0.95, 0.9, 0.8, 0.7)):
            with constants(
                VECTOR_WEIGHT=vector_weight,
                KEYWORD_WEIGHT=round(1 - vector_weight, 3),
                MIN_SIMILARITY=min_similarity,
            ):
                q = quality(store_ranks(store, questions, vectors, "hybrid"))
            info(
                f"  hybrid, weights {vector_weight:g}/{1 - vector_weight:.3g}, "
                f"MIN_SIMILARITY {min_similarity:.2f}",
                q.line(),
            )
    for k1, b in ((1.2, 0.75), (1.5, 0.75), (2.0, 0.75), (1.5, 0.5), (1.2, 0.3)):
        keyword_store = stored_home(memories, None)
        keyword_store._keywords.k1, keyword_store._keywords.b = k1, b
        q = quality(store_ranks(keyword_store, questions, None, "keyword"))
        info(f"  keyword, BM25 k1 {k1} b {b}", q.line())
    for similarity in (memory_lib.FUZZY_SIMILARITY, 0.5, 0.6, 1.01):
        with constants(FUZZY_SIMILARITY=similarity):
            q = quality(store_ranks(stored_home(memories, None), questions, None, "keyword"))
        label = "off" if similarity > 1 else f"{similarity:.2f}"
        info(f"  keyword, alike words (FUZZY_SIMILARITY) {label}", q.line())


def proposed_same_subject(
    old_tags: Sequence[str],
    new_tags: Sequence[str],
    cosine: float,
    same_cut: float,
    shared_cut: float,
) -> bool:
    """A rule to compare with MemoryStore's: an identical tag set needs alike embeddings too.

    MemoryStore supersedes on an identical tag set without looking at the text, and on shared
    tags with cosine >= SUPERSEDE_SIMILARITY. Here both need the cosine, each its own cut.
    """
    if not set(old_tags) & set(new_tags) or memory_lib.conflicting(new_tags, old_tags):
        return False
    return cosine >= (same_cut if set(old_tags) == set(new_tags) else shared_cut)


def proposed_home_losses(
    memories: list[dict[str, Any]], vectors: dict[str, Any], same_cut: float, shared_cut: float
) -> int:
    """The labelled home saved oldest first under the proposed rule: memories archived."""
    active: list[dict[str, Any]] = []
    lost = 0
    for memory in sorted(memories, key=lambda m: -m["days_ago"]):
        here = vectors[memory["content"]]
        alike = [
            (float(vectors[old["content"]] @ here), n)
            for n, old in enumerate(active)
            if old["type"] == memory["type"]
            and proposed_same_subject(
                old["tags"],
                memory["tags"],
                float(vectors[old["content"]] @ here),
                same_cut,
                shared_cut,
            )
        ]
        if alike:
            del active[max(alike)[1]]
            lost += 1
        active.append(memory)
    return lost


def supersede(labelled: dict[str, Any], vectors: dict[str, Any] | None) -> bool:
    pairs, memories = labelled["supersede_pairs"], labelled["memories"]
    same_count = sum(p["same_subject"] for p in pairs)
    print(
        f"{len(pairs)} labelled pairs ({same_count} same subject, "
        f"{len(pairs) - same_count} different subjects sharing tags)"
    )
    ok = True
    if vectors is not None:
        cosine = {
            p["id"]: float(vectors[p["old"]["content"]] @ vectors[p["new"]["content"]])
            for p in pairs
        }
        same = [cosine[p["id"]] for p in pairs if p["same_subject"]]
        different = [cosine[p["id"]] for p in pairs if not p["same_subject"]]
        neighbours = different_subject_neighbours(memories, vectors)
        info("cosine, same subject", spread(same))
        info("cosine, different subjects (pairs)", spread(different))
        info("cosine, different subjects (labelled home)", spread(neighbours))
        cut, errors = best_threshold(same, different)
        info("best cut on the pairs (cosine alone)", f"{cut:.2f} ({errors} of {len(pairs)} wrong)")
        info(
            f"  labelled-home neighbours at or above {cut:.2f}",
            f"{sum(c >= cut for c in neighbours)} of {len(neighbours)}",
        )
        for name, identical in (("identical", True), ("overlapping", False)):
            chosen = [
                p for p in pairs if (set(p["old"]["tags"]) == set(p["new"]["tags"])) is identical
            ]
            s = [cosine[p["id"]] for p in chosen if p["same_subject"]]
            d = [cosine[p["id"]] for p in chosen if not p["same_subject"]]
            c, e = best_threshold(s, d)
            info(
                f"  {name} tag sets: {len(s)} same / {len(d)} different",
                f"best {c:.2f} ({e} wrong)",
            )
        for threshold in dict.fromkeys((memory_lib.SUPERSEDE_SIMILARITY, cut)):
            with constants(SUPERSEDE_SIMILARITY=threshold):
                ok &= verdicts(
                    f"MemoryStore.save, SUPERSEDE_SIMILARITY {threshold:.2f}",
                    pair_verdicts(pairs, vectors),
                )
        print("proposed rule: identical tags need cosine >= same cut, shared tags >= shared cut")
        print(
            f"  {'same cut':>8} {'shared cut':>10}   updates missed   wrong supersedes   "
            f"home facts lost   knee"
        )
        knee = next(p for p in pairs if "seed" in p.get("note", ""))
        for same_cut in (0.55, 0.6, 0.65):
            for shared_cut in (0.7, 0.75, 0.8):
                decided = [
                    (
                        p,
                        proposed_same_subject(
                            p["old"]["tags"],
                            p["new"]["tags"],
                            cosine[p["id"]],
                            same_cut,
                            shared_cut,
                        ),
                    )
                    for p in pairs
                ]
                missed = sum(p["same_subject"] and not d for p, d in decided)
                wrong = sum(d and not p["same_subject"] for p, d in decided)
                lost = proposed_home_losses(memories, vectors, same_cut, shared_cut)
                knee_ok = dict((p["id"], d) for p, d in decided)[knee["id"]]
                print(
                    f"  {same_cut:>8.2f} {shared_cut:>10.2f}   {missed:>5} of {same_count:<6}"
                    f" {wrong:>5} of {len(pairs) - same_count:<9}  {lost:>5} of "
                    f"{len(memories):<7} {'yes' if knee_ok else 'NO'}"
                )
    ok &= verdicts("MemoryStore.save without embeddings", pair_verdicts(pairs, None), listed=False)
    for name, vecs in (
        (("with", vectors), ("without", None)) if vectors is not None else (("without", None),)
    ):
        active, archived = saved_one_by_one(memories, vecs)
        ok &= report(
            f"home saved fact by fact {name} embeddings: active",
            active,
            "",
            f"{len(memories)}",
            active == len(memories),
        )
        for content in archived:
            print(f"  archived: {content!r}")
    active, _ = saved_one_by_one(memories, vectors, MemorySettings())
    info(
        f"  ... with the default max_memories_per_type ({MemorySettings().max_memories_per_type:,})",
        f"{active} active",
    )
    return ok


def verdicts(name: str, results: list[tuple[dict[str, Any], bool]], listed: bool = True) -> bool:
    wrong = [(p, s) for p, s in results if s != p["same_subject"]]
    knee_ok = next(s for p, s in results if "seed" in p.get("note", ""))
    ok = report(f"{name}: pairs right", len(results) - len(wrong), "", f"{len(results)}", not wrong)
    info("  seed knee example superseded", "yes" if knee_ok else "NO")
    if not listed:
        kept = sum(not s for _, s in wrong)
        info("  wrong", f"{kept} updates kept, {len(wrong) - kept} different subjects superseded")
    for pair, superseded in wrong if listed else ():
        verb = "superseded" if superseded else "kept"
        print(f"  wrong ({verb}): {pair['old']['content']!r} -> {pair['new']['content']!r}")
    return ok and knee_ok


def main() -> int:
    labelled = json.loads(DATA.read_text(encoding="utf-8"))
    vectors = embeddings(labelled)
    print("--- retrieval quality ---")
    ok = rankers(labelled, vectors)
    print("--- supersede decision ---")
    ok &= supersede(labelled, vectors)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
