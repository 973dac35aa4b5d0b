"""Right and wrong supersedes on the labelled pairs (issue 17, item 10).

benchmarks/data/household_memories.json holds 73 labelled supersede pairs, unchanged
since they were written: saving `new` after `old` (same type) should archive `old`
exactly when `same_subject` is true (36 updates, 37 pairs of distinct facts sharing a tag).
Each pair is saved into an empty MemoryStore, old then new a day later, with the cached
all-MiniLM-L6-v2 vectors (scripts/bench-embeddings-env) and without vectors; and the
labelled home (233 distinct facts) is saved fact by fact, where every archive by a
supersede is a wrong one.

Decided three ways. The offline rule alone (MemoryStore.save). With a model: the memory
MemoryStore.update_candidate offers is judged (replaces / adds / repeats / unsure) and the
verdict decides, as Memories.async_save does with the entry's first agent. The model is a
real Azure deployment when AZURE_OPENAI_ENDPOINT, AZURE_OPENAI_API_KEY and
AZURE_OPENAI_DEPLOYMENT are set (azure/supersede.py's request, unchanged; also
AZURE_OPENAI_API_VERSION for a dated API). Otherwise no model is reachable, and a
deterministic stand-in judges instead, said so in the output: it reads only the two texts
(words announcing a change, a changed number) and was written while reading these pairs,
so its figure shows that the path works, not how well a model judges. Two bounds go with
it: a judge answering as the labels say (how many updates reach a judge at all) and one
always answering "replaces" (how many distinct pairs reach one: the most a careless model
could archive wrongly).

Printed: updates recognised (of 36) and wrong supersedes (of 37, and in the home), with
OK/MISSED against the targets: no wrong supersede, and (with a model judging) at least
80 % of the labelled updates recognised. Quality does not depend on the machine: the
figures are exact.
"""

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
import json
import os
from pathlib import Path
import re
import sys
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks.minilm_embedder import EmbeddingsUnavailable, labelled_texts, load_cache
from custom_components.azure_openai_memory.azure.client import (
    ResourceSettings,
    build_client,
    normalize_endpoint,
    request_options,
)
from custom_components.azure_openai_memory.azure.supersede import SupersedeJudge
from custom_components.azure_openai_memory.const import (
    API_STYLE_DEPLOYMENT,
    API_STYLE_V1,
    CONF_DEPLOYMENT,
)
from custom_components.azure_openai_memory.lib.memories import (
    MemorySettings,
    MemoryStore,
    Relation,
    SaveAction,
    Verdict,
)
from custom_components.azure_openai_memory.lib.memories.text import numbers_of, tag_terms, terms

DATA = Path(__file__).resolve().parent / "data" / "household_memories.json"
NOW = datetime(2026, 6, 1, 12, tzinfo=UTC).timestamp()
DAY = 86_400.0
ROOMY = MemorySettings(max_memories_per_type=10_000)
TARGET_WRONG = 0
TARGET_RECOGNISED = 0.80

type Vectors = dict[str, npt.NDArray[np.float32]]
# How one save is made: the store, the memory's fields and its vector -> what it did.
type Saver = Callable[[MemoryStore, dict[str, Any], str, Any, float], tuple[SaveAction, str | None]]
# A judge: type, tags, the older fact, the new one -> its verdict (None: no answer).
type Judge = Callable[[str, Sequence[str], str, str], Relation | None]


@dataclass(frozen=True, slots=True)
class Outcome:
    """One way of deciding, measured."""

    recognised: int
    updates: int
    wrong: int
    distinct: int
    home_wrong: int
    home: int
    missed: list[str]
    wrongly: list[str]
    home_wrongly: list[str]


def offline(
    store: MemoryStore, memory: dict[str, Any], kind: str, vector: Any, now: float
) -> tuple[SaveAction, str | None]:
    """MemoryStore.save as it is: its own rule decides."""
    result = store.save(memory["content"], kind, memory["tags"], vector=vector, now=now)
    return result.action, result.archived.id if result.archived else None


def judged_by(judge: Judge) -> Saver:
    """Memories.async_save's way: the candidate judged, the verdict deciding."""

    def save(
        store: MemoryStore, memory: dict[str, Any], kind: str, vector: Any, now: float
    ) -> tuple[SaveAction, str | None]:
        content, tags = memory["content"], memory["tags"]
        verdict = None
        candidate = store.update_candidate(content, kind, tags, vector=vector)
        if candidate is not None:
            relation = judge(kind, tags, candidate.content, content)
            if relation is not None:
                verdict = Verdict(candidate.id, relation)
        result = store.save(content, kind, tags, vector=vector, verdict=verdict, now=now)
        return result.action, result.archived.id if result.archived else None

    return save


# Words with which a new fact announces that an older one changed.
_CHANGE = re.compile(
    r"\b(now|no longer|anymore|moved|changed|switched to|replaced|instead|since|renamed|"
    r"taken over|started|stopped|extended|got worse|healed|grown out|broke)\b",
    re.IGNORECASE,
)


def stand_in_judge(kind: str, tags: Sequence[str], older: str, newer: str) -> Relation:
    """No model: words announcing a change, or other numbers for the same words (those of
    the tags, which say whom, not what, left out), replace."""
    if _CHANGE.search(newer):
        return Relation.REPLACES
    whom = {term for tag in tags for term in tag_terms(tag)}
    shared = (set(terms(older)) & set(terms(newer))) - whom
    if numbers_of(older) and numbers_of(newer) != numbers_of(older) and len(shared) >= 3:
        return Relation.REPLACES
    return Relation.ADDS


def labels_judge(labelled: dict[str, Any]) -> Judge:
    """Answers as the labels say (every labelled home memory is a distinct fact)."""
    same = {
        (p["old"]["content"], p["new"]["content"]): p["same_subject"]
        for p in labelled["supersede_pairs"]
    }

    def judge(kind: str, tags: Sequence[str], older: str, newer: str) -> Relation:
        return Relation.REPLACES if same.get((older, newer), False) else Relation.ADDS

    return judge


def careless_judge(kind: str, tags: Sequence[str], older: str, newer: str) -> Relation:
    return Relation.REPLACES


def azure_judge() -> tuple[Judge, str] | None:
    """The real model named by the environment, through azure/supersede.py; None without."""
    try:
        endpoint = normalize_endpoint(os.environ["AZURE_OPENAI_ENDPOINT"])
        key = os.environ["AZURE_OPENAI_API_KEY"]
        deployment = os.environ["AZURE_OPENAI_DEPLOYMENT"]
    except (KeyError, ValueError):
        return None
    version = os.environ.get("AZURE_OPENAI_API_VERSION", "")
    settings = ResourceSettings(
        endpoint, key, API_STYLE_DEPLOYMENT if version else API_STYLE_V1, version
    )
    judge = SupersedeJudge(
        build_client(settings, None), request_options(settings, {CONF_DEPLOYMENT: deployment})
    )
    loop = asyncio.new_event_loop()

    def ask(kind: str, tags: Sequence[str], older: str, newer: str) -> Relation | None:
        return loop.run_until_complete(judge.async_judge(kind, tags, older, newer))

    return ask, deployment


def measure(labelled: dict[str, Any], vectors: Vectors | None, save: Saver) -> Outcome:
    pairs = labelled["supersede_pairs"]
    recognised, wrong, missed, wrongly = 0, 0, [], []
    for pair in pairs:
        store = MemoryStore(ROOMY)
        old, new = pair["old"], pair["new"]
        first = store.save(
            old["content"],
            pair["type"],
            old["tags"],
            vector=vectors[old["content"]] if vectors else None,
            now=NOW - DAY,
        )
        _action, archived = save(
            store, new, pair["type"], vectors[new["content"]] if vectors else None, NOW
        )
        superseded = archived == first.memory.id
        if pair["same_subject"]:
            recognised += superseded
            if not superseded:
                missed.append(pair["id"])
        elif superseded:
            wrong += 1
            wrongly.append(pair["id"])
    store = MemoryStore(ROOMY)
    home_wrongly: list[str] = []
    for memory in sorted(labelled["memories"], key=lambda m: -m["days_ago"]):
        _action, archived = save(
            store,
            memory,
            memory["type"],
            vectors[memory["content"]] if vectors else None,
            NOW - memory["days_ago"] * DAY,
        )
        if archived is not None:
            gone = store.get_archived(archived)
            assert gone is not None
            home_wrongly.append(f"{gone.original_content!r} by {memory['content']!r}")
    updates = sum(p["same_subject"] for p in pairs)
    return Outcome(
        recognised,
        updates,
        wrong,
        len(pairs) - updates,
        len(home_wrongly),
        len(labelled["memories"]),
        missed,
        wrongly,
        home_wrongly,
    )


def report(name: str, outcome: Outcome, recognised_target: bool) -> bool:
    share = outcome.recognised / outcome.updates
    wrong_ok = outcome.wrong + outcome.home_wrong <= TARGET_WRONG
    recognised_ok = share >= TARGET_RECOGNISED
    print(f"{name}")
    print(
        f"  {'updates recognised':<44} {outcome.recognised:>3} of {outcome.updates} "
        f"({share:.0%})"
        + (
            f"   target >= {TARGET_RECOGNISED:.0%}  {'OK' if recognised_ok else 'MISSED'}"
            if recognised_target
            else ""
        )
    )
    print(
        f"  {'wrong supersedes, labelled pairs':<44} {outcome.wrong:>3} of {outcome.distinct}"
        f"   target {TARGET_WRONG}  {'OK' if outcome.wrong <= TARGET_WRONG else 'MISSED'}"
    )
    print(
        f"  {'wrong supersedes, home saved fact by fact':<44} {outcome.home_wrong:>3} of "
        f"{outcome.home}  target {TARGET_WRONG}  "
        f"{'OK' if outcome.home_wrong <= TARGET_WRONG else 'MISSED'}"
    )
    if outcome.missed:
        print(f"  updates kept beside the older memory: {', '.join(outcome.missed)}")
    if outcome.wrongly:
        print(f"  distinct facts superseded: {', '.join(outcome.wrongly)}")
    for one in outcome.home_wrongly[:5]:
        print(f"  home fact archived: {one}")
    if len(outcome.home_wrongly) > 5:
        print(f"  ... and {len(outcome.home_wrongly) - 5} more home facts")
    return wrong_ok and (recognised_ok or not recognised_target)


def cached_vectors(labelled: dict[str, Any]) -> Vectors | None:
    try:
        cache = load_cache()
    except EmbeddingsUnavailable as err:
        print(f"with embeddings: skipped ({err})")
        return None
    missing = [t for t in labelled_texts(labelled) if t not in cache]
    if missing:
        print(f"with embeddings: skipped ({len(missing)} texts not in the cache)")
        return None
    return cache


def main() -> int:
    labelled = json.loads(DATA.read_text(encoding="utf-8"))
    vectors = cached_vectors(labelled)
    ok = True
    if vectors is not None:
        ok &= report(
            "offline rule, all-MiniLM-L6-v2 embeddings", measure(labelled, vectors, offline), False
        )
    ok &= report("offline rule, no embeddings", measure(labelled, None, offline), False)
    if vectors is None:
        print("with a model: skipped (candidates are found by embeddings)")
        return 0 if ok else 1
    real = azure_judge()
    if real is not None:
        judge, deployment = real
        name = f"with the model: Azure deployment {deployment}"
    else:
        judge = stand_in_judge
        name = (
            "with a model: NO MODEL IS REACHABLE HERE; a deterministic stand-in judges "
            "(words announcing a change, changed numbers), written while reading these pairs"
        )
    ok &= report(name, measure(labelled, vectors, judged_by(judge)), True)
    report(
        "  bound: a judge answering as labelled (updates that reach a judge)",
        measure(labelled, vectors, judged_by(labels_judge(labelled))),
        False,
    )
    report(
        "  bound: a judge always answering replaces (distinct pairs that reach a judge)",
        measure(labelled, vectors, judged_by(careless_judge)),
        False,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
