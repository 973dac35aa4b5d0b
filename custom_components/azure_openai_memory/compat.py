"""The one place that knows how Home Assistant 2025.4 and 2026.x differ."""

import inspect
from typing import Any

from homeassistant.helpers import llm

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


def llm_api_ids(value: Any) -> list[str]:
    """The stored option, whichever version wrote it, as a list of ids."""
    if not value:
        return []
    return [value] if isinstance(value, str) else list(value)
