"""The options flow: memory settings in collapsible sections, durations as durations, and
which person each voice satellite or device speaks for."""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from homeassistant.config_entries import (
    ConfigEntryState,
    ConfigFlowResult,
    OptionsFlow,
)
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import section
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers.selector import (
    BooleanSelector,
    DeviceSelector,
    DeviceSelectorConfig,
    DurationSelector,
    DurationSelectorConfig,
    EntitySelector,
    EntitySelectorConfig,
    SelectOptionDict,
    SelectSelector,
    SelectSelectorConfig,
    SelectSelectorMode,
    TextSelector,
    TimeSelector,
)
import voluptuous as vol

from .azure.embeddings import async_check_embeddings
from .azure.errors import API_ERRORS, ErrorKind, classify_error
from .const import (
    CONF_ARCHIVE_RETENTION_DAYS,
    CONF_CONTINUATION_MINUTES,
    CONF_CONVERSATION_IDLE_MINUTES,
    CONF_DEVICE_PEOPLE,
    CONF_EMBEDDINGS_DEPLOYMENT,
    CONF_HIGH_CONFIDENCE_THRESHOLD,
    CONF_HISTORY_RECORDING,
    CONF_HISTORY_RETENTION_DAYS,
    CONF_MAX_CONVERSATIONS,
    CONF_MAX_MEMORIES_PER_TYPE,
    CONF_MAX_PRIVATE_MEMORIES_PER_TYPE,
    CONF_MEMORY_CONTEXT,
    CONF_MEMORY_TOKEN_BUDGET,
    CONF_RELEVANCE_SCORE_THRESHOLD,
    CONF_SUMMARIES,
    CONF_SUMMARY_CONTEXT_TOKENS,
    CONF_SUMMARY_GROUP_MODE,
    CONF_SUMMARY_TIME,
    CONF_TIMESERIES_CONTEXT,
    CONF_TIMESERIES_KEEP_DAYS,
    CONF_TIMESERIES_MAX_ENTRIES,
    RECOMMENDED_HISTORY_RETENTION_DAYS,
    RECOMMENDED_MEMORY_OPTIONS,
    RECOMMENDED_OPTIONS,
    SUMMARY_GROUP_MODES,
)
from .data import DATA_HISTORY, DATA_MEMORIES, DATA_SERIES
from .flow_common import (
    number,
    select,
    whole,
)
from .people.speakers import PERSON_DOMAIN, device_people, person_id_of_entity, person_name

SECTION_CONVERSATIONS = "conversations"
SECTION_TIMESERIES = "timeseries"
SECTION_MEMORIES = "memories"
SECTION_HISTORY = "history"
SECTION_SUMMARIES = "summaries"
SECTION_PEOPLE = "people"
# The people section's fields: these devices speak for this person (none: for nobody);
# the mapped devices ticked in the list speak for nobody again.
FIELD_MAP_DEVICES = "map_devices"
FIELD_MAP_PERSON = "map_person"
FIELD_UNMAP_DEVICES = "unmap_devices"

# The home's settings among the options form's fields: each kind's store keeps them, the
# form shows them and returns those the user changed (see _async_apply_home_options).
HOME_SETTINGS = (
    CONF_TIMESERIES_MAX_ENTRIES,
    CONF_TIMESERIES_KEEP_DAYS,
    CONF_ARCHIVE_RETENTION_DAYS,
    CONF_HIGH_CONFIDENCE_THRESHOLD,
    CONF_MAX_MEMORIES_PER_TYPE,
    CONF_MAX_PRIVATE_MEMORIES_PER_TYPE,
    CONF_RELEVANCE_SCORE_THRESHOLD,
    CONF_HISTORY_RETENTION_DAYS,
)


@dataclass(frozen=True, slots=True)
class MinutesField:
    """An option stored in minutes that the form shows as a duration, and its bounds."""

    low: float
    high: float
    with_days: bool
    error: str


# Retentions stay counts of days: what they govern is purged once a day.
MINUTES_FIELDS = {
    CONF_CONVERSATION_IDLE_MINUTES: MinutesField(
        5, 30 * 24 * 60, with_days=True, error="conversation_idle_out_of_range"
    ),
    CONF_CONTINUATION_MINUTES: MinutesField(
        0, 24 * 60, with_days=False, error="continuation_out_of_range"
    ),
}


_MINUTE = timedelta(minutes=1)


def _duration_selector(field: MinutesField) -> DurationSelector:
    return DurationSelector(
        DurationSelectorConfig(enable_day=field.with_days, allow_negative=False)
    )


def _people_schema(mapped: list[SelectOptionDict]) -> vol.Schema:
    """Map devices to a person; unmap mapped ones (listed "device → person").

    One row per device, any number of them, in a form both supported versions show:
    each save maps the chosen devices to one person, and lists every mapping to unmap.
    """
    fields: dict[Any, Any] = {
        vol.Optional(FIELD_MAP_DEVICES): DeviceSelector(DeviceSelectorConfig(multiple=True)),
        vol.Optional(FIELD_MAP_PERSON): EntitySelector(EntitySelectorConfig(domain=PERSON_DOMAIN)),
    }
    if mapped:
        fields[vol.Optional(FIELD_UNMAP_DEVICES)] = SelectSelector(
            SelectSelectorConfig(options=mapped, multiple=True, mode=SelectSelectorMode.LIST)
        )
    return vol.Schema(fields)


def _mapped_rows(hass: HomeAssistant, mapping: Mapping[str, str]) -> list[SelectOptionDict]:
    """Each mapped device as the form lists it: "Kitchen satellite → Anna"."""
    devices = dr.async_get(hass)
    rows = []
    for device_id, person_id in mapping.items():
        device = devices.async_get(device_id)
        device_name = (device.name_by_user or device.name) if device is not None else None
        label = f"{device_name or device_id} → {person_name(hass, person_id)}"
        rows.append(SelectOptionDict(value=device_id, label=label))
    return sorted(rows, key=lambda row: row["label"])


def remapped(
    hass: HomeAssistant, mapping: Mapping[str, str], people: Mapping[str, Any]
) -> dict[str, str]:
    """The mapping after the people section's changes: unmapped devices go, the chosen
    devices speak for the chosen person (none chosen: for nobody, so they go too). The
    form names a person by their entity; the map keeps their id."""
    result = {
        device: person
        for device, person in mapping.items()
        if device not in (people.get(FIELD_UNMAP_DEVICES) or ())
    }
    chosen = people.get(FIELD_MAP_PERSON)
    person = person_id_of_entity(hass, str(chosen)) if chosen else None
    for device in people.get(FIELD_MAP_DEVICES) or ():
        if person:
            result[str(device)] = str(person)
        else:
            result.pop(str(device), None)
    return result


def _options_schema(mapped: list[SelectOptionDict]) -> vol.Schema:
    """The options form, in sections.

    Built anew for each form: Home Assistant 2025.4 writes suggested values into the
    schema of the section it is given.
    """
    return vol.Schema(
        {
            vol.Required(SECTION_CONVERSATIONS): section(
                vol.Schema(
                    {
                        vol.Required(CONF_CONVERSATION_IDLE_MINUTES): _duration_selector(
                            MINUTES_FIELDS[CONF_CONVERSATION_IDLE_MINUTES]
                        ),
                        vol.Required(CONF_MAX_CONVERSATIONS): number(1, 10_000, 1),
                        vol.Required(CONF_CONTINUATION_MINUTES): _duration_selector(
                            MINUTES_FIELDS[CONF_CONTINUATION_MINUTES]
                        ),
                    }
                ),
                {"collapsed": False},
            ),
            vol.Required(SECTION_TIMESERIES): section(
                vol.Schema(
                    {
                        vol.Required(CONF_TIMESERIES_CONTEXT): BooleanSelector(),
                        vol.Required(CONF_TIMESERIES_MAX_ENTRIES): number(100, 1_000_000, 100),
                        vol.Required(CONF_TIMESERIES_KEEP_DAYS): number(1, 3650, 1, "d"),
                    }
                ),
                {"collapsed": True},
            ),
            vol.Required(SECTION_MEMORIES): section(
                vol.Schema(
                    {
                        # This entry's embeddings deployment (empty: none), switch and budget.
                        vol.Optional(CONF_EMBEDDINGS_DEPLOYMENT): TextSelector(),
                        vol.Optional(CONF_MEMORY_CONTEXT): BooleanSelector(),
                        vol.Optional(CONF_MEMORY_TOKEN_BUDGET): number(50, 20_000, 50, "tokens"),
                        # The memories' settings, the installation's.
                        vol.Optional(CONF_ARCHIVE_RETENTION_DAYS): number(1, 3650, 1, "d"),
                        vol.Optional(CONF_HIGH_CONFIDENCE_THRESHOLD): number(2, 100, 1),
                        vol.Optional(CONF_MAX_MEMORIES_PER_TYPE): number(1, 100_000, 1),
                        vol.Optional(CONF_MAX_PRIVATE_MEMORIES_PER_TYPE): number(1, 100_000, 1),
                        vol.Optional(CONF_RELEVANCE_SCORE_THRESHOLD): number(0, 100, 1),
                    }
                ),
                {"collapsed": True},
            ),
            vol.Required(SECTION_HISTORY): section(
                vol.Schema(
                    {
                        vol.Required(CONF_HISTORY_RECORDING): BooleanSelector(),
                        vol.Required(CONF_HISTORY_RETENTION_DAYS): number(1, 3650, 1, "d"),
                    }
                ),
                {"collapsed": True},
            ),
            vol.Required(SECTION_SUMMARIES): section(
                vol.Schema(
                    {
                        vol.Required(CONF_SUMMARIES): BooleanSelector(),
                        vol.Required(CONF_SUMMARY_TIME): TimeSelector(),
                        vol.Required(CONF_SUMMARY_GROUP_MODE): select(
                            SUMMARY_GROUP_MODES, "summary_group_mode"
                        ),
                        vol.Required(CONF_SUMMARY_CONTEXT_TOKENS): number(0, 4000, 50, "tokens"),
                    }
                ),
                {"collapsed": True},
            ),
            vol.Required(SECTION_PEOPLE): section(_people_schema(mapped), {"collapsed": True}),
        }
    )


def _minutes(duration: Mapping[str, float]) -> float:
    """A duration selector's value in minutes, as the option is stored."""
    minutes = timedelta(**{unit: float(n) for unit, n in duration.items()}) / _MINUTE
    return int(minutes) if minutes.is_integer() else minutes


def _duration(minutes: float, with_days: bool) -> dict[str, float]:
    """A stored number of minutes as the duration selector shows it."""
    rest = float(minutes) * 60
    parts: dict[str, float] = {}
    if with_days:
        parts["days"], rest = divmod(rest, 86_400)
    parts["hours"], rest = divmod(rest, 3600)
    parts["minutes"], parts["seconds"] = divmod(rest, 60)
    return {unit: whole(n) for unit, n in parts.items()}


def _form_values(schema: vol.Schema, options: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Stored options as the sectioned form shows them: durations for minutes."""
    shown = {
        key: _duration(value, MINUTES_FIELDS[key].with_days)
        if key in MINUTES_FIELDS and isinstance(value, int | float)
        else value
        for key, value in options.items()
    }
    return {
        str(name): {str(key): shown[str(key)] for key in part.schema.schema if str(key) in shown}
        for name, part in schema.schema.items()
    }


def _stored_values(
    user_input: Mapping[str, Mapping[str, Any]], errors: dict[str, str]
) -> dict[str, Any]:
    """The submitted sections as options are stored: one level, minutes, whole numbers."""
    options: dict[str, Any] = {}
    for name, part in user_input.items():
        for key, value in part.items():
            if (field := MINUTES_FIELDS.get(key)) is None:
                options[key] = whole(value)
                continue
            options[key] = minutes = _minutes(value)
            if not field.low <= minutes <= field.high:
                errors[name] = field.error
    return options


class OptionsFlowHandler(OptionsFlow):
    """The entry's options form, beside the installation's settings of the home's stores.

    The form writes no store: the installation's settings the user changed come back in
    the options, and the entry's update hands them to their stores (see
    _async_apply_home_options in __init__.py). Only proving input happens here.
    """

    async def _async_check_embeddings(self, options: dict[str, Any]) -> None:
        """Prove a newly named embeddings deployment with one request, before anything is saved."""
        deployment = str(options.get(CONF_EMBEDDINGS_DEPLOYMENT) or "").strip()
        entry = self.config_entry
        if not deployment or deployment == entry.options.get(CONF_EMBEDDINGS_DEPLOYMENT):
            return
        if entry.state is not ConfigEntryState.LOADED:
            return  # proved by its first use instead; failing, memories rank by words
        try:
            await async_check_embeddings(entry.runtime_data.client, deployment)
        except API_ERRORS as err:
            if classify_error(err) is ErrorKind.NOT_FOUND:
                raise EmbeddingsRefused("embeddings_deployment_not_found") from err
            raise EmbeddingsRefused("embeddings_deployment_failed") from err

    async def _async_home_settings(self) -> tuple[dict[str, Any], bool]:
        """The installation's settings as their stores hold them; whether history answered."""
        series = self.hass.data[DATA_SERIES].settings
        # Read once the memories file is (just after a start it may still be).
        await self.hass.data[DATA_MEMORIES].async_loaded()
        memories = self.hass.data[DATA_MEMORIES].settings
        try:
            retention = await self.hass.data[DATA_HISTORY].async_retention_days()
        except HomeAssistantError:  # unavailable: shown as the default, not saved if changed
            retention, history_answers = float(RECOMMENDED_HISTORY_RETENTION_DAYS), False
        else:
            history_answers = True
        return {
            CONF_TIMESERIES_MAX_ENTRIES: series.max_entries,
            CONF_TIMESERIES_KEEP_DAYS: series.keep_days,
            CONF_ARCHIVE_RETENTION_DAYS: memories.archive_retention_days,
            CONF_HIGH_CONFIDENCE_THRESHOLD: memories.high_confidence_threshold,
            CONF_MAX_MEMORIES_PER_TYPE: memories.max_memories_per_type,
            CONF_MAX_PRIVATE_MEMORIES_PER_TYPE: memories.max_private_memories_per_type,
            CONF_RELEVANCE_SCORE_THRESHOLD: memories.relevance_score_threshold,
            CONF_HISTORY_RETENTION_DAYS: retention,
        }, history_answers

    async def async_step_init(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """One form in sections; a change of the entry's part reloads the entry."""
        home, history_answers = await self._async_home_settings()
        mapping = device_people(self.config_entry.options)
        schema = _options_schema(_mapped_rows(self.hass, mapping))
        errors: dict[str, str] = {}
        if user_input is not None:
            people = user_input.get(SECTION_PEOPLE) or {}
            submitted = _stored_values(
                {name: part for name, part in user_input.items() if name != SECTION_PEOPLE},
                errors,
            )
            # The installation's settings come back only where they differ from the stores.
            options = {
                key: value
                for key, value in submitted.items()
                if key not in HOME_SETTINGS or value != home[key]
            }
            if CONF_HISTORY_RETENTION_DAYS in options and not history_answers:
                errors[SECTION_HISTORY] = "history_unavailable"
            if not errors:
                try:
                    await self._async_check_embeddings(options)
                except EmbeddingsRefused as err:
                    errors[SECTION_MEMORIES] = err.key
            if not errors:
                if CONF_EMBEDDINGS_DEPLOYMENT in options:
                    options[CONF_EMBEDDINGS_DEPLOYMENT] = str(
                        options[CONF_EMBEDDINGS_DEPLOYMENT]
                    ).strip()
                if devices := remapped(self.hass, mapping, people):
                    options[CONF_DEVICE_PEOPLE] = devices
                return self.async_create_entry(data=options)
        # A setting of the home still waiting in the options is the user's latest choice.
        shown = _form_values(
            schema,
            {
                **RECOMMENDED_OPTIONS,
                **RECOMMENDED_MEMORY_OPTIONS,
                **home,
                **self.config_entry.options,
            },
        )
        for name, part in (user_input or {}).items():
            shown[name] = {**shown.get(name, {}), **part}
        return self.async_show_form(
            step_id="init",
            data_schema=self.add_suggested_values_to_schema(schema, shown),
            errors=errors,
        )


class EmbeddingsRefused(Exception):
    """A new embeddings deployment did not answer; key is the form's error."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key
