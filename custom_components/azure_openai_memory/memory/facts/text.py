"""The words of a memory, and ranking memories by them: this module owns everything
that reads text, from the normalisation that finds a duplicate and the meaningful words
(light English stems, stop words left out) of content, tag values and questions, to the
character n-grams that let a word match words spelled alike and KeywordIndex, the BM25
inverted index that ranks by words alone when there are no embeddings and breaks ties
between alike meanings when there are.
"""

from collections.abc import Iterable, Sequence
import functools
import math
import re
from typing import Any
import unicodedata

import numpy as np
import numpy.typing as npt

# A question's word also matches the index's words spelled alike (character 4-grams of
# the padded stems, Dice coefficient at least FUZZY_SIMILARITY: "room" finds "bedroom",
# "heat" finds "heater"), weighted by that similarity. Tuned on the odd question ids of
# the labelled home: keyword hit@5 0.39 -> 0.48 there, 0.41 -> 0.47 on the even ids.
FUZZY_GRAM = 4
FUZZY_SIMILARITY = 0.4

_WORD = re.compile(r"\w+")
_STOP_TEXT = (
    "a an and are as at be been by can do does did for from has have how i in is it its "
    "me my of on or our should so that the their them there these they this to was we "
    "were what when where which who why will with you your about know tell"
)
_STOP_WORDS = frozenset(_STOP_TEXT.split())


# What makes a number that number stays: a sign or decimal separator before it, and the
# separators, time colons, slashes and dashes between its digits ("-18", ".5", "2,5",
# "7:30", "12-34"). Dropped as punctuation, "2.5 mg" would read "25 mg" and a changed
# dose would only reinforce the old one. Such a mark goes when no digit follows, when a
# ":", "/" or "'" does not follow a digit either, and when a "-", "." or "," follows a
# letter or another separator ("x-5", "a..5"). Each alternative starts with its
# character class, so that text without punctuation costs no more than a scan.
_NUMBER_MARK_DROPPED = (
    r"[.,:/'-](?:(?!\d)|(?<=[:/'])(?<!\d.)|(?<=[-.,])(?:(?<=[^\W\d].)|(?<=[.,].)))"
)
# ASCII punctuation other than number marks; ASCII symbols ($ + < = > ^ ` | ~) and "%" stay.
_ASCII_DROPPED = re.compile(rf"[!\"#&()*;?@\[\\\]{{}}]|{_NUMBER_MARK_DROPPED}")
# Beyond ASCII, every other character outside words is looked at (_symbol_or_nothing).
_OTHER_CHARACTER = re.compile(rf"[^\w\s.,:/'-]|{_NUMBER_MARK_DROPPED}")
# Minus signs and apostrophes NFKC leaves apart from their ASCII forms; emoji variation
# selectors (text or picture style) say nothing about the fact.
_SAME_CHARACTERS = {"\u2212": "-", "\u2019": "'", "\u02bc": "'", "\ufe0e": "", "\ufe0f": ""}
_SAME_CHARACTER = re.compile(f"[{''.join(_SAME_CHARACTERS)}]")


def _symbol_or_nothing(match: re.Match[str]) -> str:
    """A character outside words still says something when it is a symbol (a unit, a
    currency, an emoji: "°", "€", "🐱"), a combining mark or "%"; punctuation and format
    characters go."""
    char = match.group()
    return char if unicodedata.category(char)[0] in "SM" or char in "%‰" else ""


def normalize_for_comparison(content: str) -> str:
    """Content as compared to find an exact repeat: case (and compatibility forms) folded,
    punctuation and spacing gone, but numbers, times, signs, units and symbols kept.

    Content of punctuation alone is compared as written, spacing collapsed: "?!" is
    not "!!".
    """
    if content.isascii():
        folded = content.lower()
        kept = _ASCII_DROPPED.sub("", folded)
    else:
        folded = unicodedata.normalize("NFKC", content).casefold()
        folded = _SAME_CHARACTER.sub(lambda m: _SAME_CHARACTERS[m.group()], folded)
        kept = _OTHER_CHARACTER.sub(_symbol_or_nothing, folded)
    return " ".join(kept.split()) or " ".join(folded.split())


_NUMBER = re.compile(r"\d+(?:[.,:/'-]\d+)*")


def numbers_of(content: str) -> list[str]:
    """The numbers a text states, as written (times, decimals and codes whole): two texts
    with other numbers are never one fact said again."""
    return _NUMBER.findall(normalize_for_comparison(content))


@functools.lru_cache(maxsize=65_536)
def _term(word: str) -> str:
    """A word as indexed: a light English stem, so 'sleeps' finds 'sleep'; '' to skip it."""
    if word in _STOP_WORDS or (len(word) == 1 and not word.isdigit()):
        return ""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    """The words that carry meaning, stemmed."""
    return [term for word in _WORD.findall(text.lower()) if (term := _term(word))]


@functools.lru_cache(maxsize=16_384)
def tag_terms(tag: str) -> tuple[str, ...]:
    """A tag's value is words of the memory too: `person:anna` is about Anna."""
    return tuple(terms(tag.rsplit(":", 1)[-1].replace("_", " ")))


# The n-grams of a term with a digit: none, and nothing cached (a home's numbers are many).
_NO_GRAMS: frozenset[str] = frozenset()


def _grams(term: str) -> frozenset[str]:
    """A stem's character n-grams, padded so that its start and end count: ' roo', 'oom '.

    None for a term with a digit: 19 degrees are not 190, however alike they look.
    """
    if any(char.isdigit() for char in term):
        return _NO_GRAMS
    return _word_grams(term)


@functools.lru_cache(maxsize=65_536)
def _word_grams(term: str) -> frozenset[str]:
    padded = f" {term} "
    return frozenset(
        padded[i : i + FUZZY_GRAM] for i in range(max(1, len(padded) - FUZZY_GRAM + 1))
    )


def document(content: str, tags: Iterable[str]) -> list[str]:
    """The words a memory is found by: its content's and its tag values'."""
    words = terms(content)
    for tag in tags:
        words.extend(tag_terms(tag))
    return words


class KeywordIndex:
    """BM25 over an inverted index: the cost of a query is its terms' postings, not the store.

    Documents are small numbers (FactStore's rows). A term's posting is kept as numpy
    arrays, rebuilt only after a document with that term changed, so a query over
    10,000 memories is a handful of vector operations.

    A query term matches the indexed terms spelled alike too (their character n-grams
    at least FUZZY_SIMILARITY alike by Dice), each weighted by that similarity; a document
    counts the best of them. The n-grams index the vocabulary, not the documents: it is
    built at the first query and kept up to date as terms come and go.
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        # A term's documents and its count in each; a term that one document holds once
        # is just that document's number (most terms of a home are: names, numbers).
        self._postings: dict[str, dict[int, int] | int] = {}
        self._arrays: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]] = {}
        # Each document's distinct words (the postings hold their counts).
        self._words: dict[int, tuple[str, ...]] = {}
        self._lengths = np.zeros(0, dtype=np.float32)
        self._total_length = 0
        # n-gram -> the indexed terms that have it (None until a query needs it).
        self._by_gram: dict[str, set[str]] | None = None

    def __len__(self) -> int:
        return len(self._words)

    def add(self, doc: int, words: Sequence[str]) -> None:
        """Index a document under a number."""
        self.remove(doc)
        counts: dict[str, int] = {}
        for word in words:
            counts[word] = counts.get(word, 0) + 1
        postings, arrays, by_gram = self._postings, self._arrays, self._by_gram
        for word, count in counts.items():
            if _post(postings, word, doc, count) and by_gram is not None:
                for gram in _grams(word):
                    by_gram.setdefault(gram, set()).add(word)
            if arrays:
                arrays.pop(word, None)
        if doc >= self._lengths.size:
            grown = np.zeros(max(doc + 1, 2 * self._lengths.size, 64), dtype=np.float32)
            grown[: self._lengths.size] = self._lengths
            self._lengths = grown
        self._lengths[doc] = len(words)
        self._words[doc] = tuple(counts)
        self._total_length += len(words)

    def add_new(self, documents: Iterable[tuple[int, Sequence[str]]]) -> None:
        """Index many documents not indexed yet (loading): add() without its per-call care."""
        postings, words_of = self._postings, self._words
        lengths = self._lengths
        total = 0
        for doc, words in documents:
            counts: dict[str, int] = {}
            for word in words:
                counts[word] = counts.get(word, 0) + 1
            for word, count in counts.items():
                _post(postings, word, doc, count)
            words_of[doc] = tuple(counts)
            if doc >= lengths.size:
                grown = np.zeros(max(doc + 1, 2 * lengths.size, 64), dtype=np.float32)
                grown[: lengths.size] = lengths
                lengths = self._lengths = grown
            lengths[doc] = len(words)
            total += len(words)
        self._total_length += total
        self._arrays.clear()
        self._by_gram = None

    def remove(self, doc: int) -> None:
        """Forget a document."""
        if (words := self._words.pop(doc, None)) is None:
            return
        self._total_length -= int(self._lengths[doc])
        self._lengths[doc] = 0
        postings = self._postings
        for word in words:
            posting = postings[word]
            self._arrays.pop(word, None)
            if isinstance(posting, dict):
                del posting[doc]
                if len(posting) == 1:
                    ((last, count),) = posting.items()
                    if count == 1:
                        postings[word] = last
                if posting:
                    continue
            del postings[word]
            if self._by_gram is not None:
                for gram in _grams(word):
                    alike = self._by_gram[gram]
                    alike.discard(word)
                    if not alike:
                        del self._by_gram[gram]

    def _posting(self, word: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        if (arrays := self._arrays.get(word)) is None:
            posting = self._postings[word]
            if isinstance(posting, dict):
                docs = np.fromiter(posting.keys(), dtype=np.int64, count=len(posting))
                counts = np.fromiter(posting.values(), dtype=np.float32, count=len(posting))
            else:
                docs, counts = np.array([posting], dtype=np.int64), np.ones(1, dtype=np.float32)
            arrays = self._arrays[word] = (docs, counts)
        return arrays

    def alike(self, word: str) -> dict[str, float]:
        """The indexed terms a query term matches, with their weight (1.0: the term itself)."""
        if self._by_gram is None:
            self._by_gram = {}
            for term in self._postings:
                for gram in _grams(term):
                    self._by_gram.setdefault(gram, set()).add(term)
        grams = _grams(word)
        found = {word: 1.0} if word in self._postings else {}
        if not grams:
            return found
        shared: dict[str, int] = {}
        for gram in grams:
            for term in self._by_gram.get(gram, ()):
                shared[term] = shared.get(term, 0) + 1
        for term, common in shared.items():
            if term != word:
                similarity = 2 * common / (len(grams) + len(_grams(term)))
                if similarity >= FUZZY_SIMILARITY:
                    found[term] = similarity
        return found

    def _term_scores(
        self, term: str, count: int, average: float
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.floating[Any]]]:
        """The documents holding an indexed term and its BM25 part in each."""
        docs, tf = self._posting(term)
        idf = math.log(1 + (count - docs.size + 0.5) / (docs.size + 0.5))
        k1, b = self.k1, self.b
        length = self._lengths[docs]
        return docs, idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average))

    def scores(
        self, query: Sequence[str], size: int
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int32]]:
        """BM25 score and number of distinct query terms matched, for documents 0..size-1.

        A query term's part in a document is the best of its alike terms' BM25 parts,
        each times the term's similarity.
        """
        scores = np.zeros(size, dtype=np.float32)
        hits = np.zeros(size, dtype=np.int32)
        count = len(self._words)
        if not count:
            return scores, hits
        average = self._total_length / count or 1.0
        for word in dict.fromkeys(query):
            alike = self.alike(word)
            if not alike:
                continue
            if len(alike) == 1 and word in alike:
                docs, part = self._term_scores(word, count, average)
                scores[docs] += part
                hits[docs] += 1
                continue
            best = np.zeros(size, dtype=np.float32)
            for term, weight in alike.items():
                docs, part = self._term_scores(term, count, average)
                best[docs] = np.maximum(best[docs], weight * part)
            scores += best
            hits += best > 0
        return scores, hits


def _post(postings: dict[str, dict[int, int] | int], word: str, doc: int, count: int) -> bool:
    """A document's count of a word into the word's posting; whether the word is new."""
    if (posting := postings.get(word)) is None:
        postings[word] = doc if count == 1 else {doc: count}
        return True
    if isinstance(posting, dict):
        posting[doc] = count
    elif posting != doc:
        postings[word] = {posting: 1, doc: count}
    else:
        postings[word] = doc if count == 1 else {doc: count}
    return False


def bm25(query: str, documents: Sequence[str], *, k1: float = 1.5, b: float = 0.75) -> list[float]:
    """BM25 score of each document for the query (0.0 where no word matches)."""
    index = KeywordIndex(k1, b)
    for number, document in enumerate(documents):
        index.add(number, terms(document))
    scores, _hits = index.scores(terms(query), len(documents))
    return [float(score) for score in scores]
