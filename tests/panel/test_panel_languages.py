"""The Memory panel in the home's language: one catalogue of words per language (English,
German, French, Dutch, Spanish, Italian), each with every word the English one has, sent to
the page by panel/access for the language its user chose; and the history rows the page
turns into sentences, told which of them belong to a turn."""

import json
from pathlib import Path
import re
from typing import Any

from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.typing import WebSocketGenerator

from custom_components.azure_openai_memory.const import DOMAIN

from ..conftest import call, converse
from ..panel_commands import answer, invalid

FRONTEND = Path(__file__).parents[2] / "custom_components" / DOMAIN / "panel" / "frontend"
CATALOGUES = FRONTEND / "i18n"
LANGUAGES = ("en", "de", "fr", "nl", "es", "it")
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _catalogue(language: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CATALOGUES / f"{language}.json").read_text("utf-8"))
    return loaded


def _words(node: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Every word by its dotted key; a word's plural forms as key.one, key.other."""
    words: dict[str, str] = {}
    for key, value in node.items():
        if isinstance(value, dict):
            words.update(_words(value, f"{prefix}{key}."))
        else:
            assert isinstance(value, str), f"{prefix}{key}"
            words[f"{prefix}{key}"] = value
    return words


def _plural_keys(node: dict[str, Any], prefix: str = "") -> set[str]:
    """The keys whose value is a word's plural forms (an object of one and other)."""
    found: set[str] = set()
    for key, value in node.items():
        if isinstance(value, dict):
            if "other" in value:
                found.add(f"{prefix}{key}")
            else:
                found |= _plural_keys(value, f"{prefix}{key}.")
    return found


def test_the_catalogues_are_the_six_languages() -> None:
    assert sorted(p.stem for p in CATALOGUES.glob("*.json")) == sorted(LANGUAGES)


def test_every_catalogue_has_every_english_word_with_its_placeholders() -> None:
    english = _words(_catalogue("en"))
    english_plurals = _plural_keys(_catalogue("en"))
    for language in LANGUAGES[1:]:
        catalogue = _catalogue(language)
        words = _words(catalogue)
        assert set(words) == set(english), language
        assert _plural_keys(catalogue) == english_plurals, language
        for key, word in words.items():
            assert word.strip(), (language, key)
            assert set(PLACEHOLDER.findall(word)) == set(PLACEHOLDER.findall(english[key])), (
                language,
                key,
                word,
            )
        # Said in the language, not left in English (names and codes aside).
        same = {k for k, w in words.items() if w == english[k] and PLACEHOLDER.sub("", w).strip()}
        assert len(same) < len(english) // 10, (language, sorted(same))
    for key in english_plurals:
        forms = key.split(".")
        node: Any = _catalogue("en")
        for part in forms:
            node = node[part]
        assert set(node) == {"one", "other"}, key


def test_every_word_the_page_names_is_in_the_english_catalogue() -> None:
    """t("a.b") and label("group", …) in the page name words the catalogue has."""
    source = (FRONTEND / "memory-panel.js").read_text()
    english = _catalogue("en")
    words = _words(english)
    plurals = _plural_keys(english)
    named = set(re.findall(r"\bt\(\"([\w.]+)\"", source))
    assert len(named) > 100
    assert named - set(words) - plurals == set()
    groups = set(re.findall(r"\blabel\(\"([\w.]+)\"", source))
    assert groups == {
        "memory_types",
        "confidences",
        "origins",
        "authorities",
        "sources",
        "roles",
        "event_types",
        "error_kinds",
        "summaries.group_modes",
        "summaries.period_types",
    }
    for group in groups:
        assert any(key.startswith(f"{group}.") for key in words), group
    # No word of English is left in the page's code: every one comes from a catalogue.
    assert "const TEXT" not in source
    assert "Show the turn" not in source


async def test_the_page_gets_the_words_of_its_user_s_language(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, hass_ws_client: WebSocketGenerator
) -> None:
    client = await hass_ws_client(hass)
    german = (await answer(client, "panel/access", language="de"))["text"]
    assert german["language"] == "de"
    assert german["words"]["tabs"] == {
        "memories": "Erinnerungen",
        "conversations": "Gespräche",
        "history": "Verlauf",
        "summaries": "Zusammenfassungen",
        "series": "Zeitreihen",
    }
    assert german["words"]["history"]["show_turn"] == "Gesprächsrunde zeigen"
    # A region's language reads its language's words; one without a catalogue English.
    swiss = (await answer(client, "panel/access", language="de-CH"))["text"]
    assert swiss == german
    french = (await answer(client, "panel/access", language="fr"))["text"]
    assert (french["language"], french["words"]["tabs"]["history"]) == ("fr", "Historique")
    for language in ("pt-BR", "zh-Hans"):
        fallback = (await answer(client, "panel/access", language=language))["text"]
        assert fallback == {"language": "en", "words": _catalogue("en")}
    # Not naming one (an older page): English.
    assert (await answer(client, "panel/access"))["text"]["language"] == "en"
    assert "language" in await invalid(client, "panel/access", language=7)


async def test_history_rows_say_which_belong_to_a_turn(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, hass_ws_client: WebSocketGenerator
) -> None:
    """A question and what followed from it belong to a turn; a service's change does not.
    A row whose data was cut keeps what its sentence needs."""
    await hass.async_block_till_done(wait_background_tasks=True)
    await converse(hass, loaded_entry, "Tell me about owls", "turn-talk")
    await call(
        hass,
        "timeseries_merge",
        {"key": "kudos_timeseries", "entries": [{"id": "1", "timestamp": "2026-01-01T00:00:00Z"}]},
    )
    long_question = "Is it " + "very " * 600 + "cold?"
    await converse(hass, loaded_entry, long_question, "long-talk")
    await hass.async_block_till_done()
    client = await hass_ws_client(hass)
    rows = (await answer(client, "history/events", limit=100))["events"]
    talk = [row for row in rows if row["session_id"] == "turn-talk"]
    assert {row["event_type"] for row in talk} == {"communication", "decision"}
    assert [row["in_turn"] for row in talk] == [True] * len(talk)
    (merge,) = [row for row in rows if row["agent_id"] == f"{DOMAIN}.timeseries_merge"]
    assert merge["in_turn"] is False
    assert merge["event_data"]["added"] == 1
    assert "brief" not in merge
    (cut,) = [
        row
        for row in rows
        if row["session_id"] == "long-talk"
        and row["event_type"] == "communication"
        and "user" in row["tags"]
    ]
    assert set(cut["event_data"]) == {"truncated"}
    assert cut["in_turn"] is True
    assert cut["brief"]["direction"] == "in"
    assert cut["brief"]["text"] == long_question[:300]
