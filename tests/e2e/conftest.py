"""The e2e test runs Home Assistant in its own process: no hass fixture here."""

from ..no_hass import auto_enable_custom_integrations, detect_blocking_calls, setup_ha

__all__ = ["auto_enable_custom_integrations", "detect_blocking_calls", "setup_ha"]
