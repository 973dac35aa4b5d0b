"""The series lookup tool: what is stored under a key for a time range, as bounded data.

An agent that does not get the series with the question (any agent but ours, or a
question that names no range) asks for them by key. The entries come back in the same
delimited block a turn's data message carries them in, newest first, within a token
budget, with what the stored coverage says about the asked range.
"""

from collections.abc import Sequence

from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
from homeassistant.util import dt as dt_util
from homeassistant.util.json import JsonObjectType
import voluptuous as vol

from ..agent.context import build_turn_context
from ..compat import IntegrationTool
from ..const import DOMAIN, TOOL_SERIES_LOOKUP
from ..data import DATA_SERIES
from ..lib.series.store import SeriesError, validate_key
from ..lib.times import TimeInputError, format_time
from ..lib.tokens import TokenCounter
from ..people.refusals import translated
from .services import query_range

# The range looked up when the call names none.
DEFAULT_LAST = "24h"
# Keys named in the tool's description; a home with more lists the first ones and a count.
MAX_KEYS_LISTED = 30


def _description(keys: Sequence[str]) -> str:
    """What the tool is for, and which keys there are (a model cannot guess a key)."""
    text = (
        "Read a data series stored in Home Assistant by automations (prices, forecasts, "
        "readings, activity fetched from services) for a time range: its entries, newest "
        "first, and whether the range was fetched completely. Give `last` (24h, 2 days, "
        f"1 week) or `start_time` and optional `end_time` (ISO 8601); without either, the "
        f"last {DEFAULT_LAST}."
    )
    if not keys:
        return text + " No series is stored yet."
    listed = ", ".join(keys[:MAX_KEYS_LISTED])
    if len(keys) > MAX_KEYS_LISTED:
        listed += f" and {len(keys) - MAX_KEYS_LISTED} more"
    return f"{text} Stored series: {listed}."


class SeriesLookupTool(IntegrationTool):
    """Query like timeseries_query; the answer is a delimited, bounded data block."""

    integration = DOMAIN

    name = TOOL_SERIES_LOOKUP
    parameters = vol.Schema(
        {
            vol.Required("key", description="The series' key"): str,
            vol.Optional("last", description="How far back from now: 24h, 2 days, 1 week"): str,
            vol.Optional("start_time", description="Start of the range, ISO 8601"): str,
            vol.Optional(
                "end_time", description="End of the range, ISO 8601; now if left out"
            ): str,
        }
    )

    def __init__(self, counter: TokenCounter, budget: int, keys: Sequence[str]) -> None:
        """The counter and budget its answer is held to; the keys it names to the model."""
        self._counter = counter
        self._budget = budget
        self.description = _description(keys)

    async def async_answer(
        self, hass: HomeAssistant, tool_input: llm.ToolInput, llm_context: llm.LLMContext
    ) -> JsonObjectType:
        """The asked range of the series; bad input comes back as a translated error."""
        args = dict(tool_input.tool_args)
        if "last" not in args and "start_time" not in args:
            args["last"] = DEFAULT_LAST
        store = hass.data[DATA_SERIES]
        try:
            key = validate_key(args["key"])
            async with store.lock(key):
                series = await store.async_get(key)
                if series is None:
                    raise SeriesError("unknown_series", key=key)
                start, end = query_range(args, dt_util.utcnow().timestamp())
                # Held while the executor reads the series, so no merge changes it meanwhile.
                context = await hass.async_add_executor_job(
                    build_turn_context, [series], start, end, self._counter, self._budget
                )
        except (SeriesError, TimeInputError) as err:
            raise translated(err) from err
        return {
            "key": key,
            "start": format_time(start),
            "end": format_time(end),
            "data": context.message if context is not None else "",
        }
