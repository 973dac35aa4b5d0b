"""One AI task: its messages, the format of a structured answer, and that answer's object.

A task's instructions pass through the same entry point as a conversation turn
(async_turn_data), so the stored data a task names reaches the model as delimited data,
bounded in tokens; of the memories, the household's only, as for a turn of nobody known.
"""

from collections.abc import Mapping
from dataclasses import replace
import json
import re
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
import voluptuous as vol

from ..azure.client import JsonFormat, RequestOptions
from ..azure.structure import structured_output_schema
from ..const import CONF_TIMESERIES_CONTEXT, DOMAIN, RECOMMENDED_TIMESERIES_CONTEXT
from ..lib.tokens import TokenCounter
from ..lib.windows.window import MESSAGE_OVERHEAD_TOKENS
from ..people.access import access
from ..people.speakers import Speaker
from .context import MAX_CONTEXT_TOKENS, async_turn_data, memories_budget

# JSON mode (api-versions before structured outputs) needs the word JSON in the messages.
JSON_ONLY_INSTRUCTION = (
    "Answer with one JSON object, nothing else, following this JSON schema: {schema}"
)
_FORMAT_NAME = re.compile(r"[^a-zA-Z0-9_-]+")
# Whom a task speaks for: nobody.
NOBODY = Speaker()


def format_name(task_name: str) -> str:
    """The response format's name: letters, digits, _ and - only (the API's rule)."""
    return _FORMAT_NAME.sub("_", task_name).strip("_")[:64] or "result"


def structured(
    options: RequestOptions, system_prompt: str, task_name: str, structure: vol.Schema
) -> tuple[RequestOptions, str]:
    """The options and prompt of a task whose answer must be the object structure describes.

    Where the API version takes no schema, the prompt carries it (JSON mode).
    """
    schema = structured_output_schema(structure)
    options = replace(options, response_format=JsonFormat(format_name(task_name), schema))
    if not options.json_schema_supported:
        system_prompt += "\n" + JSON_ONLY_INSTRUCTION.format(schema=json.dumps(schema))
    return options, system_prompt


async def async_task_messages(
    hass: HomeAssistant,
    counter: TokenCounter,
    entry_options: Mapping[str, Any],
    room: int,
    system_prompt: str,
    instructions: str,
    tools: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """System prompt, the stored data the task names (as data), the task itself.

    The data message (memories relevant to the task, stored series it names) gets what
    room (the context limit less the answer's maximum) leaves after the prompt, the tools
    and the task, and never more than a conversation turn would get.
    """
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}]
    series = bool(entry_options.get(CONF_TIMESERIES_CONTEXT, RECOMMENDED_TIMESERIES_CONTEXT))
    for_memories = memories_budget(entry_options)
    if series or for_memories:
        used = await hass.async_add_executor_job(
            counter.count,
            system_prompt + instructions + (json.dumps(tools) if tools else ""),
        )
        budget = min(MAX_CONTEXT_TOKENS + for_memories, room - used - 3 * MESSAGE_OVERHEAD_TOKENS)
        context = await async_turn_data(
            hass,
            instructions,
            counter,
            budget,
            series=series,
            memories_budget=for_memories,
            # A task has no speaker: it carries the household's memories, never a
            # person's private ones (its answer may go anywhere an automation sends it).
            scopes=access(NOBODY).turn_scopes(),
        )
        if context is not None:
            messages.append({"role": "user", "content": context.message})
    messages.append({"role": "user", "content": instructions})
    return messages


def structured_data(text: str, task_name: str) -> dict[str, Any]:
    """The JSON object a structured task answered; else a translated error."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise _not_json(task_name) from err
    if not isinstance(data, dict):
        raise _not_json(task_name)
    return data


def _not_json(task_name: str) -> HomeAssistantError:
    return HomeAssistantError(
        translation_domain=DOMAIN,
        translation_key="ai_task_not_json",
        translation_placeholders={"task": task_name},
    )
