"""The per-type cap: roomy by default, said out loud when reached, and pinned memories stay."""

from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.setup import async_setup_component

from custom_components.azure_openai_memory.const import (
    DOMAIN,
    RECOMMENDED_MAX_MEMORIES_PER_TYPE,
)
from custom_components.azure_openai_memory.data import memories_of
from custom_components.azure_openai_memory.lib.memories import MemorySettings, MemoryStore
from custom_components.azure_openai_memory.memories.store import STORAGE_KEY, Memories

from ..conftest import family
from ..lib.memories.test_memories import household_memories

call = family("memory")


def cap_issues(hass: HomeAssistant) -> dict[str, ir.IssueEntry]:
    return {
        issue_id: issue
        for (domain, issue_id), issue in ir.async_get(hass).issues.items()
        if domain == DOMAIN and issue.translation_key == "memories_over_cap"
    }


async def test_a_household_keeps_hundreds_of_memories_of_one_type(
    hass: HomeAssistant, services: None
) -> None:
    """The cap of 50 per type archived routines a home still had; the default holds 10,000."""
    assert RECOMMENDED_MAX_MEMORIES_PER_TYPE == 10_000
    assert memories_of(hass).settings.max_memories_per_type == 10_000
    facts = household_memories()[:120]
    for text, tags in facts:
        saved = await call(hass, "save", content=text, type="routine", tags=tags)
        assert saved["evicted"] == [], text
    assert len(memories_of(hass).store) == len(facts)
    assert cap_issues(hass) == {}


async def test_a_cap_the_user_set_is_kept(
    hass: HomeAssistant, hass_storage: dict[str, Any]
) -> None:
    """A stored setting is the user's choice: the new default does not overwrite it. Only
    the old default (50), which every saved options form stored, gives way to the new one."""
    old = MemoryStore(MemorySettings(max_memories_per_type=80))
    old.save("The bins go out on Tuesday night", "routine", ["chore:bins"])
    hass_storage[STORAGE_KEY] = {
        "version": 1,
        "minor_version": 1,
        "key": STORAGE_KEY,
        "data": {**old.as_dict(), "settings": {"max_memories_per_type": 80}},
    }
    assert await async_setup_component(hass, DOMAIN, {})
    assert memories_of(hass).settings.max_memories_per_type == 80
    assert len(memories_of(hass).store) == 1


async def test_a_memory_pushed_out_by_the_cap_raises_a_repairs_issue_naming_the_type(
    hass: HomeAssistant, services: None
) -> None:
    memories_of(hass).async_update_settings(MemorySettings(max_memories_per_type=2))
    await call(hass, "save", content="The bins go out on Tuesday night", type="routine")
    await call(hass, "save", content="The dog is walked at seven", type="routine")
    await call(hass, "save", content="The guest room is Anna's", type="household")
    assert cap_issues(hass) == {}
    third = await call(hass, "save", content="Mia practises piano at five", type="routine")
    assert [e["original_content"] for e in third["evicted"]] == ["The bins go out on Tuesday night"]
    (issue_id, issue) = next(iter(cap_issues(hass).items()))
    assert list(cap_issues(hass)) == ["memories_over_cap_routine"]
    assert issue_id == "memories_over_cap_routine"
    assert issue.severity is ir.IssueSeverity.WARNING
    assert issue.translation_placeholders == {"type": "routine", "cap": "2", "count": "1"}
    await call(hass, "save", content="Leo has judo on Mondays", type="routine")
    issue = cap_issues(hass)["memories_over_cap_routine"]
    assert issue.translation_placeholders is not None
    assert issue.translation_placeholders["count"] == "2"

    # Lowering the cap pushes memories of another type out: that type is named too.
    memories_of(hass).async_update_settings(MemorySettings(max_memories_per_type=1))
    assert sorted(cap_issues(hass)) == ["memories_over_cap_routine"]
    await call(hass, "save", content="The spare key is under the pot", type="household")
    assert sorted(cap_issues(hass)) == [
        "memories_over_cap_household",
        "memories_over_cap_routine",
    ]
    # Raising the cap is the answer: the issues go.
    memories_of(hass).async_update_settings(MemorySettings(max_memories_per_type=100))
    assert cap_issues(hass) == {}


async def test_lowering_the_cap_names_every_type_it_pushed_out(
    hass: HomeAssistant, services: None
) -> None:
    for text in ("Bins on Tuesday", "Dog walk at seven"):
        await call(hass, "save", content=text, type="routine")
    await call(hass, "save", content="Anna is a pharmacist", type="context")
    memories_of(hass).async_update_settings(MemorySettings(max_memories_per_type=1))
    assert list(cap_issues(hass)) == ["memories_over_cap_routine"]


# -- pinning ----------------------------------------------------------------------------------


async def test_a_pinned_memory_stays_whatever_the_cap_and_comes_first(
    hass: HomeAssistant, services: None
) -> None:
    memories_of(hass).async_update_settings(MemorySettings(max_memories_per_type=2))
    epipen = await call(
        hass,
        "save",
        content="A spare EpiPen is kept in the kitchen drawer next to the fridge",
        type="household",
        confidence="low",
        pinned=True,
    )
    assert epipen["memory"]["pinned"] is True
    await call(hass, "save", content="The fridge filter is changed in May", type="household")
    third = await call(hass, "save", content="The fridge magnets are Leo's", type="household")
    assert [e["original_content"] for e in third["evicted"]] == [
        "The fridge filter is changed in May"
    ]
    found = await call(hass, "search", query="What is kept in the fridge?")
    assert [m["content"] for m in found["memories"]] == [
        "A spare EpiPen is kept in the kitchen drawer next to the fridge",
        "The fridge magnets are Leo's",
    ]
    assert [m["pinned"] for m in found["memories"]] == [True, False]
    unpinned = await call(
        hass,
        "save",
        content="A spare EpiPen is kept in the kitchen drawer next to the fridge",
        type="household",
        pinned=False,
    )
    assert (unpinned["action"], unpinned["memory"]["pinned"]) == ("reinforced", False)


async def test_pinning_survives_a_restart(
    hass: HomeAssistant, hass_storage: dict[str, Any], services: None
) -> None:
    saved = await call(
        hass, "save", content="No peanut butter in the house", type="household", pinned=True
    )
    await memories_of(hass).file.async_flush()
    (stored,) = hass_storage[STORAGE_KEY]["data"]["memories"]
    assert stored["pinned"] is True
    fresh = Memories(hass)
    await fresh.async_load()
    memory = fresh.store.get(saved["memory"]["id"])
    assert memory is not None
    assert memory.pinned


async def test_the_old_default_cap_gives_way_to_the_new_one(
    hass: HomeAssistant, hass_storage: dict[str, Any]
) -> None:
    """A version 1 file that stored the old default of 50 gets the new default, its memory
    kept."""
    old = MemoryStore(MemorySettings(max_memories_per_type=50))
    old.save("The bins go out on Tuesday night", "routine", ["chore:bins"])
    hass_storage[STORAGE_KEY] = {
        "version": 1,
        "minor_version": 1,
        "key": STORAGE_KEY,
        "data": {**old.as_dict(), "settings": {"max_memories_per_type": 50}},
    }
    assert await async_setup_component(hass, DOMAIN, {})
    assert memories_of(hass).settings.max_memories_per_type == 10_000
    assert len(memories_of(hass).store) == 1
