"""A ready-to-chat Home Assistant for scripts/develop, scripts/chat and the end-to-end suite.

Everything goes through Home Assistant's own REST and WebSocket APIs, as a browser or
an automation would, so the end-to-end suite proves the set-up a developer gets.
"""

from .client import HomeAssistantClient, HomeAssistantError
from .home import DEMO_AREAS, DevHome, ResourceSettings, agents_of, prepare, wait_until_running

__all__ = [
    "DEMO_AREAS",
    "DevHome",
    "HomeAssistantClient",
    "HomeAssistantError",
    "ResourceSettings",
    "agents_of",
    "prepare",
    "wait_until_running",
]
