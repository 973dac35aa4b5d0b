"""Config flow: one Azure OpenAI resource per entry, one agent per subentry."""

from collections.abc import Mapping
import logging
import re
from typing import Any

from homeassistant.config_entries import (
    ConfigEntry,
    ConfigEntryState,
    ConfigFlow,
    ConfigFlowResult,
    ConfigSubentryFlow,
    OptionsFlow,
    SubentryFlowResult,
)
from homeassistant.const import CONF_API_KEY, CONF_LLM_HASS_API, CONF_NAME
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import llm
from homeassistant.helpers.selector import (
    BooleanSelector,
    NumberSelector,
    NumberSelectorConfig,
    NumberSelectorMode,
    SelectOptionDict,
    SelectSelector,
    SelectSelectorConfig,
    SelectSelectorMode,
    TemplateSelector,
    TextSelector,
    TextSelectorConfig,
    TextSelectorType,
    TimeSelector,
)
import voluptuous as vol

from .compat import (
    HAS_AI_TASK,
    LLM_API_ACCEPTS_LIST,
    llm_api_choices,
    llm_api_option,
    llm_api_suggested,
)
from .const import (
    API_MODE_RESPONSES,
    API_MODES,
    API_STYLE_DEPLOYMENT,
    API_STYLES,
    CONF_API_MODE,
    CONF_API_STYLE,
    CONF_API_VERSION,
    CONF_ARCHIVE_RETENTION_DAYS,
    CONF_CONTEXT_LIMIT,
    CONF_CONTINUATION_MINUTES,
    CONF_CONVERSATION_IDLE_MINUTES,
    CONF_DEPLOYMENT,
    CONF_EARLY_TIMEOUT,
    CONF_EMBEDDINGS_DEPLOYMENT,
    CONF_ENDPOINT,
    CONF_HIGH_CONFIDENCE_THRESHOLD,
    CONF_HISTORY_RECORDING,
    CONF_HISTORY_RETENTION_DAYS,
    CONF_MAX_CONVERSATIONS,
    CONF_MAX_MEMORIES_PER_TYPE,
    CONF_MAX_TOKENS,
    CONF_MEMORY_CONTEXT,
    CONF_MEMORY_TOKEN_BUDGET,
    CONF_PREFER_LOCAL_INTENTS,
    CONF_PROMPT,
    CONF_REASONING_EFFORT,
    CONF_RELEVANCE_SCORE_THRESHOLD,
    CONF_REQUEST_TIMEOUT,
    CONF_SLIDING_WINDOW_MAX_TOKENS,
    CONF_SUMMARIES,
    CONF_SUMMARY_CONTEXT_TOKENS,
    CONF_SUMMARY_GROUP_MODE,
    CONF_SUMMARY_TIME,
    CONF_TEMPERATURE,
    CONF_TIMESERIES_CONTEXT,
    CONF_TIMESERIES_KEEP_DAYS,
    CONF_TIMESERIES_MAX_ENTRIES,
    CONF_TOP_P,
    DEFAULT_AGENT_NAME,
    DEFAULT_AI_TASK_NAME,
    DOMAIN,
    REASONING_EFFORT_OFF,
    REASONING_EFFORTS,
    RECOMMENDED_API_MODE,
    RECOMMENDED_API_STYLE,
    RECOMMENDED_API_VERSION,
    RECOMMENDED_DEPLOYMENT,
    RECOMMENDED_EARLY_TIMEOUT,
    RECOMMENDED_EMBEDDINGS_DEPLOYMENT,
    RECOMMENDED_HISTORY_RETENTION_DAYS,
    RECOMMENDED_MAX_TOKENS,
    RECOMMENDED_MEMORY_CONTEXT,
    RECOMMENDED_MEMORY_TOKEN_BUDGET,
    RECOMMENDED_OPTIONS,
    RECOMMENDED_PREFER_LOCAL_INTENTS,
    RECOMMENDED_REASONING_EFFORT,
    RECOMMENDED_REQUEST_TIMEOUT,
    RECOMMENDED_SLIDING_WINDOW_MAX_TOKENS,
    RECOMMENDED_TEMPERATURE,
    RECOMMENDED_TOP_P,
    RESPONSES_MIN_API_VERSION,
    SUBENTRY_AGENT,
    SUBENTRY_AI_TASK,
    SUMMARY_GROUP_MODES,
)
from .data import DATA_HISTORY, DATA_MEMORIES, DATA_TIMESERIES, settings_from_entry_data
from .llm.client import (
    InvalidEndpoint,
    async_check_deployment,
    async_check_resource,
    async_create_client,
    async_release_client,
    normalize_endpoint,
)
from .llm.embeddings import async_check_embeddings
from .llm.errors import API_ERRORS, ErrorKind, classify_error
from .memory.facts import FactSettings
from .memory.timeseries import TimeseriesSettings
from .title import is_untouched_title, resource_title

_LOGGER = logging.getLogger(__name__)

# Flow error keys for the kinds of failure; anything not listed is "unknown".
# Azure's dated api-versions: 2024-10-21, 2025-04-01-preview.
API_VERSION_PATTERN = re.compile(r"^\d{4}-\d{2}-\d{2}(-preview)?$")

_FLOW_ERRORS = {
    ErrorKind.INVALID_AUTH: "invalid_auth",
    ErrorKind.CANNOT_CONNECT: "cannot_connect",
    ErrorKind.TIMEOUT: "timeout_connect",
    ErrorKind.NOT_FOUND: "endpoint_not_found",
}
# Failures of a deployment check that belong to the deployment field, not the form.
_DEPLOYMENT_ERRORS = (ErrorKind.NOT_FOUND, ErrorKind.BAD_REQUEST)


def _select(options: list[str], key: str) -> SelectSelector:
    return SelectSelector(
        SelectSelectorConfig(options=options, translation_key=key, mode=SelectSelectorMode.DROPDOWN)
    )


def _number(low: float, high: float, step: float, unit: str | None = None) -> NumberSelector:
    config = NumberSelectorConfig(min=low, max=high, step=step, mode=NumberSelectorMode.BOX)
    if unit is not None:
        config["unit_of_measurement"] = unit
    return NumberSelector(config)


_PASSWORD = TextSelector(TextSelectorConfig(type=TextSelectorType.PASSWORD))
# The first agent of a deployment that refuses classic parameters (max_tokens) is a
# reasoning model: it gets the effort the API assumes when none is sent.
FIRST_AGENT_REASONING_EFFORT = "medium"

RECOMMENDED_AGENT = {
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


def _resource_schema(with_key: bool) -> vol.Schema:
    schema: dict[vol.Marker, Any] = {vol.Required(CONF_ENDPOINT): str}
    if with_key:
        schema[vol.Required(CONF_API_KEY)] = _PASSWORD
    schema[vol.Required(CONF_API_STYLE, default=RECOMMENDED_API_STYLE)] = _select(
        API_STYLES, CONF_API_STYLE
    )
    schema[vol.Optional(CONF_API_VERSION, default=RECOMMENDED_API_VERSION)] = str
    return vol.Schema(schema)


USER_SCHEMA = _resource_schema(with_key=True).extend(
    {vol.Required(CONF_DEPLOYMENT, default=RECOMMENDED_DEPLOYMENT): str}
)
RECONFIGURE_SCHEMA = _resource_schema(with_key=False)
REAUTH_SCHEMA = vol.Schema({vol.Required(CONF_API_KEY): _PASSWORD})


async def _async_check_resource(hass: HomeAssistant, data: Mapping[str, Any]) -> str | None:
    """Prove the resource settings; return a flow error key, or None when they work."""
    client = await async_create_client(hass, settings_from_entry_data(data))
    try:
        await async_check_resource(client)
    except API_ERRORS as err:
        kind = classify_error(err)
        if kind is ErrorKind.BAD_REQUEST and data[CONF_API_STYLE] == API_STYLE_DEPLOYMENT:
            # Listing models takes nothing but the api-version that could be refused.
            return "invalid_api_version"
        if kind not in _FLOW_ERRORS:
            _LOGGER.warning("Unexpected answer while checking the resource: %s", kind)
        return _FLOW_ERRORS.get(kind, "unknown")
    finally:
        await async_release_client(client)
    return None


async def _async_check_deployment(
    hass: HomeAssistant,
    entry_data: Mapping[str, Any],
    deployment: str,
    api_mode: str,
    reasoning_effort: str,
) -> tuple[ErrorKind | None, str]:
    """Prove a deployment answers; the kind of failure (None: it works) and a form error key."""
    client = await async_create_client(hass, settings_from_entry_data(entry_data))
    try:
        await async_check_deployment(client, deployment, api_mode, reasoning_effort)
    except API_ERRORS as err:
        kind = classify_error(err)
        if kind is ErrorKind.NOT_FOUND:
            return kind, "deployment_not_found"
        if kind is ErrorKind.BAD_REQUEST:
            return kind, "deployment_rejected"
        if kind not in _FLOW_ERRORS:
            _LOGGER.warning("Unexpected answer while checking the deployment: %s", kind)
        return kind, _FLOW_ERRORS.get(kind, "unknown")
    finally:
        await async_release_client(client)
    return None, ""


class AzureOpenAIMemoryConfigFlow(ConfigFlow, domain=DOMAIN):
    """Add, reauthenticate and reconfigure one Azure OpenAI resource."""

    VERSION = 1
    # 2: the time-series settings left the entry options for the installation's store.
    MINOR_VERSION = 2

    async def _async_validate(
        self, user_input: dict[str, Any], errors: dict[str, str]
    ) -> dict[str, Any] | None:
        """Normalize and prove user input; fill errors and return None when it fails."""
        try:
            endpoint = normalize_endpoint(user_input[CONF_ENDPOINT])
        except InvalidEndpoint:
            errors[CONF_ENDPOINT] = "invalid_url"
            return None
        data = {**user_input, CONF_ENDPOINT: endpoint}
        if data[CONF_API_STYLE] != API_STYLE_DEPLOYMENT:
            data.pop(CONF_API_VERSION, None)
        else:
            data[CONF_API_VERSION] = str(data.get(CONF_API_VERSION) or "").strip()
            if not API_VERSION_PATTERN.match(data[CONF_API_VERSION]):
                errors[CONF_API_VERSION] = "invalid_api_version"
                return None
        if (error := await _async_check_resource(self.hass, data)) is not None:
            errors[CONF_API_VERSION if error == "invalid_api_version" else "base"] = error
            return None
        return data

    async def async_step_user(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Ask for the resource and the first agent's deployment."""
        errors: dict[str, str] = {}
        if user_input is not None:
            with_uid = dict(user_input)
            try:
                await self.async_set_unique_id(normalize_endpoint(user_input[CONF_ENDPOINT]))
                self._abort_if_unique_id_configured()
            except InvalidEndpoint:
                pass
            deployment = with_uid.pop(CONF_DEPLOYMENT).strip()
            if (data := await self._async_validate(with_uid, errors)) is not None and (
                agent := await self._async_first_agent(data, deployment, errors)
            ) is not None:
                return self.async_create_entry(
                    title=resource_title(data[CONF_ENDPOINT]),
                    data=data,
                    options=RECOMMENDED_OPTIONS,
                    subentries=[
                        {
                            "subentry_type": SUBENTRY_AGENT,
                            "data": agent,
                            "title": DEFAULT_AGENT_NAME,
                            "unique_id": None,
                        }
                    ],
                )
        return self.async_show_form(
            step_id="user",
            data_schema=self.add_suggested_values_to_schema(USER_SCHEMA, user_input),
            errors=errors,
            description_placeholders={"responses_version": RESPONSES_MIN_API_VERSION},
        )

    async def _async_first_agent(
        self, data: Mapping[str, Any], deployment: str, errors: dict[str, str]
    ) -> dict[str, Any] | None:
        """The first agent's options, once its deployment has answered; None on failure.

        A deployment that refuses the classic parameters is tried once more as a
        reasoning model, so that an o-series or GPT-5 deployment works as the first agent.
        """
        agent = {**RECOMMENDED_AGENT, CONF_DEPLOYMENT: deployment}
        kind, error = await _async_check_deployment(
            self.hass, data, deployment, RECOMMENDED_API_MODE, RECOMMENDED_REASONING_EFFORT
        )
        if kind is ErrorKind.BAD_REQUEST and RECOMMENDED_REASONING_EFFORT == REASONING_EFFORT_OFF:
            reasoning, _ = await _async_check_deployment(
                self.hass, data, deployment, RECOMMENDED_API_MODE, FIRST_AGENT_REASONING_EFFORT
            )
            if reasoning is None:
                return {**agent, CONF_REASONING_EFFORT: FIRST_AGENT_REASONING_EFFORT}
        if kind is None:
            return agent
        errors[CONF_DEPLOYMENT if kind in _DEPLOYMENT_ERRORS else "base"] = error
        return None

    async def async_step_reauth(self, entry_data: Mapping[str, Any]) -> ConfigFlowResult:
        """The key stopped working."""
        return await self.async_step_reauth_confirm()

    async def async_step_reauth_confirm(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Ask for a new key and prove it."""
        errors: dict[str, str] = {}
        entry = self._get_reauth_entry()
        if user_input is not None:
            data = {**entry.data, **user_input}
            if (error := await _async_check_resource(self.hass, data)) is None:
                return self.async_update_reload_and_abort(entry, data_updates=user_input)
            errors["base"] = error
        return self.async_show_form(
            step_id="reauth_confirm",
            data_schema=REAUTH_SCHEMA,
            errors=errors,
            description_placeholders={"endpoint": entry.title},
        )

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Change endpoint, API style or api-version, keeping the entry and its agents."""
        errors: dict[str, str] = {}
        entry = self._get_reconfigure_entry()
        if user_input is not None:
            try:
                endpoint = normalize_endpoint(user_input[CONF_ENDPOINT])
            except InvalidEndpoint:
                endpoint = None
            if endpoint is not None and any(
                other.unique_id == endpoint
                for other in self._async_current_entries(include_ignore=False)
                if other.entry_id != entry.entry_id
            ):
                return self.async_abort(reason="already_configured")
            data = await self._async_validate(
                {**user_input, CONF_API_KEY: entry.data[CONF_API_KEY]}, errors
            )
            if data is not None:
                title = entry.title
                if is_untouched_title(title, entry.data[CONF_ENDPOINT]):
                    title = resource_title(data[CONF_ENDPOINT])
                return self.async_update_reload_and_abort(
                    entry, unique_id=data[CONF_ENDPOINT], title=title, data=data
                )
        return self.async_show_form(
            step_id="reconfigure",
            data_schema=self.add_suggested_values_to_schema(
                RECONFIGURE_SCHEMA, user_input or dict(entry.data)
            ),
            errors=errors,
        )

    @staticmethod
    @callback
    def async_get_options_flow(config_entry: ConfigEntry) -> OptionsFlow:
        """Entry-level memory options."""
        return MemoryOptionsFlow()

    @classmethod
    @callback
    def async_get_supported_subentry_types(
        cls, config_entry: ConfigEntry
    ) -> dict[str, type[ConfigSubentryFlow]]:
        """Agents are subentries."""
        types: dict[str, type[ConfigSubentryFlow]] = {SUBENTRY_AGENT: AgentSubentryFlow}
        if HAS_AI_TASK:
            types[SUBENTRY_AI_TASK] = AITaskSubentryFlow
        return types


OPTIONS_SCHEMA = vol.Schema(
    {
        vol.Required(CONF_CONVERSATION_IDLE_MINUTES): _number(5, 60 * 24 * 30, 5, "min"),
        vol.Required(CONF_MAX_CONVERSATIONS): _number(1, 10_000, 1),
        vol.Required(CONF_CONTINUATION_MINUTES): _number(0, 24 * 60, 1, "min"),
        vol.Required(CONF_TIMESERIES_CONTEXT): BooleanSelector(),
        # Shared by the whole installation (the series are the home's): kept by the
        # time-series store, not in this entry's options.
        vol.Required(CONF_TIMESERIES_MAX_ENTRIES): _number(100, 1_000_000, 100),
        vol.Required(CONF_TIMESERIES_KEEP_DAYS): _number(1, 3650, 1, "d"),
        vol.Required(CONF_HISTORY_RECORDING): BooleanSelector(),
        # Shared by the whole installation too: kept in the history database.
        vol.Required(CONF_HISTORY_RETENTION_DAYS): _number(1, 3650, 1, "d"),
        # Summaries: written by the first entry that turns them on (see summarizing.py).
        vol.Required(CONF_SUMMARIES): BooleanSelector(),
        vol.Required(CONF_SUMMARY_TIME): TimeSelector(),
        vol.Required(CONF_SUMMARY_GROUP_MODE): _select(SUMMARY_GROUP_MODES, "summary_group_mode"),
        vol.Required(CONF_SUMMARY_CONTEXT_TOKENS): _number(0, 4000, 50, "tokens"),
        # Memories: this entry's embeddings deployment (empty: none), switch and budget.
        vol.Optional(CONF_EMBEDDINGS_DEPLOYMENT): TextSelector(),
        vol.Optional(CONF_MEMORY_CONTEXT): BooleanSelector(),
        vol.Optional(CONF_MEMORY_TOKEN_BUDGET): _number(50, 20_000, 50, "tokens"),
        # The seed's MEMORY_CONFIG, shared by the whole installation: kept by the memories.
        vol.Optional(CONF_ARCHIVE_RETENTION_DAYS): _number(1, 3650, 1, "d"),
        vol.Optional(CONF_HIGH_CONFIDENCE_THRESHOLD): _number(2, 100, 1),
        vol.Optional(CONF_MAX_MEMORIES_PER_TYPE): _number(1, 100_000, 1),
        vol.Optional(CONF_RELEVANCE_SCORE_THRESHOLD): _number(0, 100, 1),
    }
)
# What the options form shows for the memory fields of an entry that never saved them.
MEMORY_OPTION_DEFAULTS = {
    CONF_EMBEDDINGS_DEPLOYMENT: RECOMMENDED_EMBEDDINGS_DEPLOYMENT,
    CONF_MEMORY_CONTEXT: RECOMMENDED_MEMORY_CONTEXT,
    CONF_MEMORY_TOKEN_BUDGET: RECOMMENDED_MEMORY_TOKEN_BUDGET,
}


def _memory_settings(current: FactSettings, options: dict[str, Any]) -> FactSettings:
    """Take the installation's memory settings out of the submitted options."""
    return FactSettings(
        archive_retention_days=float(
            options.pop(CONF_ARCHIVE_RETENTION_DAYS, current.archive_retention_days)
        ),
        high_confidence_threshold=int(
            options.pop(CONF_HIGH_CONFIDENCE_THRESHOLD, current.high_confidence_threshold)
        ),
        max_memories_per_type=int(
            options.pop(CONF_MAX_MEMORIES_PER_TYPE, current.max_memories_per_type)
        ),
        relevance_score_threshold=float(
            options.pop(CONF_RELEVANCE_SCORE_THRESHOLD, current.relevance_score_threshold)
        ),
    )


class MemoryOptionsFlow(OptionsFlow):
    """Memory switches and retention of the resource, and the installation's series settings."""

    async def _async_check_embeddings(self, options: dict[str, Any]) -> None:
        """Prove a newly named embeddings deployment with one request, before anything is saved."""
        deployment = str(options.get(CONF_EMBEDDINGS_DEPLOYMENT) or "").strip()
        entry = self.config_entry
        if not deployment or deployment == entry.options.get(CONF_EMBEDDINGS_DEPLOYMENT):
            return
        if entry.state is not ConfigEntryState.LOADED:
            return  # proved by its first use instead; failing, memories rank by words
        try:
            await async_check_embeddings(entry.runtime_data.client, deployment)
        except API_ERRORS as err:
            if classify_error(err) is ErrorKind.NOT_FOUND:
                raise EmbeddingsRefused("embeddings_deployment_not_found") from err
            raise EmbeddingsRefused("embeddings_deployment_failed") from err

    async def async_step_init(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """One form; a change of the entry's part reloads the entry."""
        series = self.hass.data[DATA_TIMESERIES]
        history = self.hass.data[DATA_HISTORY]
        try:
            retention = await history.async_retention_days()
        except HomeAssistantError:  # unavailable: shown as the default, saved if changed
            retention = float(RECOMMENDED_HISTORY_RETENTION_DAYS)
        errors: dict[str, str] = {}
        if user_input is not None:
            options = {key: _whole(value) for key, value in user_input.items()}
            wanted = float(options.pop(CONF_HISTORY_RETENTION_DAYS))
            try:
                await self._async_check_embeddings(options)
                if wanted != retention:
                    await history.async_set_retention_days(wanted)
            except EmbeddingsRefused as err:
                errors[CONF_EMBEDDINGS_DEPLOYMENT] = err.key
            except HomeAssistantError:
                errors[CONF_HISTORY_RETENTION_DAYS] = "history_unavailable"
            else:
                series.async_update_settings(
                    TimeseriesSettings(
                        max_entries=int(options.pop(CONF_TIMESERIES_MAX_ENTRIES)),
                        keep_days=float(options.pop(CONF_TIMESERIES_KEEP_DAYS)),
                    )
                )
                memories = self.hass.data[DATA_MEMORIES]
                memories.async_update_settings(_memory_settings(memories.settings, options))
                if CONF_EMBEDDINGS_DEPLOYMENT in options:
                    options[CONF_EMBEDDINGS_DEPLOYMENT] = str(
                        options[CONF_EMBEDDINGS_DEPLOYMENT]
                    ).strip()
                return self.async_create_entry(data=options)
        memory_settings = self.hass.data[DATA_MEMORIES].settings
        return self.async_show_form(
            step_id="init",
            data_schema=self.add_suggested_values_to_schema(
                OPTIONS_SCHEMA,
                {
                    **RECOMMENDED_OPTIONS,
                    **self.config_entry.options,
                    CONF_TIMESERIES_MAX_ENTRIES: series.settings.max_entries,
                    CONF_TIMESERIES_KEEP_DAYS: series.settings.keep_days,
                    CONF_HISTORY_RETENTION_DAYS: retention,
                    **MEMORY_OPTION_DEFAULTS,
                    **{
                        k: v
                        for k, v in self.config_entry.options.items()
                        if k in MEMORY_OPTION_DEFAULTS
                    },
                    CONF_ARCHIVE_RETENTION_DAYS: memory_settings.archive_retention_days,
                    CONF_HIGH_CONFIDENCE_THRESHOLD: memory_settings.high_confidence_threshold,
                    CONF_MAX_MEMORIES_PER_TYPE: memory_settings.max_memories_per_type,
                    CONF_RELEVANCE_SCORE_THRESHOLD: memory_settings.relevance_score_threshold,
                    **(user_input or {}),
                },
            ),
            errors=errors,
        )


class EmbeddingsRefused(Exception):
    """A new embeddings deployment did not answer; key is the form's error."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _whole(value: Any) -> Any:
    """Number selectors give floats; counts are stored as ints."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


class AgentSubentryFlow(ConfigSubentryFlow):
    """Add or edit one conversation agent."""

    default_name = DEFAULT_AGENT_NAME
    controls_home = True
    recommended: dict[str, Any] = RECOMMENDED_AGENT

    async def async_step_user(self, user_input: dict[str, Any] | None = None) -> SubentryFlowResult:
        """Add one."""
        return await self._async_agent_form("user", user_input, self.recommended)

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Edit one."""
        current = {**self.recommended, **self._get_reconfigure_subentry().data}
        return await self._async_agent_form("reconfigure", user_input, current)

    def _schema(self) -> vol.Schema:
        apis = [
            SelectOptionDict(label=api.name, value=api.id) for api in llm.async_get_apis(self.hass)
        ]
        schema: dict[vol.Marker, Any] = {}
        if self.source == "user":
            schema[vol.Required(CONF_NAME, default=self.default_name)] = str
        schema.update(
            {
                vol.Required(CONF_DEPLOYMENT): str,
                vol.Required(CONF_API_MODE): _select(API_MODES, CONF_API_MODE),
                vol.Optional(CONF_PROMPT): TemplateSelector(),
                vol.Optional(CONF_LLM_HASS_API): SelectSelector(
                    SelectSelectorConfig(
                        options=llm_api_choices(apis),
                        multiple=LLM_API_ACCEPTS_LIST,
                        translation_key=CONF_LLM_HASS_API,
                    )
                ),
                vol.Required(CONF_TEMPERATURE): _number(0, 2, 0.05),
                vol.Required(CONF_TOP_P): _number(0, 1, 0.05),
                vol.Required(CONF_MAX_TOKENS): _number(16, 128_000, 1),
                vol.Required(CONF_REASONING_EFFORT): _select(
                    REASONING_EFFORTS, CONF_REASONING_EFFORT
                ),
                vol.Required(CONF_REQUEST_TIMEOUT): _number(5, 600, 1, "s"),
                vol.Required(CONF_EARLY_TIMEOUT): _number(0, 120, 0.5, "s"),
                vol.Required(CONF_SLIDING_WINDOW_MAX_TOKENS): _number(256, 1_000_000, 1),
                # Empty: what the deployment's model takes (memory.tokens.context_limit_for_model).
                vol.Optional(CONF_CONTEXT_LIMIT): _number(0, 10_000_000, 1, "tokens"),
                vol.Required(CONF_PREFER_LOCAL_INTENTS): BooleanSelector(),
            }
        )
        return vol.Schema(schema)

    async def _async_agent_form(
        self, step_id: str, user_input: dict[str, Any] | None, current: Mapping[str, Any]
    ) -> SubentryFlowResult:
        errors: dict[str, str] = {}
        if user_input is not None:
            data = {key: _whole(value) for key, value in user_input.items()}
            if self.controls_home:
                data[CONF_LLM_HASS_API] = llm_api_option(data.get(CONF_LLM_HASS_API))
            data[CONF_DEPLOYMENT] = str(data[CONF_DEPLOYMENT]).strip()
            if not data.get(CONF_CONTEXT_LIMIT):
                data.pop(CONF_CONTEXT_LIMIT, None)  # 0 or empty: follow the deployment
            title = data.pop(CONF_NAME, None)
            errors = await self._async_check_agent(data)
            if not errors:
                if step_id == "user":
                    return self.async_create_entry(title=title or self.default_name, data=data)
                return self.async_update_and_abort(
                    self._get_entry(), self._get_reconfigure_subentry(), data=data
                )
        suggested = dict(user_input or current)
        suggested[CONF_LLM_HASS_API] = llm_api_suggested(suggested.get(CONF_LLM_HASS_API))
        return self.async_show_form(
            step_id=step_id,
            data_schema=self.add_suggested_values_to_schema(self._schema(), suggested),
            errors=errors,
            description_placeholders={"responses_version": RESPONSES_MIN_API_VERSION},
        )

    async def _async_check_agent(self, data: dict[str, Any]) -> dict[str, str]:
        """Check the options, then prove the deployment answers."""
        entry = self._get_entry()
        if data.get(CONF_EARLY_TIMEOUT, 0) >= data[CONF_REQUEST_TIMEOUT]:
            return {CONF_EARLY_TIMEOUT: "early_timeout_too_long"}
        settings = settings_from_entry_data(entry.data)
        if (
            data[CONF_API_MODE] == API_MODE_RESPONSES
            and settings.api_style == API_STYLE_DEPLOYMENT
            and settings.api_version[:10] < RESPONSES_MIN_API_VERSION[:10]
        ):
            return {CONF_API_MODE: "responses_needs_api_version"}
        kind, error = await _async_check_deployment(
            self.hass,
            entry.data,
            data[CONF_DEPLOYMENT],
            data[CONF_API_MODE],
            data[CONF_REASONING_EFFORT],
        )
        if kind is None:
            return {}
        # A rejected request here is most often a reasoning model without an effort.
        return {CONF_DEPLOYMENT if kind is ErrorKind.NOT_FOUND else "base": error}


RECOMMENDED_AI_TASK = {
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


class AITaskSubentryFlow(AgentSubentryFlow):
    """Add or edit one AI task entity (Home Assistant 2025.8 and later).

    The agent's form without what belongs to a conversation: instructions come with
    each task, it controls nothing, and it keeps no conversation window.
    """

    default_name = DEFAULT_AI_TASK_NAME
    controls_home = False
    recommended = RECOMMENDED_AI_TASK

    def _schema(self) -> vol.Schema:
        schema: dict[vol.Marker, Any] = {}
        if self.source == "user":
            schema[vol.Required(CONF_NAME, default=self.default_name)] = str
        schema.update(
            {
                vol.Required(CONF_DEPLOYMENT): str,
                vol.Required(CONF_API_MODE): _select(API_MODES, CONF_API_MODE),
                vol.Required(CONF_TEMPERATURE): _number(0, 2, 0.05),
                vol.Required(CONF_TOP_P): _number(0, 1, 0.05),
                vol.Required(CONF_MAX_TOKENS): _number(16, 128_000, 1),
                vol.Required(CONF_REASONING_EFFORT): _select(
                    REASONING_EFFORTS, CONF_REASONING_EFFORT
                ),
                vol.Required(CONF_REQUEST_TIMEOUT): _number(5, 600, 1, "s"),
            }
        )
        return vol.Schema(schema)
