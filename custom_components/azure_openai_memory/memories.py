"""The installation's memories: the FactStore, its file, and the embeddings that rank it.

Memories are the home's, not one Azure resource's: one store for every entry, loaded
with the integration and used by the services and by every agent. Embeddings come
from the entry whose options name an embeddings deployment; vectors made by another
deployment cannot be compared, so a change of deployment embeds everything again in
the background, a batch at a time, while keyword ranking answers meanwhile.
"""

import asyncio
from collections.abc import Iterable
from dataclasses import asdict
import logging
from typing import Any

from homeassistant.core import HomeAssistant, callback
from homeassistant.util.hass_dict import HassKey

from .const import DOMAIN
from .llm.embeddings import BATCH_SIZE, Embedder
from .memory.facts import (
    FACTS_VERSION,
    FactSettings,
    FactStore,
    ForgetResult,
    MemorySource,
    SaveResult,
    SearchResult,
    Vector,
    migrate_facts,
    parse_confidence,
    parse_source,
    parse_type,
    validate_content,
    validate_tags,
)
from .storage import DebouncedStore

_LOGGER = logging.getLogger(__name__)

DATA_MEMORIES: HassKey["Memories"] = HassKey(f"{DOMAIN}_memories")
STORAGE_KEY = f"{DOMAIN}.memories"


class Memories:
    """The home's durable facts: saved, searched, forgotten, persisted."""

    def __init__(self, hass: HomeAssistant, defaults: FactSettings | None = None) -> None:
        self.hass = hass
        self.facts = FactStore(defaults)
        self._settings_stored = False
        # What the stored vectors came from (resource and deployment), or None.
        self._vectors_from: str | None = None
        self._embedders: dict[str, Embedder] = {}
        self._embedding: asyncio.Task[None] | None = None
        self.file = DebouncedStore(
            hass, STORAGE_KEY, self._snapshot, version=FACTS_VERSION, migrate=migrate_facts
        )

    async def async_load(self) -> None:
        """Read the file in the executor; a file that cannot be read starts empty (repaired)."""
        data = await self.file.async_load()
        if not data:
            return
        defaults = self.facts.settings
        try:
            settings = _settings(data.get("settings"), defaults)
            facts = await self.hass.async_add_executor_job(FactStore.from_dict, data, settings)
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            await self.file.async_set_aside(str(err) or type(err).__name__)
            return
        self.facts = facts
        self._settings_stored = "settings" in data
        self._vectors_from = data.get("vectors_from") if facts.dimensions else None

    def _snapshot(self) -> dict[str, Any]:
        data = self.facts.as_dict()
        data["vectors_from"] = self._vectors_from
        if self._settings_stored:
            data["settings"] = asdict(self.facts.settings)
        return data

    @callback
    def async_changed(self) -> None:
        """Save soon (bounded by the store's maximum wait)."""
        self.file.async_schedule_save()

    # -- settings --

    @property
    def settings(self) -> FactSettings:
        """The installation's MEMORY_CONFIG."""
        return self.facts.settings

    @callback
    def async_update_settings(self, settings: FactSettings) -> None:
        """New settings; a lowered cap archives at once."""
        if settings == self.facts.settings and self._settings_stored:
            return
        self._settings_stored = True
        archived = self.facts.apply_settings(settings)
        if archived:
            _LOGGER.debug("Archived %d memories over max_memories_per_type", archived)
        self.async_changed()

    # -- embeddings --

    @property
    def embedder(self) -> Embedder | None:
        """The embeddings deployment in use: the first entry that names one."""
        return next(iter(self._embedders.values()), None)

    @callback
    def async_use_embeddings(self, entry_id: str, embedder: Embedder | None) -> None:
        """An entry set up (with or without a deployment) or unloaded (None)."""
        if embedder is None:
            self._embedders.pop(entry_id, None)
        else:
            self._embedders[entry_id] = embedder
        self._async_embed_missing()

    @callback
    def _async_embed_missing(self) -> None:
        """Embed in the background what lacks a vector from the deployment in use."""
        embedder = self.embedder
        if embedder is None or (self._embedding is not None and not self._embedding.done()):
            return
        if self._vectors_from != embedder.identity:
            if self._vectors_from is not None:
                _LOGGER.info(
                    "Embeddings deployment changed to %s: embedding every memory again",
                    embedder.deployment,
                )
            self.facts.clear_vectors()
            self._vectors_from = embedder.identity
            self.async_changed()
        if not self.facts.without_vector():
            return
        self._embedding = self.hass.async_create_background_task(
            self._async_embed_batches(embedder), f"{DOMAIN} embed memories"
        )

    async def _async_embed_batches(self, embedder: Embedder) -> None:
        """A batch at a time; a failure stops until the next successful request."""
        while self.embedder is embedder and (missing := self.facts.without_vector()):
            batch = missing[:BATCH_SIZE]
            vectors = await embedder.async_embed([m.content for m in batch])
            if vectors is None:
                return
            for memory, vector in zip(batch, vectors, strict=True):
                self.facts.set_vector(memory.id, vector)
            self.async_changed()

    async def _async_vectors(self, texts: list[str]) -> list[Vector] | None:
        """One request for these texts, or None (keyword ranking) without a deployment."""
        embedder = self.embedder
        if embedder is None:
            return None
        was_failing = embedder.failing
        vectors = await embedder.async_embed(texts)
        if vectors is not None and (was_failing or self._vectors_from != embedder.identity):
            self._async_embed_missing()
        return vectors

    # -- the services' work --

    async def async_save(
        self,
        content: Any,
        memory_type: Any,
        tags: Iterable[Any] = (),
        *,
        confidence: Any = None,
        source: Any = MemorySource.MANUAL,
        source_reference: str | None = None,
    ) -> SaveResult:
        """Validate, embed (one request), deduplicate and save; FactError on bad input."""
        content = validate_content(content)
        parse_type(memory_type)
        tags = validate_tags(tags)
        if confidence is not None:
            parse_confidence(confidence)
        parse_source(source)
        vectors = await self._async_vectors([content])
        if vectors is not None and self._vectors_from != self.embedder_identity:
            vectors = None  # the store is being embedded again by another deployment
        result = self.facts.save(
            content,
            memory_type,
            tags,
            confidence=confidence,
            source=source,
            source_reference=source_reference,
            vector=vectors[0] if vectors else None,
        )
        self.async_changed()
        return result

    @property
    def embedder_identity(self) -> str | None:
        """What the deployment in use makes vectors from."""
        embedder = self.embedder
        return embedder.identity if embedder is not None else None

    async def async_search(
        self,
        query: str | None,
        *,
        memory_type: Any = None,
        tags: Iterable[Any] | None = None,
        limit: int = 10,
        include_archived: bool = False,
    ) -> SearchResult:
        """Rank by meaning when the deployment answers, else by words."""
        if memory_type is not None:
            parse_type(memory_type)
        validate_tags(tags or ())
        vector = None
        if query and query.strip() and self.facts.dimensions and len(self.facts):
            vectors = await self._async_vectors([query.strip()])
            if vectors:
                vector = vectors[0]
        return self.facts.search(
            query,
            query_vector=vector,
            memory_type=memory_type,
            tags=tags,
            limit=limit,
            include_archived=include_archived,
        )

    def forget(
        self, memory_id: str | None = None, tag: str | None = None, *, erase: bool = False
    ) -> ForgetResult:
        """Archive (or erase) and save soon."""
        result = self.facts.forget(memory_id, tag, erase=erase)
        if result.archived or result.erased:
            self.async_changed()
        return result

    def cleanup_archived(self, retention_days: float | None = None) -> list[str]:
        """Delete archived records past the retention and save soon."""
        deleted = self.facts.cleanup_archived(retention_days)
        if deleted:
            self.async_changed()
        return deleted

    async def async_close(self) -> None:
        """Stop embedding and write what is pending."""
        if self._embedding is not None and not self._embedding.done():
            self._embedding.cancel()
        await self.file.async_close()


def _settings(raw: Any, defaults: FactSettings) -> FactSettings:
    if raw is None:
        return defaults
    return FactSettings(
        archive_retention_days=float(
            raw.get("archive_retention_days", defaults.archive_retention_days)
        ),
        high_confidence_threshold=int(
            raw.get("high_confidence_threshold", defaults.high_confidence_threshold)
        ),
        max_memories_per_type=int(raw.get("max_memories_per_type", defaults.max_memories_per_type)),
        relevance_score_threshold=float(
            raw.get("relevance_score_threshold", defaults.relevance_score_threshold)
        ),
    )
