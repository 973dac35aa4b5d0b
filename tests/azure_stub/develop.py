"""What the stand-in answers when it serves scripts/develop instead of a scripted test.

A little more than an echo, so memory and device control can be tried offline: the
answer says how many messages of context arrived, and a request that offers the
turn-on/turn-off tools and asks to turn something on or off gets that tool call, with
the name of an exposed entity the way a model would pick it from the prompt.
"""

from dataclasses import dataclass
import json
import re
from typing import Any

_ON_OFF = re.compile(r"\b(?:turn|switch|put)\b(?:.*?\b(on|off)\b)", re.IGNORECASE)
_NAMES = re.compile(r"^[-\s]*names:\s*(.+?)\s*$", re.MULTILINE)
# After "turn on the", "switch off", ...: what the user named, when the prompt lists nothing.
_OBJECT = re.compile(
    r"\b(?:turn|switch|put)\s+(?:on|off)\s+(?:the\s+)?(.+?)[\s.!?]*$", re.IGNORECASE
)
_TOOL_FOR = {"on": "HassTurnOn", "off": "HassTurnOff"}


@dataclass(frozen=True)
class Message:
    """One message of a request, whichever API it came through."""

    role: str  # system, user, assistant, tool
    text: str


@dataclass(frozen=True)
class DevelopAnswer:
    """Text to say, or one tool to call with its arguments."""

    text: str | None = None
    tool: str | None = None
    arguments: dict[str, Any] | None = None


def chat_messages(body: dict[str, Any]) -> list[Message]:
    """The messages of a Chat Completions request."""
    messages = []
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            messages.append(Message(str(message.get("role", "")), _text(message.get("content"))))
    return messages


def responses_messages(body: dict[str, Any]) -> list[Message]:
    """The input items of a Responses request, as messages."""
    messages = []
    if instructions := body.get("instructions"):
        messages.append(Message("system", str(instructions)))
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call_output":
            messages.append(Message("tool", str(item.get("output", ""))))
        elif item.get("type") == "function_call":
            messages.append(Message("assistant", ""))
        else:
            messages.append(Message(str(item.get("role", "")), _text(item.get("content"))))
    return messages


def tool_names(body: dict[str, Any]) -> set[str]:
    """The functions a request offers (Chat Completions or Responses shape)."""
    names = set()
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            name = (tool.get("function") or {}).get("name") or tool.get("name")
            if name:
                names.add(str(name))
    return names


def answer(messages: list[Message], tools: set[str]) -> DevelopAnswer:
    """What the develop stand-in says to this request."""
    seen = _context_note(messages)
    last = messages[-1] if messages else Message("user", "")
    if last.role == "tool":
        return DevelopAnswer(text=f"Done: {_done_summary(last.text)} {seen}")
    if last.role == "user" and (match := _ON_OFF.search(last.text)):
        tool = _TOOL_FOR[match.group(1).lower()]
        name = _named_entity(last.text, messages)
        if tool in tools and name:
            return DevelopAnswer(tool=tool, arguments={"name": name})
    return DevelopAnswer(text=f"You said: {last.text} {seen}")


def _context_note(messages: list[Message]) -> str:
    count = sum(1 for m in messages if m.role not in ("system", "developer"))
    return f"(I see {count} message{'' if count == 1 else 's'} of context)"


def _named_entity(text: str, messages: list[Message]) -> str | None:
    """The longest exposed name the user said; else what followed "turn on"."""
    lowered = text.casefold()
    names = [
        name.strip().strip("'\"")
        for message in messages
        if message.role in ("system", "developer")
        for line in _NAMES.findall(message.text)
        for name in line.split(", ")
    ]
    said = [name for name in names if name and name.casefold() in lowered]
    if said:
        return max(said, key=len)
    if match := _OBJECT.search(text):
        return match.group(1)
    return None


def _done_summary(result: str) -> str:
    """What the tool result says was done, in a few words."""
    try:
        data = json.loads(result)
    except ValueError:
        return result[:80]
    if not isinstance(data, dict):
        return str(data)[:80]
    targets = (data.get("data") or {}).get("success") or []
    names = [t.get("name", "") for t in targets if isinstance(t, dict)]
    failed = (data.get("data") or {}).get("failed") or []
    if names:
        return ", ".join(names) + "."
    if failed or data.get("error"):
        return f"that did not work ({data.get('error') or 'failed'})."
    return str(data.get("response_type", "ok")) + "."


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)
