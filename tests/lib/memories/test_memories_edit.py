"""A person's own changes: edit (supersedes as edited), pin, restore; and listing pages."""

import pytest

from custom_components.azure_openai_memory.lib.memories import (
    EDITED,
    MemoryConfidence,
    MemoryFilter,
    MemoryInputError,
    MemorySettings,
    MemoryStore,
    MemoryType,
    SaveAction,
    active_page,
    archived_page,
)

NOW = 1_760_000_000.0
# Ten memories no two of which share a word.
GARDEN = [
    "Roses bloom in June",
    "The lawnmower needs petrol",
    "Tomatoes grow against a south wall",
    "Compost goes left of shed",
    "Watering happens before breakfast",
    "Our apple tree was planted 2019",
    "Birds eat cherries quickly",
    "The hedge is trimmed each autumn",
    "Snails love lettuce",
    "A hose hangs behind garage",
]


def test_an_edit_supersedes_and_keeps_type_pin_and_count() -> None:
    store = MemoryStore()
    old = store.save("Anna drinks black tea", "preference", ["person:anna"], pinned=True, now=NOW)
    store.save("Anna drinks black tea", "preference", now=NOW + 1)  # seen twice
    result = store.edit(old.memory.id, "Anna drinks green tea", ["person:anna"], now=NOW + 2)
    assert result is not None
    assert result.action is SaveAction.SUPERSEDED
    new = result.memory
    assert (new.type, new.pinned, new.occurrences) == (MemoryType.PREFERENCE, True, 2)
    assert new.confidence is MemoryConfidence.HIGH
    assert result.archived is not None
    assert (result.archived.id, result.archived.reason) == (old.memory.id, EDITED)
    assert result.archived.superseded_by == new.id
    assert [m.content for m in store] == ["Anna drinks green tea"]
    # Its words find it; the old ones no longer do (except in the archive).
    assert [m.id for m, _ in store.search("green tea", now=NOW + 3).memories] == [new.id]
    assert store.search("black", now=NOW + 3).memories == []


def test_an_edit_of_the_tags_alone_and_an_edit_that_changes_nothing() -> None:
    store = MemoryStore()
    old = store.save("The bins go out on Tuesday", "routine", ["topic:bins"], now=NOW)
    assert store.edit(old.memory.id, "The bins go out on Tuesday", now=NOW + 1) is None
    assert store.get(old.memory.id) is not None
    retagged = store.edit(old.memory.id, "The bins go out on Tuesday", ["Topic:Waste"], now=NOW)
    assert retagged is not None
    assert retagged.memory.tags == ("topic:waste",)
    assert store.get(old.memory.id) is None


def test_bad_edits_change_nothing() -> None:
    store = MemoryStore()
    old = store.save("Anna drinks black tea", "preference", now=NOW)
    with pytest.raises(MemoryInputError) as caught:
        store.edit(old.memory.id, " ")
    assert caught.value.key == "memory_content_empty"
    with pytest.raises(MemoryInputError) as caught:
        store.edit(old.memory.id, "Fine", ["not a tag"])
    assert caught.value.key == "memory_tag_invalid"
    with pytest.raises(MemoryInputError) as caught:
        store.edit("mem_unknown", "Fine")
    assert caught.value.key == "memory_unknown"
    assert [m.id for m in store] == [old.memory.id]
    assert store.archived() == []


def test_pinning_is_no_sighting() -> None:
    store = MemoryStore()
    saved = store.save("The spare key is under the blue pot", "household", now=NOW)
    memory = store.set_pinned(saved.memory.id, True)
    assert (memory.pinned, memory.occurrences, memory.updated_at) == (True, 1, NOW)
    assert store.as_dict()["memories"][0]["pinned"] is True  # the stored form follows
    assert store.set_pinned(saved.memory.id, False).pinned is False
    with pytest.raises(MemoryInputError):
        store.set_pinned("mem_unknown", True)


def test_restore_takes_a_memory_out_of_the_archive_under_its_cap() -> None:
    store = MemoryStore(MemorySettings(max_memories_per_type=1))
    first = store.save("The boiler is serviced in May", "household", now=NOW)
    store.forget(first.memory.id, now=NOW + 1)
    store.save("The bins go out on Tuesday", "household", now=NOW + 2)
    restored = store.restore(first.memory.id, now=NOW + 3)
    assert restored.memory.id == first.memory.id
    assert [a.original_content for a in restored.evicted] == ["The bins go out on Tuesday"]
    assert [m.content for m in store] == ["The boiler is serviced in May"]
    assert [a.id for a in store.archived()] == [restored.evicted[0].id]
    with pytest.raises(MemoryInputError) as caught:
        store.restore(first.memory.id)
    assert caught.value.key == "memory_unknown"
    # The same words already active: refused, nothing moves.
    store.save("The bins go out on Tuesday", "household", now=NOW + 4)
    with pytest.raises(MemoryInputError) as caught:
        store.restore(restored.evicted[0].id)
    assert caught.value.key == "memory_restore_duplicate"


def test_pages_filter_and_order() -> None:
    store = MemoryStore()
    saved = [
        store.save(text, "household", [f"plant:p{n % 3}"], now=NOW + n)
        for n, text in enumerate(GARDEN)
    ]
    store.set_pinned(saved[2].memory.id, True)
    page, total = active_page(store, MemoryFilter(), 0, 4)
    assert total == 10
    assert [m.content for m in page] == [GARDEN[n] for n in (2, 9, 8, 7)]
    page, total = active_page(store, MemoryFilter(tags=("plant:p1",)), 1, 2)
    assert (total, [m.content for m in page]) == (3, [GARDEN[4], GARDEN[1]])
    high = MemoryFilter(min_confidence=MemoryConfidence.HIGH)
    assert active_page(store, high, 0, 10) == ([], 0)
    words = MemoryFilter(memory_type=MemoryType.HOUSEHOLD, words="HEDGE is")
    assert [m.content for m in active_page(store, words, 0, 10)[0]] == [GARDEN[7]]
    for n in (3, 5):
        store.forget(saved[n].memory.id, now=NOW + 100 + n)
    archived, total = archived_page(store.archived(), MemoryFilter(), 0, 10)
    assert (total, [a.id for a in archived]) == (2, [saved[5].memory.id, saved[3].memory.id])
