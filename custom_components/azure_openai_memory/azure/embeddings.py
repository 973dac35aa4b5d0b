"""Embeddings for memories: one batched request, a short timeout, never a failed call.

Ranking by meaning is an improvement, not a requirement: when the embeddings deployment
is slow, missing or refusing, memories are ranked by their words and the caller is told
by the ranker's name. The switch is logged once each way, not at every request.
"""

import logging

from homeassistant.util import dt as dt_util
import numpy as np
import openai

from ..lib.memories import Vector
from .client import SDKClient
from .errors import API_ERRORS, classify_error

_LOGGER = logging.getLogger(__name__)

# An embedding is on the way to a service answer or a spoken one: wait briefly.
EMBEDDINGS_TIMEOUT = 5.0
# Asked of models that can shorten their vectors (text-embedding-3): 256 dimensions keep
# a memory under 2 KB on disk and rank as well for a home's short facts.
EMBEDDING_DIMENSIONS = 256
# Longer vectors (a model that cannot shorten them) are cut to this and renormalised.
MAX_DIMENSIONS = 512
_FAILURES: tuple[type[BaseException], ...] = (*API_ERRORS, TimeoutError)
# After a failure, requests pause this long (seconds): a dead deployment must not add its
# timeout to every turn.
RETRY_AFTER = 60.0
# Texts per request when the whole store is embedded again.
BATCH_SIZE = 64


class EmbeddingsMismatch(openai.OpenAIError):
    """The answer does not hold one vector per text."""


class Embedder:
    """One embeddings deployment of one resource."""

    def __init__(self, client: SDKClient, deployment: str, identity: str) -> None:
        self._client = client.with_options(timeout=EMBEDDINGS_TIMEOUT, max_retries=0)
        self.deployment = deployment
        # What the vectors came from (resource and deployment): another one means new vectors.
        self.identity = identity
        self._dimensions: int | None = EMBEDDING_DIMENSIONS
        self.failing = False
        self._retry_at = 0.0

    async def async_embed(self, texts: list[str]) -> list[Vector] | None:
        """A unit vector per text, in one request; None when Azure does not answer well."""
        if not texts:
            return []
        if self.failing and dt_util.utcnow().timestamp() < self._retry_at:
            return None
        try:
            vectors = await self._async_request(texts)
        except _FAILURES as err:
            self._retry_at = dt_util.utcnow().timestamp() + RETRY_AFTER
            if not self.failing:
                self.failing = True
                _LOGGER.warning(
                    "Embeddings deployment %s failed (%s); memories are ranked by their "
                    "words until it answers again (tried again every %d seconds)",
                    self.deployment,
                    "timeout" if isinstance(err, TimeoutError) else classify_error(err).value,
                    RETRY_AFTER,
                )
            return None
        if self.failing:
            self.failing = False
            _LOGGER.warning(
                "Embeddings deployment %s answers again; memories are ranked by meaning",
                self.deployment,
            )
        return vectors

    async def async_check(self) -> None:
        """One request, its failure raised rather than turned into keyword ranking."""
        await self._async_request(["ping"])

    async def _async_request(self, texts: list[str]) -> list[Vector]:
        try:
            response = await self._create(texts)
        except openai.BadRequestError:
            if self._dimensions is None:
                raise
            # ada-002 and others cannot shorten their vectors: ask for them whole.
            self._dimensions = None
            response = await self._create(texts)
        ordered = sorted(response.data, key=lambda item: item.index)
        if len(ordered) != len(texts):
            raise EmbeddingsMismatch(f"{len(ordered)} vectors for {len(texts)} texts")
        vectors: list[Vector] = []
        for item in ordered:
            vector = np.asarray(item.embedding, dtype=np.float32)[:MAX_DIMENSIONS]
            norm = float(np.linalg.norm(vector))
            vectors.append(vector / norm if norm else vector)
        return vectors

    async def _create(self, texts: list[str]) -> openai.types.CreateEmbeddingResponse:
        if self._dimensions is None:
            return await self._client.embeddings.create(model=self.deployment, input=texts)
        return await self._client.embeddings.create(
            model=self.deployment, input=texts, dimensions=self._dimensions
        )


async def async_check_embeddings(client: SDKClient, deployment: str) -> None:
    """One request to a deployment the user just named; raises what the SDK raised."""
    await Embedder(client, deployment, deployment).async_check()
