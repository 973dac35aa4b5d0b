"""Add or edit one conversation agent or one AI task entity (a subentry of the resource)."""

from collections.abc import Mapping
from typing import Any

from homeassistant.config_entries import (
    ConfigSubentryFlow,
    SubentryFlowResult,
)
from homeassistant.const import CONF_LLM_HASS_API, CONF_NAME
from homeassistant.helpers import llm
from homeassistant.helpers.selector import (
    BooleanSelector,
    SelectOptionDict,
    SelectSelector,
    SelectSelectorConfig,
    TemplateSelector,
)
import voluptuous as vol

from .azure.errors import ErrorKind
from .compat import (
    LLM_API_ACCEPTS_LIST,
    llm_api_choices,
    llm_api_option,
    llm_api_suggested,
)
from .const import (
    API_MODE_RESPONSES,
    API_MODES,
    API_STYLE_DEPLOYMENT,
    CONF_API_MODE,
    CONF_CONTEXT_LIMIT,
    CONF_DEPLOYMENT,
    CONF_EARLY_TIMEOUT,
    CONF_MAX_TOKENS,
    CONF_PREFER_LOCAL_INTENTS,
    CONF_PROMPT,
    CONF_PROMPT_CACHE_KEY,
    CONF_REASONING_EFFORT,
    CONF_REQUEST_TIMEOUT,
    CONF_SLIDING_WINDOW_MAX_TOKENS,
    CONF_TEMPERATURE,
    CONF_TOP_P,
    DEFAULT_AGENT_NAME,
    DEFAULT_AI_TASK_NAME,
    HOUSEHOLD_API_ID,
    PROMPT_CACHE_KEY_CHOICES,
    REASONING_EFFORTS,
    RECOMMENDED_AGENT,
    RECOMMENDED_AI_TASK,
    RESPONSES_MIN_API_VERSION,
    SUBENTRY_AGENT,
)
from .data import settings_from_entry_data
from .flow_common import (
    async_check_deployment_form,
    number,
    select,
    whole,
)
from .people.household import agent_llm_apis


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
        schema[vol.Required(CONF_API_MODE)] = select(API_MODES, CONF_API_MODE)
        if self._is_agent:
            # The household memory's tools come with every agent: not a choice here.
            apis = [
                SelectOptionDict(label=api.name, value=api.id)
                for api in llm.async_get_apis(self.hass)
                if api.id != HOUSEHOLD_API_ID
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
                vol.Required(CONF_TEMPERATURE): number(0, 2, 0.05),
                vol.Required(CONF_TOP_P): number(0, 1, 0.05),
                vol.Required(CONF_MAX_TOKENS): number(16, 128_000, 1),
                vol.Required(CONF_REASONING_EFFORT): select(
                    REASONING_EFFORTS, CONF_REASONING_EFFORT
                ),
                vol.Required(CONF_REQUEST_TIMEOUT): number(5, 600, 1, "s"),
            }
        )
        if self._is_agent:
            schema.update(
                {
                    vol.Required(CONF_EARLY_TIMEOUT): number(0, 120, 0.5, "s"),
                    vol.Required(CONF_SLIDING_WINDOW_MAX_TOKENS): number(256, 1_000_000, 1),
                    # Empty: what the deployment's model takes
                    # (lib/tokens.py: context_limit_for_model).
                    vol.Optional(CONF_CONTEXT_LIMIT): number(0, 10_000_000, 1, "tokens"),
                    vol.Required(CONF_PREFER_LOCAL_INTENTS): BooleanSelector(),
                    # Empty: automatic (azure/client.py: sends_prompt_cache_key).
                    vol.Optional(CONF_PROMPT_CACHE_KEY): select(
                        PROMPT_CACHE_KEY_CHOICES, CONF_PROMPT_CACHE_KEY
                    ),
                }
            )
        return vol.Schema(schema)

    async def _async_form(
        self, step_id: str, user_input: dict[str, Any] | None, current: Mapping[str, Any]
    ) -> SubentryFlowResult:
        errors: dict[str, str] = {}
        if user_input is not None:
            data = {key: whole(value) for key, value in user_input.items()}
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
            suggested[CONF_LLM_HASS_API] = llm_api_suggested(
                agent_llm_apis(suggested.get(CONF_LLM_HASS_API))
            )
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
        kind, error = await async_check_deployment_form(
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
