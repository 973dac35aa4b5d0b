"""The German, French, Dutch, Spanish and Italian translations cover strings.json exactly.

Each translation has strings.json's keys and no others, a non-empty text wherever the
English has one, the same `{placeholder}` names and `[%key:…%]` references per text, and
is a translation: at most one in ten of the longer texts may equal the English.
"""

import json
from pathlib import Path
import re
from typing import Any

import pytest

from custom_components.azure_openai_memory.const import DOMAIN

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "custom_components" / DOMAIN
LANGUAGES = ("de", "fr", "nl", "es", "it")

PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
REFERENCE = re.compile(r"\[%key:[^%\]]+%\]")
EMPTY = "<empty object>"


def load(name: str) -> dict[str, Any]:
    return json.loads((PACKAGE / name).read_text(encoding="utf-8"))


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Leaf paths to values; an empty object (a service without fields) is a leaf too."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat |= flatten(value, f"{path}.")
        else:
            flat[path] = EMPTY if value == {} else value
    return flat


def english() -> dict[str, Any]:
    return flatten(load("strings.json"))


def translation(language: str) -> dict[str, Any]:
    return flatten(load(f"translations/{language}.json"))


def english_texts() -> dict[str, str]:
    return {path: value for path, value in english().items() if isinstance(value, str)}


def test_english_is_what_the_translations_are_checked_against() -> None:
    """strings.json has texts, one service without fields, and only well-formed placeholders."""
    texts = english_texts()
    assert len(texts) > 500
    assert [path for path, value in english().items() if value == EMPTY] == [
        "services.timeseries_list.fields"
    ]
    assert all(value.strip() for value in texts.values())
    for path, value in texts.items():
        assert value.count("{") == value.count("}") == len(PLACEHOLDER.findall(value)), path


@pytest.mark.parametrize("language", LANGUAGES)
def test_translation_file_exists(language: str) -> None:
    path = PACKAGE / "translations" / f"{language}.json"
    assert path.is_file()
    assert isinstance(json.loads(path.read_text(encoding="utf-8")), dict)


@pytest.mark.parametrize("language", LANGUAGES)
def test_same_keys_as_strings(language: str) -> None:
    """Every key of strings.json is there, and nothing else."""
    expected = set(english())
    actual = set(translation(language))
    assert sorted(expected - actual) == []
    assert sorted(actual - expected) == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_value_is_a_non_empty_text(language: str) -> None:
    """A text where strings.json has one; an empty object where it has one."""
    source = english()
    translated = translation(language)
    for path, value in source.items():
        if value == EMPTY:
            assert translated[path] == EMPTY, path
        else:
            assert isinstance(translated[path], str), path
            assert translated[path].strip() == translated[path], path
            assert translated[path], path


@pytest.mark.parametrize("language", LANGUAGES)
def test_placeholders_match_english(language: str) -> None:
    """The same {placeholder} names in each text; HA fills them by name."""
    translated = translation(language)
    wrong = {
        path: (sorted(set(PLACEHOLDER.findall(value))), sorted(set(PLACEHOLDER.findall(text))))
        for path, value in english_texts().items()
        if set(PLACEHOLDER.findall(value)) != set(PLACEHOLDER.findall(text := translated[path]))
    }
    assert wrong == {}


@pytest.mark.parametrize("language", LANGUAGES)
def test_braces_are_balanced(language: str) -> None:
    """Every brace opens or closes a placeholder: no stray, nested or unclosed brace."""
    for path, text in translation(language).items():
        assert text.count("{") == len(PLACEHOLDER.findall(text)), path
        assert text.count("}") == len(PLACEHOLDER.findall(text)), path
        assert PLACEHOLDER.sub("", text).count("{") == 0, path
        assert PLACEHOLDER.sub("", text).count("}") == 0, path
        for name in PLACEHOLDER.findall(text):
            assert re.fullmatch(r"[a-z_]+", name), (path, name)


@pytest.mark.parametrize("language", LANGUAGES)
def test_no_apostrophe_quotes_a_placeholder(language: str) -> None:
    """In the frontend's ICU message format, an apostrophe before a brace quotes it.

    'l'{x}' or "'{x}'" would then show the literal {x} instead of the value.
    """
    for path, text in translation(language).items():
        assert re.search(r"'[{}]", text) is None, path


@pytest.mark.parametrize("language", LANGUAGES)
def test_key_references_match_english(language: str) -> None:
    """HA's own [%key:…%] references are kept as they are."""
    translated = translation(language)
    for path, value in english_texts().items():
        assert REFERENCE.findall(translated[path]) == REFERENCE.findall(value), path


@pytest.mark.parametrize("language", LANGUAGES)
def test_translated_not_copied(language: str) -> None:
    """At least 90% of the texts of more than three words differ from the English."""
    translated = translation(language)
    longer = {path: value for path, value in english_texts().items() if len(value.split()) > 3}
    assert len(longer) > 300
    copied = sorted(path for path, value in longer.items() if translated[path] == value)
    assert len(copied) * 10 <= len(longer), copied


@pytest.mark.parametrize("language", LANGUAGES)
def test_product_names_kept(language: str) -> None:
    """Azure OpenAI, Home Assistant and Assist stay untranslated wherever the English names them."""
    translated = translation(language)
    for path, value in english_texts().items():
        for name in ("Azure OpenAI", "Home Assistant", "Assist "):
            if name in value:
                assert name.strip() in translated[path], (path, name)
