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
        wanted = _TOOL_FOR[match.group(1).lower()]
        name = _named_entity(last.text, messages)
        # Offered as is, or namespaced by what gives it ("intent__HassTurnOn", 2026.10).
        offered = sorted(t for t in tools if t == wanted or t.endswith(f"__{wanted}"))
        if offered and name:
            return DevelopAnswer(tool=offered[0], arguments={"name": name})
    return DevelopAnswer(text=f"You said: {last.text} {seen}")


_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{3,}")
_COMMON = frozenset(
    [
        "this",
        "that",
        "with",
        "what",
        "from",
        "have",
        "there",
        "their",
        "about",
        "would",
        "could",
        "should",
        "which",
        "when",
        "where",
        "your",
        "just",
        "into",
        "than",
        "then",
        "them",
        "they",
        "were",
        "will",
        "been",
        "also",
        "only",
        "some",
        "more",
        "most",
        "very",
    ]
)


def requested_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a request asks its answer to follow ({} for JSON mode), else None."""
    wanted = body.get("response_format") or (body.get("text") or {}).get("format")
    if not isinstance(wanted, dict) or wanted.get("type") not in ("json_schema", "json_object"):
        return None
    schema = wanted.get("schema") or (wanted.get("json_schema") or {}).get("schema") or {}
    return schema if isinstance(schema, dict) else {}


def json_answer(schema: dict[str, Any], messages: list[Message]) -> str:
    """An object following the schema, filled from the request's user text (no model here).

    Enough for the summaries and AI tasks to work offline: strings take the user text,
    lists its most frequent words, flags are false and numbers zero.
    """
    said = " ".join(m.text for m in messages if m.role == "user")
    root = schema or {"type": "object"}
    return json.dumps(_fill(root, said, root))


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """The schema a `$ref` points to in the root's `$defs`, the first branch of `anyOf` /
    `oneOf` that is not null, else the schema itself."""
    for _ in range(32):  # a cycle of references ends as an empty schema
        if isinstance(ref := schema.get("$ref"), str) and ref.startswith("#/"):
            target: Any = root
            for part in ref[2:].split("/"):
                target = target.get(part) if isinstance(target, dict) else None
            schema = target if isinstance(target, dict) else {}
            continue
        branches = schema.get("anyOf") or schema.get("oneOf")
        if isinstance(branches, list) and branches:
            schema = next(
                (b for b in branches if isinstance(b, dict) and b.get("type") != "null"),
                branches[0] if isinstance(branches[0], dict) else {},
            )
            continue
        return schema
    return {}


def _fill(schema: dict[str, Any], said: str, root: dict[str, Any]) -> Any:
    schema = _resolve(schema, root)
    if isinstance(enum := schema.get("enum"), list) and enum:
        return enum[0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {"answer": {"type": "string"}}
        return {name: _fill(sub, said, root) for name, sub in properties.items()}
    if kind == "array":
        items = schema.get("items") or {"type": "string"}
        if isinstance(items, list):  # a tuple's schemas: the first stands for all
            items = items[0] if items and isinstance(items[0], dict) else {"type": "string"}
        items = _resolve(items, root)
        if isinstance(enum := items.get("enum"), list) and enum:
            return [enum[0]]
        if items.get("type") == "string":
            return _frequent_words(said)
        return []
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return 0
    if kind == "null":
        return None
    return " ".join(said.split()[:60])


def _frequent_words(text: str, most: int = 5) -> list[str]:
    counts: dict[str, int] = {}
    for word in _WORD.findall(text.lower()):
        if word not in _COMMON:
            counts[word] = counts.get(word, 0) + 1
    return sorted(counts, key=lambda w: -counts[w])[:most]


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
