"""Prompt caching as Azure OpenAI reports it: the longest beginning seen before.

Azure caches a request of at least 1,024 tokens; a later request whose beginning matches
an earlier one's reads that part from the cache. The usage reports it as `cached_tokens`:
the matching beginning in steps of 128 tokens past the first 1,024, and 0 below 1,024.

What the model reads, first to last, is the Responses API's `instructions`, then the
tools, then the messages (Chat Completions) or input items (Responses) in order, each as
canonical JSON: key order in the body does not matter, every other byte does. Tokens are
the pieces a BPE pre-tokenizer cuts text into (a word with its leading space, up to three
digits, a run of punctuation, white space): close to tiktoken's count for English and JSON,
and needing no encoding file. The stand-in keeps every beginning it has seen for as long
as it runs (Azure's live 5 to 60 minutes), one cache per deployment.
"""

from collections.abc import Iterable
import hashlib
import json
import re
from typing import Any

CACHE_MIN_TOKENS = 1024
CACHE_STEP_TOKENS = 128

_PIECE = re.compile(r" ?[^\W\d_]+| ?\d{1,3}| ?(?:[^\w\s]|_)+|\s+(?!\S)|\s+")


def tokens(text: str) -> list[str]:
    """The text's tokens, as the stand-in counts them."""
    return _PIECE.findall(text)


def _canonical(item: Any) -> str:
    return json.dumps(item, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _parts(body: dict[str, Any]) -> Iterable[str]:
    if isinstance(instructions := body.get("instructions"), str):
        yield instructions
    for tool in body.get("tools") or ():
        yield _canonical(tool)
    items = body["messages"] if "messages" in body else body.get("input")
    if isinstance(items, str):
        yield items
        return
    for item in items or ():
        yield _canonical(item)


def prompt_tokens(body: dict[str, Any]) -> list[str]:
    """What a request's model reads before it answers, as tokens in reading order."""
    return [token for part in _parts(body) for token in tokens(part)]


def cacheable_lengths(count: int) -> range:
    """The prefix lengths a cache can hold for a prompt of count tokens."""
    return range(CACHE_MIN_TOKENS, count + 1, CACHE_STEP_TOKENS)


class PromptCache:
    """Beginnings of earlier prompts, as hashes of every cacheable length."""

    def __init__(self) -> None:
        self._seen: set[bytes] = set()

    def cached_tokens(self, prompt: list[str]) -> int:
        """Tokens of prompt's beginning that an earlier prompt had; then remember prompt."""
        lengths = cacheable_lengths(len(prompt))
        digest = hashlib.sha256()
        prefixes: list[bytes] = []
        done = 0
        for length in lengths:
            for token in prompt[done:length]:
                digest.update(token.encode())
                digest.update(b"\x00")
            done = length
            prefixes.append(digest.digest())
        cached = 0
        for length, prefix in zip(lengths, prefixes, strict=True):
            if prefix not in self._seen:
                break
            cached = length
        self._seen.update(prefixes)
        return cached
