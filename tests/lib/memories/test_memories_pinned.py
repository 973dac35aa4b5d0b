"""Pinned memories: never pushed out by a cap, offered first, kept in the stored form."""

import numpy as np

from custom_components.azure_openai_memory.lib.memories import (
    MemorySettings,
    MemoryStore,
    SaveAction,
)

NOW = 1_760_000_000.0


def test_a_pinned_memory_is_never_pushed_out_by_the_cap() -> None:
    store = MemoryStore(MemorySettings(max_memories_per_type=2))
    epipen = store.save(
        "A spare EpiPen is kept in the kitchen drawer next to the fridge",
        "household",
        ["topic:allergy"],
        confidence="low",
        pinned=True,
        now=NOW,
    )
    assert epipen.memory.pinned
    store.save("The wifi password is on the fridge", "household", [], now=NOW + 1)
    third = store.save("The spare key is under the blue pot", "household", [], now=NOW + 2)
    assert [a.original_content for a in third.evicted] == ["The wifi password is on the fridge"]
    assert store.get(epipen.memory.id) is not None
    # Lowering the cap does not push it out either, even when only pinned ones are left.
    peanut = store.save("No peanut butter in the house", "household", [], pinned=True, now=NOW + 3)
    assert [a.original_content for a in peanut.evicted] == ["The spare key is under the blue pot"]
    assert store.apply_settings(MemorySettings(max_memories_per_type=1), now=NOW + 4) == ()
    assert sorted(m.content for m in store) == [
        "A spare EpiPen is kept in the kitchen drawer next to the fridge",
        "No peanut butter in the house",
    ]
    # A new unpinned memory stays while it is the newest; the next one pushes it out.
    fourth = store.save("The bins go out on Tuesday", "household", [], now=NOW + 5)
    assert fourth.evicted == ()
    fifth = store.save("The boiler is serviced in May", "household", [], now=NOW + 6)
    assert [a.original_content for a in fifth.evicted] == ["The bins go out on Tuesday"]


def test_pinned_memories_are_offered_first_among_matches() -> None:
    store = MemoryStore()
    close = store.save("Anna prefers the bedroom at 19 degrees at night", "preference", [], now=NOW)
    pinned = store.save(
        "Anna is allergic to peanuts", "context", [], pinned=True, now=NOW - 86400 * 60
    )
    store.save("The garage door sticks in winter", "household", [], pinned=True, now=NOW)
    found = store.search("What temperature does Anna like in the bedroom at night?", now=NOW)
    assert [m.id for m, _ in found.memories] == [pinned.memory.id, close.memory.id]
    # The score is the relevance, unchanged: the pinned one comes first with a lower score.
    assert found.memories[0][1] < found.memories[1][1]
    # Even when a limit cuts the list.
    first = store.search("Anna bedroom night", limit=1, now=NOW)
    assert [m.id for m, _ in first.memories] == [pinned.memory.id]
    # Without a question: pinned first, then confidence and recency.
    plain = store.search(None, tags=(), now=NOW, limit=3)
    assert plain.memories[0][0].pinned
    assert plain.memories[1][0].pinned
    assert not plain.memories[2][0].pinned


def test_pinned_first_with_embeddings_too() -> None:
    store = MemoryStore()
    alike = store.save("Bedroom at 19 degrees", "preference", [], vector=[1.0, 0.1, 0.0], now=NOW)
    pinned = store.save(
        "EpiPen in the drawer", "household", [], vector=[0.3, 1.0, 0.0], pinned=True, now=NOW
    )
    found = store.search("bedroom temperature", query_vector=[1.0, 0.0, 0.0], now=NOW)
    assert found.ranker == "hybrid"
    assert [m.id for m, _ in found.memories] == [pinned.memory.id, alike.memory.id]


def test_pinning_is_stored_and_old_records_load_unpinned() -> None:
    store = MemoryStore()
    kept = store.save("The EpiPen is in the drawer", "household", [], pinned=True, now=NOW)
    plain = store.save("The bins go out on Tuesday", "routine", [], now=NOW)
    data = store.as_dict()
    by_id = {m["id"]: m for m in data["memories"]}
    assert by_id[kept.memory.id]["pinned"] is True
    assert by_id[plain.memory.id]["pinned"] is False
    loaded = MemoryStore.from_dict(data)
    assert loaded.get(kept.memory.id) == kept.memory
    # A record written before pinning existed has no such field.
    del by_id[plain.memory.id]["pinned"]
    del by_id[kept.memory.id]["pinned"]
    old = MemoryStore.from_dict(data)
    assert not any(m.pinned for m in old)


def test_saving_again_pins_or_unpins_and_an_update_stays_pinned() -> None:
    store = MemoryStore()
    first = store.save("Max takes 2.5 mg of melatonin", "routine", ["person:max"], now=NOW)
    again = store.save("Max takes 2.5 mg of melatonin", "routine", [], pinned=True, now=NOW + 1)
    assert (again.action, again.memory.pinned) == (SaveAction.REINFORCED, True)
    same = store.save("Max takes 2.5 mg of melatonin", "routine", [], now=NOW + 2)
    assert same.memory.pinned  # not said: unchanged
    assert store.search("melatonin", now=NOW).memories[0][0].pinned
    update = store.save(
        "Max takes 3 mg of melatonin", "routine", ["person:max"], vector=None, now=NOW + 3
    )
    assert update.action is SaveAction.SUPERSEDED
    assert update.archived is not None
    assert update.archived.id == first.memory.id
    assert update.memory.pinned
    unpinned = store.save("Max takes 3 mg of melatonin", "routine", [], pinned=False, now=NOW + 4)
    assert not unpinned.memory.pinned
    assert not store.search("melatonin", now=NOW).memories[0][0].pinned
    assert np.isfinite(store.search("melatonin", now=NOW).memories[0][1])
