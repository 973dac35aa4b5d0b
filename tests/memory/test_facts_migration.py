"""Memories files of version 1 kept the old per-type cap of 50 as if a user had chosen it."""

from custom_components.azure_openai_memory.memory.facts import (
    FACTS_VERSION,
    FactSettings,
    FactStore,
    migrate_facts,
)


def test_the_old_default_cap_goes_and_the_new_default_applies() -> None:
    stored = {
        "memories": [],
        "archived": [],
        "settings": {"max_memories_per_type": 50, "archive_retention_days": 30},
    }
    migrated = migrate_facts(1, stored)
    assert migrated["settings"] == {"archive_retention_days": 30}
    assert FactStore.from_dict(migrated).settings.max_memories_per_type == 10_000
    assert FACTS_VERSION == 2


def test_a_cap_the_user_chose_stays() -> None:
    stored = {"memories": [], "archived": [], "settings": {"max_memories_per_type": 80}}
    assert migrate_facts(1, stored) == stored
    assert migrate_facts(2, {"settings": {"max_memories_per_type": 50}}) == {
        "settings": {"max_memories_per_type": 50}
    }
    assert FactSettings().max_memories_per_type == 10_000
