"""AI Task entities: ai_task.generate_data answered by Azure OpenAI, with the home's memory.

Set up only on Home Assistant versions that have AI tasks (compat.HAS_AI_TASK). The task's
steps (its messages with the stored data it names, a structured answer's format and
object) live in agent/task.py.
"""

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

from .agent.rounds import RequestFailed, async_tool_rounds, tool_specs
from .agent.task import async_task_messages, structured, structured_data
from .azure.client import RequestOptions, Usage, create_llm_client
from .compat import AddConfigEntryEntitiesCallback
from .const import CONF_DEPLOYMENT, DOMAIN, SUBENTRY_AI_TASK
from .data import AzureOpenAIMemoryConfigEntry
from .entity import AzureOpenAIMemoryBaseLLMEntity
from .lib.tokens import TokenCounter, load_counter

# Tasks of automations run side by side; each is one request.
PARALLEL_UPDATES = 0


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
            options, system_prompt = structured(options, system_prompt, task.name, task.structure)
        tools = tool_specs(chat_log)
        messages = await async_task_messages(
            self.hass,
            self.counter,
            self.entry.options,
            self.context_limit - options.max_tokens,
            system_prompt,
            task.instructions,
            tools,
        )
        text = await self._async_ask(chat_log, messages, options, tools)
        data = text if task.structure is None else structured_data(text, task.name)
        return GenDataTaskResult(conversation_id=chat_log.conversation_id, data=data)

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
                return await async_tool_rounds(
                    chat_log,
                    messages,
                    lambda messages: client.stream(messages, tools, usage),
                    self.entity_id,
                )
        except RequestFailed as err:
            raise HomeAssistantError(
                translation_domain=DOMAIN, translation_key=f"api_{err.kind.value}"
            ) from err.__cause__
