"""Repairs flows: what becomes of a removed person's held data (identity.py).

The data of a removed person is held, served to no turn and no other person, until an administrator (Repairs is
theirs) either erases it or hands it over to another person, who then has it as their own.
"""

from typing import Any

from homeassistant.components.repairs import ConfirmRepairFlow, RepairsFlow
from homeassistant.core import HomeAssistant
from homeassistant.helpers.selector import EntitySelector, EntitySelectorConfig
import voluptuous as vol

from .people.identity import ISSUE_HELD, async_erase_person, async_move_person, held_of_issue
from .people.speakers import PERSON_DOMAIN, person_id_of_entity

STEP_ERASE = "erase"
STEP_HAND_OVER = "hand_over"
FIELD_PERSON = "person"
# A step's result: FlowResult in Home Assistant 2025.4, RepairsFlowResult from 2026 on.
type FlowResult = Any


class HeldPersonFlow(RepairsFlow):
    """Erase a removed person's held data, or hand it over to another person."""

    def __init__(self, held: str, name: str) -> None:
        self._held = held
        self._name = name

    async def async_step_init(self, user_input: dict[str, Any] | None = None) -> FlowResult:
        """Erase it, or hand it over."""
        return self.async_show_menu(
            step_id="init",
            menu_options=[STEP_ERASE, STEP_HAND_OVER],
            description_placeholders={"name": self._name},
        )

    async def async_step_erase(self, user_input: dict[str, Any] | None = None) -> FlowResult:
        """Confirm, then delete everything held."""
        if user_input is None:
            return self.async_show_form(
                step_id=STEP_ERASE,
                data_schema=vol.Schema({}),
                description_placeholders={"name": self._name},
            )
        await async_erase_person(self.hass, self._held)
        return self.async_create_entry(data={})

    async def async_step_hand_over(self, user_input: dict[str, Any] | None = None) -> FlowResult:
        """Choose the person who gets it: everything held becomes theirs."""
        errors: dict[str, str] = {}
        if user_input is not None:
            person = person_id_of_entity(self.hass, str(user_input.get(FIELD_PERSON) or ""))
            if person is None:
                errors[FIELD_PERSON] = "unknown_person"
            else:
                await async_move_person(self.hass, self._held, person)
                return self.async_create_entry(data={})
        return self.async_show_form(
            step_id=STEP_HAND_OVER,
            data_schema=vol.Schema(
                {
                    vol.Required(FIELD_PERSON): EntitySelector(
                        EntitySelectorConfig(domain=PERSON_DOMAIN)
                    )
                }
            ),
            errors=errors,
            description_placeholders={"name": self._name},
        )


async def async_create_fix_flow(
    hass: HomeAssistant, issue_id: str, data: dict[str, str | int | float | None] | None
) -> RepairsFlow:
    """The flow that fixes one of our fixable issues."""
    if issue_id.startswith(ISSUE_HELD) and (held := held_of_issue(data)) is not None:
        return HeldPersonFlow(*held)
    return ConfirmRepairFlow()
