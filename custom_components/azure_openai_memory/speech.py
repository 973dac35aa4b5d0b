"""What an agent says in its own words: translated texts for answers the model did not give."""

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent, translation

from .const import DOMAIN


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
