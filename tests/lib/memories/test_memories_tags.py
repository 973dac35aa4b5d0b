"""Tags name people, rooms and things as the household writes them: any script, apostrophes."""

import pytest

from custom_components.azure_openai_memory.lib.memories import (
    MemoryInputError,
    MemoryStore,
    validate_tags,
)

NOW = 1_760_000_000.0


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("person:İlkay", "person:i\u0307lkay"),
        ("person:O'Brien", "person:o'brien"),
        ("person:O\u2019Brien", "person:o'brien"),
        ("person:Zoë", "person:zoë"),
        ("person:Zoe\u0308", "person:zoë"),  # decomposed: the same name
        ("person:Jean-Luc", "person:jean-luc"),
        ("room:Küche", "room:küche"),
        ("person:张伟", "person:张伟"),
        ("person:Αλέξης", "person:αλέξησ"),  # case folded: a final sigma is a sigma
        ("place:São_Paulo", "place:são_paulo"),
        ("Straße", "strasse"),
        ("version:2.5", "version:2.5"),
    ],
)
def test_tags_in_any_script_are_accepted_and_folded(given: str, stored: str) -> None:
    assert validate_tags([given]) == (stored,)


@pytest.mark.parametrize(
    "tag",
    [
        "two words",
        "person:anna smith",
        "person:anna\tsmith",
        "person:an\nna",
        "person:\u200banna",
        "person:an\x00na",
        "a:b:c",
        ":anna",
        "person:",
        "person:'",
        "person:<b>",
        "person:anna;drop",
        "",
    ],
)
def test_tags_stay_safe(tag: str) -> None:
    with pytest.raises(MemoryInputError) as raised:
        validate_tags([tag])
    assert raised.value.key == "memory_tag_invalid"


def test_a_tag_in_another_script_finds_and_forgets_its_memory() -> None:
    store = MemoryStore()
    ilkay = store.save("İlkay drinks çay at 16:00", "preference", ["person:İlkay"], now=NOW)
    brien = store.save("Mr O'Brien walks the dog", "routine", ["person:o\u2019brien"], now=NOW)
    found = store.search(None, tags=["PERSON:İLKAY"])
    assert [m.id for m, _ in found.memories] == [ilkay.memory.id]
    found = store.search(None, tags=["person:O'Brien"])
    assert [m.id for m, _ in found.memories] == [brien.memory.id]
    loaded = MemoryStore.from_dict(store.as_dict())
    forgot = loaded.forget(tag="person:İlkay", now=NOW + 1)
    assert [a.id for a in forgot.archived] == [ilkay.memory.id]


def test_tags_stored_lowercased_before_are_found_by_their_folded_form() -> None:
    """A tag stored lowercased by an earlier version ("straße") is folded when read."""
    store = MemoryStore()
    saved = store.save("The flat is on Hauptstraße", "household", ["place:x"], now=NOW)
    data = store.as_dict()
    data["memories"][0]["tags"] = ["place:hauptstraße"]
    loaded = MemoryStore.from_dict(data)
    found = loaded.search(None, tags=["place:Hauptstraße"])
    assert [m.id for m, _ in found.memories] == [saved.memory.id]
