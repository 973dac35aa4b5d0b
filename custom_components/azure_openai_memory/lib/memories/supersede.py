"""When a new memory replaces an old one rather than standing beside it: this module owns
the rules, and their thresholds, by which a save supersedes (archives) an older memory of
the same type, and the verdict a model may give instead.

Superseding on any shared tag would let "Anna prefers 19 degrees at night" archive "Anna
takes her coffee black"; and the same tags with a loose similarity archived "Anna doesn't
want any speaker announcements during her video calls in the office" for "Anna likes
lo-fi music on the office speaker while she works". So the rule alone (offline) supersedes
only what is plainly the same thing: shared tags and embeddings at least
SUPERSEDE_SIMILARITY alike (without embeddings, the same tag set and several shared words
of their own), one body part's injury history, and never tags naming different people,
rooms or devices. When unsure both stay: a duplicate costs less than a lost fact.

A model judges better: a memory of the same subject at least CANDIDATE_SIMILARITY alike
is a candidate, and a model asked whether the new fact replaces, adds to or repeats it
gives a Verdict that decides instead of the rule. MemoryStore finds the candidates through
its indexes and asks these rules.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
import functools

from .models import MemoryType
from .text import ENGLISH, language_of, tag_terms, terms


class Relation(StrEnum):
    """How a new fact relates to an older one of the same subject, as a model judges it."""

    REPLACES = "replaces"  # the older one is out of date: archived, the new one takes over
    ADDS = "adds"  # both hold: both are kept
    REPEATS = "repeats"  # the same fact again: the older one is reinforced
    UNSURE = "unsure"  # both are kept


@dataclass(frozen=True, slots=True)
class Verdict:
    """A model's judgement of a new fact against one candidate (update_candidate)."""

    memory_id: str
    relation: Relation


# Without embeddings, the same tag set supersedes only when the two texts share at least
# SAME_TAGS_SHARED_WORDS meaningful words and this Jaccard overlap of them, the words of
# the tag values ("anna" of person:anna) and pronouns left out: a name and one verb alone
# ("Anna is allergic to nuts" / "... to cats", "Anna likes tea" / "... jazz") reached 0.33.
# A duplicate costs less than a lost fact, so when unsure both stay. On the labelled
# supersede pairs this finds 2 of the 21 same-tag updates by words (7 with the
# injury-history rule) and keeps every distinct pair apart.
SAME_TAGS_WORD_OVERLAP = 0.40
SAME_TAGS_SHARED_WORDS = 2
# Words that say nothing about which fact a memory is, only about whom: the personal
# and possessive pronouns of each language a memory is read in (text.language_of).
# Most are stop words there already; these are left out of the shared words too.
_PRONOUN_TEXT = {
    "en": "he him his she her hers they them their theirs we us our ours you your i me my it its",
    "de": (
        "ich mich mir mein meine meinen meinem meiner meines du dich dir dein deine deinen "
        "deinem deiner deines er ihn ihm sein seine seinen seinem seiner seines sie ihr ihre "
        "ihren ihrem ihrer ihres es wir uns unser unsere unseren unserem unserer euch euer "
        "eure"
    ),
    "nl": (
        "ik mij me mijn jij je jou jouw jullie u uw hij hem zijn zij ze haar het wij we ons "
        "onze hun hen"
    ),
    "fr": (
        "je me moi mon ma mes tu te toi ton ta tes il elle lui son sa ses nous notre nos "
        "vous votre vos ils elles leur leurs eux on"
    ),
    "es": (
        "yo me mi mis tú te ti tu tus él ella le lo la su sus suyo suya suyos suyas "
        "nosotros nosotras nos nuestro nuestra nuestros nuestras vosotros os vuestro "
        "vuestra ustedes usted ellos ellas les"
    ),
    "it": (
        "io me mi mio miei mie tu te ti tuo tua tuoi tue lui lei egli lo la gli le suo sua "
        "suoi sue noi ci nostro nostra nostri nostre voi vi vostro vostra vostri vostre loro si"
    ),
}


@functools.lru_cache(maxsize=8)
def _pronouns(language: str) -> frozenset[str]:
    """A language's pronouns as written and as read (stemmed) in it."""
    words = _PRONOUN_TEXT.get(language, _PRONOUN_TEXT[ENGLISH]).split()
    return frozenset(words).union(*(terms(word, language) for word in words))


# Shared tags alone do not make two memories the same fact: their embeddings must be at
# least this alike too (measured on the retrieval benchmark's labelled set).
SUPERSEDE_SIMILARITY = 0.80
# Nor does the same tag set: "Mia still wants a dim orange night light in her room" and
# "Mia wants her ceiling light purple when she has friends over" (both person:mia,
# room:mia_room, device:light) are 0.73 alike with all-MiniLM-L6-v2, two labelled home
# facts 0.63; the labelled updates with the same tag set are 0.59-0.91. Without a model,
# the same tag set asks as much as shared tags.
SAME_TAGS_SIMILARITY = SUPERSEDE_SIMILARITY
# One body part's injury history is one record that changes over time: with the same tag
# set, this is enough. The labelled knee update ("Occasional knee soreness", then "Chronic
# knee pain after runs over 15km") is 0.66 alike.
SAME_BODY_PART_SIMILARITY = 0.55
# A model is asked about the most alike memory sharing a tag from this similarity on: the
# labelled updates are 0.53 and more alike (all-MiniLM-L6-v2); 10 of the 37 labelled
# pairs of distinct facts are too, and are the model's to keep apart.
CANDIDATE_SIMILARITY = 0.50


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


def _own_words(text: str, tags: tuple[str, ...]) -> set[str]:
    """A text's meaningful words besides its tags' and pronouns, all read in its language."""
    language = language_of(text)
    ignored = {term for tag in tags for term in tag_terms(tag, language)}
    return set(terms(text, language)) - ignored - _pronouns(language)


def _words_alike(new: str, old: str, tags: tuple[str, ...]) -> bool:
    """Whether two texts share enough meaningful words, besides the tags' and pronouns."""
    a, b = _own_words(new, tags), _own_words(old, tags)
    shared = len(a & b)
    return shared >= SAME_TAGS_SHARED_WORDS and shared / len(a | b) >= SAME_TAGS_WORD_OVERLAP


def one_body_part(kind: MemoryType, tags: tuple[str, ...]) -> bool:
    """An injury history tagged with a body part: one record that changes over time."""
    return kind is MemoryType.INJURY_HISTORY and any(t.startswith("body:") for t in tags)


def same_tags_similarity(kind: MemoryType, tags: tuple[str, ...]) -> float:
    """How alike the embeddings of two memories with this tag set must be to be one fact."""
    return SAME_BODY_PART_SIMILARITY if one_body_part(kind, tags) else SAME_TAGS_SIMILARITY


def same_words_alike(kind: MemoryType, tags: tuple[str, ...], new: str, old: str) -> bool:
    """Without embeddings, whether a memory with the same tag set is the same fact.

    The tag set alone archived "Mia is ten" for "Mia's best friend is Lotte"; a name
    and a verb archived "Anna is allergic to nuts" for "... to cats". Only texts sharing
    several words of their own are one fact updated. One body part's injury history is
    one record that changes over time ("Occasional knee soreness", then "Chronic knee
    pain after runs over 15km", share only the knee).
    """
    return one_body_part(kind, tags) or _words_alike(new, old, tags)
