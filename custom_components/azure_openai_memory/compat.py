"""The one place that knows how Home Assistant 2025.4 and 2026.x differ."""

from collections.abc import Awaitable, Callable, Sequence
import inspect
import sys
from typing import Any, Protocol, cast

from homeassistant.components import conversation
from homeassistant.const import Platform
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent, llm
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.helpers.selector import SelectOptionDict
from homeassistant.util.json import JsonObjectType
import voluptuous as vol

# How a validation schema becomes JSON schema: 2026.10 validates with probatio (voluptuous
# is an alias of it there) and has no voluptuous_openapi; earlier versions convert voluptuous
# schemas with voluptuous_openapi. What decides is what `voluptuous` is here, not whether
# probatio happens to be installed beside real voluptuous.
VOLUPTUOUS_IS_PROBATIO: bool = vol.__name__.startswith("probatio")
try:
    import probatio

    probatio_to_json: Callable[..., dict[str, Any]] | None = probatio.to_openapi
except ImportError:  # before 2026.10
    probatio_to_json = None
try:
    import voluptuous_openapi

    voluptuous_to_json: Callable[..., dict[str, Any]] | None = voluptuous_openapi.convert
except ImportError:  # 2026.10
    voluptuous_to_json = None

__all__ = [
    "CLOCK_PROMPT",
    "HANDLE_INTENTS_TAKES_CHAT_LOG",
    "HAS_AI_TASK",
    "HAS_PROVIDE_LLM_DATA",
    "HAS_TOOL_RESULT",
    "LLM_API_ACCEPTS_LIST",
    "LLM_API_NONE",
    "SELECTOR_SERIALIZER",
    "VOLUPTUOUS_IS_PROBATIO",
    "AddConfigEntryEntitiesCallback",
    "IntegrationTool",
    "async_handle_intents",
    "async_provide_llm_data",
    "conversation_source",
    "llm_api_choices",
    "llm_api_ids",
    "llm_api_option",
    "llm_api_suggested",
    "llm_context_of",
    "platforms",
    "schema_to_json",
    "signature",
    "tool_intent",
    "tool_result_data",
]

# What a config entry's platform gets to add its entities, with the subentry they belong
# to (config_subentry_id). Every supported version has it (2025.4 included, the oldest
# that hacs.json allows), so this is the type itself, not a fallback to AddEntitiesCallback.


def signature(func: Callable[..., Any]) -> inspect.Signature:
    """A Home Assistant function's signature, whatever its annotations name.

    Python 3.14 evaluates annotations only when asked, and Home Assistant 2026.10 names in
    them types it imports for type checking only (Entity in AddConfigEntryEntitiesCallback):
    evaluating those raises NameError, so on 3.14 an unknown name stays a forward reference.
    """
    if sys.version_info >= (3, 14):
        import annotationlib  # Python 3.14 and later only

        # Typeshed's signature() does not know annotation_format yet.
        signature_of: Callable[..., inspect.Signature] = inspect.signature
        return signature_of(func, annotation_format=annotationlib.Format.FORWARDREF)
    return inspect.signature(func)


# 2025.4 takes one LLM API id; later versions take a list of them.
LLM_API_ACCEPTS_LIST: bool = "list" in str(
    signature(llm.async_get_api).parameters["api_id"].annotation
)


# 2025.4's single choice cannot be emptied once made: the list offers "No control" as
# core's own OpenAI agent did on that version. A multi-select is emptied instead.
LLM_API_NONE = "none"


def llm_api_choices(apis: list[SelectOptionDict]) -> list[SelectOptionDict]:
    """The "Control Home Assistant" choices this Home Assistant's form can show."""
    if LLM_API_ACCEPTS_LIST:
        return apis
    return [SelectOptionDict(label="No control", value=LLM_API_NONE), *apis]


def llm_api_suggested(value: str | list[str] | None) -> str | list[str]:
    """What the form shows for a stored option: "No control" (2025.4) or nothing ticked."""
    return llm_api_option(value) or ([] if LLM_API_ACCEPTS_LIST else LLM_API_NONE)


def llm_api_option(value: str | list[str] | None) -> str | list[str] | None:
    """Turn what the form gave into what this Home Assistant accepts."""
    ids = [value] if isinstance(value, str) else list(value or ())
    ids = [api for api in ids if api and api != LLM_API_NONE]
    if not ids:
        return None
    if LLM_API_ACCEPTS_LIST:
        return ids
    return ids[0]


def llm_api_ids(value: str | Sequence[str] | None) -> list[str]:
    """The stored option, whichever version wrote it, as a list of ids."""
    if not value:
        return []
    return [value] if isinstance(value, str) else list(value)


# The template of the sentence with the current time that Home Assistant renders into an
# agent's prompt: its first line in 2025.4 (BASE_PROMPT); in 2026.x after the LLM API's
# prompt (DATE_TIME_PROMPT), and left out when the API offers its date-and-time tool.
CLOCK_PROMPT: str = str(getattr(llm, "DATE_TIME_PROMPT", None) or getattr(llm, "BASE_PROMPT", ""))


# 2025.4 fills the chat log with async_update_llm_data; later versions with
# async_provide_llm_data and an LLMContext built by the caller.
HAS_PROVIDE_LLM_DATA: bool = hasattr(conversation.ChatLog, "async_provide_llm_data")
# 2026.x passes the chat log to the default agent's intent handling.
HANDLE_INTENTS_TAKES_CHAT_LOG: bool = (
    "chat_log" in signature(conversation.async_handle_intents).parameters
)


class _ProvidesLLMData(Protocol):
    """The chat log of 2025.5 and later."""

    async def async_provide_llm_data(
        self,
        llm_context: llm.LLMContext,
        user_llm_hass_api: str | list[str] | None,
        user_llm_prompt: str | None,
        user_extra_system_prompt: str | None,
    ) -> None:
        """Render the prompt and pick the LLM API."""


class _UpdatesLLMData(Protocol):
    """The chat log of 2025.4."""

    async def async_update_llm_data(
        self,
        conversing_domain: str,
        user_input: conversation.ConversationInput,
        user_llm_hass_api: str | list[str] | None,
        user_llm_prompt: str | None,
    ) -> None:
        """Render the prompt and pick the LLM API."""


class _MakesLLMContext(Protocol):
    """The conversation input of 2025.5 and later."""

    def as_llm_context(self, conversing_domain: str) -> llm.LLMContext:
        """The context an LLM API is called with."""


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
        await cast(_ProvidesLLMData, chat_log).async_provide_llm_data(
            cast(_MakesLLMContext, user_input).as_llm_context(domain),
            api,
            prompt,
            user_input.extra_system_prompt,
        )
    else:
        await cast(_UpdatesLLMData, chat_log).async_update_llm_data(domain, user_input, api, prompt)


# The default agent's intent handling, with or without the chat log (see above).
type _HandleIntents = Callable[..., Awaitable[intent.IntentResponse | None]]


async def async_handle_intents(
    hass: HomeAssistant,
    user_input: conversation.ConversationInput,
    chat_log: conversation.ChatLog,
) -> intent.IntentResponse | None:
    """Let Home Assistant's own intents answer; None when none matched."""
    handle: _HandleIntents = conversation.async_handle_intents
    if HANDLE_INTENTS_TAKES_CHAT_LOG:
        return await handle(hass, user_input, chat_log)
    return await handle(hass, user_input)


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


# AI Task entities (ai_task.generate_data) exist from Home Assistant 2025.8 on.
HAS_AI_TASK: bool = hasattr(Platform, "AI_TASK")


def platforms(*always: Platform) -> list[Platform]:
    """The platforms an entry sets up here: the AI Task one only where it exists."""
    if HAS_AI_TASK:
        return [*always, Platform("ai_task")]
    return list(always)


# Turns selectors in a schema into JSON schema; public from 2025.8 on.
SELECTOR_SERIALIZER: Callable[[Any], Any] = getattr(
    llm, "selector_serializer", getattr(llm, "_selector_serializer", repr)
)


def schema_to_json(schema: Any, serializer: Callable[[Any], Any] | None) -> dict[str, Any]:
    """A validation schema (a tool's parameters, a task's structure) as JSON schema.

    2026.10 validates with probatio and has no voluptuous_openapi; earlier versions convert
    voluptuous schemas with voluptuous_openapi.
    """
    if VOLUPTUOUS_IS_PROBATIO:
        assert probatio_to_json is not None  # Home Assistant installs it with the alias
        return probatio_to_json(schema, custom_serializer=serializer, openapi_version="3.1.0")
    assert voluptuous_to_json is not None  # Home Assistant before 2026.10 installs it
    return voluptuous_to_json(schema, custom_serializer=serializer)


# 2026.10 gives a tool's answer as an llm.ToolResult (data, error); earlier versions the data.
_TOOL_RESULT: Any = getattr(llm, "ToolResult", None)
HAS_TOOL_RESULT: bool = _TOOL_RESULT is not None


def tool_intent(tool: llm.Tool) -> str | None:
    """The intent an Assist tool runs, whatever the tool is named; None for other tools.

    The tool's name is the intent's only on 2025.4 with one API: a merged API prefixes it
    with its API's name (assist__HassTurnOn), and from 2026.10 on it is named after the
    integration giving it (intent__HassTurnOn), keeping the intent in `intent_type`.
    """
    # A merged API's tool wraps the API's own (2025.5 on).
    while isinstance(wrapped := getattr(tool, "tool", None), llm.Tool):
        tool = wrapped
    if not isinstance(tool, llm.IntentTool):
        return None
    return str(getattr(tool, "intent_type", tool.name))


class IntegrationTool(llm.Tool):
    """An LLM tool of this integration, answering in the shape this version takes.

    2026.10 wants an llm.ToolResult and the tool tagged with the integration that gives it
    (subclasses set `integration`); earlier versions take the JSON data itself.
    """

    async def async_call(
        self, hass: HomeAssistant, tool_input: llm.ToolInput, llm_context: llm.LLMContext
    ) -> Any:
        """Answer the call."""
        data = await self.async_answer(hass, tool_input, llm_context)
        return _TOOL_RESULT(data=data) if HAS_TOOL_RESULT else data

    async def async_answer(
        self, hass: HomeAssistant, tool_input: llm.ToolInput, llm_context: llm.LLMContext
    ) -> JsonObjectType:
        """What the tool answers, as JSON data."""
        raise NotImplementedError


def tool_result_data(content: conversation.ToolResultContent) -> JsonObjectType:
    """The data of a tool result in the chat log (2026.10 keeps it in .result)."""
    if (result := getattr(content, "result", None)) is not None:
        return cast(JsonObjectType, result.data)
    return content.tool_result


def llm_context_of(user_input: conversation.ConversationInput, domain: str) -> llm.LLMContext:
    """The LLM context of a turn: 2026.x builds it (without user_prompt); 2025.4 has no helper."""
    if (as_llm_context := getattr(user_input, "as_llm_context", None)) is not None:
        return cast(llm.LLMContext, as_llm_context(domain))
    # 2025.4's LLMContext still takes the user's prompt.
    make_context: Callable[..., llm.LLMContext] = llm.LLMContext
    return make_context(
        platform=domain,
        context=user_input.context,
        user_prompt=user_input.text,
        language=user_input.language,
        assistant=conversation.DOMAIN,
        device_id=user_input.device_id,
    )
