"""Constants and every default of Azure OpenAI Memory, in one place.

A default the pure package's settings also need is written there once and imported here
(windows, series, memories), so the two can never disagree.
"""

from datetime import timedelta
import logging
from typing import Any, Final

from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.helpers import llm

from .compat import llm_api_option
from .lib.memories.models import MemorySettings
from .lib.series.store import DEFAULT_KEEP_DAYS, DEFAULT_MAX_ENTRIES
from .lib.windows.window import (
    DEFAULT_CONTINUATION_MINUTES,
    DEFAULT_IDLE_MINUTES,
    DEFAULT_MAX_CONVERSATIONS,
    DEFAULT_MAX_TOKENS,
)

DOMAIN: Final = "azure_openai_memory"
LOGGER = logging.getLogger(__package__)
# Each entry expires idle conversations and retries missing token encodings this often.
MAINTENANCE_INTERVAL: Final = timedelta(minutes=10)

# Config entry data: one Azure OpenAI resource.
CONF_ENDPOINT: Final = "endpoint"
CONF_API_STYLE: Final = "api_style"
CONF_API_VERSION: Final = "api_version"

API_STYLE_V1: Final = "v1"
API_STYLE_DEPLOYMENT: Final = "deployment"
API_STYLES: Final = [API_STYLE_V1, API_STYLE_DEPLOYMENT]

RECOMMENDED_API_STYLE: Final = API_STYLE_V1
# The latest dated GA api-version.
RECOMMENDED_API_VERSION: Final = "2024-10-21"
# The Responses API exists on dated versions from this preview on.
RESPONSES_MIN_API_VERSION: Final = "2025-03-01-preview"

# Agent subentries: one conversation agent each.
SUBENTRY_AGENT: Final = "agent"
CONF_DEPLOYMENT: Final = "deployment"
CONF_PROMPT: Final = "prompt"
CONF_API_MODE: Final = "api_mode"
CONF_TEMPERATURE: Final = "temperature"
CONF_TOP_P: Final = "top_p"
CONF_MAX_TOKENS: Final = "max_tokens"
CONF_REASONING_EFFORT: Final = "reasoning_effort"
CONF_REQUEST_TIMEOUT: Final = "request_timeout"
CONF_EARLY_TIMEOUT: Final = "early_timeout"
CONF_SLIDING_WINDOW_MAX_TOKENS: Final = "sliding_window_max_tokens"
CONF_PREFER_LOCAL_INTENTS: Final = "prefer_local_intents"
# Tokens one request may carry (prompt + context + window + the new message);
# 0 or absent means "derive it from the deployment name" (lib/tokens.py).
CONF_CONTEXT_LIMIT: Final = "context_limit"
# Whether requests carry a prompt cache key: "auto" (absent) for the models whose
# documentation takes one, "on" or "off" whatever the deployment is named.
CONF_PROMPT_CACHE_KEY: Final = "prompt_cache_key"
PROMPT_CACHE_KEY_AUTO: Final = "auto"
PROMPT_CACHE_KEY_ON: Final = "on"
PROMPT_CACHE_KEY_OFF: Final = "off"
PROMPT_CACHE_KEY_CHOICES: Final = [PROMPT_CACHE_KEY_AUTO, PROMPT_CACHE_KEY_ON, PROMPT_CACHE_KEY_OFF]

API_MODE_CHAT: Final = "chat_completions"
API_MODE_RESPONSES: Final = "responses"
API_MODES: Final = [API_MODE_CHAT, API_MODE_RESPONSES]

# "off" means a classic model (temperature, top_p, max_tokens); any other value
# marks a reasoning model, which gets reasoning_effort and max_completion_tokens.
REASONING_EFFORT_OFF: Final = "off"
REASONING_EFFORTS: Final = [REASONING_EFFORT_OFF, "none", "minimal", "low", "medium", "high"]

DEFAULT_AGENT_NAME: Final = "Azure OpenAI agent"
RECOMMENDED_DEPLOYMENT: Final = "gpt-4o-mini"
RECOMMENDED_API_MODE: Final = API_MODE_CHAT
RECOMMENDED_TEMPERATURE: Final = 1.0
RECOMMENDED_TOP_P: Final = 1.0
RECOMMENDED_MAX_TOKENS: Final = 1500
RECOMMENDED_REASONING_EFFORT: Final = REASONING_EFFORT_OFF
RECOMMENDED_REQUEST_TIMEOUT: Final = 30.0
RECOMMENDED_EARLY_TIMEOUT: Final = 10.0
RECOMMENDED_SLIDING_WINDOW_MAX_TOKENS: Final = DEFAULT_MAX_TOKENS
RECOMMENDED_PREFER_LOCAL_INTENTS: Final = True
# The first agent of a deployment that refuses classic parameters (max_tokens) is a
# reasoning model: it gets the effort the API assumes when none is sent.
FIRST_AGENT_REASONING_EFFORT: Final = "medium"
RECOMMENDED_AGENT: Final[dict[str, Any]] = {
    CONF_DEPLOYMENT: RECOMMENDED_DEPLOYMENT,
    CONF_API_MODE: RECOMMENDED_API_MODE,
    CONF_PROMPT: llm.DEFAULT_INSTRUCTIONS_PROMPT,
    CONF_LLM_HASS_API: llm_api_option(llm.LLM_API_ASSIST),
    CONF_TEMPERATURE: RECOMMENDED_TEMPERATURE,
    CONF_TOP_P: RECOMMENDED_TOP_P,
    CONF_MAX_TOKENS: RECOMMENDED_MAX_TOKENS,
    CONF_REASONING_EFFORT: RECOMMENDED_REASONING_EFFORT,
    CONF_REQUEST_TIMEOUT: RECOMMENDED_REQUEST_TIMEOUT,
    CONF_EARLY_TIMEOUT: RECOMMENDED_EARLY_TIMEOUT,
    CONF_SLIDING_WINDOW_MAX_TOKENS: RECOMMENDED_SLIDING_WINDOW_MAX_TOKENS,
    CONF_PREFER_LOCAL_INTENTS: RECOMMENDED_PREFER_LOCAL_INTENTS,
}

# Entry options: memory features and retention.
CONF_CONVERSATION_IDLE_MINUTES: Final = "conversation_idle_minutes"
CONF_MAX_CONVERSATIONS: Final = "max_conversations"
CONF_CONTINUATION_MINUTES: Final = "continuation_minutes"
CONF_TIMESERIES_CONTEXT: Final = "timeseries_context"
CONF_TIMESERIES_MAX_ENTRIES: Final = "timeseries_max_entries"
CONF_TIMESERIES_KEEP_DAYS: Final = "timeseries_keep_days"

RECOMMENDED_CONVERSATION_IDLE_MINUTES: Final = DEFAULT_IDLE_MINUTES
RECOMMENDED_MAX_CONVERSATIONS: Final = DEFAULT_MAX_CONVERSATIONS
RECOMMENDED_CONTINUATION_MINUTES: Final = DEFAULT_CONTINUATION_MINUTES
RECOMMENDED_TIMESERIES_CONTEXT: Final = True
RECOMMENDED_TIMESERIES_MAX_ENTRIES: Final = DEFAULT_MAX_ENTRIES
RECOMMENDED_TIMESERIES_KEEP_DAYS: Final = DEFAULT_KEEP_DAYS

# The entry's own options. The two series settings (CONF_TIMESERIES_MAX_ENTRIES,
# CONF_TIMESERIES_KEEP_DAYS) belong to the installation: the time-series store keeps
# them; the options flow shows them and returns a change of them in the options, which
# the entry's update hands to the store (entries of config version 1.1 kept them here).
# History: recording is an entry's choice; retention belongs to the installation's database.
CONF_HISTORY_RECORDING: Final = "history_recording"
CONF_HISTORY_RETENTION_DAYS: Final = "history_retention_days"
RECOMMENDED_HISTORY_RECORDING: Final = True
RECOMMENDED_HISTORY_RETENTION_DAYS: Final = 90

# Summaries (installation-wide): the entry whose options turn them on writes them, with
# its first agent's deployment; the daily cycle runs at the time set here.
CONF_SUMMARIES: Final = "summaries"
CONF_SUMMARY_TIME: Final = "summary_time"
CONF_SUMMARY_GROUP_MODE: Final = "summary_group_mode"
CONF_SUMMARY_CONTEXT_TOKENS: Final = "summary_context_tokens"

SUMMARY_GROUP_DEVICE: Final = "device"
SUMMARY_GROUP_USER: Final = "user"
SUMMARY_GROUP_HOME: Final = "home"
SUMMARY_GROUP_MODES: Final = [SUMMARY_GROUP_DEVICE, SUMMARY_GROUP_USER, SUMMARY_GROUP_HOME]

RECOMMENDED_SUMMARIES: Final = True
RECOMMENDED_SUMMARY_TIME: Final = "03:30:00"
RECOMMENDED_SUMMARY_GROUP_MODE: Final = SUMMARY_GROUP_DEVICE
RECOMMENDED_SUMMARY_CONTEXT_TOKENS: Final = 400
RECOMMENDED_SUMMARY_OPTIONS: Final = {
    CONF_SUMMARIES: RECOMMENDED_SUMMARIES,
    CONF_SUMMARY_TIME: RECOMMENDED_SUMMARY_TIME,
    CONF_SUMMARY_GROUP_MODE: RECOMMENDED_SUMMARY_GROUP_MODE,
    CONF_SUMMARY_CONTEXT_TOKENS: RECOMMENDED_SUMMARY_CONTEXT_TOKENS,
}

RECOMMENDED_OPTIONS: Final = {
    CONF_CONVERSATION_IDLE_MINUTES: RECOMMENDED_CONVERSATION_IDLE_MINUTES,
    CONF_MAX_CONVERSATIONS: RECOMMENDED_MAX_CONVERSATIONS,
    CONF_CONTINUATION_MINUTES: RECOMMENDED_CONTINUATION_MINUTES,
    CONF_TIMESERIES_CONTEXT: RECOMMENDED_TIMESERIES_CONTEXT,
    CONF_HISTORY_RECORDING: RECOMMENDED_HISTORY_RECORDING,
    **RECOMMENDED_SUMMARY_OPTIONS,
}

# How long the config flow waits for its one proving request.
VALIDATION_TIMEOUT: Final = 10.0

# AI task subentries (Home Assistant 2025.8 and later): one AI task entity each.
SUBENTRY_AI_TASK: Final = "ai_task_data"
DEFAULT_AI_TASK_NAME: Final = "Azure OpenAI AI task"
# The agent's settings without what belongs to a conversation: instructions come with
# each task, it controls nothing, and it keeps no conversation window.
RECOMMENDED_AI_TASK: Final[dict[str, Any]] = {
    key: RECOMMENDED_AGENT[key]
    for key in (
        CONF_DEPLOYMENT,
        CONF_API_MODE,
        CONF_TEMPERATURE,
        CONF_TOP_P,
        CONF_MAX_TOKENS,
        CONF_REASONING_EFFORT,
        CONF_REQUEST_TIMEOUT,
    )
}
# Memories. Four settings (archive retention, high-confidence count, cap per type,
# relevance threshold) belong to the installation (the memories store keeps them; the
# options flow shows them); the embeddings deployment, the switch and the budget are the
# entry's own options.
CONF_ARCHIVE_RETENTION_DAYS: Final = "archive_retention_days"
CONF_HIGH_CONFIDENCE_THRESHOLD: Final = "high_confidence_threshold"
CONF_MAX_MEMORIES_PER_TYPE: Final = "max_memories_per_type"
CONF_MAX_PRIVATE_MEMORIES_PER_TYPE: Final = "max_private_memories_per_type"
CONF_RELEVANCE_SCORE_THRESHOLD: Final = "relevance_score_threshold"
CONF_EMBEDDINGS_DEPLOYMENT: Final = "embeddings_deployment"
CONF_MEMORY_CONTEXT: Final = "memory_context"
CONF_MEMORY_TOKEN_BUDGET: Final = "memory_token_budget"
# Voice satellites and other devices -> the person a request from them speaks for.
CONF_DEVICE_PEOPLE: Final = "device_people"
# The memories' installation settings default to MemorySettings' own (lib/memories/models.py).
_MEMORY_SETTINGS: Final = MemorySettings()
RECOMMENDED_ARCHIVE_RETENTION_DAYS: Final = _MEMORY_SETTINGS.archive_retention_days
RECOMMENDED_HIGH_CONFIDENCE_THRESHOLD: Final = _MEMORY_SETTINGS.high_confidence_threshold
# A home easily has more than 50 routines; 10,000 per type keep every search and save
# within their targets (scripts/bench).
RECOMMENDED_MAX_MEMORIES_PER_TYPE: Final = _MEMORY_SETTINGS.max_memories_per_type
# Each person's private memories of one type: their own cap, which only their saves reach.
RECOMMENDED_MAX_PRIVATE_MEMORIES_PER_TYPE: Final = _MEMORY_SETTINGS.max_private_memories_per_type
RECOMMENDED_RELEVANCE_SCORE_THRESHOLD: Final = _MEMORY_SETTINGS.relevance_score_threshold
RECOMMENDED_EMBEDDINGS_DEPLOYMENT: Final = ""
RECOMMENDED_MEMORY_CONTEXT: Final = True
RECOMMENDED_MEMORY_TOKEN_BUDGET: Final = 500
# The entry's own memory options, as the options form shows them before they are saved.
RECOMMENDED_MEMORY_OPTIONS: Final = {
    CONF_EMBEDDINGS_DEPLOYMENT: RECOMMENDED_EMBEDDINGS_DEPLOYMENT,
    CONF_MEMORY_CONTEXT: RECOMMENDED_MEMORY_CONTEXT,
    CONF_MEMORY_TOKEN_BUDGET: RECOMMENDED_MEMORY_TOKEN_BUDGET,
}
# Memories a turn is offered at most (fewer when the budget is spent).
MEMORY_CONTEXT_LIMIT: Final = 10

# The agents' memory tools; their events (and the memory_* services') are what an
# erasure of memories looks through.
TOOL_REMEMBER: Final = "remember"
TOOL_RECALL: Final = "recall"
TOOL_FORGET: Final = "forget"
MEMORY_SERVICE_PREFIX: Final = f"{DOMAIN}.memory_"

# The tool that reads a stored time series over a range.
TOOL_SERIES_LOOKUP: Final = "series_lookup"
# The LLM API through which any agent (and Home Assistant's MCP server) reaches the
# household memory. Our own agents have its tools without it, so it is never theirs to pick.
HOUSEHOLD_API_ID: Final = DOMAIN
HOUSEHOLD_API_NAME: Final = "Household memory"
# Incognito, set for a while by the incognito service: at most a day at a time.
MAX_INCOGNITO_MINUTES: Final = 24 * 60
