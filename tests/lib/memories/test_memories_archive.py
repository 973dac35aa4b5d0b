"""The archive searched again and again: its keyword index follows every change."""

from custom_components.azure_openai_memory.lib.memories import MemorySettings, MemoryStore

NOW = 1_760_000_000.0


def contents(store: MemoryStore, query: str, **filters: object) -> list[str]:
    found = store.search(query, include_archived=True, now=NOW, **filters)  # type: ignore[arg-type]
    return sorted(m.content for m, _ in found.memories)


def test_archived_search_follows_archiving_erasing_and_cleanup() -> None:
    store = MemoryStore(MemorySettings(max_memories_per_type=1000))
    bins = store.save("The bins go out on Tuesday", "routine", ["chore:bins"], now=NOW)
    store.forget(bins.memory.id, now=NOW)
    assert contents(store, "bins") == ["The bins go out on Tuesday"]
    assert contents(store, "bins") == ["The bins go out on Tuesday"]  # from the kept index

    glass = store.save("Glass bins are emptied monthly", "routine", ["chore:glass"], now=NOW)
    assert contents(store, "bins") == [
        "Glass bins are emptied monthly",
        "The bins go out on Tuesday",
    ]
    store.forget(glass.memory.id, now=NOW)  # archived: found once, not twice
    assert contents(store, "bins") == [
        "Glass bins are emptied monthly",
        "The bins go out on Tuesday",
    ]
    assert contents(store, "bins", tags=["chore:glass"]) == ["Glass bins are emptied monthly"]
    assert contents(store, "bins") == [
        "Glass bins are emptied monthly",
        "The bins go out on Tuesday",
    ]
    store.forget(bins.memory.id, erase=True)
    assert contents(store, "bins") == ["Glass bins are emptied monthly"]
    assert store.cleanup_archived(0, now=NOW + 1) == [glass.memory.id]
    assert contents(store, "bins") == []

    knee = store.save("Occasional knee soreness", "injury_history", ["body:knee"], now=NOW)
    assert contents(store, "knee") == ["Occasional knee soreness"]
    store.save("Chronic knee pain after runs", "injury_history", ["body:knee"], now=NOW + 1)
    assert store.get(knee.memory.id) is None  # superseded: archived
    assert contents(store, "knee") == ["Chronic knee pain after runs", "Occasional knee soreness"]
