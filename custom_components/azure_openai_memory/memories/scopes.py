"""Whose memories a call may read and write, and where a saved memory came from.

An administrator may name any scope; anyone else the household's and their own person's
(never widened: a request for another person's scope is refused, and writes nothing). A
call without a user (automations, scripts) is Home Assistant's own: unrestricted.
"""

from collections.abc import Iterable

from homeassistant.core import Context, HomeAssistant, callback

from ..memory.facts import (
    HOUSEHOLD_SCOPE,
    Authority,
    FactError,
    Origin,
    Provenance,
    parse_authority,
    validate_scope,
)
from ..people import Speaker
from ..services import Refused, translated

# What a caller or the model names for "my own": the speaker's person's scope.
PRIVATE = "private"


def own_scope(caller: Speaker) -> str:
    """The caller's private scope; a translated error for a caller who is no person."""
    if caller.scope is None:
        raise translated(FactError("memory_scope_no_person"))
    return caller.scope


def named_scope(caller: Speaker, context: Context, requested: str) -> str:
    """The scope a call names (`household`, `private` or `person:<id>`), if the caller
    may use it; refused (Refused) when it is another person's."""
    if requested == PRIVATE:
        return own_scope(caller)
    try:
        scope = validate_scope(requested)
    except FactError as err:
        raise translated(err) from err
    if not caller.may_see(scope):
        raise Refused(context, "memory_scope_not_yours", scope=scope)
    return scope


def search_scopes(
    caller: Speaker, context: Context, requested: str | None
) -> frozenset[str] | None:
    """What a search of this caller looks in: the named scope, else all they may see."""
    if requested is None:
        return caller.visible_scopes()
    return frozenset({named_scope(caller, context, requested)})


def forget_scopes(caller: Speaker, context: Context) -> frozenset[str] | None:
    """Administrators (and the system) forget anything; anyone else only their own
    private memories."""
    if caller.sees_everything:
        return None
    if caller.scope is None:
        raise Refused(context, "memory_forget_not_yours")
    return frozenset({caller.scope})


def spoken_forget_scopes(speaker: Speaker) -> frozenset[str]:
    """What a speaker may have an agent forget: their own private memories, and the
    household's when they are an administrator (or the system); never another person's,
    an administrator's turn included. Empty: nothing (nobody known, not an administrator)."""
    scopes = {speaker.scope} if speaker.scope is not None else set()
    if speaker.sees_everything:
        scopes.add(HOUSEHOLD_SCOPE)
    return frozenset(scopes)


def export_scopes(
    caller: Speaker, context: Context, requested: Iterable[str] | None
) -> frozenset[str] | None:
    """The scopes an export or import covers: an administrator's choice (None: all), or
    a person's own scope only."""
    if caller.sees_everything:
        if requested is None:
            return None
        return frozenset(named_scope(caller, context, one) for one in requested)
    own = caller.scope
    if own is None:
        raise Refused(context, "memory_export_not_yours", scope=HOUSEHOLD_SCOPE)
    chosen = frozenset(
        own if one == PRIVATE else named_scope(caller, context, one) for one in requested or [own]
    )
    if others := sorted(chosen - {own}):
        raise Refused(context, "memory_export_not_yours", scope=", ".join(others))
    return chosen


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
