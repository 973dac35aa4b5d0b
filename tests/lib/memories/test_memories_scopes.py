"""Whose memory: the household's or one person's. Deduplication and supersede stay inside a
scope, a search sees only the scopes it is given, an export reads back whole."""

import orjson
import pytest

from custom_components.azure_openai_memory.lib.memories import (
    EXPORT_FORMAT,
    Authority,
    MemoryInputError,
    MemoryStore,
    Origin,
    Provenance,
    Relation,
    SaveAction,
    Verdict,
    read_export,
)
from tests.azure_stub.embeddings import hashed_embedding

NOW = 1_760_000_000.0
ANNA = "person:person.anna"
BEN = "person:person.ben"
TAGS = ["topic:temperature", "room:bedroom"]


def test_the_same_words_in_another_scope_are_another_memory() -> None:
    store = MemoryStore()
    anna = store.save("I prefer 19 degrees at night", "preference", TAGS, scope=ANNA, now=NOW)
    ben = store.save("I prefer 19 degrees at night", "preference", TAGS, scope=BEN, now=NOW)
    house = store.save("I prefer 19 degrees at night", "preference", TAGS, now=NOW)
    assert [r.action for r in (anna, ben, house)] == [SaveAction.CREATED] * 3
    assert len({anna.memory.id, ben.memory.id, house.memory.id}) == 3
    again = store.save("I prefer 19 degrees at night!", "preference", TAGS, scope=BEN, now=NOW)
    assert (again.action, again.memory.id) == (SaveAction.REINFORCED, ben.memory.id)
    held = store.get(anna.memory.id)
    assert held is not None and held.occurrences == 1


def test_one_person_s_fact_never_supersedes_another_s() -> None:
    store = MemoryStore()
    vector = hashed_embedding("bedroom temperature at night")
    ben = store.save(
        "Ben prefers 21 degrees in the bedroom at night",
        "preference",
        TAGS,
        scope=BEN,
        vector=vector,
        now=NOW,
    )
    # The same tag set and the same embedding: within one scope this would supersede.
    assert (
        store.update_candidate(
            "Anna prefers 19 degrees in the bedroom at night",
            "preference",
            TAGS,
            vector=vector,
            scope=ANNA,
        )
        is None
    )
    anna = store.save(
        "Anna prefers 19 degrees in the bedroom at night",
        "preference",
        TAGS,
        scope=ANNA,
        vector=vector,
        now=NOW + 1,
    )
    assert (anna.action, anna.archived) == (SaveAction.CREATED, None)
    # A model's verdict naming another scope's memory decides nothing either.
    judged = store.save(
        "Anna prefers 18 degrees in the bedroom at night",
        "preference",
        TAGS,
        scope=ANNA,
        verdict=Verdict(ben.memory.id, Relation.REPLACES),
        now=NOW + 2,
    )
    # (The offline rule decides instead: Anna's own older preference is what it replaces.)
    assert judged.archived is not None and judged.archived.id == anna.memory.id
    assert store.get(ben.memory.id) is not None
    # Within Ben's scope the rule still supersedes.
    newer = store.save(
        "Ben prefers 22 degrees in the bedroom at night",
        "preference",
        TAGS,
        scope=BEN,
        vector=vector,
        now=NOW + 3,
    )
    assert newer.action is SaveAction.SUPERSEDED
    assert newer.archived is not None and newer.archived.id == ben.memory.id


def test_a_search_sees_only_its_scopes_and_tags_imply_none() -> None:
    store = MemoryStore()
    private = store.save("Anna takes 2.5 mg of melatonin", "context", ["person:anna"], scope=ANNA)
    # A tag about Anna in the household's scope is the household's to see.
    shared = store.save("Anna's birthday is on 3 May", "context", ["person:anna"])
    store.save("Ben takes vitamin D in winter", "context", ["person:ben"], scope=BEN)
    store.forget(
        store.save("Anna took melatonin before", "context", ["person:anna"], scope=ANNA).memory.id
    )

    def found(
        query: str | None,
        scopes: list[str] | None,
        *,
        tags: list[str] | None = None,
        include_archived: bool = False,
    ) -> list[str]:
        result = store.search(
            query, scopes=scopes, tags=tags, include_archived=include_archived, limit=10
        )
        return sorted(m.content for m, _ in result.memories)

    ben_sees = ["household", BEN]
    assert found("melatonin", ben_sees) == []
    assert found("Anna melatonin birthday", ben_sees) == ["Anna's birthday is on 3 May"]
    assert found(None, ben_sees) == ["Anna's birthday is on 3 May", "Ben takes vitamin D in winter"]
    assert found("melatonin", ben_sees, include_archived=True) == []
    assert found(None, ben_sees, tags=["person:anna"], include_archived=True) == [
        "Anna's birthday is on 3 May"
    ]
    assert found("melatonin", ["household", ANNA], include_archived=True) == [
        "Anna takes 2.5 mg of melatonin",
        "Anna took melatonin before",
    ]
    assert found("melatonin", None) == ["Anna takes 2.5 mg of melatonin"]
    assert private.memory.scope == ANNA and shared.memory.scope == "household"
    with pytest.raises(MemoryInputError) as caught:
        store.search("x", scopes=["anna"])
    assert caught.value.key == "memory_scope_invalid"


def test_forgetting_within_scopes_leaves_the_others() -> None:
    store = MemoryStore()
    anna = store.save("Anna's dentist is on Friday", "context", ["topic:dentist"], scope=ANNA)
    ben = store.save("Ben's dentist is on Monday", "context", ["topic:dentist"], scope=BEN)
    with pytest.raises(MemoryInputError) as caught:
        store.forget(anna.memory.id, scopes=[BEN], erase=True)
    assert caught.value.key == "memory_unknown"
    result = store.forget(tag="topic:dentist", scopes=[BEN], erase=True)
    assert result.erased == [ben.memory.id]
    assert store.get(anna.memory.id) is not None


def test_what_a_forget_took_says_whose_it_was() -> None:
    """Whose memories a forget archived or erased (the history records it as theirs)."""
    store = MemoryStore()
    anna = store.save("Anna's dentist is on Friday", "context", ["topic:dentist"], scope=ANNA)
    ben = store.save("Ben's dentist is on Monday", "context", ["topic:dentist"], scope=BEN)
    store.save("The bins go out on Tuesday", "routine", ["topic:bins"])
    assert store.forget(anna.memory.id).scopes == {ANNA}
    assert store.forget(anna.memory.id, erase=True).scopes == {ANNA}  # from the archive
    assert store.forget(tag="topic:bins").scopes == {"household"}
    store.save("Anna's dentist moved to Thursday", "context", ["topic:dentist"], scope=ANNA)
    store.forget(ben.memory.id)
    erased = store.forget(tag="topic:dentist", erase=True)
    assert (len(erased.erased), erased.scopes) == (2, {ANNA, BEN})
    assert store.forget(tag="topic:dentist", erase=True).scopes == frozenset()


def test_patterns_count_only_the_scopes_seen() -> None:
    store = MemoryStore()
    for n in range(3):
        store.save(f"Anna's knee hurt after run {n}", "injury_history", [f"body:knee{n}"])
        store.save(f"Anna's knee hurt on day {n}", "injury_history", ["body:knee"], scope=ANNA)
    assert [p.pattern_type for p in store.patterns()] == ["recurring_body"]
    assert store.patterns(scopes=["household", BEN]) == []


def test_an_export_reads_back_whole_and_an_import_replaces_nothing() -> None:
    store = MemoryStore()
    provenance = Provenance(
        Origin.CONVERSATION, "conv-1", "event-1", "person.anna", "satellite-1", Authority.INFERRED
    )
    kept = store.save(
        "Anna takes 2.5 mg of melatonin",
        "context",
        ["person:anna"],
        scope=ANNA,
        provenance=provenance,
        pinned=True,
        confidence="high",
        now=NOW,
    )
    store.save("Anna takes 2.5 mg of melatonin", "context", scope=ANNA, now=NOW + 5)
    store.save("The bins go out on Tuesday", "routine", ["topic:bins"], now=NOW)
    gone = store.save("The recycling goes out every other Monday", "routine", now=NOW + 9)
    store.forget(gone.memory.id, now=NOW + 10)
    exported = orjson.loads(orjson.dumps(store.export()))
    assert exported["format"] == EXPORT_FORMAT and exported["version"] == 1
    assert [m["id"] for m in store.export([ANNA])["memories"]] == [kept.memory.id]

    again = MemoryStore()
    result = again.import_records(read_export(exported))
    assert sorted(result.added) == sorted(
        [m["id"] for m in exported["memories"]] + [a["id"] for a in exported["archived"]]
    )
    assert again.export() == store.export()
    restored = again.get(kept.memory.id)
    assert restored is not None and restored.provenance == provenance

    # Importing once more changes nothing; a changed record is a conflict, kept as it was.
    changed = {
        **exported,
        "memories": [
            {**m, "content": "Anna takes 3 mg of melatonin"} if m["id"] == kept.memory.id else m
            for m in exported["memories"]
        ],
    }
    second = again.import_records(read_export(changed))
    assert second.added == [] and second.conflicts == [kept.memory.id]
    assert again.export() == store.export()
    # The same words under another id are a duplicate of the memory held.
    copy = {**exported, "memories": [{**exported["memories"][0], "id": "mem_ffffffffffffffff"}]}
    copy["archived"] = []
    third = again.import_records(read_export(copy), dry_run=True)
    assert third.duplicates == [
        {"id": "mem_ffffffffffffffff", "existing": exported["memories"][0]["id"]}
    ]
    for bad in ({"memories": []}, {**exported, "version": 99}, {**exported, "memories": [{}]}):
        with pytest.raises(MemoryInputError) as caught:
            read_export(bad)
        assert caught.value.key == "memory_import_invalid"
