"""Diagnostic sensors: what the agents of one entry did."""

from collections.abc import Callable
from dataclasses import dataclass

from homeassistant.components.sensor import (
    SensorDeviceClass,
    SensorEntity,
    SensorEntityDescription,
    SensorStateClass,
)
from homeassistant.const import PERCENTAGE, EntityCategory, UnitOfTime
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers.typing import StateType

from .compat import AddConfigEntryEntitiesCallback
from .const import DOMAIN
from .data import AzureOpenAIMemoryConfigEntry, Runtime

# Sensors only follow the statistics the agents write; nothing is polled or sent.
PARALLEL_UPDATES = 0


@dataclass(frozen=True, kw_only=True)
class StatSensorDescription(SensorEntityDescription):
    """A statistic and how to read it."""

    value_fn: Callable[[Runtime], StateType]


def _windows_total(key: str) -> Callable[[Runtime], StateType]:
    return lambda runtime: sum(int(m.totals()[key]) for m in runtime.windows.values())


# Enabled from the start: what a user watches (traffic, cost, failures, speed). The rest
# is there for looking into a problem, one click away in the entity settings.
SENSORS: tuple[StatSensorDescription, ...] = (
    StatSensorDescription(
        key="turns",
        translation_key="turns",
        native_unit_of_measurement="turns",
        state_class=SensorStateClass.TOTAL_INCREASING,
        value_fn=lambda r: r.stats.turns,
    ),
    StatSensorDescription(
        key="local_turns",
        translation_key="local_turns",
        native_unit_of_measurement="turns",
        entity_registry_enabled_default=False,
        state_class=SensorStateClass.TOTAL_INCREASING,
        value_fn=lambda r: r.stats.local_turns,
    ),
    StatSensorDescription(
        key="llm_turns",
        translation_key="llm_turns",
        native_unit_of_measurement="turns",
        entity_registry_enabled_default=False,
        state_class=SensorStateClass.TOTAL_INCREASING,
        value_fn=lambda r: r.stats.llm_turns,
    ),
    StatSensorDescription(
        key="errors",
        translation_key="errors",
        native_unit_of_measurement="errors",
        state_class=SensorStateClass.TOTAL_INCREASING,
        value_fn=lambda r: sum(r.stats.errors.values()),
    ),
    StatSensorDescription(
        key="early_timeouts",
        translation_key="early_timeouts",
        native_unit_of_measurement="answers",
        entity_registry_enabled_default=False,
        state_class=SensorStateClass.TOTAL_INCREASING,
        value_fn=lambda r: r.stats.early_timeouts,
    ),
    StatSensorDescription(
        key="tokens_in",
        translation_key="tokens_in",
        native_unit_of_measurement="tokens",
        state_class=SensorStateClass.TOTAL_INCREASING,
        value_fn=lambda r: r.stats.tokens_in,
    ),
    StatSensorDescription(
        key="tokens_out",
        translation_key="tokens_out",
        native_unit_of_measurement="tokens",
        state_class=SensorStateClass.TOTAL_INCREASING,
        value_fn=lambda r: r.stats.tokens_out,
    ),
    # Of all input tokens so far, the share Azure read from its prompt cache (billed at a
    # discount): how well the requests' stable beginning pays off.
    StatSensorDescription(
        key="cached_input_share",
        translation_key="cached_input_share",
        native_unit_of_measurement=PERCENTAGE,
        suggested_display_precision=1,
        state_class=SensorStateClass.MEASUREMENT,
        value_fn=lambda r: r.stats.cached_input_share(),
    ),
    StatSensorDescription(
        key="latency_p50",
        translation_key="latency_p50",
        device_class=SensorDeviceClass.DURATION,
        native_unit_of_measurement=UnitOfTime.MILLISECONDS,
        suggested_display_precision=0,
        state_class=SensorStateClass.MEASUREMENT,
        value_fn=lambda r: r.stats.latency_percentile(50),
    ),
    StatSensorDescription(
        key="latency_p95",
        translation_key="latency_p95",
        device_class=SensorDeviceClass.DURATION,
        native_unit_of_measurement=UnitOfTime.MILLISECONDS,
        suggested_display_precision=0,
        entity_registry_enabled_default=False,
        state_class=SensorStateClass.MEASUREMENT,
        value_fn=lambda r: r.stats.latency_percentile(95),
    ),
    StatSensorDescription(
        key="evicted_messages",
        translation_key="evicted_messages",
        native_unit_of_measurement="messages",
        entity_registry_enabled_default=False,
        state_class=SensorStateClass.TOTAL,
        value_fn=_windows_total("evicted_messages"),
    ),
    StatSensorDescription(
        key="conversations",
        translation_key="conversations",
        native_unit_of_measurement="conversations",
        entity_registry_enabled_default=False,
        state_class=SensorStateClass.MEASUREMENT,
        value_fn=_windows_total("conversations"),
    ),
)


async def async_setup_entry(
    hass: HomeAssistant,
    entry: AzureOpenAIMemoryConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """The statistics sensors of one entry."""
    async_add_entities(StatSensor(entry, description) for description in SENSORS)


class StatSensor(SensorEntity):
    """One statistic, updated as turns happen."""

    _attr_has_entity_name = True
    _attr_should_poll = False
    _attr_entity_category = EntityCategory.DIAGNOSTIC
    entity_description: StatSensorDescription

    def __init__(
        self, entry: AzureOpenAIMemoryConfigEntry, description: StatSensorDescription
    ) -> None:
        """Attach to the entry's service device."""
        self.entity_description = description
        self._runtime = entry.runtime_data
        self._attr_unique_id = f"{entry.entry_id}_{description.key}"
        self._attr_device_info = dr.DeviceInfo(
            identifiers={(DOMAIN, entry.entry_id)},
            name=entry.title,
            manufacturer="Microsoft",
            model="Azure OpenAI",
            entry_type=dr.DeviceEntryType.SERVICE,
        )

    @property
    def native_value(self) -> StateType:
        """The current figure."""
        return self.entity_description.value_fn(self._runtime)

    async def async_added_to_hass(self) -> None:
        """Follow the statistics."""
        listeners = self._runtime.stats.listeners
        listeners.append(self._changed)
        self.async_on_remove(lambda: listeners.remove(self._changed))

    @callback
    def _changed(self) -> None:
        self.async_write_ha_state()
