"""Loading the memories: what a load reads is searched the same before and after its
words are indexed (in this thread or another), changes made meanwhile are not lost, and
the stored form comes back byte for byte."""

import threading

import numpy as np
import orjson
import pytest

from custom_components.azure_openai_memory.lib.memories import (
    MemorySettings,
    MemoryStore,
    SaveAction,
    encode_vector,
)
from custom_components.azure_openai_memory.lib.memories.text import KeywordIndex
from custom_components.azure_openai_memory.lib.memories.vectors import encode_vectors
from tests.azure_stub.embeddings import hashed_embedding

from .test_memories import NOW, household_memories

QUESTIONS = [
    "what does anna like in the kitchen",
    "garage fan speed",
    "jazz playlist",
    "Ben likes the office at 21 degrees",
    "humid attic",
]


def _stored(with_vectors: bool) -> dict[str, object]:
    store = MemoryStore(MemorySettings(max_memories_per_type=1000))
    for n, (text, tags) in enumerate(household_memories()):
        vector = hashed_embedding(text) if with_vectors else None
        store.save(text, "preference", tags, vector=vector, now=NOW + n)
    store.save("Occasional knee soreness", "injury_history", ["body:knee"], now=NOW)
    store.save("Chronic knee pain", "injury_history", ["body:knee"], now=NOW)
    data: dict[str, object] = orjson.loads(orjson.dumps(store.as_dict()))
    return data


def _answers(store: MemoryStore, with_vectors: bool) -> list[list[tuple[str, float]]]:
    answers = []
    for question in QUESTIONS:
        vector = np.asarray(hashed_embedding(question)) if with_vectors else None
        found = store.search(question, query_vector=vector, limit=8, now=NOW + 1000)
        answers.append([(memory.id, score) for memory, score in found.memories])
    return answers


@pytest.mark.parametrize("with_vectors", [False, True])
def test_a_search_before_the_words_are_indexed_answers_as_after(with_vectors: bool) -> None:
    data = _stored(with_vectors)
    indexed = MemoryStore.from_dict(data)
    indexed.build_keywords()
    assert indexed.keywords_ready
    expected = _answers(indexed, with_vectors)
    assert all(expected)

    fresh = MemoryStore.from_dict(data)
    assert not fresh.keywords_ready
    assert _answers(fresh, with_vectors) == expected
    assert fresh.keywords_ready


def test_words_indexed_in_another_thread_meanwhile_changed_records() -> None:
    """Forgetting and a lowered cap before the index is taken into use: the memories
    they archived are not found by their words, nor their content treated as a repeat."""
    data = _stored(False)
    store = MemoryStore.from_dict(data)
    forgotten = next(m for m in store if "jazz playlist number 12" in m.content)
    store.forget(forgotten.id, now=NOW + 2000)
    evicted = store.apply_settings(MemorySettings(max_memories_per_type=300), now=NOW + 2000)
    assert evicted
    assert not store.keywords_ready

    builder = threading.Thread(target=store.build_keywords)
    builder.start()
    builder.join()
    assert store.keywords_ready

    gone = {forgotten.id, *(one.id for one in evicted)}
    for question in ["jazz playlist number 12", *(one.original_content for one in evicted[:5])]:
        found = store.search(question, limit=50, now=NOW + 3000).memories
        assert found
        assert gone.isdisjoint(memory.id for memory, _score in found)
    again = store.save(forgotten.content, "preference", list(forgotten.tags), now=NOW + 4000)
    assert again.action is not SaveAction.REINFORCED
    assert again.memory.id != forgotten.id


def test_a_save_before_the_words_are_indexed_finds_the_repeat() -> None:
    data = _stored(False)
    store = MemoryStore.from_dict(data)
    text, tags = household_memories()[40]
    result = store.save(text, "preference", tags, now=NOW + 5000)
    assert result.action is SaveAction.REINFORCED
    assert result.memory.occurrences == 2


@pytest.mark.parametrize("built_elsewhere", [False, True])
def test_loaded_words_find_repeats_only_in_their_own_scope(built_elsewhere: bool) -> None:
    store = MemoryStore()
    mine = store.save("Anna takes 2.5 mg of melatonin", "context", scope="person:anna", now=NOW)
    data = orjson.loads(orjson.dumps(store.as_dict()))
    loaded = MemoryStore.from_dict(data)
    if built_elsewhere:
        worker = threading.Thread(target=loaded.build_keywords)
        worker.start()
        worker.join()
    household = loaded.save("Anna takes 2.5 mg of melatonin", "context", now=NOW + 1)
    again = loaded.save(
        "anna takes 2.5 mg of melatonin.", "context", scope="person:anna", now=NOW + 2
    )
    assert household.action is SaveAction.CREATED
    assert household.memory.scope == "household"
    assert again.action is SaveAction.REINFORCED
    assert again.memory.id == mine.memory.id


def test_building_twice_or_after_use_changes_nothing() -> None:
    data = _stored(False)
    store = MemoryStore.from_dict(data)
    before = _answers(store, False)
    store.build_keywords()
    store.build_keywords()
    assert _answers(store, False) == before


@pytest.mark.parametrize("with_vectors", [False, True])
def test_the_stored_form_comes_back_unchanged(with_vectors: bool) -> None:
    data = _stored(with_vectors)
    assert MemoryStore.from_dict(data).as_dict() == data


def test_a_stored_form_is_made_of_the_records_as_they_were_when_taken() -> None:
    """The part of a save that runs in another thread reads what was taken in the store's
    own: vectors written meanwhile, into a row a forgotten memory freed or over another
    memory's, go to a copy of the matrix, and new records are not in it."""
    store = MemoryStore.from_dict(_stored(True))
    before = store.as_dict()
    form = store.stored_form()
    gone, changed = list(store)[:2]
    store.forget(gone.id)
    store.save("The cellar light is on a timer", "routine", vector=hashed_embedding("x"), now=NOW)
    assert store.set_vector(changed.id, hashed_embedding("another text altogether"))
    assert form() == before
    assert store.as_dict() != before


def test_loaded_memories_share_their_tags() -> None:
    store = MemoryStore.from_dict(_stored(False))
    anna = [m for m in store if "person:anna" in m.tags]
    assert len(anna) > 10
    assert len({id(t) for m in anna for t in m.tags if t == "person:anna"}) == 1


@pytest.mark.parametrize("dims", [1, 2, 3, 255, 256, 1536])
def test_vectors_encoded_together_as_one_by_one(dims: int) -> None:
    matrix = np.random.default_rng(dims).standard_normal((2100, dims)).astype(np.float32)
    rows = np.array([5, 0, 2099, *range(10, 2090)], dtype=np.int64)
    assert encode_vectors(matrix, rows) == [encode_vector(matrix[row]) for row in rows]


def test_keyword_index_after_changes_scores_as_one_built_afresh() -> None:
    """Terms held by one document once, then by several, then by one again (the compact
    and the full form of a posting), and documents added, replaced and removed: the
    scores are those of an index built from what is left."""
    rng = np.random.default_rng(17)
    vocabulary = ["kitchen", "kitchens", "light", "warm", "anna", "ben", "19", "7:30"]
    index = KeywordIndex()
    index.add(0, ["warm", "warm"])  # one document, twice
    index.add(1, ["anna"])
    index.add(2, ["anna"])
    index.remove(0)
    index.remove(2)
    documents: dict[int, list[str]] = {1: ["anna"]}
    for step in range(400):
        doc = int(rng.integers(0, 40))
        if doc in documents and rng.random() < 0.5:
            index.remove(doc)
            del documents[doc]
            continue
        words = [str(w) for w in rng.choice(vocabulary, size=int(rng.integers(1, 5)))]
        words.append(f"only{step}")  # a term of this document alone
        index.add(doc, words)
        documents[doc] = words
    fresh = KeywordIndex()
    for doc, words in documents.items():
        fresh.add(doc, words)
    assert len(index) == len(fresh) == len(documents)
    for query in (["kitchen"], ["warm", "anna"], ["19"], ["light", "ben", "7:30"], ["only399"]):
        got, got_hits = index.scores(query, 40)
        want, want_hits = fresh.scores(query, 40)
        np.testing.assert_allclose(got, want, rtol=1e-6)
        assert got_hits.tolist() == want_hits.tolist()
    assert index.scores(["kitchen"], 40)[0].any()
