"""What every entity that asks Azure OpenAI shares: its device, its limits, its requests.

Every failure is counted and reported the same way: one log line while the resource
stays down, a Repairs issue for what a user must fix, a reauthentication for a refused
key.
"""

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from homeassistant.config_entries import ConfigSubentry
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers.entity import Entity

from .agent.rounds import RequestFailed
from .azure.availability import async_request_failed, async_request_succeeded
from .azure.client import PromptCacheKey, RequestOptions, Usage, context_limit, request_options
from .azure.errors import ErrorKind, classify_error
from .const import CONF_DEPLOYMENT, DOMAIN
from .data import AzureOpenAIMemoryConfigEntry, Runtime
from .people.speakers import Speaker, async_speaker, device_people


class AzureOpenAIMemoryBaseLLMEntity(Entity):
    """An entity answered by one deployment of the entry's Azure resource (a subentry)."""

    _attr_has_entity_name = True
    _attr_name = None

    def __init__(self, entry: AzureOpenAIMemoryConfigEntry, subentry: ConfigSubentry) -> None:
        """One entity per subentry, each on a device of its own."""
        self.entry = entry
        self.subentry = subentry
        self._attr_unique_id = subentry.subentry_id
        self._attr_device_info = dr.DeviceInfo(
            identifiers={(DOMAIN, subentry.subentry_id)},
            name=subentry.title,
            manufacturer="Microsoft",
            model=subentry.data.get(CONF_DEPLOYMENT),
            entry_type=dr.DeviceEntryType.SERVICE,
        )
        # Per agent, not per conversation: every conversation of an agent begins with the
        # same prompt and tools, which is what the cache holds.
        self._prompt_cache_key = PromptCacheKey(f"{DOMAIN}-{subentry.subentry_id}")

    @property
    def runtime(self) -> Runtime:
        """The entry's runtime."""
        return self.entry.runtime_data

    @property
    def context_limit(self) -> int:
        """Tokens one request may carry."""
        return context_limit(self.subentry.data)

    async def async_speaker(self, user_id: str | None, device_id: str | None) -> Speaker:
        """Who a request is for: its user's person, else the person its device is mapped
        to in the entry's options, else nobody."""
        return await async_speaker(self.hass, user_id, device_id, device_people(self.entry.options))

    def request_options(self) -> RequestOptions:
        """What every request of this entity sends."""
        return request_options(self.runtime.settings, self.subentry.data, self._prompt_cache_key)

    @asynccontextmanager
    async def async_request(self, options: RequestOptions, usage: Usage) -> AsyncIterator[None]:
        """One answer of the model, within the timeout; what it used is counted either way.

        A failure (the timeout included) is reported and raised as RequestFailed.
        """
        try:
            async with asyncio.timeout(options.timeout):
                yield
        except Exception as err:
            kind = ErrorKind.TIMEOUT if isinstance(err, TimeoutError) else classify_error(err)
            self._report_failure(kind, err)
            raise RequestFailed(kind) from err
        finally:
            self.runtime.stats.record_usage(
                usage.input_tokens, usage.output_tokens, usage.cached_input_tokens
            )
        async_request_succeeded(self.hass, self.entry, self.runtime.health, self.subentry)

    def _report_failure(self, kind: ErrorKind, err: Exception) -> None:
        """Count every failure; log when the resource starts failing; ask for a new key."""
        self.runtime.stats.record_error(kind.value)
        async_request_failed(
            self.hass, self.entry, self.runtime.health, self.subentry, self.entity_id, kind, err
        )
        if kind is ErrorKind.INVALID_AUTH:
            self.entry.async_start_reauth(self.hass)
