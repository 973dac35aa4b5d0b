"""What the flows share: selectors, and the checks that prove settings against Azure."""

from collections.abc import Mapping
import logging
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.helpers.selector import (
    NumberSelector,
    NumberSelectorConfig,
    NumberSelectorMode,
    SelectSelector,
    SelectSelectorConfig,
    SelectSelectorMode,
    TextSelector,
    TextSelectorConfig,
    TextSelectorType,
)

from .azure.client import (
    async_check_deployment,
    async_check_resource,
    async_create_client,
    async_release_client,
)
from .azure.errors import API_ERRORS, ErrorKind, classify_error
from .const import (
    API_STYLE_DEPLOYMENT,
    CONF_API_STYLE,
)
from .data import settings_from_entry_data

_LOGGER = logging.getLogger(__name__)

# Flow error keys for the kinds of failure; anything not listed is "unknown".
FLOW_ERRORS = {
    ErrorKind.INVALID_AUTH: "invalid_auth",
    ErrorKind.CANNOT_CONNECT: "cannot_connect",
    ErrorKind.TIMEOUT: "timeout_connect",
    ErrorKind.NOT_FOUND: "endpoint_not_found",
}
# Failures of a deployment check that belong to the deployment field, not the form.
DEPLOYMENT_ERRORS = (ErrorKind.NOT_FOUND, ErrorKind.BAD_REQUEST)


def select(options: list[str], key: str) -> SelectSelector:
    """A translated drop-down of fixed choices."""
    return SelectSelector(
        SelectSelectorConfig(options=options, translation_key=key, mode=SelectSelectorMode.DROPDOWN)
    )


def number(low: float, high: float, step: float, unit: str | None = None) -> NumberSelector:
    """A number box with bounds and an optional unit."""
    config = NumberSelectorConfig(min=low, max=high, step=step, mode=NumberSelectorMode.BOX)
    if unit is not None:
        config["unit_of_measurement"] = unit
    return NumberSelector(config)


PASSWORD = TextSelector(TextSelectorConfig(type=TextSelectorType.PASSWORD))


async def async_check_resource_form(hass: HomeAssistant, data: Mapping[str, Any]) -> str | None:
    """Prove the resource settings; return a flow error key, or None when they work."""
    client = await async_create_client(hass, settings_from_entry_data(data))
    try:
        await async_check_resource(client)
    except API_ERRORS as err:
        kind = classify_error(err)
        if kind is ErrorKind.BAD_REQUEST and data[CONF_API_STYLE] == API_STYLE_DEPLOYMENT:
            # Listing models takes nothing but the api-version that could be refused.
            return "invalid_api_version"
        if kind not in FLOW_ERRORS:
            _LOGGER.warning("Unexpected answer while checking the resource: %s", kind)
        return FLOW_ERRORS.get(kind, "unknown")
    finally:
        await async_release_client(client)
    return None


async def async_check_deployment_form(
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
        if kind not in FLOW_ERRORS:
            _LOGGER.warning("Unexpected answer while checking the deployment: %s", kind)
        return kind, FLOW_ERRORS.get(kind, "unknown")
    finally:
        await async_release_client(client)
    return None, ""


def whole(value: Any) -> Any:
    """Number selectors give floats; counts are stored as ints."""
    return int(value) if isinstance(value, float) and value.is_integer() else value
