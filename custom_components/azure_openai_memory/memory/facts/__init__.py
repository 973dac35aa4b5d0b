"""Durable facts about the household, remembered for years: this package owns the
memories' deduplication, confidence, archive, retrieval and patterns, in pure Python.
Its modules, each built on the ones before it: models (what a memory is, settings,
errors, input checks), text (words, BM25), vectors (embeddings), supersede (when a new
memory replaces an old one), records (the indexed records and their stored form),
store (FactStore: save, search, patterns, forget, a person's edits) and pages (the
filters and order of a listing). Other code imports from the package.
"""

from .models import (
    MAX_CONTENT_LENGTH,
    MAX_SEARCH_LIMIT,
    MAX_TAGS,
    ArchivedMemory,
    FactError,
    FactSettings,
    ForgetResult,
    Memory,
    MemoryConfidence,
    MemorySource,
    MemoryType,
    SaveAction,
    SaveResult,
    SearchResult,
    parse_confidence,
    parse_source,
    parse_type,
    validate_content,
    validate_limit,
    validate_tags,
)
from .pages import MAX_PAGE_SIZE, MemoryFilter, active_page, archived_page
from .records import FACTS_VERSION, migrate_facts
from .store import EDITED, KEYWORD_WEIGHT, MIN_SIMILARITY, VECTOR_WEIGHT, FactStore
from .supersede import (
    CANDIDATE_SIMILARITY,
    SAME_BODY_PART_SIMILARITY,
    SAME_TAGS_SIMILARITY,
    SUPERSEDE_SIMILARITY,
    Relation,
    Verdict,
    conflicting,
)
from .text import FUZZY_SIMILARITY, bm25, normalize_for_comparison, terms
from .vectors import Vector, decode_vector, encode_vector

__all__ = [
    "CANDIDATE_SIMILARITY",
    "EDITED",
    "FACTS_VERSION",
    "FUZZY_SIMILARITY",
    "KEYWORD_WEIGHT",
    "MAX_CONTENT_LENGTH",
    "MAX_PAGE_SIZE",
    "MAX_SEARCH_LIMIT",
    "MAX_TAGS",
    "MIN_SIMILARITY",
    "SAME_BODY_PART_SIMILARITY",
    "SAME_TAGS_SIMILARITY",
    "SUPERSEDE_SIMILARITY",
    "VECTOR_WEIGHT",
    "ArchivedMemory",
    "FactError",
    "FactSettings",
    "FactStore",
    "ForgetResult",
    "Memory",
    "MemoryConfidence",
    "MemoryFilter",
    "MemorySource",
    "MemoryType",
    "Relation",
    "SaveAction",
    "SaveResult",
    "SearchResult",
    "Vector",
    "Verdict",
    "active_page",
    "archived_page",
    "bm25",
    "conflicting",
    "decode_vector",
    "encode_vector",
    "migrate_facts",
    "normalize_for_comparison",
    "parse_confidence",
    "parse_source",
    "parse_type",
    "terms",
    "validate_content",
    "validate_limit",
    "validate_tags",
]
