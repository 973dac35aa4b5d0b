"""The one place that knows how Home Assistant 2025.4 and 2026.x differ."""

from collections.abc import Sequence
import inspect

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent, llm
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

__all__ = [
    "HANDLE_INTENTS_TAKES_CHAT_LOG",
    "HAS_PROVIDE_LLM_DATA",
    "LLM_API_ACCEPTS_LIST",
    "AddConfigEntryEntitiesCallback",
    "async_handle_intents",
    "async_provide_llm_data",
    "conversation_source",
    "llm_api_ids",
    "llm_api_option",
    "llm_context_of",
]

# What a config entry's platform gets to add its entities, with the subentry they belong
# to (config_subentry_id). Every supported version has it (2025.4 included, the oldest
# that hacs.json allows), so this is the type itself, not a fallback to AddEntitiesCallback.

# 2025.4 takes one LLM API id; later versions take a list of them.
LLM_API_ACCEPTS_LIST: bool = "list" in str(
    inspect.signature(llm.async_get_api).parameters["api_id"].annotation
)


def llm_api_option(value: str | list[str] | None) -> str | list[str] | None:
    """Turn what the form gave into what this Home Assistant accepts."""
    if not value:
        return None
    ids = [value] if isinstance(value, str) else list(value)
    if LLM_API_ACCEPTS_LIST:
        return ids
    return ids[0]


def llm_api_ids(value: str | Sequence[str] | None) -> list[str]:
    """The stored option, whichever version wrote it, as a list of ids."""
    if not value:
        return []
    return [value] if isinstance(value, str) else list(value)


# 2025.4 fills the chat log with async_update_llm_data; later versions with
# async_provide_llm_data and an LLMContext built by the caller.
HAS_PROVIDE_LLM_DATA: bool = hasattr(conversation.ChatLog, "async_provide_llm_data")
# 2026.x passes the chat log to the default agent's intent handling.
HANDLE_INTENTS_TAKES_CHAT_LOG: bool = (
    "chat_log" in inspect.signature(conversation.async_handle_intents).parameters
)


async def async_provide_llm_data(
    chat_log: conversation.ChatLog,
    user_input: conversation.ConversationInput,
    domain: str,
    llm_api: str | list[str] | None,
    prompt: str | None,
) -> None:
    """Render the system prompt and pick the LLM API into the chat log."""
    api = llm_api_option(llm_api_ids(llm_api))
    if HAS_PROVIDE_LLM_DATA:
        await chat_log.async_provide_llm_data(  # type: ignore[attr-defined]
            user_input.as_llm_context(domain),  # type: ignore[attr-defined]
            api,
            prompt,
            user_input.extra_system_prompt,
        )
    else:
        await chat_log.async_update_llm_data(domain, user_input, api, prompt)  # type: ignore[arg-type]


async def async_handle_intents(
    hass: HomeAssistant,
    user_input: conversation.ConversationInput,
    chat_log: conversation.ChatLog,
) -> intent.IntentResponse | None:
    """Let Home Assistant's own intents answer; None when none matched."""
    if HANDLE_INTENTS_TAKES_CHAT_LOG:
        return await conversation.async_handle_intents(hass, user_input, chat_log)  # type: ignore[misc,arg-type]
    return await conversation.async_handle_intents(hass, user_input)  # type: ignore[call-arg]


def in_assist_pipeline(chat_log: conversation.ChatLog) -> bool:
    """The turn comes from an Assist pipeline, which has its own local-intent setting.

    ConversationInput does not say so (2025.4 or 2026.x), but only assist_pipeline opens
    the chat log with a delta listener, and the agent is handed that same chat log.
    """
    return chat_log.delta_listener is not None


def conversation_source(user_input: conversation.ConversationInput) -> str | None:
    """Who is speaking, for continuing a conversation: satellite, device, else user."""
    if satellite_id := getattr(user_input, "satellite_id", None):
        return f"satellite:{satellite_id}"
    if user_input.device_id:
        return f"device:{user_input.device_id}"
    if user_input.context and user_input.context.user_id:
        return f"user:{user_input.context.user_id}"
    return None


def llm_context_of(user_input: conversation.ConversationInput, domain: str) -> llm.LLMContext:
    """The LLM context of a turn: 2026.x builds it (without user_prompt); 2025.4 has no helper."""
    if hasattr(user_input, "as_llm_context"):
        return user_input.as_llm_context(domain)  # type: ignore[no-any-return]
    return llm.LLMContext(  # type: ignore[call-arg]
        platform=domain,
        context=user_input.context,
        user_prompt=user_input.text,
        language=user_input.language,
        assistant=conversation.DOMAIN,
        device_id=user_input.device_id,
    )
