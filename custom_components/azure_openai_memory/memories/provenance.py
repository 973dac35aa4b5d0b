"""Where a saved memory came from: the automation or script whose run a call belongs to,
else the person who called."""

from homeassistant.core import Context, HomeAssistant, callback

from ..lib.memories import Authority, Origin, Provenance, parse_authority
from ..people.speakers import Speaker


@callback
def runner_of(hass: HomeAssistant, context: Context) -> str | None:
    """The script or automation whose run a call belongs to, by its context; None when
    none is known. A script that an automation started is named: it is the closer one."""
    ids = {context.id, context.parent_id} - {None}
    for domain in ("script", "automation"):
        for state in hass.states.async_all(domain):
            if state.context.id in ids:
                return state.entity_id
    return None


@callback
def service_provenance(
    hass: HomeAssistant, caller: Speaker, context: Context, authority: str | None
) -> Provenance:
    """Where a memory_save came from: an automation or script, else a person's call."""
    said = parse_authority(authority) if authority is not None else Authority.STATED
    if (runner := runner_of(hass, context)) is not None:
        return Provenance(Origin.AUTOMATION, said_by=runner, authority=said)
    if caller.system:
        return Provenance(Origin.SERVICE, authority=said)
    return Provenance(
        Origin.SERVICE, said_by=caller.person_id, channel=caller.channel, authority=said
    )
