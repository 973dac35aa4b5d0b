"""A changed number is a new fact, never a repeat: numbers, times, signs and units count.

The exact-repeat check compares normalised content. Were punctuation simply dropped,
"2.5 mg" would read "25 mg" and the new dose would only reinforce the old one.
"""

import pytest

from custom_components.azure_openai_memory.lib.memories import (
    MemoryStore,
    SaveAction,
    normalize_for_comparison,
)

NOW = 1_760_000_000.0


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Max takes 2.5 mg of melatonin at bedtime", "Max takes 25 mg of melatonin at bedtime"),
        ("Max takes 2.5 mg of melatonin at bedtime", "Max takes 2,5 mg of melatonin at bedtime"),
        ("The alarm is set for 7:30 on weekdays", "The alarm is set for 730 on weekdays"),
        ("Keep the freezer at -18 degrees", "Keep the freezer at 18 degrees"),
        ("The freezer is set to \u221218 °C", "The freezer is set to 18 °C"),
        ("The thermostat offset is +2", "The thermostat offset is 2"),
        ("The battery keeps 20 % in reserve", "The battery keeps 20 € in reserve"),
        ("The bedroom should be 19 °C", "The bedroom should be 19 C"),
        ("The gate code is 12-34", "The gate code is 1234"),
        ("Pay the cleaner $50", "Pay the cleaner 50"),
    ],
)
def test_a_changed_number_or_unit_is_not_a_repeat(old: str, new: str) -> None:
    assert normalize_for_comparison(old) != normalize_for_comparison(new)
    store = MemoryStore()
    first = store.save(old, "routine", [], now=NOW)
    second = store.save(new, "routine", [], now=NOW + 1)
    assert second.action is SaveAction.CREATED
    assert second.memory.id != first.memory.id
    assert sorted(m.content for m in store) == sorted([old, new])
    assert first.memory.occurrences == 1


def test_a_changed_dose_of_the_same_subject_is_an_update() -> None:
    """Same tags, same words but the number: the new dose replaces the old one."""
    store = MemoryStore()
    tags = ["person:max", "topic:medication"]
    old = store.save("Max takes 2.5 mg of melatonin at bedtime", "routine", tags, now=NOW)
    new = store.save("Max takes 25 mg of melatonin at bedtime", "routine", tags, now=NOW + 1)
    assert new.action is SaveAction.SUPERSEDED
    assert new.archived is not None
    assert new.archived.id == old.memory.id
    assert new.archived.original_content == "Max takes 2.5 mg of melatonin at bedtime"
    assert [m.content for m in store] == ["Max takes 25 mg of melatonin at bedtime"]


def test_the_same_number_said_again_is_still_a_repeat() -> None:
    """Case, spacing and punctuation around words still do not make a new fact."""
    store = MemoryStore()
    first = store.save("Max takes 2.5 mg of melatonin at bedtime", "routine", [], now=NOW)
    again = store.save("  max takes 2.5 MG of melatonin, at bedtime!  ", "routine", [], now=NOW + 1)
    assert again.action is SaveAction.REINFORCED
    assert again.memory.id == first.memory.id
    assert again.memory.occurrences == 2
    assert normalize_for_comparison("Wake at 7:30.") == normalize_for_comparison("wake at 7:30")
    assert normalize_for_comparison("It is -5 outside") == "it is -5 outside"
    assert normalize_for_comparison("19 °C (2.5 %)") == "19 °c 2.5 %"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("👍", "🚫🐱"),
        ("🐱", "🐶"),
        ("Max likes 🐱", "Max likes 🐶"),
        ("?!", "!!"),
        ("...", "---"),
    ],
)
def test_content_of_symbols_only_does_not_collapse(old: str, new: str) -> None:
    store = MemoryStore()
    first = store.save(old, "context", [], now=NOW)
    second = store.save(new, "context", [], now=NOW + 1)
    assert second.action is SaveAction.CREATED
    assert {m.content for m in store} == {old, new}
    assert first.memory.occurrences == 1
    # The same symbols again are a repeat.
    third = store.save(f" {new} ", "context", [], now=NOW + 2)
    assert third.action is SaveAction.REINFORCED
    assert third.memory.id == second.memory.id


def test_loaded_memories_are_compared_the_same_way() -> None:
    """The index of contents is rebuilt at start-up with the same rule."""
    store = MemoryStore()
    store.save("Max takes 2.5 mg of melatonin at bedtime", "routine", [], now=NOW)
    store.save("👍", "context", [], now=NOW)
    loaded = MemoryStore.from_dict(store.as_dict())
    assert (
        loaded.save("Max takes 25 mg of melatonin at bedtime", "routine", [], now=NOW).action
        is SaveAction.CREATED
    )
    assert loaded.save("🚫🐱", "context", [], now=NOW).action is SaveAction.CREATED
    assert loaded.save("👍", "context", [], now=NOW).action is SaveAction.REINFORCED
