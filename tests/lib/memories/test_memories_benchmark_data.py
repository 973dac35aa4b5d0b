"""The retrieval benchmark's labelled home is fit to measure with.

benchmarks/bench_memories_quality.py quotes hit@k and a supersede threshold from this data;
a memory that no longer matches its question, a question that copies its answer's words,
or embeddings that miss a text would make those figures wrong without a sound.
"""

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.minilm_embedder import DIMENSIONS, labelled_texts, load_cache
from custom_components.azure_openai_memory.lib.memories import (
    MemoryType,
    normalize_for_comparison,
    terms,
    validate_content,
    validate_tags,
)

DATA = Path(__file__).parents[3] / "benchmarks" / "data" / "household_memories.json"


@pytest.fixture(scope="module")
def labelled() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def test_sizes_meet_the_issue(labelled: dict[str, Any]) -> None:
    pairs = labelled["supersede_pairs"]
    assert len(labelled["memories"]) >= 200
    assert len(labelled["questions"]) >= 100
    assert len(pairs) >= 60
    assert sum(p["same_subject"] for p in pairs) >= 30
    assert sum(not p["same_subject"] for p in pairs) >= 30


def test_memories_are_distinct_valid_facts(labelled: dict[str, Any]) -> None:
    memories = labelled["memories"]
    assert len({m["id"] for m in memories}) == len(memories)
    assert len({normalize_for_comparison(m["content"]) for m in memories}) == len(memories)
    for memory in memories:
        assert validate_content(memory["content"]) == memory["content"]
        assert validate_tags(memory["tags"]) == tuple(memory["tags"])
        assert memory["days_ago"] >= 0
    used = {MemoryType(m["type"]) for m in memories}
    assert used == set(MemoryType)


def test_tags_overlap_heavily(labelled: dict[str, Any]) -> None:
    """A household's tags repeat: most memories share a tag with several others."""
    counts: dict[str, int] = {}
    for memory in labelled["memories"]:
        for tag in memory["tags"]:
            counts[tag] = counts.get(tag, 0) + 1
    assert counts["person:anna"] >= 20
    assert counts["person:tom"] >= 20
    assert counts["room:bedroom"] >= 8
    shared = [m for m in labelled["memories"] if any(counts[t] >= 3 for t in m["tags"])]
    assert len(shared) / len(labelled["memories"]) > 0.9


def test_each_question_has_its_labelled_memories(labelled: dict[str, Any]) -> None:
    """One memory per question, each memory asked about once (paraphrase and multi-hop
    questions together); `also` lists other memories that answer a question as well."""
    ids = {m["id"] for m in labelled["memories"]}
    questions = labelled["questions"] + labelled["multi_hop_questions"]
    assert len({q["id"] for q in questions}) == len(questions)
    assert len({q["question"] for q in questions}) == len(questions)
    assert all(q["memory"] in ids for q in questions)
    assert len({q["memory"] for q in questions}) == len(questions)
    for question in questions:
        also = question.get("also", [])
        assert len(set(also)) == len(also), question["id"]
        assert all(other in ids and other != question["memory"] for other in also), question


def test_questions_are_paraphrases(labelled: dict[str, Any]) -> None:
    """No question shares more than half of its meaningful words with a memory answering it."""
    content = {m["id"]: set(terms(m["content"])) for m in labelled["memories"]}
    shares = []
    for question in labelled["questions"] + labelled["multi_hop_questions"]:
        words = set(terms(question["question"]))
        assert words, question
        for answer in (question["memory"], *question.get("also", ())):
            shares.append(len(words & content[answer]) / len(words))
    assert max(shares) <= 0.5
    assert sum(shares) / len(shares) < 0.25


def test_multi_hop_questions_are_apart(labelled: dict[str, Any]) -> None:
    """A question naming its subject by a role its memory does not state ('the dog' for
    Bruno) needs a second memory: it is kept apart, with the hop it needs, and the paraphrase
    questions name people and pets as their memories do."""
    multi_hop = labelled["multi_hop_questions"]
    assert multi_hop
    assert all(q["hop"] for q in multi_hop)
    by_id = {m["id"]: m["content"].lower() for m in labelled["memories"]}
    # A role, and the words by which a memory states it itself ("labrador": a dog).
    roles = {
        "dog": ("dog", "labrador"),
        "labrador": ("labrador",),
        "cat": ("cat",),
        "daughter": ("daughter",),
        "son": ("son",),
        "boy": ("boy",),
        "girl": ("girl",),
        "youngest": ("youngest",),
        "little one": ("little one", "youngest"),
        "mother": ("mother",),
    }
    for question in labelled["questions"]:
        text = question["question"].lower()
        for role, stated in roles.items():
            if f"the {role}" in text or f"our {role}" in text or f"'s {role}" in text:
                assert any(word in by_id[question["memory"]] for word in stated), question


def test_pairs_are_decisions_facts_py_has_to_make(labelled: dict[str, Any]) -> None:
    """Same type and a shared tag: the seed's step 2 would supersede every one of them."""
    for pair in labelled["supersede_pairs"]:
        MemoryType(pair["type"])
        old, new = pair["old"], pair["new"]
        assert set(validate_tags(old["tags"])) & set(validate_tags(new["tags"])), pair["id"]
        assert normalize_for_comparison(old["content"]) != normalize_for_comparison(new["content"])


def test_the_examples_of_the_seed_and_the_issue_are_labelled(labelled: dict[str, Any]) -> None:
    by_texts = {(p["old"]["content"], p["new"]["content"]): p for p in labelled["supersede_pairs"]}
    knee = by_texts["Occasional knee soreness", "Chronic knee pain after runs over 15km"]
    assert (knee["type"], knee["old"]["tags"], knee["new"]["tags"]) == (
        "injury_history",
        ["body:knee"],
        ["body:knee"],
    )
    assert knee["same_subject"] is True
    assert by_texts["My knee hurts", "My knee is better now"]["same_subject"] is True
    coffee = by_texts["Anna takes her coffee black", "Anna prefers 19 °C in the bedroom at night"]
    assert coffee["same_subject"] is False


def test_embeddings_cover_every_text(labelled: dict[str, Any]) -> None:
    """Regenerate with scripts/bench-embeddings-env after editing the labelled set."""
    cache = load_cache()
    texts = labelled_texts(labelled)
    assert sorted(cache) == sorted(texts)
    vectors = np.stack([cache[text] for text in texts])
    assert vectors.shape == (len(texts), DIMENSIONS)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
