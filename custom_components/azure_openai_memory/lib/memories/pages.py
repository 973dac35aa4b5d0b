"""What a page of memories shows: this module owns the filters a list of memories takes
(type, tags, least confidence, words) and the order a list is shown in, so that a screen
asks for the rows it shows and never for a whole store of 10,000 memories. Active
memories are listed pinned first, then most recently updated; archived ones most recently
archived first. It reads memories and decides nothing about them.
"""

from collections.abc import Iterable
from dataclasses import dataclass
import heapq

from .models import CONFIDENCE_ORDER, ArchivedMemory, Memory, MemoryConfidence, MemoryType
from .text import normalize_for_comparison

# Rows a page holds at most.
MAX_PAGE_SIZE = 100


@dataclass(frozen=True, slots=True)
class MemoryFilter:
    """Which memories a list shows: every condition given must hold."""

    memory_type: MemoryType | None = None
    # Tags as validate_tags folds them; a memory must carry all of them.
    tags: tuple[str, ...] = ()
    min_confidence: MemoryConfidence | None = None
    # Words the memory's text must contain (as normalize_for_comparison folds both).
    words: str = ""

    def allows(self, memory: Memory) -> bool:
        """Whether a memory passes every condition."""
        if self.memory_type is not None and memory.type is not self.memory_type:
            return False
        if self.min_confidence is not None and (
            CONFIDENCE_ORDER[memory.confidence] < CONFIDENCE_ORDER[self.min_confidence]
        ):
            return False
        if any(tag not in memory.tags for tag in self.tags):
            return False
        if self.words:
            wanted = normalize_for_comparison(self.words)
            return wanted in normalize_for_comparison(memory.content)
        return True


def active_page(
    memories: Iterable[Memory], wanted: MemoryFilter, offset: int, limit: int
) -> tuple[list[Memory], int]:
    """One page of the memories a filter allows, pinned first, then the latest updated;
    and how many it allows in all."""
    matching = [memory for memory in memories if wanted.allows(memory)]
    shown = heapq.nlargest(offset + limit, matching, key=lambda m: (m.pinned, m.updated_at, m.id))
    return shown[offset:], len(matching)


def archived_page(
    archived: Iterable[ArchivedMemory], wanted: MemoryFilter, offset: int, limit: int
) -> tuple[list[ArchivedMemory], int]:
    """One page of the archived memories a filter allows, the latest archived first; and
    how many it allows in all."""
    matching = [one for one in archived if wanted.allows(one.memory)]
    shown = heapq.nlargest(offset + limit, matching, key=lambda a: (a.archived_at, a.id))
    return shown[offset:], len(matching)
