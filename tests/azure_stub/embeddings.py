"""The stand-in's default embedder: deterministic, cheap, and predictable on purpose.

Each text becomes normalised counts of its hashed words and character trigrams in 256
dimensions, so texts that share words are alike and texts that share none are nearly
orthogonal: a test makes two memories similar or different by choosing their words.
The retrieval benchmark replaces it with a real sentence-embedding model.
"""

import hashlib
import math
import re

DIMENSIONS = 256
_WORD = re.compile(r"\w+")


def _bucket(feature: str) -> int:
    return int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=4).digest()) % DIMENSIONS


def hashed_embedding(text: str) -> list[float]:
    """One text's unit vector; words weigh twice as much as trigrams."""
    vector = [0.0] * DIMENSIONS
    for word in _WORD.findall(text.lower()):
        vector[_bucket(f"w:{word}")] += 2.0
        padded = f" {word} "
        for i in range(len(padded) - 2):
            vector[_bucket(f"t:{padded[i : i + 3]}")] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def hashed_embedder(texts: list[str]) -> list[list[float]]:
    """The stand-in's `embedder`: one vector per text, in order."""
    return [hashed_embedding(text) for text in texts]
