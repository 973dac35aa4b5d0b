"""Same tags and a loose similarity do not make an update: a model judges, the rule is careful.

A memory of the same subject is a candidate; a model's verdict on it (replaces, adds to,
repeats) decides; without one, the offline rule supersedes only what is plainly one fact.
"""

import math

import pytest

from custom_components.azure_openai_memory.lib.memories import (
    CANDIDATE_SIMILARITY,
    SUPERSEDE_SIMILARITY,
    MemoryStore,
    Relation,
    SaveAction,
    Verdict,
)

NOW = 1_760_000_000.0
ANNA_TAGS = ["person:anna", "room:office", "device:speaker"]
NO_ANNOUNCEMENTS = (
    "Anna doesn't want any speaker announcements during her video calls in the office"
)
LOFI = "Anna likes lo-fi music on the office speaker while she works"


def at(cosine: float) -> list[float]:
    """A unit vector this alike to [1, 0, 0]."""
    return [cosine, math.sqrt(1 - cosine**2), 0.0]


def anna_store() -> tuple[MemoryStore, str]:
    store = MemoryStore()
    first = store.save(NO_ANNOUNCEMENTS, "preference", ANNA_TAGS, vector=at(1.0), now=NOW)
    return store, first.memory.id


def test_the_same_tags_and_a_loose_similarity_keep_both_without_a_model() -> None:
    """The issue's case: 0.55 and more alike, same tag set, two different wishes."""
    store, first = anna_store()
    second = store.save(LOFI, "preference", ANNA_TAGS, vector=at(0.7), now=NOW + 1)
    assert second.action is SaveAction.CREATED
    assert second.archived is None
    assert {m.content for m in store} == {NO_ANNOUNCEMENTS, LOFI}
    assert store.get(first) is not None


def test_plainly_the_same_fact_is_still_superseded_without_a_model() -> None:
    store, first = anna_store()
    newer = "Anna no longer wants speaker announcements during video calls in the office"
    second = store.save(
        newer, "preference", ANNA_TAGS, vector=at(SUPERSEDE_SIMILARITY + 0.05), now=NOW + 1
    )
    assert second.action is SaveAction.SUPERSEDED
    assert second.archived is not None
    assert second.archived.id == first


def test_one_body_parts_injury_history_needs_less_alike_embeddings() -> None:
    """The specification's knee example: 0.66 alike with a real model, same body part."""
    store = MemoryStore()
    store.save("Occasional knee soreness", "injury_history", ["body:knee"], vector=at(1.0))
    second = store.save(
        "Chronic knee pain after runs over 15km", "injury_history", ["body:knee"], vector=at(0.66)
    )
    assert second.action is SaveAction.SUPERSEDED


def test_the_candidate_a_model_is_asked_about() -> None:
    store, first = anna_store()
    candidate = store.update_candidate(LOFI, "preference", ANNA_TAGS, vector=at(0.7))
    assert candidate is not None
    assert candidate.id == first
    # Sharing one tag is enough, naming another person is not, and neither is a loose match.
    assert store.update_candidate(LOFI, "preference", ["room:office"], vector=at(0.6)) is not None
    assert (
        store.update_candidate(LOFI, "preference", ["person:ben", "room:office"], vector=at(0.9))
        is None
    )
    below = CANDIDATE_SIMILARITY - 0.05
    assert store.update_candidate(LOFI, "preference", ANNA_TAGS, vector=at(below)) is None
    assert store.update_candidate(LOFI, "context", ANNA_TAGS, vector=at(0.9)) is None
    assert store.update_candidate(LOFI, "preference", [], vector=at(0.9)) is None
    # A word-for-word repeat needs no judgement.
    assert store.update_candidate(NO_ANNOUNCEMENTS.upper(), "preference", ANNA_TAGS) is None
    # Without a comparable vector, the candidate is what the offline rule would supersede.
    words = "Anna doesn't want speaker announcements during her video calls"
    assert store.update_candidate(words, "preference", ANNA_TAGS) is not None
    assert store.update_candidate(LOFI, "preference", ANNA_TAGS) is None


def test_a_model_that_says_replaces_updates_the_memory() -> None:
    store, first = anna_store()
    store.save(NO_ANNOUNCEMENTS, "preference", [], now=NOW + 1)  # seen twice
    newer = "Anna is fine with announcements in the office now that she has headphones"
    result = store.save(
        newer,
        "preference",
        ANNA_TAGS,
        vector=at(0.6),
        verdict=Verdict(first, Relation.REPLACES),
        now=NOW + 2,
    )
    assert result.action is SaveAction.UPDATED
    assert result.archived is not None
    assert result.archived.id == first
    assert result.archived.superseded_by == result.memory.id
    assert result.archived.reason == (
        "Replaced by a newer fact about person:anna, room:office, device:speaker "
        "(as the model judged)"
    )
    assert result.memory.occurrences == 3


@pytest.mark.parametrize("relation", [Relation.ADDS, Relation.UNSURE])
def test_a_model_that_says_adds_or_is_unsure_keeps_both(relation: Relation) -> None:
    """Even where the rule alone would have superseded (0.95 alike)."""
    store, first = anna_store()
    result = store.save(
        LOFI,
        "preference",
        ANNA_TAGS,
        vector=at(0.95),
        verdict=Verdict(first, relation),
        now=NOW + 1,
    )
    assert result.action is SaveAction.CREATED
    assert result.archived is None
    assert len(store) == 2


def test_a_model_that_says_repeats_reinforces_unless_a_number_changed() -> None:
    store = MemoryStore()
    tags = ["person:max", "topic:medication"]
    first = store.save("Max takes 2.5 mg of melatonin", "routine", tags, vector=at(1.0), now=NOW)
    same = store.save(
        "Max gets his 2.5 mg melatonin",
        "routine",
        tags,
        vector=at(0.9),
        verdict=Verdict(first.memory.id, Relation.REPEATS),
        now=NOW + 1,
    )
    assert same.action is SaveAction.REINFORCED
    assert same.memory.id == first.memory.id
    assert same.memory.occurrences == 2
    assert same.memory.content == "Max takes 2.5 mg of melatonin"
    changed = store.save(
        "Max gets 25 mg melatonin",
        "routine",
        tags,
        vector=at(0.9),
        verdict=Verdict(first.memory.id, Relation.REPEATS),
        now=NOW + 2,
    )
    assert changed.action is SaveAction.CREATED
    assert len(store) == 2


def test_a_verdict_on_a_memory_gone_meanwhile_leaves_the_rule_to_decide() -> None:
    store, first = anna_store()
    store.forget(first, now=NOW + 1)
    result = store.save(
        LOFI,
        "preference",
        ANNA_TAGS,
        vector=at(0.9),
        verdict=Verdict(first, Relation.REPLACES),
        now=NOW + 2,
    )
    assert result.action is SaveAction.CREATED
    assert result.archived is None
