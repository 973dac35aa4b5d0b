"""Memories files of version 1 kept the old per-type cap of 50 as if a user had chosen it;
files before version 3 knew no scopes: every memory in them is the household's."""

from custom_components.azure_openai_memory.lib.memories import (
    MEMORIES_VERSION,
    MemorySettings,
    MemoryStore,
    migrate_memories,
)


def test_the_old_default_cap_goes_and_the_new_default_applies() -> None:
    stored = {
        "memories": [],
        "archived": [],
        "settings": {"max_memories_per_type": 50, "archive_retention_days": 30},
    }
    migrated = migrate_memories(1, stored)
    assert migrated["settings"] == {"archive_retention_days": 30}
    assert MemoryStore.from_dict(migrated).settings.max_memories_per_type == 10_000
    assert MEMORIES_VERSION == 3


def test_a_cap_the_user_chose_stays() -> None:
    stored = {"memories": [], "archived": [], "settings": {"max_memories_per_type": 80}}
    assert migrate_memories(1, stored) == stored
    assert migrate_memories(2, {"settings": {"max_memories_per_type": 50}})["settings"] == {
        "max_memories_per_type": 50
    }
    assert MemorySettings().max_memories_per_type == 10_000


def _record(number: int, content: str, **extra: object) -> dict[str, object]:
    return {
        "id": f"mem_{number:016x}",
        "type": "preference",
        "content": content,
        "source": "manual",
        "source_reference": None,
        "created_at": 1_761_300_000.0 + number,
        "updated_at": 1_761_400_000.0 + number,
        "confidence": "high",
        "occurrences": number,
        "tags": ["person:anna"],
        "pinned": number == 2,
        **extra,
    }


def test_every_memory_of_a_file_before_scopes_becomes_the_household_s() -> None:
    records = [_record(n, f"Anna likes tea number {n}") for n in range(1, 6)]
    archived = [
        {
            "id": "mem_00000000000000aa",
            "original_content": "Anna likes coffee",
            "superseded_by": "mem_0000000000000001",
            "archived_at": 1_761_350_000.0,
            "reason": "Updated by newer observation about person:anna",
            "memory": _record(170, "Anna likes coffee"),
        }
    ]
    stored = {"memories": records, "archived": archived}
    migrated = migrate_memories(2, stored)
    store = MemoryStore.from_dict(migrated)
    assert store.skipped == 0
    assert [m.as_dict() for m in store] == [
        {**record, "scope": "household", "provenance": None} for record in records
    ]
    (old,) = store.archived()
    kept = {**_record(170, "Anna likes coffee"), "scope": "household", "provenance": None}
    assert old.as_dict() == {**archived[0], "memory": kept}
    # Everyone sees them, as before.
    found = store.search("tea", scopes=["household"], limit=10)
    assert len(found.memories) == 5
