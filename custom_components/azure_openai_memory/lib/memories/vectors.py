"""Embeddings as the memories keep them: this module owns the one form every embedding
takes in the store, a unit-length float32 vector (so that cosine similarity is a dot
product), and the form it is stored in, float16 in base64 (half the bytes of float32),
renormalised when read back.
"""

import base64
import binascii
from collections.abc import Sequence
import math
from typing import Any

import numpy as np
import numpy.typing as npt

type Vector = npt.NDArray[np.float32]

# Rows converted at once by encode_vectors and normalize_rows.
_BLOCK = 1024
# How far from 1 float16's rounding takes a unit vector's length, at most (in practice
# a few 1e-4).
_UNIT_TOLERANCE = 2e-3


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


def encode_vectors(matrix: npt.NDArray[np.float32], rows: npt.NDArray[np.int64]) -> list[str]:
    """encode_vector of these rows, converted to float16 a block at a time: a save writes
    every vector of the store, and keeping their stored forms between saves would take
    more memory than the vectors themselves."""
    encoded: list[str] = []
    for start in range(0, len(rows), _BLOCK):
        half = matrix[rows[start : start + _BLOCK]].astype(np.float16)
        encoded.extend(binascii.b2a_base64(row, newline=False).decode("ascii") for row in half)
    return encoded


def decode_raw_vector(text: str) -> bytes:
    """The stored bytes of a vector (float16), not yet checked; ValueError or TypeError
    when `text` is no base64."""
    return binascii.a2b_base64(text)


def normalize_rows(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.bool_]:
    """Scale each row to unit length in place, a block at a time (no copy of the whole
    matrix); rows that cannot be (all zero, not finite) become zero. Which rows could.

    A row already within float16's rounding of unit length (a stored unit vector) is
    left as it was read: scaling it would change no ranking, but it would change the
    bytes a save writes back.
    """
    usable = np.zeros(len(matrix), dtype=bool)
    for start in range(0, len(matrix), _BLOCK):
        block = matrix[start : start + _BLOCK]
        norms = np.linalg.norm(block, axis=1)
        ok = np.isfinite(norms) & (norms > 0)
        scaled = ok & (np.abs(norms - 1.0) > _UNIT_TOLERANCE)
        block[scaled] /= norms[scaled, None]
        block[~ok] = 0.0
        usable[start : start + _BLOCK] = ok
    return usable
