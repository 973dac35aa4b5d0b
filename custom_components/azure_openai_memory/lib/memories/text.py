"""The words of a memory, and ranking memories by them: this module owns everything
that reads text, from the normalisation that finds a duplicate and the meaningful words
(light stems, stop words left out) of content, tag values and questions, to the
character n-grams that let a word match words spelled alike and KeywordIndex, the BM25
inverted index that ranks by words alone when there are no embeddings and breaks ties
between alike meanings when there are.

The meaningful words are read in English, German, Dutch, French, Spanish or Italian.
A memory's language is not stored (the model writes content in whatever language the
household speaks), so each text's language is told by its own stop words. English counts
those no other language has ("the", "and", "to"); each other language those that are no
English word ("der", "ist", "het", "est", "los", "della"; not "hat", "son", "come",
"door"; German "die" and Italian "dove" count, rare as they are in an English home's
facts); words several share ("in", "is", "was") count for none. The other language
counting most is the text's when it counts more than English; a text no stop word tells
is of the language whose letters it has ("ß", "ñ", "ç"); else it is English. So an
English text is read as before unless it holds more of another language's stop words
than of its own: every text of the labelled English home is. That language's stop words
are left out and its light suffix stripping stems the rest (French, Spanish and Italian
share one stemmer, as their stop words are much alike); a memory's tag values are read
in its content's language. One set of rules for every language would not do: the stop
words of one are words of another (German "hat", Spanish "son", Italian "come" are
English words) and German or Romance suffix rules would fold English words together
("bite" and "bit", "plane" and "plan"). A question in another language than its memory,
or too short to tell, still meets the memory's words through the words spelled alike
(FUZZY_SIMILARITY) below.
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


ENGLISH = "en"
# The other languages read, in the order that settles a tie of their stop words.
OTHER_LANGUAGES = ("de", "nl", "fr", "es", "it")
# Their stop words as written: articles, prepositions, conjunctions, pronouns, the
# verbs to be, to have, can, must and want, question words, and "know" and "tell" (as
# English's). Negations and words that name something stay ("nicht", "pas", "no", "été"
# is summer too, Dutch "haar" is hair). "mia" (Italian and Spanish "my") is a name too.
_OTHER_STOP_TEXT = {
    "de": (
        "der die das den dem des ein eine einen einem einer eines und oder aber als am an "
        "auf aus bei beim bin bist ist sind seid war waren wird werden wurde wurden hat "
        "habe hast haben hatte hatten kann kannst können konnte soll sollte sollen will "
        "willst wollen muss müssen mit nach von vom vor zu zum zur für über unter um im "
        "in ins bis durch gegen ohne ich mich mir mein meine meinen meinem meiner meines "
        "du dich dir dein deine deinen deinem deiner deines er ihn ihm sein seine seinen "
        "seinem seiner seines sie ihr ihre ihren ihrem ihrer ihres es wir uns unser "
        "unsere unseren unserem unserer euch euer eure man was wann wo wer wen wem wessen "
        "wie warum wieso weshalb welche welcher welches welchen welchem woher wohin womit "
        "dass daß so auch noch schon denn doch ja mal sich dies diese dieser dieses diesen "
        "diesem dort da hier weißt weiß wisst wissen sag sage sagt sagen erzähl erzähle gibt"
    ),
    "nl": (
        "de het een en of maar als aan op uit bij in is zijn was waren wordt worden werd "
        "werden heeft hebben heb hebt had hadden kan kun kunt kunnen zal zou zullen wil "
        "wilt willen moet moeten met naar van voor tot om over onder door tegen zonder ik "
        "mij me mijn jij je jou jouw jullie u uw hij hem zij ze wij we ons onze hun hen "
        "wat wanneer waar wie hoe waarom welke welk waarmee dat dit deze die daar hier er "
        "ook nog al dan toch wel zo weet weten zeg vertel"
    ),
    "fr": (
        "le la les l un une des du de d et ou mais donc car à au aux en dans sur sous avec "
        "sans pour par chez vers entre est sont suis es sommes êtes était étaient être a ai "
        "as avons avez ont avait avaient avoir peut peux pouvons pouvez peuvent doit dois "
        "devons devez doivent veut veux voulons voulez veulent je j me m moi mon ma mes tu "
        "te t toi ton ta tes il elle on nous vous ils elles lui leur leurs eux son sa ses "
        "notre nos votre vos se s y ce c cet cette ces ceci cela ça qui que qu quoi quand "
        "où comment pourquoi quel quelle quels quelles combien sais sait savez dis dites"
    ),
    "es": (
        "el la los las lo un una unos unas y o pero a al del de en con sin por para sobre "
        "entre hasta desde hacia es son soy eres somos está están estoy estás estamos fue "
        "fueron era eran ser estar ha han he has hemos había tiene tienen tengo tienes "
        "tenemos puede pueden puedo puedes debe deben quiere quieren quiero quieres yo me "
        "mi mis tú te ti tu tus él ella ello nos nosotros nosotras vosotros os usted "
        "ustedes ellos ellas le les se su sus suyo suya nuestro nuestra nuestros nuestras "
        "este esta estos estas ese esa esos esas eso esto aquí allí que qué quien quién "
        "quienes cual cuál cuales cuándo cuando dónde donde cómo como cuánto cuánta cuántos "
        "cuántas sabes sabe dime dinos"
    ),
    "it": (
        "il lo la i gli le un uno una e ed o ma di del dello della dei degli delle dell a "
        "al allo alla ai agli alle all da dal dallo dalla dai dagli dalle dall in nel nello "
        "nella nei negli nelle nell su sul sullo sulla sui sugli sulle sull con per tra fra "
        "è sono sei siamo siete era erano essere ha ho hai abbiamo avete hanno aveva avere "
        "può posso puoi possono deve devo vuole voglio vuoi io me mi mio miei mie tu te ti "
        "tuo tua tuoi tue lui lei egli noi ci nostro nostra nostri nostre voi vi vostro "
        "vostra vostri vostre loro si suo sua suoi sue questo questa questi queste quello "
        "quella quelli quelle che chi cosa quando dove come perché quale quali quanto quanta "
        "quanti quante sai sa dimmi dici dov"
    ),
}
# English words spelled as another language's stop word: they tell no language apart
# (a Spanish "son" from an English one, a German "hat"). German "die" and Italian "dove"
# do: they are the commonest words there, and rare in what an English home remembers.
_ENGLISH_TOO = frozenset(
    """ai al all bin car come comment con da dan den dies dime dinos dis dit door ed er era ha
    had han hat he hem hen ho hoe hun lei lo ma man met mi mis om over par per pour sag sage
    sans sin son soy ta ton tot um un van vi war yo""".split()  # noqa: SIM905
)
# Letters only one of the languages writes: a text that no stop word tells is its.
_LETTERS = (("de", frozenset("äöüß")), ("es", frozenset("ñ")), ("fr", frozenset("çœêâîôû")))
# Folded as accents are: a letter NFKD does not take apart.
_FOLDED = {"ß": "ss", "œ": "oe", "æ": "ae"}


@functools.lru_cache(maxsize=65_536)
def _fold(word: str) -> str:
    """A word without its accents: 'küche' -> 'kuche', 'straße' -> 'strasse'."""
    if word.isascii():
        return word
    for letter, folded in _FOLDED.items():
        word = word.replace(letter, folded)
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


_OTHER_STOPS = {
    language: frozenset(_fold(word) for word in text.split())
    for language, text in _OTHER_STOP_TEXT.items()
}
_ANY_STOP = _STOP_WORDS.union(*(text.split() for text in _OTHER_STOP_TEXT.values()))
# The stop words that tell a language: English's that no other language has, and each
# other language's that are no English word (single letters tell nothing, bar "à", "è").
_ENGLISH_MARKERS = _STOP_WORDS.difference(*(text.split() for text in _OTHER_STOP_TEXT.values()))


def _other_markers() -> dict[str, tuple[int, ...]]:
    """Each telling stop word of the other languages, and which of them (by index) it tells."""
    markers: dict[str, tuple[int, ...]] = {}
    for index, language in enumerate(OTHER_LANGUAGES):
        for word in dict.fromkeys(_OTHER_STOP_TEXT[language].split()):
            if (
                word not in _STOP_WORDS
                and word not in _ENGLISH_TOO
                and not (len(word) == 1 and word.isascii())
            ):
                markers[word] = (*markers.get(word, ()), index)
    return markers


_MARKERS = _other_markers()


def _language(words: Sequence[str]) -> str:
    """The language of a text's words (lower case): see the module's description."""
    english = 0
    counts = [0] * len(OTHER_LANGUAGES)
    markers = _MARKERS
    for word in words:
        if word in _ANY_STOP:
            if word in _ENGLISH_MARKERS:
                english += 1
            for index in markers.get(word, ()):
                counts[index] += 1
    best = max(range(len(counts)), key=counts.__getitem__)
    if counts[best] > english:
        return OTHER_LANGUAGES[best]
    if not english:
        letters = set("".join(words))
        for language, own in _LETTERS:
            if not letters.isdisjoint(own):
                return language
    return ENGLISH


def language_of(text: str) -> str:
    """The language a text's meaningful words are read in: 'en', 'de', 'nl', 'fr', 'es'
    or 'it'."""
    return _language(_WORD.findall(text.lower()))


# German: a light stemmer after Snowball's (a case or plural ending, then "en", "er",
# "est" or "st"): 'nüsse' and 'nuss', 'katzen' and 'katze', 'morgens' and 'morgen' meet.
_GERMAN_S = frozenset("bdfghklmnrt")
_GERMAN_ST = frozenset("bdfghklmnt")


def _stem_de(word: str) -> str:
    for suffix in ("ern", "em", "er", "en", "es", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    else:
        if word.endswith("s") and len(word) >= 5 and word[-2] in _GERMAN_S:
            word = word[:-1]
    for suffix in ("est", "en", "er"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    if word.endswith("st") and len(word) >= 6 and word[-3] in _GERMAN_ST:
        return word[:-2]
    return word


# Dutch: after Snowball's ("heden", a plural "en" or "s", a final "e", a doubled last
# consonant): 'katten' and 'kat', 'lampen' and 'lamp', 'dinsdags' and 'dinsdag' meet.
_VOWELS = frozenset("aeiouy")


def _undouble(word: str) -> str:
    return word[:-1] if word[-2:] in ("kk", "dd", "tt", "ll", "nn", "mm", "pp", "ff") else word


def _stem_nl(word: str) -> str:
    if word.endswith("heden") and len(word) >= 8:
        return word[:-5] + "heid"
    for suffix, allowed in (("ene", ""), ("en", ""), ("se", "j"), ("s", "j")):
        if (
            word.endswith(suffix)
            and len(word) - len(suffix) >= 3
            and word[-len(suffix) - 1] not in _VOWELS
            and word[-len(suffix) - 1] not in allowed
        ):
            word = _undouble(word[: -len(suffix)])
            break
    if word.endswith("e") and len(word) >= 4 and word[-2] not in _VOWELS:
        word = _undouble(word[:-1])
    return word


# French, Spanish and Italian alike: a plural ("es", "s", "x"), then an infinitive's "er",
# "ar" or "ir" or a final vowel (gender, number): 'gatos' and 'gato', 'luci' and 'luce',
# 'chaises' and 'chaise', 'allumée' and 'allume' meet. One stemmer for the three, so
# that telling one from another (their stop words are much alike) costs nothing.
def _stem_romance(word: str) -> str:
    for suffix in ("es", "s", "x"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if word.endswith("ee"):
        word = word[:-1]
    for suffix in ("er", "ar", "ir", "a", "e", "i", "o"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


_STEMMERS = {
    "de": _stem_de,
    "nl": _stem_nl,
    "fr": _stem_romance,
    "es": _stem_romance,
    "it": _stem_romance,
}


@functools.lru_cache(maxsize=65_536)
def _other_term(word: str, language: str) -> str:
    """A word of another language than English as indexed: accents folded, that language's
    stop words left out, a light stem (none for a word with a digit); '' to skip it."""
    folded = _fold(word)
    if folded in _OTHER_STOPS[language] or (len(folded) == 1 and not folded.isdigit()):
        return ""
    if any(char.isdigit() for char in folded):
        return folded
    return _STEMMERS[language](folded)


def _terms_of(words: Sequence[str], language: str) -> list[str]:
    if language not in _OTHER_STOPS:
        return [term for word in words if (term := _term(word))]
    return [term for word in words if (term := _other_term(word, language))]


def terms(text: str, language: str | None = None) -> list[str]:
    """The words that carry meaning, stemmed, read in a language (None: the text's own)."""
    words = _WORD.findall(text.lower())
    return _terms_of(words, _language(words) if language is None else language)


@functools.lru_cache(maxsize=16_384)
def tag_terms(tag: str, language: str = ENGLISH) -> tuple[str, ...]:
    """A tag's value is words of the memory too: `person:anna` is about Anna (read in
    the language of the memory's content)."""
    return tuple(terms(tag.rsplit(":", 1)[-1].replace("_", " "), language))


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
    """The words a memory is found by: its content's and its tag values' (read in the
    content's language)."""
    found = _WORD.findall(content.lower())
    language = _language(found)
    words = _terms_of(found, language)
    for tag in tags:
        words.extend(tag_terms(tag, language))
    return words


class KeywordIndex:
    """BM25 over an inverted index: the cost of a query is its terms' postings, not the store.

    Documents are small numbers (MemoryStore's rows). A term's posting is kept as numpy
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
        self,
        term: str,
        count: int,
        average: float,
        within: npt.NDArray[np.bool_] | None = None,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.floating[Any]]]:
        """The documents holding an indexed term and its BM25 part in each (of the
        documents `within` allows, whose statistics these are; None: all)."""
        docs, tf = self._posting(term)
        if within is not None:
            kept = within[docs]
            docs, tf = docs[kept], tf[kept]
        idf = math.log(1 + (count - docs.size + 0.5) / (docs.size + 0.5))
        k1, b = self.k1, self.b
        length = self._lengths[docs]
        return docs, idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average))

    def scores(
        self,
        query: Sequence[str],
        size: int,
        within: npt.NDArray[np.bool_] | None = None,
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int32]]:
        """BM25 score and number of distinct query terms matched, for documents 0..size-1.

        A query term's part in a document is the best of its alike terms' BM25 parts,
        each times the term's similarity. `within` (a mask over the documents; None: all)
        is the collection searched: the documents' count, lengths and each term's
        documents are counted among those alone, so no document outside it changes any
        score (what one reader may not see never shows in what they are answered).
        """
        scores = np.zeros(size, dtype=np.float32)
        hits = np.zeros(size, dtype=np.int32)
        if within is None:
            count, total = len(self._words), float(self._total_length)
        else:
            within = _mask(within, self._lengths.size)
            indexed = within & (self._lengths > 0)
            count, total = int(indexed.sum()), float(self._lengths[indexed].sum())
        if not count:
            return scores, hits
        average = total / count or 1.0
        for word in dict.fromkeys(query):
            alike = self.alike(word)
            if not alike:
                continue
            if len(alike) == 1 and word in alike:
                docs, part = self._term_scores(word, count, average, within)
                scores[docs] += part
                hits[docs] += 1
                continue
            best = np.zeros(size, dtype=np.float32)
            for term, weight in alike.items():
                docs, part = self._term_scores(term, count, average, within)
                best[docs] = np.maximum(best[docs], weight * part)
            scores += best
            hits += best > 0
        return scores, hits


def _mask(within: npt.NDArray[np.bool_], size: int) -> npt.NDArray[np.bool_]:
    """A mask over the documents, cut or padded (with False) to the index's size."""
    if within.size >= size:
        return within[:size]
    padded = np.zeros(size, dtype=bool)
    padded[: within.size] = within
    return padded


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
