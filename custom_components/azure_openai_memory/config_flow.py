"""Config flow: one Azure OpenAI resource per entry, one agent or AI task per subentry."""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
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
from homeassistant.data_entry_flow import section
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import llm
from homeassistant.helpers.selector import (
    BooleanSelector,
    DurationSelector,
    DurationSelectorConfig,
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
    FIRST_AGENT_REASONING_EFFORT,
    REASONING_EFFORT_OFF,
    REASONING_EFFORTS,
    RECOMMENDED_AGENT,
    RECOMMENDED_AI_TASK,
    RECOMMENDED_API_MODE,
    RECOMMENDED_API_STYLE,
    RECOMMENDED_API_VERSION,
    RECOMMENDED_DEPLOYMENT,
    RECOMMENDED_HISTORY_RETENTION_DAYS,
    RECOMMENDED_MEMORY_OPTIONS,
    RECOMMENDED_OPTIONS,
    RECOMMENDED_REASONING_EFFORT,
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
        """Agents and AI tasks are subentries; one handler serves both kinds."""
        types: dict[str, type[ConfigSubentryFlow]] = {SUBENTRY_AGENT: LLMSubentryFlowHandler}
        if HAS_AI_TASK:
            types[SUBENTRY_AI_TASK] = LLMSubentryFlowHandler
        return types


SECTION_CONVERSATIONS = "conversations"
SECTION_TIMESERIES = "timeseries"
SECTION_MEMORIES = "memories"
SECTION_HISTORY = "history"
SECTION_SUMMARIES = "summaries"

# The home's settings among the options form's fields: each kind's store keeps them, the
# form shows them and returns those the user changed (see _async_apply_home_options).
HOME_SETTINGS = (
    CONF_TIMESERIES_MAX_ENTRIES,
    CONF_TIMESERIES_KEEP_DAYS,
    CONF_ARCHIVE_RETENTION_DAYS,
    CONF_HIGH_CONFIDENCE_THRESHOLD,
    CONF_MAX_MEMORIES_PER_TYPE,
    CONF_RELEVANCE_SCORE_THRESHOLD,
    CONF_HISTORY_RETENTION_DAYS,
)


@dataclass(frozen=True, slots=True)
class MinutesField:
    """An option stored in minutes that the form shows as a duration, and its bounds."""

    low: float
    high: float
    with_days: bool
    error: str


# Retentions stay counts of days: what they govern is purged once a day.
MINUTES_FIELDS = {
    CONF_CONVERSATION_IDLE_MINUTES: MinutesField(
        5, 30 * 24 * 60, with_days=True, error="conversation_idle_out_of_range"
    ),
    CONF_CONTINUATION_MINUTES: MinutesField(
        0, 24 * 60, with_days=False, error="continuation_out_of_range"
    ),
}


_MINUTE = timedelta(minutes=1)


def _duration_selector(field: MinutesField) -> DurationSelector:
    return DurationSelector(
        DurationSelectorConfig(enable_day=field.with_days, allow_negative=False)
    )


def _options_schema() -> vol.Schema:
    """The options form, in sections.

    Built anew for each form: Home Assistant 2025.4 writes suggested values into the
    schema of the section it is given.
    """
    return vol.Schema(
        {
            vol.Required(SECTION_CONVERSATIONS): section(
                vol.Schema(
                    {
                        vol.Required(CONF_CONVERSATION_IDLE_MINUTES): _duration_selector(
                            MINUTES_FIELDS[CONF_CONVERSATION_IDLE_MINUTES]
                        ),
                        vol.Required(CONF_MAX_CONVERSATIONS): _number(1, 10_000, 1),
                        vol.Required(CONF_CONTINUATION_MINUTES): _duration_selector(
                            MINUTES_FIELDS[CONF_CONTINUATION_MINUTES]
                        ),
                    }
                ),
                {"collapsed": False},
            ),
            vol.Required(SECTION_TIMESERIES): section(
                vol.Schema(
                    {
                        vol.Required(CONF_TIMESERIES_CONTEXT): BooleanSelector(),
                        vol.Required(CONF_TIMESERIES_MAX_ENTRIES): _number(100, 1_000_000, 100),
                        vol.Required(CONF_TIMESERIES_KEEP_DAYS): _number(1, 3650, 1, "d"),
                    }
                ),
                {"collapsed": True},
            ),
            vol.Required(SECTION_MEMORIES): section(
                vol.Schema(
                    {
                        # This entry's embeddings deployment (empty: none), switch and budget.
                        vol.Optional(CONF_EMBEDDINGS_DEPLOYMENT): TextSelector(),
                        vol.Optional(CONF_MEMORY_CONTEXT): BooleanSelector(),
                        vol.Optional(CONF_MEMORY_TOKEN_BUDGET): _number(50, 20_000, 50, "tokens"),
                        # The seed's MEMORY_CONFIG, the installation's.
                        vol.Optional(CONF_ARCHIVE_RETENTION_DAYS): _number(1, 3650, 1, "d"),
                        vol.Optional(CONF_HIGH_CONFIDENCE_THRESHOLD): _number(2, 100, 1),
                        vol.Optional(CONF_MAX_MEMORIES_PER_TYPE): _number(1, 100_000, 1),
                        vol.Optional(CONF_RELEVANCE_SCORE_THRESHOLD): _number(0, 100, 1),
                    }
                ),
                {"collapsed": True},
            ),
            vol.Required(SECTION_HISTORY): section(
                vol.Schema(
                    {
                        vol.Required(CONF_HISTORY_RECORDING): BooleanSelector(),
                        vol.Required(CONF_HISTORY_RETENTION_DAYS): _number(1, 3650, 1, "d"),
                    }
                ),
                {"collapsed": True},
            ),
            vol.Required(SECTION_SUMMARIES): section(
                vol.Schema(
                    {
                        vol.Required(CONF_SUMMARIES): BooleanSelector(),
                        vol.Required(CONF_SUMMARY_TIME): TimeSelector(),
                        vol.Required(CONF_SUMMARY_GROUP_MODE): _select(
                            SUMMARY_GROUP_MODES, "summary_group_mode"
                        ),
                        vol.Required(CONF_SUMMARY_CONTEXT_TOKENS): _number(0, 4000, 50, "tokens"),
                    }
                ),
                {"collapsed": True},
            ),
        }
    )


def _minutes(duration: Mapping[str, float]) -> float:
    """A duration selector's value in minutes, as the option is stored."""
    minutes = timedelta(**{unit: float(n) for unit, n in duration.items()}) / _MINUTE
    return int(minutes) if minutes.is_integer() else minutes


def _duration(minutes: float, with_days: bool) -> dict[str, float]:
    """A stored number of minutes as the duration selector shows it."""
    rest = float(minutes) * 60
    parts: dict[str, float] = {}
    if with_days:
        parts["days"], rest = divmod(rest, 86_400)
    parts["hours"], rest = divmod(rest, 3600)
    parts["minutes"], parts["seconds"] = divmod(rest, 60)
    return {unit: _whole(n) for unit, n in parts.items()}


def _form_values(schema: vol.Schema, options: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Stored options as the sectioned form shows them: durations for minutes."""
    shown = {
        key: _duration(value, MINUTES_FIELDS[key].with_days)
        if key in MINUTES_FIELDS and isinstance(value, int | float)
        else value
        for key, value in options.items()
    }
    return {
        str(name): {str(key): shown[str(key)] for key in part.schema.schema if str(key) in shown}
        for name, part in schema.schema.items()
    }


def _stored_values(
    user_input: Mapping[str, Mapping[str, Any]], errors: dict[str, str]
) -> dict[str, Any]:
    """The submitted sections as options are stored: one level, minutes, whole numbers."""
    options: dict[str, Any] = {}
    for name, part in user_input.items():
        for key, value in part.items():
            if (field := MINUTES_FIELDS.get(key)) is None:
                options[key] = _whole(value)
                continue
            options[key] = minutes = _minutes(value)
            if not field.low <= minutes <= field.high:
                errors[name] = field.error
    return options


class MemoryOptionsFlow(OptionsFlow):
    """The entry's memory options, beside the installation's settings of the home's stores.

    The form writes no store: the installation's settings the user changed come back in
    the options, and the entry's update hands them to their stores (see
    _async_apply_home_options in __init__.py). Only proving input happens here.
    """

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

    async def _async_home_settings(self) -> tuple[dict[str, Any], bool]:
        """The installation's settings as their stores hold them; whether history answered."""
        series = self.hass.data[DATA_TIMESERIES].settings
        memories = self.hass.data[DATA_MEMORIES].settings
        try:
            retention = await self.hass.data[DATA_HISTORY].async_retention_days()
        except HomeAssistantError:  # unavailable: shown as the default, not saved if changed
            retention, history_answers = float(RECOMMENDED_HISTORY_RETENTION_DAYS), False
        else:
            history_answers = True
        return {
            CONF_TIMESERIES_MAX_ENTRIES: series.max_entries,
            CONF_TIMESERIES_KEEP_DAYS: series.keep_days,
            CONF_ARCHIVE_RETENTION_DAYS: memories.archive_retention_days,
            CONF_HIGH_CONFIDENCE_THRESHOLD: memories.high_confidence_threshold,
            CONF_MAX_MEMORIES_PER_TYPE: memories.max_memories_per_type,
            CONF_RELEVANCE_SCORE_THRESHOLD: memories.relevance_score_threshold,
            CONF_HISTORY_RETENTION_DAYS: retention,
        }, history_answers

    async def async_step_init(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """One form in sections; a change of the entry's part reloads the entry."""
        home, history_answers = await self._async_home_settings()
        schema = _options_schema()
        errors: dict[str, str] = {}
        if user_input is not None:
            submitted = _stored_values(user_input, errors)
            # The installation's settings come back only where they differ from the stores.
            options = {
                key: value
                for key, value in submitted.items()
                if key not in HOME_SETTINGS or value != home[key]
            }
            if CONF_HISTORY_RETENTION_DAYS in options and not history_answers:
                errors[SECTION_HISTORY] = "history_unavailable"
            if not errors:
                try:
                    await self._async_check_embeddings(options)
                except EmbeddingsRefused as err:
                    errors[SECTION_MEMORIES] = err.key
            if not errors:
                if CONF_EMBEDDINGS_DEPLOYMENT in options:
                    options[CONF_EMBEDDINGS_DEPLOYMENT] = str(
                        options[CONF_EMBEDDINGS_DEPLOYMENT]
                    ).strip()
                return self.async_create_entry(data=options)
        # A setting of the home still waiting in the options is the user's latest choice.
        shown = _form_values(
            schema,
            {
                **RECOMMENDED_OPTIONS,
                **RECOMMENDED_MEMORY_OPTIONS,
                **home,
                **self.config_entry.options,
            },
        )
        for name, part in (user_input or {}).items():
            shown[name] = {**shown.get(name, {}), **part}
        return self.async_show_form(
            step_id="init",
            data_schema=self.add_suggested_values_to_schema(schema, shown),
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


class LLMSubentryFlowHandler(ConfigSubentryFlow):
    """Add or edit one conversation agent, or one AI task entity (Home Assistant 2025.8+).

    The AI task's form is the agent's without what belongs to a conversation:
    instructions come with each task, it controls nothing, and it keeps no window.
    """

    @property
    def _is_agent(self) -> bool:
        return self.handler[1] == SUBENTRY_AGENT

    @property
    def _recommended(self) -> dict[str, Any]:
        return RECOMMENDED_AGENT if self._is_agent else RECOMMENDED_AI_TASK

    @property
    def _default_name(self) -> str:
        return DEFAULT_AGENT_NAME if self._is_agent else DEFAULT_AI_TASK_NAME

    async def async_step_user(self, user_input: dict[str, Any] | None = None) -> SubentryFlowResult:
        """Add one."""
        return await self._async_form("user", user_input, self._recommended)

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Edit one."""
        current = {**self._recommended, **self._get_reconfigure_subentry().data}
        return await self._async_form("reconfigure", user_input, current)

    def _schema(self) -> vol.Schema:
        schema: dict[vol.Marker, Any] = {}
        if self.source == "user":
            schema[vol.Required(CONF_NAME, default=self._default_name)] = str
        schema[vol.Required(CONF_DEPLOYMENT)] = str
        schema[vol.Required(CONF_API_MODE)] = _select(API_MODES, CONF_API_MODE)
        if self._is_agent:
            apis = [
                SelectOptionDict(label=api.name, value=api.id)
                for api in llm.async_get_apis(self.hass)
            ]
            schema[vol.Optional(CONF_PROMPT)] = TemplateSelector()
            schema[vol.Optional(CONF_LLM_HASS_API)] = SelectSelector(
                SelectSelectorConfig(
                    options=llm_api_choices(apis),
                    multiple=LLM_API_ACCEPTS_LIST,
                    translation_key=CONF_LLM_HASS_API,
                )
            )
        schema.update(
            {
                vol.Required(CONF_TEMPERATURE): _number(0, 2, 0.05),
                vol.Required(CONF_TOP_P): _number(0, 1, 0.05),
                vol.Required(CONF_MAX_TOKENS): _number(16, 128_000, 1),
                vol.Required(CONF_REASONING_EFFORT): _select(
                    REASONING_EFFORTS, CONF_REASONING_EFFORT
                ),
                vol.Required(CONF_REQUEST_TIMEOUT): _number(5, 600, 1, "s"),
            }
        )
        if self._is_agent:
            schema.update(
                {
                    vol.Required(CONF_EARLY_TIMEOUT): _number(0, 120, 0.5, "s"),
                    vol.Required(CONF_SLIDING_WINDOW_MAX_TOKENS): _number(256, 1_000_000, 1),
                    # Empty: what the deployment's model takes
                    # (memory.tokens.context_limit_for_model).
                    vol.Optional(CONF_CONTEXT_LIMIT): _number(0, 10_000_000, 1, "tokens"),
                    vol.Required(CONF_PREFER_LOCAL_INTENTS): BooleanSelector(),
                }
            )
        return vol.Schema(schema)

    async def _async_form(
        self, step_id: str, user_input: dict[str, Any] | None, current: Mapping[str, Any]
    ) -> SubentryFlowResult:
        errors: dict[str, str] = {}
        if user_input is not None:
            data = {key: _whole(value) for key, value in user_input.items()}
            if self._is_agent:
                data[CONF_LLM_HASS_API] = llm_api_option(data.get(CONF_LLM_HASS_API))
            data[CONF_DEPLOYMENT] = str(data[CONF_DEPLOYMENT]).strip()
            if not data.get(CONF_CONTEXT_LIMIT):
                data.pop(CONF_CONTEXT_LIMIT, None)  # 0 or empty: follow the deployment
            title = data.pop(CONF_NAME, None)
            errors = await self._async_check(data)
            if not errors:
                if step_id == "user":
                    return self.async_create_entry(title=title or self._default_name, data=data)
                return self.async_update_and_abort(
                    self._get_entry(), self._get_reconfigure_subentry(), data=data
                )
        suggested = dict(user_input or current)
        if self._is_agent:
            suggested[CONF_LLM_HASS_API] = llm_api_suggested(suggested.get(CONF_LLM_HASS_API))
        return self.async_show_form(
            step_id=step_id,
            data_schema=self.add_suggested_values_to_schema(self._schema(), suggested),
            errors=errors,
            description_placeholders={"responses_version": RESPONSES_MIN_API_VERSION},
        )

    async def _async_check(self, data: dict[str, Any]) -> dict[str, str]:
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
