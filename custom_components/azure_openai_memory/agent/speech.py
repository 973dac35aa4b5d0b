"""What an agent says in its own words, and whether what it said asks the user something.

Translated texts stand in for answers the model did not give. An answer that asks a
question lets a voice satellite listen again for the reply, without a wake word.
"""

from dataclasses import dataclass
import unicodedata

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent, translation

from ..const import DOMAIN


async def async_text(
    hass: HomeAssistant, language: str, key: str, placeholders: dict[str, str] | None = None
) -> str:
    """A translated message from strings.json 'exceptions', English as fallback."""
    full_key = f"component.{DOMAIN}.exceptions.{key}.message"
    for lang in (language, "en"):
        texts = await translation.async_get_translations(hass, lang, "exceptions", [DOMAIN])
        if full_key in texts:
            text = texts[full_key]
            for name, value in (placeholders or {}).items():
                text = text.replace(f"{{{name}}}", value)
            return text
    return key


async def async_spoken(
    hass: HomeAssistant,
    user_input: conversation.ConversationInput,
    chat_log: conversation.ChatLog,
    key: str,
    *,
    error: bool = True,
) -> conversation.ConversationResult:
    """A friendly, translated answer instead of a traceback."""
    text = await async_text(hass, user_input.language, key)
    response = intent.IntentResponse(language=user_input.language)
    if error:
        response.async_set_error(intent.IntentResponseErrorCode.UNKNOWN, text)
    else:
        response.async_set_speech(text)
    return conversation.ConversationResult(
        response=response, conversation_id=chat_log.conversation_id
    )


async def async_answered(
    hass: HomeAssistant,
    user_input: conversation.ConversationInput,
    chat_log: conversation.ChatLog,
    answer: str,
) -> conversation.ConversationResult:
    """The model's answer (a translated stand-in when it gave none).

    A satellite listens again when the answer asks something. Home Assistant's own reading
    of the chat log is not used: it takes a final ";" in every language, and a question the
    answer only quotes, as a question.
    """
    response = intent.IntentResponse(language=user_input.language)
    response.async_set_speech(answer or await async_text(hass, user_input.language, "no_answer"))
    return conversation.ConversationResult(
        response=response,
        conversation_id=chat_log.conversation_id,
        continue_conversation=asks_user(answer, user_input.language),
    )


# Marks that end a question in any language: Latin, fullwidth (Chinese, Japanese), Arabic
# script, Ethiopic, the interrobang family, and the small and vertical forms.
_QUESTION_MARKS = frozenset(
    "?"
    "\N{FULLWIDTH QUESTION MARK}"
    "\N{ARABIC QUESTION MARK}"
    "\N{ETHIOPIC QUESTION MARK}"
    "\N{INTERROBANG}"
    "\N{DOUBLE QUESTION MARK}"
    "\N{QUESTION EXCLAMATION MARK}"
    "\N{EXCLAMATION QUESTION MARK}"
    "\N{SMALL QUESTION MARK}"
    "\N{PRESENTATION FORM FOR VERTICAL QUESTION MARK}"
)
# Greek asks with ";" (or its own code point, which looks the same); elsewhere it is a
# semicolon.
_GREEK_QUESTION_MARKS = frozenset(";\N{GREEK QUESTION MARK}")
# Armenian marks the questioned word, not the end of the sentence; a full stop may follow.
_ARMENIAN_QUESTION_MARK = "\N{ARMENIAN QUESTION MARK}"
_ARMENIAN_FULL_STOPS = frozenset("\N{ARMENIAN FULL STOP}:.")
# What ends a sentence without asking (after an Armenian question, a new statement).
_SENTENCE_ENDS = frozenset(
    "!;\N{HORIZONTAL ELLIPSIS}\N{IDEOGRAPHIC FULL STOP}\N{FULLWIDTH EXCLAMATION MARK}"
)


# What may close each quotation mark or bracket: German and Nordic quotes close with marks
# that open elsewhere. A mark that only closes (an apostrophe) opens nothing.
_CLOSERS: dict[str, frozenset[str]] = {
    '"': frozenset('"'),
    "\N{LEFT DOUBLE QUOTATION MARK}": frozenset("\N{RIGHT DOUBLE QUOTATION MARK}"),
    "\N{DOUBLE LOW-9 QUOTATION MARK}": frozenset(
        "\N{LEFT DOUBLE QUOTATION MARK}\N{RIGHT DOUBLE QUOTATION MARK}"
    ),
    "\N{RIGHT DOUBLE QUOTATION MARK}": frozenset("\N{RIGHT DOUBLE QUOTATION MARK}"),
    "\N{LEFT SINGLE QUOTATION MARK}": frozenset("\N{RIGHT SINGLE QUOTATION MARK}"),
    "\N{SINGLE LOW-9 QUOTATION MARK}": frozenset(
        "\N{LEFT SINGLE QUOTATION MARK}\N{RIGHT SINGLE QUOTATION MARK}"
    ),
    "\N{LEFT-POINTING DOUBLE ANGLE QUOTATION MARK}": frozenset(
        "\N{RIGHT-POINTING DOUBLE ANGLE QUOTATION MARK}"
    ),
    "\N{RIGHT-POINTING DOUBLE ANGLE QUOTATION MARK}": frozenset(
        "\N{LEFT-POINTING DOUBLE ANGLE QUOTATION MARK}\N{RIGHT-POINTING DOUBLE ANGLE QUOTATION MARK}"
    ),
    "\N{SINGLE LEFT-POINTING ANGLE QUOTATION MARK}": frozenset(
        "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK}"
    ),
    "\N{LEFT CORNER BRACKET}": frozenset("\N{RIGHT CORNER BRACKET}"),
    "\N{LEFT WHITE CORNER BRACKET}": frozenset("\N{RIGHT WHITE CORNER BRACKET}"),
    "\N{LEFT DOUBLE ANGLE BRACKET}": frozenset("\N{RIGHT DOUBLE ANGLE BRACKET}"),
    "\N{LEFT ANGLE BRACKET}": frozenset("\N{RIGHT ANGLE BRACKET}"),
    "(": frozenset(")"),
    "[": frozenset("]"),
    "{": frozenset("}"),
    "\N{FULLWIDTH LEFT PARENTHESIS}": frozenset("\N{FULLWIDTH RIGHT PARENTHESIS}"),
    "\N{FULLWIDTH LEFT SQUARE BRACKET}": frozenset("\N{FULLWIDTH RIGHT SQUARE BRACKET}"),
    "\N{LEFT BLACK LENTICULAR BRACKET}": frozenset("\N{RIGHT BLACK LENTICULAR BRACKET}"),
}


# Emoji (with their modifiers and joiners) and Markdown emphasis end a sentence without
# ending its question.
_DECORATION_CATEGORIES = frozenset({"So", "Sk", "Mn", "Me", "Cf"})
_MARKDOWN_EMPHASIS = frozenset("*_~")


def _decoration(char: str) -> bool:
    return (
        char.isspace()
        or char in _MARKDOWN_EMPHASIS
        or unicodedata.category(char) in _DECORATION_CATEGORIES
    )


@dataclass(slots=True)
class _Question:
    """The last question mark seen: how deep in quotes and brackets, and what followed it."""

    depth: int
    armenian: bool
    stopped: bool = False


def asks_user(answer: str, language: str) -> bool:
    """Whether the answer ends by asking the user something.

    It does when its last question mark ends it (emoji and emphasis aside), in the
    language's own marks: ";" only in Greek; Armenian's "՞" on a word of the last
    sentence. A question mark inside a quotation or brackets that close after it is
    quoted, not asked.
    """
    marks = _QUESTION_MARKS | {_ARMENIAN_QUESTION_MARK}
    if language.replace("_", "-").split("-")[0].lower() == "el":
        marks |= _GREEK_QUESTION_MARKS
    open_pairs: list[frozenset[str]] = []
    question: _Question | None = None
    for char in answer:
        if open_pairs and char in open_pairs[-1]:
            open_pairs.pop()
            if question is not None and len(open_pairs) < question.depth:
                question = None
        elif char in _CLOSERS:
            open_pairs.append(_CLOSERS[char])
        elif char in marks:
            question = _Question(len(open_pairs), char == _ARMENIAN_QUESTION_MARK)
        elif question is None or len(open_pairs) > question.depth or _decoration(char):
            continue
        elif question.armenian and not question.stopped and char in _ARMENIAN_FULL_STOPS:
            question.stopped = True
        elif question.armenian and not question.stopped and char not in _SENTENCE_ENDS:
            continue  # the rest of the sentence whose word was asked about
        else:
            question = None
    return question is not None
