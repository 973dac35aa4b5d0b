"""The installation's memories: the MemoryStore, its file, and the embeddings that rank it.

Memories are the home's, not one Azure resource's: one store for every entry, loaded
with the integration and used by the services and by every agent. Embeddings come
from the entry whose options name an embeddings deployment; vectors made by another
deployment cannot be compared, so a change of deployment embeds everything again in
the background, a batch at a time, while keyword ranking answers meanwhile.
"""

import asyncio
from collections.abc import Callable, Iterable
import contextlib
from dataclasses import asdict
import logging
from typing import Any

from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.event import async_call_later
from homeassistant.helpers.start import async_at_started

from ..azure.embeddings import BATCH_SIZE, RETRY_AFTER, Embedder
from ..azure.supersede import SupersedeJudge
from ..const import DOMAIN
from ..lib.memories import (
    HOUSEHOLD_SCOPE,
    MEMORIES_VERSION,
    MIN_SIMILARITY,
    ArchivedMemory,
    ExportRecords,
    ForgetResult,
    ImportResult,
    Memory,
    MemoryInputError,
    MemorySettings,
    MemorySource,
    MemoryStore,
    Provenance,
    SaveResult,
    SearchResult,
    Vector,
    Verdict,
    migrate_memories,
    parse_confidence,
    parse_source,
    parse_type,
    validate_content,
    validate_limit,
    validate_scope,
    validate_tags,
)
from ..people.identity import rekey_people
from ..storage import DebouncedStore

_LOGGER = logging.getLogger(__name__)

STORAGE_KEY = f"{DOMAIN}.memories"
# Characters of a search's question that are embedded (about 500 tokens).
EMBEDDED_QUERY_CHARS = 2000
# While the deployment that made the stored vectors is missing and an entry is still
# setting up (start-up, a reload), another entry's deployment takes over only after this
# long (seconds): the missing one is usually back well before, and switching would embed
# every memory again.
TAKE_OVER_AFTER = 60.0
# The Repairs issue of a type whose household cap pushed memories out (its id ends with
# the type).
OVER_CAP_ISSUE = "memories_over_cap"


class Memories:
    """The home's memories in Home Assistant: the pure MemoryStore (`store`) with its file
    (`file`), the embeddings that rank it and the agents asked what a new memory replaces."""

    def __init__(self, hass: HomeAssistant, defaults: MemorySettings | None = None) -> None:
        self.hass = hass
        self.store = MemoryStore(defaults)
        self._settings_stored = False
        # What the stored vectors came from (resource and deployment), or None.
        self._vectors_from: str | None = None
        self._embedders: dict[str, Embedder] = {}
        # Each entry's first agent, asked whether a new memory replaces an older one.
        self._judges: dict[str, SupersedeJudge] = {}
        self._embedding: asyncio.Task[None] | None = None
        self._cancel_retry: CALLBACK_TYPE | None = None
        self._cancel_take_over: CALLBACK_TYPE | None = None
        self._cancel_indexing: CALLBACK_TYPE | None = None
        # Memories each type's cap pushed out since the start (or the cap was raised).
        self._pushed_out: dict[str, int] = {}
        # The file is read after the set-up (async_start_loading); what reads or changes
        # the memories waits for it (async_loaded), what entries ask meanwhile follows it.
        self._loaded = asyncio.Event()
        self._loading: asyncio.Task[None] | None = None
        self._after_load: list[Callable[[], None]] = []
        self._replaying = False
        self.file = DebouncedStore(
            hass, STORAGE_KEY, self._snapshot, version=MEMORIES_VERSION, migrate=migrate_memories
        )

    @callback
    def async_start_loading(self) -> None:
        """Read the file in the background: Home Assistant's set-up does not wait for
        10,000 memories to be parsed; whatever needs them does (async_loaded)."""
        self._loading = self.hass.async_create_background_task(
            self._async_load_in_background(), f"{DOMAIN} load memories"
        )

    async def _async_load_in_background(self) -> None:
        try:
            await self.async_load()
        except BaseException as err:
            # Stopped (or failed) before the file was read: what is held is not the file's,
            # so it is never written, and what waited for it does nothing that would be.
            self.file.async_hold()
            self._after_load.clear()
            self._loaded.set()
            if not isinstance(err, Exception):
                raise
            _LOGGER.exception("Memories could not be read; the file is kept as it is")
            return
        self._loaded.set()
        actions, self._after_load = self._after_load, []
        # Entries' embeddings deployments are all counted before one is chosen (the
        # stored vectors' own, if it is among them).
        self._replaying = True
        try:
            for action in actions:
                action()
        finally:
            self._replaying = False
        self._async_embeddings_changed()

    @property
    def loaded(self) -> bool:
        """Whether the stored memories were read (or there were none to read)."""
        return self._loaded.is_set()

    async def async_loaded(self) -> None:
        """Return once the stored memories are read."""
        if not self._loaded.is_set():
            await self._loaded.wait()

    @callback
    def async_when_loaded(self, action: Callable[[], None]) -> None:
        """Run action now when the memories are read, else once they are (in order)."""
        if self._loaded.is_set():
            action()
        else:
            self._after_load.append(action)

    async def async_load(self) -> None:
        """Read the file in the executor; a file that cannot be read starts empty (repaired).
        Then archived memories past their retention go (a home restarted every day would
        never reach the daily clean-up)."""
        await self._async_read()
        self.cleanup_archived()

    async def _async_read(self) -> None:
        data = await self.file.async_load()
        if not data:
            return
        defaults = self.store.settings
        try:
            settings = _settings(data.get("settings"), defaults)
            store = await self.hass.async_add_executor_job(MemoryStore.from_dict, data, settings)
        except Exception as err:  # whatever stops the read: the file is kept aside, repaired
            await self.file.async_set_aside(str(err) or type(err).__name__)
            return
        if store.skipped:
            await self.file.async_keep_copy(
                f"{store.skipped} memory records could not be read and were left out"
            )
        self.store = store
        self._settings_stored = "settings" in data
        self._vectors_from = data.get("vectors_from") if store.dimensions else None
        # People are keyed by their own id: keys stored before (entity ids, people removed
        # meanwhile) are renamed as the file is read (identity.py).
        if rekey_people(self.hass, store.rename_people):
            self.async_changed()
        if not store.keywords_ready:
            self._cancel_indexing = async_at_started(self.hass, self._async_start_indexing)

    @callback
    def _async_start_indexing(self, _hass: HomeAssistant) -> None:
        """Index the loaded memories' words once Home Assistant has started: the start
        does not wait for it, and neither does the first question after it."""
        self._cancel_indexing = None
        self.hass.async_create_background_task(
            self._async_words_indexed(), f"{DOMAIN} index memories"
        )

    async def _async_words_indexed(self) -> None:
        """The loaded memories' words indexed before a search or save uses them, in the
        executor (waiting there for a build under way), never in the event loop."""
        if not self.store.keywords_ready:
            await self.hass.async_add_executor_job(self.store.build_keywords)

    def _snapshot(self) -> Callable[[], dict[str, Any]]:
        """What the file holds, made in the executor (MemoryRecords.stored_form)."""
        stored = self.store.stored_form()
        vectors_from = self._vectors_from
        settings = asdict(self.store.settings) if self._settings_stored else None

        def data() -> dict[str, Any]:
            made = stored()
            made["vectors_from"] = vectors_from
            if settings is not None:
                made["settings"] = settings
            return made

        return data

    @callback
    def async_changed(self) -> None:
        """Save soon (bounded by the store's maximum wait)."""
        self.file.async_schedule_save()

    # -- settings --

    @property
    def settings(self) -> MemorySettings:
        """The installation's MEMORY_CONFIG."""
        return self.store.settings

    @callback
    def async_update_settings(self, settings: MemorySettings) -> None:
        """New settings; a lowered cap archives at once, a raised one clears its issues."""
        if settings == self.store.settings and self._settings_stored:
            return
        self._settings_stored = True
        if settings.max_memories_per_type > self.store.settings.max_memories_per_type:
            for kind in self._pushed_out:
                ir.async_delete_issue(self.hass, DOMAIN, f"{OVER_CAP_ISSUE}_{kind}")
            self._pushed_out.clear()
        self._async_report_cap(self.store.apply_settings(settings))
        self.async_changed()

    @callback
    def _async_report_cap(self, evicted: Iterable[ArchivedMemory]) -> None:
        """A household memory the cap pushed out is gone from recall: a Repairs issue names
        its type.

        Silent, it would be data lost from the household's point of view. The issue says
        how many went since the start, and goes when the cap is raised. A person's private
        memories pushed out by their own cap raise none: Repairs is read by every user,
        and the one who saved is told in the save's answer (`evicted`).
        """
        kinds: set[str] = set()
        for archived in evicted:
            if archived.memory.scope != HOUSEHOLD_SCOPE:
                continue
            kind = archived.memory.type.value
            self._pushed_out[kind] = self._pushed_out.get(kind, 0) + 1
            kinds.add(kind)
        for kind in sorted(kinds):
            _LOGGER.debug(
                "%d %s memories archived over the cap so far", self._pushed_out[kind], kind
            )
            ir.async_create_issue(
                self.hass,
                DOMAIN,
                f"{OVER_CAP_ISSUE}_{kind}",
                is_fixable=False,
                is_persistent=False,
                severity=ir.IssueSeverity.WARNING,
                translation_key=OVER_CAP_ISSUE,
                translation_placeholders={
                    "type": kind,
                    "cap": str(self.store.settings.max_memories_per_type),
                    "count": str(self._pushed_out[kind]),
                },
            )

    # -- embeddings --

    @property
    def embedder(self) -> Embedder | None:
        """The embeddings deployment in use.

        With several entries naming one, the one the stored vectors came from, else the
        oldest entry's (entry ids sort by creation): the order entries happen to set up
        in after a reload must not embed everything again.
        """
        if not self._embedders:
            return None
        for embedder in self._embedders.values():
            if embedder.identity == self._vectors_from:
                return embedder
        if self._cancel_take_over is not None:
            return None  # the vectors' deployment may be back in a moment: words meanwhile
        return self._embedders[min(self._embedders)]

    @property
    def judge(self) -> SupersedeJudge | None:
        """The model asked about updates: the first agent of the entry whose embeddings
        deployment is in use (the same resource); None without one."""
        embedder = self.embedder
        for entry_id, one in self._embedders.items():
            if one is embedder:
                return self._judges.get(entry_id)
        return None

    @callback
    def async_use_embeddings(
        self, entry_id: str, embedder: Embedder | None, judge: SupersedeJudge | None = None
    ) -> None:
        """An entry set up (with or without a deployment, and its first agent's judge) or
        unloaded (None)."""
        self._embedders.pop(entry_id, None)
        self._judges.pop(entry_id, None)
        if embedder is not None:
            self._embedders[entry_id] = embedder
            if judge is not None:
                self._judges[entry_id] = judge
        if not self._replaying:
            self._async_embeddings_changed()

    @callback
    def _async_embeddings_changed(self) -> None:
        """Which deployment embeds: none left stops it; the stored vectors' own, when it
        may still come, is waited for; then what lacks a vector is embedded."""
        if not self._embedders:
            self._async_stop_embedding()
        elif self._vectors_missing_their_deployment() and self._entries_setting_up():
            self._async_take_over_later()
        elif self._cancel_take_over is not None:
            self._cancel_take_over()
            self._cancel_take_over = None
        self._async_embed_missing()

    def _vectors_missing_their_deployment(self) -> bool:
        return self._vectors_from is not None and all(
            embedder.identity != self._vectors_from for embedder in self._embedders.values()
        )

    def _entries_setting_up(self) -> bool:
        """Whether an entry not yet counted may still come with the vectors' deployment."""
        return any(
            entry.state is not ConfigEntryState.LOADED
            and entry.disabled_by is None
            and entry.entry_id not in self._embedders
            for entry in self.hass.config_entries.async_entries(DOMAIN)
        )

    @callback
    def _async_take_over_later(self) -> None:
        if self._cancel_take_over is not None:
            return

        @callback
        def _take_over(_now: Any) -> None:
            self._cancel_take_over = None
            self._async_embed_missing()

        self._cancel_take_over = async_call_later(self.hass, TAKE_OVER_AFTER, _take_over)

    @callback
    def _async_stop_embedding(self) -> None:
        """No deployment left (or shutting down): no request and no retry outlives it."""
        if self._cancel_retry is not None:
            self._cancel_retry()
            self._cancel_retry = None
        if self._cancel_take_over is not None:
            self._cancel_take_over()
            self._cancel_take_over = None
        if self._embedding is not None and not self._embedding.done():
            self._embedding.cancel()

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
            self.store.clear_vectors()
            self._vectors_from = embedder.identity
            self.async_changed()
        if not self.store.without_vector():
            return
        self._embedding = self.hass.async_create_background_task(
            self._async_embed_batches(embedder), f"{DOMAIN} embed memories"
        )

    async def _async_embed_batches(self, embedder: Embedder) -> None:
        """A batch at a time; a failure stops until the next successful request.

        Another deployment taking over meanwhile starts its own run once this one ends.
        """
        try:
            while self.embedder is embedder and (missing := self.store.without_vector()):
                batch = missing[:BATCH_SIZE]
                vectors = await embedder.async_embed([m.content for m in batch])
                if self.embedder is not embedder:
                    return  # from a deployment no longer in use
                if vectors is None:
                    self._async_retry_later()
                    return
                for memory, vector in zip(batch, vectors, strict=True):
                    self.store.set_vector(memory.id, vector)
                self.async_changed()
        finally:
            if self.embedder is not embedder:
                self.hass.loop.call_soon(self._async_embed_missing)

    @callback
    def _async_retry_later(self) -> None:
        """A failed batch is tried again once the embedder's pause is over."""
        if self._cancel_retry is not None:
            self._cancel_retry()

        @callback
        def _retry(_now: Any) -> None:
            self._cancel_retry = None
            self._async_embed_missing()

        self._cancel_retry = async_call_later(self.hass, RETRY_AFTER, _retry)

    async def _async_vectors(self, texts: list[str]) -> tuple[str | None, list[Vector] | None]:
        """One request for these texts, and the deployment's identity; (None, None) without.

        Vectors are comparable with the store's only when that identity is still the one
        the store's vectors come from once the answer is in (vectors_comparable).
        """
        embedder = self.embedder
        if embedder is None:
            return None, None
        was_failing = embedder.failing
        vectors = await embedder.async_embed(texts)
        if vectors is not None and (was_failing or self._vectors_from != embedder.identity):
            self._async_embed_missing()
        return embedder.identity, vectors

    def _vectors_comparable(self, identity: str | None) -> bool:
        return identity is not None and identity == self._vectors_from

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
        pinned: bool | None = None,
        scope: str = HOUSEHOLD_SCOPE,
        provenance: Provenance | None = None,
        push_out: bool = True,
    ) -> SaveResult:
        """Validate, embed (one request), ask the model about a memory of the same subject
        (one request, when there is such a memory and a model), deduplicate and save;
        MemoryInputError on bad input. push_out False: refused rather than push another memory of
        the scope out at its cap (MemoryStore.save)."""
        await self.async_loaded()
        content = validate_content(content)
        kind = parse_type(memory_type)
        tags = validate_tags(tags)
        scope = validate_scope(scope)
        if confidence is not None:
            parse_confidence(confidence)
        parse_source(source)
        await self._async_words_indexed()
        identity, vectors = await self._async_vectors([content])
        dropped = vectors is not None and not self._vectors_comparable(identity)
        if dropped:
            vectors = None  # the store is being embedded again by another deployment
        vector = vectors[0] if vectors else None
        verdict = None
        if (judge := self.judge) is not None and (
            candidate := self.store.update_candidate(
                content, kind, tags, vector=vector, scope=scope
            )
        ) is not None:
            relation = await judge.async_judge(kind.value, tags, candidate.content, content)
            if relation is not None:
                verdict = Verdict(candidate.id, relation)
        result = self.store.save(
            content,
            memory_type,
            tags,
            confidence=confidence,
            source=source,
            source_reference=source_reference,
            vector=vector,
            pinned=pinned,
            verdict=verdict,
            scope=scope,
            provenance=provenance,
            push_out=push_out,
        )
        self.async_changed()
        self._async_report_cap(result.evicted)
        if dropped:
            self._async_embed_missing()
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
        scopes: Iterable[str] | None = None,
        min_similarity: float = MIN_SIMILARITY,
    ) -> SearchResult:
        """Rank by meaning when the deployment answers, else by words; only memories of
        these scopes (None: every scope), matching by words or by meaning from
        min_similarity on."""
        await self.async_loaded()
        validate_limit(limit)
        if memory_type is not None:
            parse_type(memory_type)
        validate_tags(tags or ())
        vector = None
        if query and query.strip() and len(self.store):
            # A question can be an AI task's whole instructions: its start says enough.
            identity, vectors = await self._async_vectors([query.strip()[:EMBEDDED_QUERY_CHARS]])
            if vectors and self._vectors_comparable(identity):
                vector = vectors[0]
        await self._async_words_indexed()
        return self.store.search(
            query,
            query_vector=vector,
            memory_type=memory_type,
            tags=tags,
            limit=limit,
            include_archived=include_archived,
            scopes=scopes,
            min_similarity=min_similarity,
        )

    def forget(
        self,
        memory_id: str | None = None,
        tag: str | None = None,
        *,
        erase: bool = False,
        scopes: Iterable[str] | None = None,
        reason: str | None = None,
    ) -> ForgetResult:
        """Archive (or erase) memories of these scopes (None: any), and save soon."""
        result = self.store.forget(memory_id, tag, erase=erase, scopes=scopes, reason=reason)
        if result.archived or result.erased:
            self.async_changed()
        return result

    async def async_import_records(
        self,
        records: ExportRecords,
        *,
        dry_run: bool = False,
        own: frozenset[str] | None = None,
        push_out: Callable[[str], bool] | None = None,
    ) -> ImportResult:
        """Add what an export holds that the store lacks (`own`: the importer's scopes, see
        MemoryStore.import_records); save soon and embed what came. (Repeats are found by
        the loaded words' index: built in the executor first.)"""
        await self.async_loaded()
        await self._async_words_indexed()
        result = self.store.import_records(records, dry_run=dry_run, own=own, push_out=push_out)
        if not dry_run and result.added:
            self.async_changed()
            self._async_report_cap(result.evicted)
            self._async_embed_missing()
        return result

    async def async_edit(
        self,
        memory_id: str,
        content: Any,
        tags: Iterable[Any] | None = None,
        provenance: Provenance | None = None,
    ) -> SaveResult | None:
        """A person's correction: embedded (one request), never judged by a model; the
        old words go to the archive as edited. None when nothing changed; MemoryInputError on
        bad input."""
        await self.async_loaded()
        checked = validate_content(content)
        if tags is not None:
            validate_tags(tags)
        if self.store.get(memory_id) is None:
            raise MemoryInputError("memory_unknown", memory_id=memory_id)
        await self._async_words_indexed()
        identity, vectors = await self._async_vectors([checked])
        usable = vectors is not None and self._vectors_comparable(identity)
        result = self.store.edit(
            memory_id,
            checked,
            tags,
            vector=vectors[0] if usable and vectors else None,
            provenance=provenance,
        )
        if result is not None:
            self.async_changed()
            if not usable:
                self._async_embed_missing()
        return result

    def set_pinned(self, memory_id: str, pinned: bool) -> Memory:
        """Pin or unpin, and save soon."""
        memory = self.store.set_pinned(memory_id, pinned)
        self.async_changed()
        return memory

    async def async_restore(self, memory_id: str, *, push_out: bool = True) -> SaveResult:
        """An archived memory back in use; embedded again in the background. (A memory
        saying the same words is found by the loaded words' index: built in the executor
        first.)"""
        await self.async_loaded()
        await self._async_words_indexed()
        result = self.store.restore(memory_id, push_out=push_out)
        self.async_changed()
        self._async_report_cap(result.evicted)
        self._async_embed_missing()
        return result

    def cleanup_archived(self, retention_days: float | None = None) -> list[str]:
        """Delete archived records past the retention and save soon."""
        deleted = self.store.cleanup_archived(retention_days)
        if deleted:
            self.async_changed()
        return deleted

    async def async_close(self) -> None:
        """Stop embedding (and its retry) and write what is pending."""
        if self._loading is not None and not self._loading.done():
            # Nothing changed before the memories were read: nothing to write either.
            self._loading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loading
        if self._cancel_indexing is not None:
            self._cancel_indexing()
            self._cancel_indexing = None
        self._async_stop_embedding()
        await self.file.async_close()


def _settings(raw: Any, defaults: MemorySettings) -> MemorySettings:
    if raw is None:
        return defaults
    return MemorySettings(
        archive_retention_days=float(
            raw.get("archive_retention_days", defaults.archive_retention_days)
        ),
        high_confidence_threshold=int(
            raw.get("high_confidence_threshold", defaults.high_confidence_threshold)
        ),
        max_memories_per_type=int(raw.get("max_memories_per_type", defaults.max_memories_per_type)),
        max_private_memories_per_type=int(
            raw.get("max_private_memories_per_type", defaults.max_private_memories_per_type)
        ),
        relevance_score_threshold=float(
            raw.get("relevance_score_threshold", defaults.relevance_score_threshold)
        ),
    )
