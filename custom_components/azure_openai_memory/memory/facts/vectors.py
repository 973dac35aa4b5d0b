"""Embeddings as the memories keep them: this module owns the one form every embedding
takes in the store, a unit-length float32 vector (so that cosine similarity is a dot
product), and the form it is stored in, float16 in base64 (half the bytes of float32),
renormalised when read back.
"""

import base64
from collections.abc import Sequence
import math
from typing import Any

import numpy as np
import numpy.typing as npt

type Vector = npt.NDArray[np.float32]


def as_unit_vector(values: Sequence[float] | npt.NDArray[Any]) -> Vector | None:
    """A unit-length float32 copy, or None for an empty or all-zero vector."""
    vector = np.asarray(values, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(vector))
    if not vector.size or not math.isfinite(norm) or norm == 0.0:
        return None
    return vector / norm


def encode_vector(vector: Vector) -> str:
    """float16, base64: 256 dimensions in 684 characters."""
    return base64.b64encode(vector.astype(np.float16).tobytes()).decode("ascii")


def decode_vector(text: str) -> Vector | None:
    """Back from encode_vector (renormalised after float16's rounding)."""
    return as_unit_vector(np.frombuffer(base64.b64decode(text), dtype=np.float16))
