"""The rounds of one request: it streams into the chat log round after round while the
model asks for tools, and fails as a whole.
"""

from collections.abc import AsyncIterator, Callable
from typing import Any

from homeassistant.components import conversation

from ..azure.client import Delta
from ..azure.errors import ErrorKind
from ..azure.tools import tool_spec
from ..lib.windows.window import MessageEntry
from .turn import pending_from_content

# Max number of back and forth with the LLM to generate a response
MAX_TOOL_ITERATIONS = 10

type DeltaStream = Callable[[list[dict[str, Any]]], AsyncIterator[Delta]]


class RequestFailed(Exception):
    """A request could not be answered; kind says why. It is counted and reported already."""

    def __init__(self, kind: ErrorKind) -> None:
        super().__init__(kind.value)
        self.kind = kind


def tool_specs(chat_log: conversation.ChatLog) -> list[dict[str, Any]]:
    """The tools of the chat log's LLM API, none without one; sorted by name.

    Every request lists them in the same order whatever order the APIs added them in, so
    they stay part of the beginning Azure can reuse from its prompt cache.
    """
    if chat_log.llm_api is None:
        return []
    api = chat_log.llm_api
    specs = [tool_spec(tool, api.custom_serializer) for tool in api.tools]
    return sorted(specs, key=lambda spec: str(spec["name"]))


async def async_tool_rounds(
    chat_log: conversation.ChatLog,
    messages: list[dict[str, Any]],
    stream: DeltaStream,
    agent_id: str,
    produced: list[MessageEntry] | None = None,
) -> str:
    """Stream rounds into the chat log until the model answers without asking for a tool.

    Each answer, tool call and tool result joins produced as it arrives, and messages
    (the next round sends them). Returns the last round's answer.
    """
    answer = ""
    for _round in range(MAX_TOOL_ITERATIONS):
        answer = ""
        async for content in chat_log.async_add_delta_content_stream(agent_id, stream(messages)):
            message = pending_from_content(content)
            if produced is not None:
                produced.append(message)
            messages.append(message.to_api_message())
            if isinstance(content, conversation.AssistantContent):
                answer += content.content or ""
        if not chat_log.unresponded_tool_results:
            break
    return answer
