"""Without embeddings, the same tag set supersedes only an update, not another fact.

The labelled home (benchmarks/data/household_memories.json) is the home a user has:
hundreds of memories, many sharing one tag set ("person:mia" on her age, her birthday,
her best friend).
"""

import json
from pathlib import Path
from typing import Any

import pytest

from custom_components.azure_openai_memory.lib.memories import (
    MemorySettings,
    MemoryStore,
    SaveAction,
)

DATA = Path(__file__).parents[3] / "benchmarks" / "data" / "household_memories.json"
NOW = 1_760_000_000.0
DAY = 86_400.0

# The labelled updates found without embeddings: those sharing several words of their
# own, and one body part's injury history (p001 is the knee example). Since names and
# shared verbs no longer count, p016, p019, p025, p033 and p034 are kept side by side.
FOUND_BY_WORDS = {"p001", "p002", "p013", "p014", "p017", "p020", "p026"}

# Different facts about one person, with the same tag: a name and a verb are shared.
DISTINCT_SHORT_PAIRS = [
    ("Anna is allergic to nuts", "Anna is allergic to cats", "person:anna"),
    ("Anna likes tea", "Anna likes jazz", "person:anna"),
    ("Anna takes her coffee black", "Anna takes her tea with milk", "person:anna"),
    ("Mia's favourite colour is blue", "Mia's favourite food is pasta", "person:mia"),
]


@pytest.fixture(scope="module")
def labelled() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def test_the_labelled_home_saved_without_embeddings_all_stays(
    labelled: dict[str, Any],
) -> None:
    memories = labelled["memories"]
    assert len(memories) == 233
    store = MemoryStore(MemorySettings(max_memories_per_type=1000))
    for n, memory in enumerate(memories):
        result = store.save(memory["content"], memory["type"], memory["tags"], now=NOW + n)
        assert result.action is SaveAction.CREATED, memory["id"]
    assert len(store) == 233
    assert store.archived() == []


def test_labelled_pairs_without_embeddings(labelled: dict[str, Any]) -> None:
    superseded = set()
    for pair in labelled["supersede_pairs"]:
        store = MemoryStore()
        old = store.save(pair["old"]["content"], pair["type"], pair["old"]["tags"], now=NOW)
        new = store.save(pair["new"]["content"], pair["type"], pair["new"]["tags"], now=NOW + DAY)
        if new.action is SaveAction.SUPERSEDED:
            assert new.archived is not None
            assert new.archived.id == old.memory.id
            superseded.add(pair["id"])
        else:
            assert new.action is SaveAction.CREATED
            assert len(store) == 2
    assert superseded == FOUND_BY_WORDS
    wrong = {p["id"] for p in labelled["supersede_pairs"] if not p["same_subject"]}
    assert not superseded & wrong


def test_coffee_and_bedroom_temperature_with_one_tag_both_stay() -> None:
    """README: "Anna takes her coffee black" and "Anna prefers 19 °C at night" are kept."""
    store = MemoryStore()
    coffee = store.save("Anna takes her coffee black", "preference", ["person:anna"], now=NOW)
    warm = store.save("Anna prefers 19 °C at night", "preference", ["person:anna"], now=NOW + DAY)
    assert warm.action is SaveAction.CREATED
    assert {m.content for m in store} == {coffee.memory.content, warm.memory.content}
    assert store.archived() == []


@pytest.mark.parametrize(("first", "second", "tag"), DISTINCT_SHORT_PAIRS)
def test_a_name_and_a_verb_do_not_make_one_fact(first: str, second: str, tag: str) -> None:
    store = MemoryStore()
    store.save(first, "preference", [tag], now=NOW)
    result = store.save(second, "preference", [tag], now=NOW + DAY)
    assert result.action is SaveAction.CREATED
    assert result.archived is None
    assert sorted(m.content for m in store) == sorted([first, second])
    assert store.archived() == []


def test_an_update_sharing_words_still_supersedes() -> None:
    store = MemoryStore()
    old = store.save(
        "Bruno gets 300 grams of dry food twice a day", "household", ["pet:bruno"], now=NOW
    )
    new = store.save(
        "Bruno now gets 250 grams of dry food twice a day",
        "household",
        ["pet:bruno"],
        now=NOW + DAY,
    )
    assert new.action is SaveAction.SUPERSEDED
    assert new.archived is not None
    assert new.archived.id == old.memory.id
    assert [m.content for m in store] == ["Bruno now gets 250 grams of dry food twice a day"]


def test_seed_knee_example_still_supersedes() -> None:
    store = MemoryStore()
    old = store.save("Occasional knee soreness", "injury_history", ["body:knee"], now=NOW)
    new = store.save(
        "Chronic knee pain after runs over 15km", "injury_history", ["body:knee"], now=NOW + DAY
    )
    assert new.action is SaveAction.SUPERSEDED
    assert new.archived is not None
    assert new.archived.id == old.memory.id
