"""Saying a fact again with other tags: the memory carries both, so every tag finds it."""

import numpy as np
import pytest

from custom_components.azure_openai_memory.lib.memories import (
    MAX_TAGS,
    MemoryInputError,
    MemoryStore,
    SaveAction,
)

NOW = 1_760_000_000.0


def test_a_reinforced_save_adds_its_tags_and_erase_by_tag_finds_it() -> None:
    store = MemoryStore()
    first = store.save(
        "Anna's PIN is 4711", "context", ["person:anna"], vector=[1.0, 0.0, 0.0], now=NOW
    )
    again = store.save("anna's pin is 4711!", "context", ["topic:secrets"], now=NOW + 1)
    assert again.action is SaveAction.REINFORCED
    assert again.memory.id == first.memory.id
    assert again.memory.tags == ("person:anna", "topic:secrets")
    assert again.memory.occurrences == 2
    vector = store.vector(first.memory.id)
    assert vector is not None
    assert np.allclose(vector, [1.0, 0.0, 0.0])
    assert [m.id for m, _ in store.search(None, tags=["topic:secrets"]).memories] == [
        first.memory.id
    ]
    assert [m.id for m, _ in store.search("4711", now=NOW).memories] == [first.memory.id]
    # Stored with both tags.
    assert MemoryStore.from_dict(store.as_dict()).get(first.memory.id) == again.memory

    erased = store.forget(tag="topic:secrets", erase=True)
    assert erased.erased == [first.memory.id]
    assert erased.erased_contents == ["Anna's PIN is 4711"]
    assert len(store) == 0


def test_reinforcing_with_the_same_or_too_many_tags() -> None:
    store = MemoryStore()
    store.save("Dinner is at seven", "routine", ["a", "b"], now=NOW)
    same = store.save("Dinner is at seven", "routine", ["b"], now=NOW + 1)
    assert same.memory.tags == ("a", "b")
    many = store.save("Dinner is at seven", "routine", [f"t{i}" for i in range(MAX_TAGS)])
    assert len(many.memory.tags) == MAX_TAGS
    assert many.memory.tags[:3] == ("a", "b", "t0")


@pytest.mark.parametrize("content", [42, None, ["a"], {"text": "x"}])
def test_content_that_is_not_text_has_its_own_error(content: object) -> None:
    store = MemoryStore()
    with pytest.raises(MemoryInputError) as caught:
        store.save(content, "household")  # type: ignore[arg-type]
    assert caught.value.key == "memory_content_not_text"
    assert caught.value.placeholders == {"kind": type(content).__name__}
    assert len(store) == 0
