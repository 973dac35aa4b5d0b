"""Config flow: one Azure OpenAI resource per entry, one agent or AI task per subentry."""

from collections.abc import Mapping
import re
from typing import Any

from homeassistant.config_entries import (
    ConfigEntry,
    ConfigFlow,
    ConfigFlowResult,
    ConfigSubentryFlow,
    OptionsFlow,
)
from homeassistant.const import CONF_API_KEY
from homeassistant.core import callback
import voluptuous as vol

from .azure.client import (
    InvalidEndpoint,
    normalize_endpoint,
)
from .azure.errors import ErrorKind
from .compat import (
    HAS_AI_TASK,
)
from .const import (
    API_STYLE_DEPLOYMENT,
    API_STYLES,
    CONF_API_STYLE,
    CONF_API_VERSION,
    CONF_DEPLOYMENT,
    CONF_ENDPOINT,
    CONF_REASONING_EFFORT,
    DEFAULT_AGENT_NAME,
    DOMAIN,
    FIRST_AGENT_REASONING_EFFORT,
    REASONING_EFFORT_OFF,
    RECOMMENDED_AGENT,
    RECOMMENDED_API_MODE,
    RECOMMENDED_API_STYLE,
    RECOMMENDED_API_VERSION,
    RECOMMENDED_DEPLOYMENT,
    RECOMMENDED_OPTIONS,
    RECOMMENDED_REASONING_EFFORT,
    RESPONSES_MIN_API_VERSION,
    SUBENTRY_AGENT,
    SUBENTRY_AI_TASK,
)
from .flow_common import (
    DEPLOYMENT_ERRORS,
    PASSWORD,
    async_check_deployment_form,
    async_check_resource_form,
    select,
)
from .options_flow import OptionsFlowHandler
from .subentry_flow import LLMSubentryFlowHandler
from .title import is_untouched_title, resource_title

# Azure's dated api-versions: 2024-10-21, 2025-04-01-preview.
API_VERSION_PATTERN = re.compile(r"^\d{4}-\d{2}-\d{2}(-preview)?$")


def _resource_schema(with_key: bool) -> vol.Schema:
    schema: dict[vol.Marker, Any] = {vol.Required(CONF_ENDPOINT): str}
    if with_key:
        schema[vol.Required(CONF_API_KEY)] = PASSWORD
    schema[vol.Required(CONF_API_STYLE, default=RECOMMENDED_API_STYLE)] = select(
        API_STYLES, CONF_API_STYLE
    )
    schema[vol.Optional(CONF_API_VERSION, default=RECOMMENDED_API_VERSION)] = str
    return vol.Schema(schema)


USER_SCHEMA = _resource_schema(with_key=True).extend(
    {vol.Required(CONF_DEPLOYMENT, default=RECOMMENDED_DEPLOYMENT): str}
)
RECONFIGURE_SCHEMA = _resource_schema(with_key=False)
REAUTH_SCHEMA = vol.Schema({vol.Required(CONF_API_KEY): PASSWORD})


class AzureOpenAIMemoryConfigFlow(ConfigFlow, domain=DOMAIN):
    """Add, reauthenticate and reconfigure one Azure OpenAI resource."""

    VERSION = 1
    # 2: the time-series settings left the entry options for the installation's store.
    # 3: the device map names people by their id, not their entity id.
    MINOR_VERSION = 3

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
        if (error := await async_check_resource_form(self.hass, data)) is not None:
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
        kind, error = await async_check_deployment_form(
            self.hass, data, deployment, RECOMMENDED_API_MODE, RECOMMENDED_REASONING_EFFORT
        )
        if kind is ErrorKind.BAD_REQUEST and RECOMMENDED_REASONING_EFFORT == REASONING_EFFORT_OFF:
            reasoning, _ = await async_check_deployment_form(
                self.hass, data, deployment, RECOMMENDED_API_MODE, FIRST_AGENT_REASONING_EFFORT
            )
            if reasoning is None:
                return {**agent, CONF_REASONING_EFFORT: FIRST_AGENT_REASONING_EFFORT}
        if kind is None:
            return agent
        errors[CONF_DEPLOYMENT if kind in DEPLOYMENT_ERRORS else "base"] = error
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
            if (error := await async_check_resource_form(self.hass, data)) is None:
                return self._async_update_and_abort(
                    entry, "reauth_successful", data={**entry.data, **user_input}
                )
            errors["base"] = error
        return self.async_show_form(
            step_id="reauth_confirm",
            data_schema=REAUTH_SCHEMA,
            errors=errors,
            description_placeholders={"endpoint": entry.title},
        )

    def _async_update_and_abort(
        self, entry: ConfigEntry, reason: str, **changes: Any
    ) -> ConfigFlowResult:
        """Save the entry's new data and finish; the entry is set up again, once.

        A changed entry with an update listener (a loaded one) is reloaded by it: Home
        Assistant 2026.12 refuses a flow's own reload beside one. Any other (set-up failed or
        waiting to retry, or the same key given again) is reloaded here.
        """
        # Read before the update: the listener's reload may start within it (eager tasks).
        has_listener = bool(entry.update_listeners)
        changed = self.hass.config_entries.async_update_entry(entry, **changes)
        if not (changed and has_listener):
            self.hass.config_entries.async_schedule_reload(entry.entry_id)
        return self.async_abort(reason=reason)

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
                return self._async_update_and_abort(
                    entry,
                    "reconfigure_successful",
                    unique_id=data[CONF_ENDPOINT],
                    title=title,
                    data=data,
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
        """The entry's options form."""
        return OptionsFlowHandler()

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
