"""AI Task entities: ai_task.generate_data answered by Azure OpenAI, with the home's memory.

Set up only on Home Assistant versions that have AI tasks (compat.HAS_AI_TASK). A task's
instructions pass through the same context.py entry point as a conversation turn, so the
stored data a task names reaches the model as delimited data, bounded in tokens; of the
memories, the household's only, as for a turn of nobody known.
"""

from dataclasses import replace
import json
import re
from typing import Any

from homeassistant.components import conversation
from homeassistant.components.ai_task import (
    AITaskEntity,
    AITaskEntityFeature,
    GenDataTask,
    GenDataTaskResult,
)
from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError

from .agent.context import MAX_CONTEXT_TOKENS, async_turn_data, memories_budget
from .azure.client import JsonFormat, RequestOptions, Usage, create_llm_client
from .azure.structure import structured_output_schema
from .compat import AddConfigEntryEntitiesCallback
from .const import (
    CONF_DEPLOYMENT,
    CONF_TIMESERIES_CONTEXT,
    DOMAIN,
    RECOMMENDED_TIMESERIES_CONTEXT,
    SUBENTRY_AI_TASK,
)
from .data import AzureOpenAIMemoryConfigEntry
from .entity import AzureOpenAIMemoryBaseLLMEntity, RequestFailed, tool_specs
from .lib.tokens import TokenCounter, load_counter
from .lib.windows.window import MESSAGE_OVERHEAD_TOKENS
from .people.access import access
from .people.speakers import Speaker

# Tasks of automations run side by side; each is one request.
PARALLEL_UPDATES = 0
# JSON mode (api-versions before structured outputs) needs the word JSON in the messages.
JSON_ONLY_INSTRUCTION = (
    "Answer with one JSON object, nothing else, following this JSON schema: {schema}"
)
_FORMAT_NAME = re.compile(r"[^a-zA-Z0-9_-]+")
# Whom a task speaks for: nobody.
NOBODY = Speaker()


async def async_setup_entry(
    hass: HomeAssistant,
    entry: AzureOpenAIMemoryConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """One AI task entity per AI task subentry."""
    for subentry in entry.subentries.values():
        if subentry.subentry_type != SUBENTRY_AI_TASK:
            continue
        counter = await hass.async_add_executor_job(
            load_counter, subentry.data[CONF_DEPLOYMENT], entry.runtime_data.token_cache_dir
        )
        async_add_entities(
            [AzureOpenAIMemoryTask(entry, subentry, counter)],
            config_subentry_id=subentry.subentry_id,
        )


def format_name(task_name: str) -> str:
    """The response format's name: letters, digits, _ and - only (the API's rule)."""
    return _FORMAT_NAME.sub("_", task_name).strip("_")[:64] or "result"


class AzureOpenAIMemoryTask(AITaskEntity, AzureOpenAIMemoryBaseLLMEntity):
    """Generates data for automations with one Azure OpenAI deployment."""

    _attr_supported_features = AITaskEntityFeature.GENERATE_DATA

    def __init__(
        self,
        entry: AzureOpenAIMemoryConfigEntry,
        subentry: ConfigSubentry,
        counter: TokenCounter,
    ) -> None:
        """One entity per subentry, on a device of its own as the agents have."""
        super().__init__(entry, subentry)
        self.counter = counter

    async def _async_generate_data(
        self, task: GenDataTask, chat_log: conversation.ChatLog
    ) -> GenDataTaskResult:
        """Ask once; with a structure, the answer must be the JSON object it describes."""
        options = self.request_options()
        system_prompt = getattr(chat_log.content[0], "content", None) or ""
        if task.structure is not None:
            schema = structured_output_schema(task.structure)
            options = replace(options, response_format=JsonFormat(format_name(task.name), schema))
            if not options.json_schema_supported:
                system_prompt += "\n" + JSON_ONLY_INSTRUCTION.format(schema=json.dumps(schema))
        tools = tool_specs(chat_log)
        messages = await self._async_messages(system_prompt, task.instructions, options, tools)
        text = await self._async_ask(chat_log, messages, options, tools)
        if task.structure is None:
            return GenDataTaskResult(conversation_id=chat_log.conversation_id, data=text)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise HomeAssistantError(
                translation_domain=DOMAIN,
                translation_key="ai_task_not_json",
                translation_placeholders={"task": task.name},
            ) from err
        if not isinstance(data, dict):
            raise HomeAssistantError(
                translation_domain=DOMAIN,
                translation_key="ai_task_not_json",
                translation_placeholders={"task": task.name},
            )
        return GenDataTaskResult(conversation_id=chat_log.conversation_id, data=data)

    async def _async_messages(
        self,
        system_prompt: str,
        instructions: str,
        options: RequestOptions,
        tools: list[dict[str, Any]],
    ) -> list[dict[str, Any]]:
        """System prompt, the stored data the task names (as data), the task itself.

        The data message (memories relevant to the task, stored series it names) gets what the
        context limit leaves after the prompt, the tools, the task and the answer's maximum,
        and never more than a conversation turn would get.
        """
        messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}]
        series = bool(
            self.entry.options.get(CONF_TIMESERIES_CONTEXT, RECOMMENDED_TIMESERIES_CONTEXT)
        )
        for_memories = memories_budget(self.entry.options)
        if series or for_memories:
            used = await self.hass.async_add_executor_job(
                self.counter.count,
                system_prompt + instructions + (json.dumps(tools) if tools else ""),
            )
            budget = min(
                MAX_CONTEXT_TOKENS + for_memories,
                self.context_limit - options.max_tokens - used - 3 * MESSAGE_OVERHEAD_TOKENS,
            )
            context = await async_turn_data(
                self.hass,
                instructions,
                self.counter,
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

    async def _async_ask(
        self,
        chat_log: conversation.ChatLog,
        messages: list[dict[str, Any]],
        options: RequestOptions,
        tools: list[dict[str, Any]],
    ) -> str:
        """Streamed requests into the chat log, with tool rounds; the last answer's text.

        Tools are offered only when the task's caller gave an LLM API (its llm_api), as
        Assist does for the agents; a task on its own reads and writes data only.
        """
        client = create_llm_client(self.runtime.client, options)
        usage = Usage()
        try:
            async with self.async_request(options, usage):
                return await self.async_tool_rounds(
                    chat_log, messages, lambda messages: client.stream(messages, tools, usage)
                )
        except RequestFailed as err:
            raise HomeAssistantError(
                translation_domain=DOMAIN, translation_key=f"api_{err.kind.value}"
            ) from err.__cause__
