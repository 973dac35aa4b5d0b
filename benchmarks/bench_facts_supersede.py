"""Right and wrong supersedes on the labelled pairs (issue 17, item 10).

benchmarks/data/household_memories.json holds 73 labelled supersede pairs, unchanged
since they were written: saving `new` after `old` (same type) should archive `old`
exactly when `same_subject` is true (36 updates, 37 pairs of distinct facts sharing a tag).
Each pair is saved into an empty FactStore, old then new a day later, with the cached
all-MiniLM-L6-v2 vectors (scripts/bench-embeddings-env) and without vectors; and the
labelled home (233 distinct facts) is saved fact by fact, where every archive by a
supersede is a wrong one.

Printed: updates recognised (of 36) and wrong supersedes (of 37, and in the home), with
OK/MISSED against the targets: no wrong supersede, and (with a model judging) at least
80 % of the labelled updates recognised. Quality does not depend on the machine: the
figures are exact.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
import json
from pathlib import Path
import sys
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks.minilm_embedder import EmbeddingsUnavailable, labelled_texts, load_cache
from custom_components.azure_openai_memory.memory.facts import (
    FactSettings,
    FactStore,
    SaveAction,
)

DATA = Path(__file__).resolve().parent / "data" / "household_memories.json"
NOW = datetime(2026, 6, 1, 12, tzinfo=UTC).timestamp()
DAY = 86_400.0
ROOMY = FactSettings(max_memories_per_type=10_000)
TARGET_WRONG = 0
TARGET_RECOGNISED = 0.80

type Vectors = dict[str, npt.NDArray[np.float32]]
# How one save is made: the store, the memory's fields and its vector -> what it did.
type Saver = Callable[[FactStore, dict[str, Any], str, Any, float], tuple[SaveAction, str | None]]


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


def offline(
    store: FactStore, memory: dict[str, Any], kind: str, vector: Any, now: float
) -> tuple[SaveAction, str | None]:
    """FactStore.save as it is: its own rule decides."""
    result = store.save(memory["content"], kind, memory["tags"], vector=vector, now=now)
    return result.action, result.archived.id if result.archived else None


def measure(labelled: dict[str, Any], vectors: Vectors | None, save: Saver) -> Outcome:
    pairs = labelled["supersede_pairs"]
    recognised, wrong, missed, wrongly = 0, 0, [], []
    for pair in pairs:
        store = FactStore(ROOMY)
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
    store = FactStore(ROOMY)
    home_wrong = 0
    for memory in sorted(labelled["memories"], key=lambda m: -m["days_ago"]):
        _action, archived = save(
            store,
            memory,
            memory["type"],
            vectors[memory["content"]] if vectors else None,
            NOW - memory["days_ago"] * DAY,
        )
        home_wrong += archived is not None
    updates = sum(p["same_subject"] for p in pairs)
    return Outcome(
        recognised,
        updates,
        wrong,
        len(pairs) - updates,
        home_wrong,
        len(labelled["memories"]),
        missed,
        wrongly,
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
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
