"""When a new memory replaces an old one rather than standing beside it: this module owns
the rules, and their thresholds, by which a save supersedes (archives) an older memory of
the same type. Superseding on any shared tag would let "Anna prefers 19 degrees at night"
archive "Anna takes her coffee black"; so a new memory supersedes an old one only when
it is about the same thing: the same tag set and alike embeddings (or, without
embeddings, several shared words of their own), or shared tags and embeddings at least
SUPERSEDE_SIMILARITY alike, and never when their tags name different people, rooms or
devices. FactStore finds the candidates through its indexes and asks these rules.
"""

from collections.abc import Iterable

from .models import MemoryType
from .text import tag_terms, terms

# Without embeddings, the same tag set supersedes only when the two texts share at least
# SAME_TAGS_SHARED_WORDS meaningful words and this Jaccard overlap of them, the words of
# the tag values ("anna" of person:anna) and pronouns left out: a name and one verb alone
# ("Anna is allergic to nuts" / "... to cats", "Anna likes tea" / "... jazz") reached 0.33.
# A duplicate costs less than a lost fact, so when unsure both stay. On the labelled
# supersede pairs this finds 2 of the 21 same-tag updates by words (7 with the
# injury-history rule) and keeps every distinct pair apart.
SAME_TAGS_WORD_OVERLAP = 0.40
SAME_TAGS_SHARED_WORDS = 2
# Words that say nothing about which fact a memory is, only about whom.
_PRONOUNS = frozenset(
    [
        "he",
        "him",
        "his",
        "she",
        "her",
        "hers",
        "they",
        "them",
        "their",
        "theirs",
        "we",
        "us",
        "our",
        "ours",
        "you",
        "your",
        "i",
        "me",
        "my",
        "it",
        "its",
    ]
)

# Shared tags alone do not make two memories the same fact: their embeddings must be at
# least this alike too (measured on the retrieval benchmark's labelled set).
SUPERSEDE_SIMILARITY = 0.80
# Even the same tag set ("person:mia" on "Mia is ten" and "Mia's best friend is Lotte")
# is not the same fact when embeddings say the two mean different things; without
# embeddings, shared words decide (SAME_TAGS_WORD_OVERLAP). The labelled knee update
# ("Occasional knee soreness", then "Chronic knee pain after runs over 15km") is about
# 0.7 alike with all-MiniLM-L6-v2 (retrieval benchmark).
SAME_TAGS_SIMILARITY = 0.55


def conflicting(new: Iterable[str], old: Iterable[str]) -> bool:
    """Tags naming different things of one kind: `person:anna` and `person:ben`, no shared one.

    Two such memories are about different people (rooms, devices) however alike they read.
    """
    values: dict[str, set[str]] = {}
    for tag in new:
        if ":" in tag:
            prefix, value = tag.split(":", 1)
            values.setdefault(prefix, set()).add(value)
    theirs: dict[str, set[str]] = {}
    for tag in old:
        if ":" in tag:
            prefix, value = tag.split(":", 1)
            theirs.setdefault(prefix, set()).add(value)
    return any(prefix in theirs and not mine & theirs[prefix] for prefix, mine in values.items())


def _words_alike(new: str, old: str, tags: tuple[str, ...]) -> bool:
    """Whether two texts share enough meaningful words, besides the tags' and pronouns."""
    ignored = {term for tag in tags for term in tag_terms(tag)} | _PRONOUNS
    a, b = set(terms(new)) - ignored, set(terms(old)) - ignored
    shared = len(a & b)
    return shared >= SAME_TAGS_SHARED_WORDS and shared / len(a | b) >= SAME_TAGS_WORD_OVERLAP


def same_words_alike(kind: MemoryType, tags: tuple[str, ...], new: str, old: str) -> bool:
    """Without embeddings, whether a memory with the same tag set is the same fact.

    The tag set alone archived "Mia is ten" for "Mia's best friend is Lotte"; a name
    and a verb archived "Anna is allergic to nuts" for "... to cats". Only texts sharing
    several words of their own are one fact updated. One body part's injury history is
    one record that changes over time ("Occasional knee soreness", then "Chronic knee
    pain after runs over 15km", share only the knee).
    """
    if kind is MemoryType.INJURY_HISTORY and any(t.startswith("body:") for t in tags):
        return True
    return _words_alike(new, old, tags)
