"""MemoryStore: the seed's deduplication, supersede by subject, ranking, patterns, forgetting."""

import itertools
import math
import time

import numpy as np
import orjson
import pytest

from custom_components.azure_openai_memory.lib.memories import (
    FUZZY_SIMILARITY,
    MAX_CONTENT_LENGTH,
    MAX_TAGS,
    SAME_TAGS_SIMILARITY,
    SUPERSEDE_SIMILARITY,
    MemoryConfidence,
    MemoryInputError,
    MemorySettings,
    MemorySource,
    MemoryStore,
    MemoryType,
    SaveAction,
    bm25,
    decode_vector,
    encode_vector,
    normalize_for_comparison,
)
from tests.azure_stub.embeddings import hashed_embedding

NOW = 1_760_000_000.0
DAY = 86_400.0

PEOPLE = ["anna", "ben", "carla", "dev", "emil", "fran"]
ROOMS = ["bedroom", "kitchen", "office", "bathroom", "garage", "hall", "living_room", "attic"]
THINGS = [
    ("temperature", "at {n} degrees"),
    ("light", "with the lights at {n} percent"),
    ("music", "with jazz playlist number {n}"),
    ("blinds", "with the blinds {n} centimetres open"),
    ("fan", "with the fan on speed {n}"),
    ("scent", "with diffuser oil number {n}"),
    ("humidity", "at {n} percent humidity"),
]


def household_memories() -> list[tuple[str, list[str]]]:
    """Several hundred distinct memories of one home; each shares tags with dozens."""
    told = []
    for n, (person, room, (thing, phrase)) in enumerate(
        itertools.product(PEOPLE, ROOMS, THINGS), start=10
    ):
        text = f"{person.title()} likes the {room.replace('_', ' ')} {phrase.format(n=n)}"
        told.append((text, [f"person:{person}", f"room:{room}", f"topic:{thing}"]))
    return told


# -- the seed's section 8 ---------------------------------------------------


def test_save_new_memory() -> None:
    store = MemoryStore()
    result = store.save(
        "Knee pain after long runs", "injury_history", ["body:knee"], source="claude_code", now=NOW
    )
    assert result.action is SaveAction.CREATED
    assert result.archived is None
    assert result.memory.id.startswith("mem_")
    assert result.memory.confidence is MemoryConfidence.MEDIUM
    assert result.memory.occurrences == 1
    assert store.get(result.memory.id) is result.memory
    assert len(store) == 1


def test_exact_match_reinforces_and_third_time_is_high() -> None:
    store = MemoryStore()
    first = store.save("Knee pain after long runs", "injury_history", ["body:knee"], now=NOW)
    second = store.save(
        "knee pain,  after LONG runs!", "injury_history", ["body:knee"], now=NOW + 5
    )
    assert second.action is SaveAction.REINFORCED
    assert second.memory.id == first.memory.id
    assert second.memory.occurrences == 2
    assert second.memory.confidence is MemoryConfidence.MEDIUM
    third = store.save("Knee pain after long runs", "injury_history", ["body:knee"], now=NOW + 9)
    assert third.memory.occurrences == 3
    assert third.memory.confidence is MemoryConfidence.HIGH
    assert third.memory.updated_at == NOW + 9
    assert len(store) == 1


def test_same_type_and_tag_set_supersedes_the_seed_knee_example() -> None:
    store = MemoryStore()
    old = store.save(
        "Occasional knee soreness", "injury_history", ["body:knee"], confidence="low", now=NOW
    )
    new = store.save(
        "Chronic knee pain after runs over 15km",
        "injury_history",
        ["body:knee"],
        confidence="high",
        now=NOW + 30 * DAY,
    )
    assert new.action is SaveAction.SUPERSEDED
    assert new.archived is not None
    assert new.archived.id == old.memory.id
    assert new.archived.superseded_by == new.memory.id
    assert new.archived.original_content == "Occasional knee soreness"
    assert new.archived.reason == "Updated by newer observation about body:knee"
    assert new.memory.occurrences == 2
    assert store.get(old.memory.id) is None
    assert [m.id for m in store] == [new.memory.id]


def test_shared_tag_alone_does_not_supersede() -> None:
    """The issue's counter-example: both preferences, both about Anna, different things."""
    store = MemoryStore()
    coffee = store.save(
        "Anna takes her coffee black",
        "preference",
        ["person:anna", "topic:coffee"],
        vector=hashed_embedding("Anna takes her coffee black"),
        now=NOW,
    )
    warm = store.save(
        "Anna prefers 19 °C in the bedroom at night",
        "preference",
        ["person:anna", "room:bedroom"],
        vector=hashed_embedding("Anna prefers 19 °C in the bedroom at night"),
        now=NOW + 1,
    )
    assert warm.action is SaveAction.CREATED
    assert {m.id for m in store} == {coffee.memory.id, warm.memory.id}


def test_shared_tag_and_alike_embeddings_supersede() -> None:
    store = MemoryStore()
    old_text = "The bins go out on Tuesday night"
    new_text = "The bins go out on Wednesday night"
    assert float(np.dot(hashed_embedding(old_text), hashed_embedding(new_text))) >= (
        SUPERSEDE_SIMILARITY
    )
    old = store.save(
        old_text,
        "routine",
        ["chore:bins", "day:tuesday"],
        vector=hashed_embedding(old_text),
        now=NOW,
    )
    new = store.save(
        new_text,
        "routine",
        ["chore:bins", "day:wednesday"],
        vector=hashed_embedding(new_text),
        now=NOW + 1,
    )
    # day:tuesday and day:wednesday name different days: not the same subject.
    assert new.action is SaveAction.CREATED
    newer = "The bins go out on Wednesday night now"
    third = store.save(
        newer, "routine", ["chore:bins"], vector=hashed_embedding(newer), now=NOW + 2
    )
    assert third.action is SaveAction.SUPERSEDED
    assert third.archived is not None
    assert third.archived.id == new.memory.id
    assert store.get(old.memory.id) is not None


def test_alike_embeddings_without_shared_tag_do_not_supersede() -> None:
    store = MemoryStore()
    a = "The wifi password is on the fridge"
    b = "The wifi password is taped to the fridge door"
    store.save(a, "household", ["network:wifi"], vector=hashed_embedding(a), now=NOW)
    result = store.save(b, "household", ["room:kitchen"], vector=hashed_embedding(b), now=NOW)
    assert result.action is SaveAction.CREATED
    assert len(store) == 2


@pytest.mark.parametrize("with_vectors", [False, True])
def test_hundreds_of_household_memories_with_overlapping_tags_all_stay(with_vectors: bool) -> None:
    told = household_memories()
    assert len(told) >= 300
    store = MemoryStore(MemorySettings(max_memories_per_type=1000))
    for n, (text, tags) in enumerate(told):
        vector = hashed_embedding(text) if with_vectors else None
        result = store.save(text, "preference", tags, vector=vector, now=NOW + n)
        assert result.action is SaveAction.CREATED, text
    assert len(store) == len(told)
    assert store.archived() == []
    assert sorted(m.content for m in store) == sorted(text for text, _ in told)


def test_max_memories_per_type_evicts_least_confident_oldest() -> None:
    store = MemoryStore(MemorySettings(max_memories_per_type=3))
    sure = store.save("Ben is allergic to cats", "context", [], confidence="high", now=NOW)
    old = store.save("The boiler was serviced in May", "context", [], now=NOW + 1)
    newer = store.save("The car is a blue Golf", "context", [], now=NOW + 2)
    other = store.save("Dinner at seven", "routine", [], confidence="low", now=NOW + 3)
    newest = store.save("Grandma visits on Sundays", "context", [], now=NOW + 4)
    assert newest.action is SaveAction.CREATED
    assert [a.id for a in newest.evicted] == [old.memory.id]
    assert newest.evicted[0].reason == "Over max_memories_per_type"
    assert {m.id for m in store} == {
        sure.memory.id,
        newer.memory.id,
        other.memory.id,
        newest.memory.id,
    }
    archived = store.apply_settings(MemorySettings(max_memories_per_type=1), now=NOW + 5)
    assert [a.id for a in archived] == [newer.memory.id, newest.memory.id]
    assert {m.id for m in store} == {sure.memory.id, other.memory.id}


@pytest.mark.parametrize(
    ("content", "kind", "tags", "extra", "key"),
    [
        ("", "context", [], {}, "memory_content_empty"),
        ("   ", "context", [], {}, "memory_content_empty"),
        ("x" * (MAX_CONTENT_LENGTH + 1), "context", [], {}, "memory_content_too_long"),
        ("fine", "dream", [], {}, "memory_type_invalid"),
        ("fine", "context", ["a:b:c"], {}, "memory_tag_invalid"),
        ("fine", "context", ["two words"], {}, "memory_tag_invalid"),
        ("fine", "context", [":anna"], {}, "memory_tag_invalid"),
        ("fine", "context", ["x" * 65], {}, "memory_tag_too_long"),
        ("fine", "context", [f"t{n}" for n in range(MAX_TAGS + 1)], {}, "memory_too_many_tags"),
        ("fine", "context", [], {"confidence": "certain"}, "memory_confidence_invalid"),
        ("fine", "context", [], {"source": "rumour"}, "memory_source_invalid"),
    ],
)
def test_bad_input_is_refused_and_nothing_changes(
    content: str, kind: str, tags: list[str], extra: dict[str, str], key: str
) -> None:
    store = MemoryStore()
    store.save("Keep me", "context", ["person:anna"], now=NOW)
    before = orjson.dumps(store.as_dict())
    with pytest.raises(MemoryInputError) as caught:
        store.save(content, kind, tags, now=NOW, **extra)  # type: ignore[arg-type]
    assert caught.value.key == key
    assert orjson.dumps(store.as_dict()) == before


def test_tags_are_lowercased_and_deduplicated() -> None:
    store = MemoryStore()
    result = store.save(
        "Anna's room", "household", ["Person:Anna", "person:anna", "guest"], now=NOW
    )
    assert result.memory.tags == ("person:anna", "guest")


# -- searching --------------------------------------------------------------


def test_search_by_type_sorts_by_confidence_then_recency() -> None:
    store = MemoryStore()
    low = store.save("Might like tea", "preference", [], confidence="low", now=NOW)
    mid_old = store.save("Likes the window open", "preference", [], now=NOW + 1)
    mid_new = store.save("Likes podcasts at breakfast", "preference", [], now=NOW + 2)
    high = store.save("Hates the smell of bleach", "preference", [], confidence="high", now=NOW)
    store.save("Bins on Tuesday", "routine", [], confidence="high", now=NOW + 3)
    result = store.search(None, memory_type="preference", now=NOW + 4)
    assert result.ranker == "keyword"
    assert [m.id for m, _ in result.memories] == [
        high.memory.id,
        mid_new.memory.id,
        mid_old.memory.id,
        low.memory.id,
    ]
    assert [m.id for m, _ in store.search(None, memory_type="preference", limit=2).memories] == [
        high.memory.id,
        mid_new.memory.id,
    ]


def test_search_by_tags_needs_every_tag() -> None:
    store = MemoryStore()
    both = store.save(
        "Anna sleeps in the attic", "household", ["person:anna", "room:attic"], now=NOW
    )
    store.save("Anna reads in the hall", "household", ["person:anna", "room:hall"], now=NOW)
    result = store.search(None, tags=["room:attic", "person:anna"], now=NOW)
    assert [m.id for m, _ in result.memories] == [both.memory.id]


def test_keyword_ranking_finds_words_and_tag_values() -> None:
    store = MemoryStore(MemorySettings(max_memories_per_type=1000))
    for n, (text, tags) in enumerate(household_memories()):
        store.save(text, "preference", tags, now=NOW + n)
    guest = store.save("The guest room is Anna's", "household", ["room:guest_room"], now=NOW)
    result = store.search("whose is the guest room?", limit=5, now=NOW)
    assert result.ranker == "keyword"
    assert result.memories[0][0].id == guest.memory.id
    scores = [score for _, score in result.memories]
    assert scores == sorted(scores, reverse=True)
    nothing = store.search("zebra crossing", now=NOW)
    assert nothing.memories == []


def test_hybrid_ranking_uses_vectors_and_says_so() -> None:
    store = MemoryStore()
    texts = {
        "warm": "Anna prefers the bedroom at 19 degrees at night",
        "coffee": "Anna takes her coffee black",
        "bins": "The bins go out on Tuesday night",
    }
    saved = {
        name: store.save(text, "preference", [f"topic:{name}"], now=NOW).memory
        for name, text in texts.items()
    }
    for name, memory in saved.items():
        assert store.set_vector(memory.id, hashed_embedding(texts[name]))
    # A question sharing no stemmed word with the memory: only its vector can find it.
    question = "bedroom degrees night anna"
    vector = np.asarray(hashed_embedding(texts["warm"]))
    result = store.search("thermostat setting", query_vector=vector, now=NOW)
    assert result.ranker == "hybrid"
    assert result.memories[0][0].id == saved["warm"].id
    assert result.memories[0][1] > 0.7
    keyword = store.search(question, now=NOW)
    assert keyword.ranker == "keyword"
    assert keyword.memories[0][0].id == saved["warm"].id
    # A query vector of another length (a new deployment) cannot be compared: keywords.
    other = store.search(question, query_vector=np.ones(8), now=NOW)
    assert other.ranker == "keyword"


def test_a_closer_meaning_can_be_asked_for() -> None:
    """A memory found by its meaning alone is left out when the caller asks for a closer
    one (as forgetting does); one sharing the question's words is found all the same."""
    store = MemoryStore()
    texts = {
        "warm": "Anna prefers the bedroom at 19 degrees at night",
        "coffee": "Anna takes her coffee black",
    }
    saved = {
        name: store.save(text, "preference", [], now=NOW).memory for name, text in texts.items()
    }
    for name, memory in saved.items():
        assert store.set_vector(memory.id, hashed_embedding(texts[name]))
    vector = np.asarray(hashed_embedding("the bedroom at night"))
    similarity = float(np.dot(vector, hashed_embedding(texts["warm"])))
    assert 0.2 < similarity < 0.9
    found = store.search("thermostat setting", query_vector=vector, now=NOW)
    assert saved["warm"].id in [m.id for m, _ in found.memories]
    closer = store.search(
        "thermostat setting", query_vector=vector, now=NOW, min_similarity=similarity + 0.01
    )
    assert closer.memories == []
    by_words = store.search(
        "coffee", query_vector=vector, now=NOW, min_similarity=similarity + 0.01
    )
    assert [m.id for m, _ in by_words.memories] == [saved["coffee"].id]


def test_recency_and_confidence_break_ties() -> None:
    store = MemoryStore()
    old = store.save(
        "Garage code 4711, side door", "household", ["room:garage", "door:side"], now=NOW - 60 * DAY
    )
    new = store.save(
        "Garage code 4711, back door", "household", ["room:garage", "door:back"], now=NOW
    )
    result = store.search("garage code", now=NOW)
    assert [m.id for m, _ in result.memories] == [new.memory.id, old.memory.id]


def test_search_limit_is_checked() -> None:
    store = MemoryStore()
    for limit in (0, 51):
        with pytest.raises(MemoryInputError) as caught:
            store.search("x", limit=limit)
        assert caught.value.key == "memory_limit_invalid"


def test_search_include_archived() -> None:
    store = MemoryStore()
    store.save("Occasional knee soreness", "injury_history", ["body:knee"], now=NOW)
    store.save("Chronic knee pain", "injury_history", ["body:knee"], now=NOW + 1)
    assert [m.content for m, _ in store.search("knee", now=NOW).memories] == ["Chronic knee pain"]
    both = store.search("knee", include_archived=True, now=NOW)
    assert sorted(m.content for m, _ in both.memories) == [
        "Chronic knee pain",
        "Occasional knee soreness",
    ]
    by_type = store.search(None, memory_type="injury_history", include_archived=True, now=NOW)
    assert len(by_type.memories) == 2


def test_bm25_alone() -> None:
    docs = ["the bins go out on tuesday", "anna likes coffee", "bins bins bins"]
    scores = bm25("bins tuesday", docs)
    # Terms: [bin, go, out, tuesday], [anna, like, coffee], [bin, bin, bin]; k1 1.5, b 0.75.
    average = 10 / 3

    def part(tf: int, length: int, df: int) -> float:
        idf = math.log(1 + (3 - df + 0.5) / (df + 0.5))
        return idf * tf * 2.5 / (tf + 1.5 * (0.25 + 0.75 * length / average))

    assert scores[0] == pytest.approx(part(1, 4, 2) + part(1, 4, 1), rel=1e-5)
    assert scores[1] == 0.0
    assert scores[2] == pytest.approx(part(3, 3, 2), rel=1e-5)
    assert scores[0] > scores[2]
    assert bm25("nothing here", docs) == [0.0, 0.0, 0.0]


def test_bm25_matches_words_spelled_alike() -> None:
    """A query term also matches indexed terms whose padded character 4-grams are at
    least FUZZY_SIMILARITY alike (Dice), weighted by that similarity; a document counts
    the best of them."""
    docs = ["the bedroom is cold", "the room is warm", "bedroom and room", "anna likes coffee"]
    scores = bm25("room", docs)
    # Terms: [bedroom, cold], [room, warm], [bedroom, room], [anna, like, coffee].
    average = 9 / 4

    def part(tf: int, length: int, df: int) -> float:
        idf = math.log(1 + (4 - df + 0.5) / (df + 0.5))
        return idf * tf * 2.5 / (tf + 1.5 * (0.25 + 0.75 * length / average))

    # ' room ' -> {' roo', 'room', 'oom '}; ' bedroom ' -> 6 grams, 2 of them shared.
    alike = 2 * 2 / (3 + 6)
    assert alike >= FUZZY_SIMILARITY
    assert scores[0] == pytest.approx(alike * part(1, 2, 2), rel=1e-5)
    assert scores[1] == pytest.approx(part(1, 2, 2), rel=1e-5)
    assert scores[2] == pytest.approx(max(part(1, 2, 2), alike * part(1, 2, 2)), rel=1e-5)
    assert scores[3] == 0.0
    # Numbers are never alike: level 19 is not level 190.
    level_190, level_19 = bm25("19", ["level 190", "level 19"])
    assert level_190 == 0.0
    assert level_19 > 0.0


# -- patterns ---------------------------------------------------------------


def test_patterns_any_prefix_in_three_memories_of_a_type() -> None:
    store = MemoryStore()
    ids = [
        store.save(text, "household", ["room:attic", f"thing:{n}"], now=NOW + n).memory.id
        for n, text in enumerate(["Attic leaks", "Attic is cold", "Attic has mice"])
    ]
    store.save("Attic key is blue", "context", ["room:attic"], now=NOW)
    store.save("Hall is dark", "household", ["room:hall"], now=NOW)
    for n in range(3):
        store.save(f"Ben overrode the heating schedule, time {n}", "routine", [], now=NOW + n)
    insights = {i.pattern_type: i for i in store.patterns()}
    assert set(insights) == {"recurring_room", "override_tendency"}
    room = insights["recurring_room"]
    assert room.evidence == ids
    assert room.description == "Recurring room attic in household memories (3 occurrences)"
    assert room.confidence is MemoryConfidence.HIGH
    assert len(insights["override_tendency"].evidence) == 3
    assert insights["override_tendency"].confidence is MemoryConfidence.MEDIUM


# -- forgetting -------------------------------------------------------------


def test_forget_by_id_and_by_tag_archives() -> None:
    store = MemoryStore()
    one = store.save("Anna's room is the attic", "household", ["person:anna"], now=NOW)
    two = store.save("Anna likes tea", "preference", ["person:anna"], now=NOW)
    three = store.save("Ben likes tea", "preference", ["person:ben"], now=NOW)
    result = store.forget(one.memory.id, now=NOW)
    assert [a.id for a in result.archived] == [one.memory.id]
    assert result.archived[0].reason == "Forgotten on request"
    with pytest.raises(MemoryInputError) as caught:
        store.forget("mem_nope", now=NOW)
    assert caught.value.key == "memory_unknown"
    by_tag = store.forget(tag="person:anna", now=NOW)
    assert [a.id for a in by_tag.archived] == [two.memory.id]
    assert [m.id for m in store] == [three.memory.id]
    assert {a.id for a in store.archived()} == {one.memory.id, two.memory.id}
    # Whoever forgets may say why; the archive keeps it.
    (said,) = store.forget(three.memory.id, now=NOW, reason="Forgotten by voice").archived
    assert said.reason == "Forgotten by voice"


def test_erase_by_tag_deletes_archived_too() -> None:
    store = MemoryStore()
    old = store.save("Anna's phone number is 0171 123", "context", ["person:anna"], now=NOW)
    new = store.save("Anna's phone number is 0171 456", "context", ["person:anna"], now=NOW + 1)
    keep = store.save("Ben's number is 789", "context", ["person:ben"], now=NOW)
    assert store.get_archived(old.memory.id) is not None
    result = store.forget(tag="person:anna", erase=True, now=NOW)
    assert sorted(result.erased) == sorted([old.memory.id, new.memory.id])
    assert result.archived == []
    assert store.archived() == []
    assert [m.id for m in store] == [keep.memory.id]
    assert "Anna" not in orjson.dumps(store.as_dict()).decode()
    assert store.search("Anna number", include_archived=True, now=NOW).memories[0][0].id == (
        keep.memory.id
    )


def test_cleanup_archived_after_retention() -> None:
    store = MemoryStore(MemorySettings(archive_retention_days=90))
    first = store.save("a first thing", "context", ["x"], now=NOW)
    store.forget(first.memory.id, now=NOW)
    second = store.save("a second thing", "context", ["y"], now=NOW)
    store.forget(second.memory.id, now=NOW + 50 * DAY)
    assert store.cleanup_archived(now=NOW + 91 * DAY) == [first.memory.id]
    assert [a.id for a in store.archived()] == [second.memory.id]
    assert store.cleanup_archived(30, now=NOW + 91 * DAY) == [second.memory.id]


# -- storage ----------------------------------------------------------------


def test_round_trip_with_vectors_is_compact() -> None:
    store = MemoryStore(MemorySettings(max_memories_per_type=1000))
    told = household_memories()
    for n, (text, tags) in enumerate(told):
        store.save(text, "preference", tags, vector=hashed_embedding(text), now=NOW + n)
    store.save("Occasional knee soreness", "injury_history", ["body:knee"], now=NOW)
    store.save("Chronic knee pain", "injury_history", ["body:knee"], now=NOW)
    raw = orjson.dumps(store.as_dict())
    assert len(raw) / len(store) < 2048
    loaded = MemoryStore.from_dict(orjson.loads(raw), store.settings)
    assert len(loaded) == len(store)
    assert len(loaded.archived()) == 1
    for memory in store:
        copy = loaded.get(memory.id)
        assert copy == memory
        original, back = store.vector(memory.id), loaded.vector(memory.id)
        if original is None:
            assert back is None
        else:
            assert back is not None
            assert float(original @ back) > 0.999
    text, tags = told[7]
    vector = np.asarray(hashed_embedding(text))
    assert [m.id for m, _ in loaded.search(text, query_vector=vector, limit=3).memories] == [
        m.id for m, _ in store.search(text, query_vector=vector, limit=3).memories
    ]


def test_a_broken_record_is_skipped() -> None:
    good = MemoryStore()
    good.save("Anna likes tea", "preference", [], now=NOW)
    data = good.as_dict()
    data["memories"].append({"id": "mem_x", "type": "dream"})
    data["archived"].append({"nothing": True})
    loaded = MemoryStore.from_dict(data)
    assert [m.content for m in loaded] == ["Anna likes tea"]
    assert loaded.archived() == []


def test_vectors_encode_in_float16() -> None:
    vector = np.asarray(hashed_embedding("Anna takes her coffee black"), dtype=np.float32)
    text = encode_vector(vector)
    assert len(text) == 684
    back = decode_vector(text)
    assert back is not None
    assert float(back @ vector) > 0.999


def test_new_embedding_length_drops_old_vectors() -> None:
    store = MemoryStore()
    a = store.save("one", "context", [], vector=np.ones(4), now=NOW).memory
    b = store.save("two", "context", [], now=NOW).memory
    assert [m.id for m in store.without_vector()] == [b.id]
    assert store.set_vector(b.id, np.ones(6))
    assert store.dimensions == 6
    assert store.vector(a.id) is None
    assert [m.id for m in store.without_vector()] == [a.id]
    store.clear_vectors()
    assert store.dimensions == 0
    assert len(store.without_vector()) == 2
    assert not store.set_vector("mem_gone", np.ones(6))


def test_normalisation_is_the_seeds() -> None:
    assert normalize_for_comparison("  Knee   PAIN, after runs!! ") == "knee pain after runs"


def test_save_uses_the_clock_when_no_time_is_given() -> None:
    store = MemoryStore()
    before = time.time()
    memory = store.save("Now", "context", [], source=MemorySource.CONVERSATION).memory
    assert before <= memory.created_at <= time.time()
    assert memory.source is MemorySource.CONVERSATION
    assert memory.type is MemoryType.CONTEXT


def test_stored_form_follows_every_change() -> None:
    """as_dict keeps each record's form between saves; every change replaces it."""
    store = MemoryStore()
    one = store.save("Anna likes tea", "preference", ["person:anna"], now=NOW).memory
    two = store.save("Ben likes coffee", "preference", ["person:ben"], now=NOW).memory
    first = store.as_dict()
    store.save("Anna likes tea", "preference", ["person:anna"], now=NOW + 1)
    store.set_vector(two.id, np.ones(4))
    second = store.as_dict()
    assert first["memories"][0]["occurrences"] == 1  # the first snapshot is untouched
    by_id = {m["id"]: m for m in second["memories"]}
    assert by_id[one.id]["occurrences"] == 2
    assert by_id[one.id]["updated_at"] == NOW + 1
    assert "vector" in by_id[two.id]
    store.forget(one.id, now=NOW + 2)
    third = store.as_dict()
    assert [m["id"] for m in third["memories"]] == [two.id]
    assert [a["id"] for a in third["archived"]] == [one.id]
    store.clear_vectors()
    assert "vector" not in store.as_dict()["memories"][0]
    assert MemoryStore.from_dict(orjson.loads(orjson.dumps(third))).as_dict() == third


def test_same_tags_with_different_meaning_stay_apart() -> None:
    """With embeddings, the same tag set is not enough: 'Mia is ten' is not 'Mia's friend'."""
    store = MemoryStore()
    age = "Mia is ten years old"
    friend = "Mia's best friend is Lotte, two streets away"
    assert float(np.dot(hashed_embedding(age), hashed_embedding(friend))) < SAME_TAGS_SIMILARITY
    first = store.save(age, "context", ["person:mia"], vector=hashed_embedding(age), now=NOW)
    second = store.save(friend, "context", ["person:mia"], vector=hashed_embedding(friend), now=NOW)
    assert second.action is SaveAction.CREATED
    older = "Mia is ten years old now"
    assert float(np.dot(hashed_embedding(age), hashed_embedding(older))) >= SAME_TAGS_SIMILARITY
    third = store.save(older, "context", ["person:mia"], vector=hashed_embedding(older), now=NOW)
    assert third.action is SaveAction.SUPERSEDED
    assert third.archived is not None
    assert third.archived.id == first.memory.id
    # Without a vector, the same tag set needs shared words too: another fact stays.
    violin = "Mia plays the violin in the school orchestra"
    fourth = store.save(violin, "context", ["person:mia"], now=NOW + 1)
    assert fourth.action is SaveAction.CREATED
    cello = "Mia plays the cello in the school orchestra now"
    fifth = store.save(cello, "context", ["person:mia"], now=NOW + 2)
    assert fifth.action is SaveAction.SUPERSEDED
    assert fifth.archived is not None
    assert fifth.archived.id == fourth.memory.id
