"""Home Assistant LLM tools in the shapes the two OpenAI APIs take."""

from collections.abc import Callable
from typing import Any

from homeassistant.helpers import llm

from ..compat import schema_to_json


def tool_spec(tool: llm.Tool, serializer: Callable[[Any], Any] | None) -> dict[str, Any]:
    """The neutral form: name, description, JSON-schema parameters."""
    return {
        "name": tool.name,
        "description": tool.description or "",
        "parameters": schema_to_json(tool.parameters, serializer),
    }


def chat_tool(spec: dict[str, Any]) -> dict[str, Any]:
    """Chat Completions wraps a function in a 'function' object."""
    return {"type": "function", "function": spec}


def responses_tool(spec: dict[str, Any]) -> dict[str, Any]:
    """The Responses API takes the function's fields at the top level."""
    return {"type": "function", **spec, "strict": False}
