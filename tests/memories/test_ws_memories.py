"""The Memory panel's memory commands: pages, filters, search, a person's edits, permissions.

Everything goes through a real WebSocket connection of an administrator and of a user
who is not one; results are checked through the memory services, as a script sees them.
"""

from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, MockUser
from pytest_homeassistant_custom_component.typing import (
    MockHAClientWebSocket,
    WebSocketGenerator,
)

from custom_components.azure_openai_memory.const import CONF_EMBEDDINGS_DEPLOYMENT, DOMAIN
from custom_components.azure_openai_memory.data import memories_of
from custom_components.azure_openai_memory.lib.memories import MemorySettings

from ..azure_stub import AzureStub
from ..conftest import call
from ..panel_commands import answer, invalid, not_allowed, refused_as, translated

TEA = "Anna drinks green tea in the morning"
COFFEE = "Ben takes his coffee black"
BINS = "The bins go out on Tuesday evening"


@pytest.fixture
async def admin(hass: HomeAssistant, hass_ws_client: WebSocketGenerator) -> MockHAClientWebSocket:
    """The integration without an entry, and an administrator's connection."""
    assert await async_setup_component(hass, DOMAIN, {})
    return await hass_ws_client(hass)


@pytest.fixture
async def user(
    hass: HomeAssistant,
    admin: MockHAClientWebSocket,
    hass_ws_client: WebSocketGenerator,
    hass_read_only_access_token: str,
) -> MockHAClientWebSocket:
    """A connection of a user who is not an administrator."""
    return await hass_ws_client(hass, hass_read_only_access_token)


async def save(hass: HomeAssistant, content: str, kind: str = "preference", **data: Any) -> str:
    saved = await call(hass, "memory_save", {"content": content, "type": kind, **data})
    return str(saved["memory"]["id"])


async def searched(hass: HomeAssistant, **data: Any) -> dict[str, str]:
    """What memory_search (with the archive) finds: id -> content."""
    found = await call(hass, "memory_search", {"limit": 50, "include_archived": True, **data})
    return {m["id"]: m["content"] for m in found["memories"]}


async def test_a_list_is_paged_pinned_first_then_latest(
    hass: HomeAssistant, admin: MockHAClientWebSocket
) -> None:
    ids = [await save(hass, f"Fact number {n} about the house", "household") for n in range(130)]
    pinned = await save(hass, "The spare key is under the blue pot", "household", pinned=True)
    first = await answer(admin, "memories/list", limit=100)
    assert first["total"] == 131
    assert len(first["memories"]) == 100
    assert first["memories"][0]["id"] == pinned
    rest = first["memories"][1:]
    times = [m["updated_at"] for m in rest]
    assert times == sorted(times, reverse=True)
    second = await answer(admin, "memories/list", offset=100, limit=100)
    assert second["total"] == 131
    assert len(second["memories"]) == 31
    shown = [m["id"] for m in first["memories"] + second["memories"]]
    assert sorted(shown) == sorted([*ids, pinned])
    beyond = await answer(admin, "memories/list", offset=500)
    assert (beyond["memories"], beyond["total"]) == ([], 131)
    row = first["memories"][0]
    assert row["pinned"] is True
    assert row["archived"] is False
    assert row["actions"] == ["edit", "pin", "forget", "erase"]
    assert {"content", "tags", "confidence", "occurrences", "updated_at", "source"} <= set(row)


async def test_filters_by_type_tag_confidence_and_words(
    hass: HomeAssistant, admin: MockHAClientWebSocket
) -> None:
    tea = await save(hass, TEA, tags=["person:anna"], confidence="high")
    coffee = await save(hass, COFFEE, tags=["person:ben"])
    bins = await save(hass, BINS, "routine", tags=["topic:bins"], confidence="low")

    async def listed(**fields: Any) -> list[str]:
        result = await answer(admin, "memories/list", **fields)
        assert result["total"] == len(result["memories"])
        return sorted(m["id"] for m in result["memories"])

    assert await listed(memory_type="preference") == sorted([tea, coffee])
    assert await listed(tags=["person:ben"]) == [coffee]
    assert await listed(tags="Person:Anna") == [tea]  # folded as the services fold tags
    assert await listed(min_confidence="medium") == sorted([tea, coffee])
    assert await listed(min_confidence="high") == [tea]
    assert await listed(min_confidence="low") == sorted([tea, coffee, bins])
    # Words: memory_search's ranking (by words here: no embeddings deployment).
    found = await answer(admin, "memories/list", query="what does Anna drink in the morning")
    assert [m["id"] for m in found["memories"]] == [tea]
    assert found["ranker"] == "keyword"
    assert found["memories"][0]["score"] > 0
    assert await listed(query="coffee black", memory_type="routine") == []
    assert await translated(admin, "memory_tag_invalid", "memories/list", tags=["no spaces"]) == {
        "tag": "no spaces"
    }


async def test_schema_errors_name_the_field(
    hass: HomeAssistant, admin: MockHAClientWebSocket
) -> None:
    memory_id = await save(hass, TEA)
    assert "limit" in await invalid(admin, "memories/list", limit=0)
    assert "limit" in await invalid(admin, "memories/list", limit=101)
    assert "offset" in await invalid(admin, "memories/list", offset=-1)
    assert "limit" in await invalid(admin, "memories/list", limit=True)
    assert "memory_type" in await invalid(admin, "memories/list", memory_type="weather")
    assert "min_confidence" in await invalid(admin, "memories/list", min_confidence="sure")
    assert "archived" in await invalid(admin, "memories/list", archived="yes")
    assert "query" in await invalid(admin, "memories/list", query="x" * 501)
    assert "memory_id" in await invalid(admin, "memories/edit", content="x")
    assert "content" in await invalid(admin, "memories/edit", memory_id=memory_id)
    assert "pinned" in await invalid(admin, "memories/pin", memory_id=memory_id)
    assert "memory_id" in await invalid(admin, "memories/forget")
    assert "memory_id" in await invalid(admin, "memories/erase", memory_id=5)
    assert "nonsense" in await invalid(admin, "memories/restore", memory_id="x", nonsense=1)
    assert await searched(hass) == {memory_id: TEA}


async def test_an_edit_supersedes_as_edited_without_asking_the_model(
    hass: HomeAssistant,
    config_entry: MockConfigEntry,
    azure: AzureStub,
    hass_ws_client: WebSocketGenerator,
) -> None:
    """With a model that judges saves at hand, an edit still asks it nothing."""
    hass.config_entries.async_update_entry(
        config_entry,
        options={**config_entry.options, CONF_EMBEDDINGS_DEPLOYMENT: "text-embedding-3-small"},
    )
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    admin = await hass_ws_client(hass)
    old = await save(hass, "Anna drinks black tea", tags=["person:anna"])
    asked = len(azure.calls("/chat/completions"))

    edited = await answer(
        admin, "memories/edit", memory_id=old, content=TEA, tags=["person:anna", "drink:tea"]
    )
    assert len(azure.calls("/chat/completions")) == asked
    assert edited["action"] == "superseded"
    assert edited["replaced"] == {"id": old, "content": "Anna drinks black tea"}
    new = edited["memory"]
    assert (new["content"], new["tags"], new["confidence"]) == (
        TEA,
        ["person:anna", "drink:tea"],
        "high",
    )
    # The services see the new words, and the old ones in the archive as "edited".
    assert await searched(hass, query="tea") == {new["id"]: TEA, old: "Anna drinks black tea"}
    archived = await answer(admin, "memories/list", archived=True)
    (row,) = archived["memories"]
    assert (row["id"], row["reason"], row["superseded_by"]) == (old, "edited", new["id"])
    assert row["superseded_by_content"] == TEA
    assert row["actions"] == ["restore", "erase"]
    # Nothing changed: nothing archived.
    same = await answer(admin, "memories/edit", memory_id=new["id"], content=TEA)
    assert (same["action"], same["memory"]["id"]) == ("unchanged", new["id"])
    assert (await answer(admin, "memories/list", archived=True))["total"] == 1
    # Bad words are refused and nothing changes.
    assert (
        await translated(
            admin, "memory_content_empty", "memories/edit", memory_id=new["id"], content="  "
        )
        == {}
    )
    assert await translated(
        admin, "memory_unknown", "memories/edit", memory_id=old, content="x"
    ) == {"memory_id": old}
    assert await searched(hass, query="tea") == {new["id"]: TEA, old: "Anna drinks black tea"}


async def test_editing_into_another_memory_s_words_makes_them_one(
    hass: HomeAssistant, admin: MockHAClientWebSocket
) -> None:
    tea = await save(hass, TEA)
    typo = await save(hass, "Anna drinks gren tea in the mornig")
    merged = await answer(admin, "memories/edit", memory_id=typo, content=TEA.upper())
    assert merged["action"] == "reinforced"
    assert merged["memory"]["id"] == tea
    assert merged["memory"]["occurrences"] == 2
    assert merged["replaced"]["id"] == typo
    listed = await answer(admin, "memories/list")
    assert [m["id"] for m in listed["memories"]] == [tea]


async def test_pin_and_unpin_count_no_sighting(
    hass: HomeAssistant, admin: MockHAClientWebSocket, user: MockHAClientWebSocket
) -> None:
    tea = await save(hass, TEA)
    await save(hass, COFFEE)
    pinned = await answer(user, "memories/pin", memory_id=tea, pinned=True)
    assert (pinned["memory"]["pinned"], pinned["memory"]["occurrences"]) == (True, 1)
    listed = await answer(admin, "memories/list")
    assert listed["memories"][0]["id"] == tea
    found = await call(hass, "memory_search", {"limit": 1})
    assert found["memories"][0]["id"] == tea
    unpinned = await answer(admin, "memories/pin", memory_id=tea, pinned=False)
    assert unpinned["memory"]["pinned"] is False
    assert unpinned["memory"]["updated_at"] == pinned["memory"]["updated_at"]


async def test_forget_and_erase_are_for_administrators(
    hass: HomeAssistant, admin: MockHAClientWebSocket, user: MockHAClientWebSocket
) -> None:
    tea = await save(hass, TEA, tags=["person:anna"])
    coffee = await save(hass, COFFEE)
    before = await searched(hass)
    # A user who is not an administrator sees the memories, may edit and pin, not forget.
    shown = await answer(user, "memories/list")
    assert {m["id"]: m["actions"] for m in shown["memories"]} == {
        tea: ["edit", "pin"],
        coffee: ["edit", "pin"],
    }
    await not_allowed(user, "memories/forget", memory_id=tea)
    await not_allowed(user, "memories/erase", memory_id=tea)
    assert await searched(hass) == before

    forgot = await answer(admin, "memories/forget", memory_id=coffee)
    assert [(a["id"], a["reason"]) for a in forgot["archived"]] == [
        (coffee, "Forgotten on request")
    ]
    assert await searched(hass, query="coffee") == {coffee: COFFEE}  # in the archive
    active = await call(hass, "memory_search", {"query": "coffee"})
    assert active["memories"] == []
    archived_rows = (await answer(user, "memories/list", archived=True))["memories"]
    assert [(m["id"], m["actions"]) for m in archived_rows] == [(coffee, ["restore"])]
    await not_allowed(user, "memories/erase", memory_id=coffee)

    # Erasing takes the history events that carried the memory (its memory_save call).
    erased = await answer(admin, "memories/erase", memory_id=tea)
    assert erased["erased"] == [tea]
    assert erased["history_events_erased"] == 1
    assert tea not in await searched(hass)
    events = await call(hass, "history_query", {"limit": 100})
    assert all(tea not in str(event["event_data"]) for event in events["events"])
    erased_archived = await answer(admin, "memories/erase", memory_id=coffee)
    assert erased_archived["erased"] == [coffee]
    assert await searched(hass) == {}
    assert await translated(admin, "memory_unknown", "memories/erase", memory_id=coffee) == {
        "memory_id": coffee
    }


async def test_restore_brings_an_archived_memory_back(
    hass: HomeAssistant, admin: MockHAClientWebSocket, user: MockHAClientWebSocket
) -> None:
    tea = await save(hass, TEA)
    await answer(admin, "memories/forget", memory_id=tea)
    restored = await answer(user, "memories/restore", memory_id=tea)
    assert restored["memory"]["id"] == tea
    assert restored["memory"]["content"] == TEA
    assert (await answer(admin, "memories/list", archived=True))["total"] == 0
    found = await call(hass, "memory_search", {"query": "green tea"})
    assert [m["id"] for m in found["memories"]] == [tea]
    # While an active memory says the same words, the archived one stays archived.
    edited = await answer(admin, "memories/edit", memory_id=tea, content=COFFEE)
    back = await answer(admin, "memories/edit", memory_id=edited["memory"]["id"], content=TEA)
    assert await translated(
        admin, "memory_restore_duplicate", "memories/restore", memory_id=tea
    ) == {"memory_id": back["memory"]["id"]}
    assert await translated(admin, "memory_unknown", "memories/restore", memory_id="mem_x") == {
        "memory_id": "mem_x"
    }


async def test_a_person_sees_the_household_s_and_their_own_never_another_s(
    hass: HomeAssistant,
    people: tuple[MockUser, MockUser],
    admin: MockHAClientWebSocket,
    user: MockHAClientWebSocket,
) -> None:
    """Ben (not an administrator) lists household and his own memories, forgets his own;
    Anna's private memory is neither listed, found, changed nor forgotten by him."""
    anna = await save(hass, TEA, scope="person:anna")
    ben = await save(hass, COFFEE, scope="person:ben")
    bins = await save(hass, BINS, "routine")
    shown = await answer(user, "memories/list")
    assert {m["id"]: m["actions"] for m in shown["memories"]} == {
        ben: ["edit", "pin", "forget", "erase"],
        bins: ["edit", "pin"],
    }
    found = await answer(user, "memories/list", query="green tea morning")
    assert anna not in [m["id"] for m in found["memories"]]
    before = await searched(hass)
    # Her memory is, to him, one that does not exist: refused as an unknown id is.
    for name, fields in (
        ("memories/pin", {"pinned": True}),
        ("memories/forget", {}),
        ("memories/edit", {"content": "Anna drinks black tea"}),
    ):
        assert await translated(user, "memory_unknown", name, memory_id=anna, **fields) == {
            "memory_id": anna
        }
    assert await searched(hass) == before
    forgot = await answer(user, "memories/forget", memory_id=ben)
    assert [a["id"] for a in forgot["archived"]] == [ben]
    everything = await answer(admin, "memories/list")
    assert {m["id"] for m in everything["memories"]} == {anna, bins}


async def test_restore_tells_only_of_what_the_caller_may_see_the_cap_pushed_out(
    hass: HomeAssistant,
    people: tuple[MockUser, MockUser],
    admin: MockHAClientWebSocket,
    user: MockHAClientWebSocket,
) -> None:
    """Each scope has its own cap: Ben restoring a household memory at a full household
    cap is refused, naming the cap, and nothing goes (Anna's private memory least of all);
    Anna, an administrator, restoring it pushes out the household's oldest."""
    memories_of(hass).async_update_settings(MemorySettings(max_memories_per_type=2))
    coffee = await save(hass, COFFEE)
    await answer(admin, "memories/forget", memory_id=coffee)
    anna = await save(hass, TEA, scope="person:person.anna")
    bins = await save(hass, BINS)
    lamp = await save(hass, "The hall lamp stays on at night")
    refused = await translated(user, "memory_scope_full", "memories/restore", memory_id=coffee)
    assert refused == {"type": "preference", "cap": "2"}
    archived = await answer(admin, "memories/list", archived=True)
    assert [m["id"] for m in archived["memories"]] == [coffee]
    again = await answer(admin, "memories/restore", memory_id=coffee)
    assert [(one["id"], one["scope"]) for one in again["evicted"]] == [(bins, "household")]
    active = await answer(admin, "memories/list")
    assert {m["id"] for m in active["memories"]} == {anna, coffee, lamp}


async def test_a_list_names_whose_memories_it_shows(
    hass: HomeAssistant,
    people: tuple[MockUser, MockUser],
    admin: MockHAClientWebSocket,
    user: MockHAClientWebSocket,
) -> None:
    """household, private (the caller's own) or a person's scope; paged and counted
    within it. Another person's scope is refused to anyone but an administrator."""
    anna = await save(hass, TEA, scope="person:anna")
    ben = await save(hass, COFFEE, scope="person:ben")
    ben_tea = await save(hass, "Ben drinks green tea after lunch", scope="person:ben")
    bins = await save(hass, BINS, "routine")

    async def listed(client: MockHAClientWebSocket, **fields: Any) -> tuple[list[str], int]:
        result = await answer(client, "memories/list", **fields)
        return sorted(m["id"] for m in result["memories"]), result["total"]

    assert await listed(user, scope="household") == ([bins], 1)
    assert await listed(user, scope="private") == (sorted([ben, ben_tea]), 2)
    assert await listed(user, scope="person:ben") == (sorted([ben, ben_tea]), 2)
    # A page of the filtered rows, the newest first; the total counts those rows only.
    second = await answer(user, "memories/list", scope="private", limit=1, offset=1)
    assert ([m["id"] for m in second["memories"]], second["total"]) == ([ben], 2)
    assert await listed(admin, scope="person:ben") == (sorted([ben, ben_tea]), 2)
    assert await listed(admin, scope="private") == ([anna], 1)
    # A search looks in the named scope only.
    assert await listed(admin, scope="person:ben", query="green tea") == ([ben_tea], 1)
    assert await listed(admin, scope="household", query="green tea") == ([], 0)
    # The archive too.
    await answer(user, "memories/forget", memory_id=ben)
    assert await listed(user, scope="private", archived=True) == ([ben], 1)
    assert await listed(user, scope="household", archived=True) == ([], 0)
    # Another person's scope: refused, with what the caller may use instead.
    for scope in ("person:anna", "person:nobody"):
        error = await refused_as(user, "unauthorized", "memories/list", scope=scope)
        assert (error["translation_key"], error["translation_placeholders"]) == (
            "memory_scope_not_yours",
            {"scope": scope},
        )
    error = await refused_as(
        user, "unauthorized", "memories/list", scope="person:anna", archived=True
    )
    assert error["translation_key"] == "memory_scope_not_yours"
    assert await translated(admin, "memory_scope_invalid", "memories/list", scope="nobody's") == {
        "scope": "nobody's"
    }
