"""Who may see and change what: the one access policy every surface asks.

A caller is a Speaker (speakers.py): a person (by their own id), the user whose permissions
apply, whether that user is an administrator, and the system (automations and scripts,
which have no user). What they may do with each kind of data:

| caller | memories | history | summaries, windows |
| --- | --- | --- | --- |
| the system, an administrator | read, change, forget and erase all; a save may push out any scope's | read all; erase with a memory | read all |
| a person | read the household's and their own; change (save, edit, pin, restore) those; forget, erase, export and import their own only; a save pushes out only their own | read the household's events and their own talk | their own and the household's |
| nobody known (a device mapped to no one) | the household's | the household's | the household's |

A turn of the agent (and every LLM tool) sees only the household's memories and the
speaker's own, an administrator's turn included: the model never reads another person's
private memories aloud.

Whatever a caller is answered is computed from what they may see alone: another person's
memory is, to them, indistinguishable from one that does not exist (an id they may not see
is "unknown"; scores, counts and conflicts are of their own scopes).
"""

from collections.abc import Iterable
from dataclasses import dataclass

from homeassistant.core import Context, HomeAssistant

from ..lib.history.models import Visibility
from ..lib.memories import HOUSEHOLD_SCOPE, Memory, MemoryInputError, validate_scope
from .refusals import Refused, translated
from .speakers import Speaker, canonical_scope, is_person_group, person_group

# What a caller or the model names for "my own": the speaker's person's scope.
PRIVATE = "private"
# The agents' ids start so: their sessions are talk (whose, their events say).
TALK_AGENT_PREFIX = "conversation."

# What a memory offers its caller; the Memory panel shows a control for each.
EDIT, PIN, FORGET, ERASE, RESTORE = "edit", "pin", "forget", "erase", "restore"


@dataclass(frozen=True, slots=True)
class Access:
    """What one caller may see and change; every surface asks this, nothing else."""

    caller: Speaker
    # Home Assistant, to read a person's scope named by their entity id (the form of
    # before people were known by their own id); None: scopes are taken as given.
    hass: HomeAssistant | None = None

    # -- memories --

    @property
    def sees_everything(self) -> bool:
        """Administrators and the system read (and change) every person's data."""
        return self.caller.system or self.caller.is_admin

    @property
    def own_scope(self) -> str | None:
        """The caller's private scope, or None for nobody known (and the system)."""
        return self.caller.scope

    def memory_scopes(self) -> frozenset[str] | None:
        """The memory scopes the caller may read; None: every scope."""
        if self.sees_everything:
            return None
        return self.turn_scopes()

    def turn_scopes(self) -> frozenset[str]:
        """What a turn (and an LLM tool) of this speaker reads: the household's memories
        and their own, never another person's, an administrator's turn included."""
        return frozenset(s for s in (HOUSEHOLD_SCOPE, self.own_scope) if s is not None)

    def reads(self, scope: str) -> bool:
        """Whether a memory of this scope is the caller's to see."""
        scopes = self.memory_scopes()
        return scopes is None or scope in scopes

    def reads_memory(self, memory: Memory) -> bool:
        """Whether this memory is the caller's to see."""
        return self.reads(memory.scope)

    def erases(self, scope: str) -> bool:
        """Whether the caller may forget or erase memories of this scope: administrators
        (and the system) any; anyone else their own private memories only."""
        return self.sees_everything or (self.own_scope is not None and scope == self.own_scope)

    def pushes_out(self, scope: str) -> bool:
        """Whether a save (or an import, a restore) of the caller may push an older memory
        of this scope out of use at its cap: one person's saves never archive another
        person's memories. Their own private scope's; the household's for administrators
        and the system (automations); another person's private scope's only for the system
        (an administrator saving there at that person's cap is refused, as anyone else at
        a full household cap)."""
        if self.own_scope is not None and scope == self.own_scope:
            return True
        if scope == HOUSEHOLD_SCOPE:
            return self.sees_everything
        return self.caller.system

    def forget_scopes(self) -> frozenset[str] | None:
        """What a forget or an erase of the caller may reach (None: every scope)."""
        if self.sees_everything:
            return None
        return frozenset({self.own_scope}) if self.own_scope is not None else frozenset()

    def spoken_forget_scopes(self) -> frozenset[str]:
        """What the caller may have an agent forget: their own private memories, and the
        household's when they are an administrator (or the system); never another person's,
        an administrator's turn included. Empty: nothing."""
        scopes = {self.own_scope} if self.own_scope is not None else set()
        if self.sees_everything:
            scopes.add(HOUSEHOLD_SCOPE)
        return frozenset(scopes)

    def owned_scopes(self) -> frozenset[str] | None:
        """The scopes whose records an import may keep ids of and change (None: all):
        their own private scope for a person, nothing for nobody known."""
        return self.forget_scopes()

    def sees_where_said(self, memory: Memory) -> bool:
        """Whether the caller may see where a memory was said (the conversation, the turn's
        history event, the device): theirs to see when they see everything or said it;
        a household fact Anna told the agent must not hand Ben her conversation's id."""
        provenance = memory.provenance
        return (
            self.sees_everything
            or provenance is None
            or (self.caller.person_id is not None and provenance.said_by == self.caller.person_id)
        )

    def memory_actions(self, memory: Memory, *, archived: bool = False) -> list[str]:
        """What the caller may do with a memory, active or archived (nothing with one
        they may not see)."""
        if not self.reads_memory(memory):
            return []
        if archived:
            return [RESTORE, ERASE] if self.erases(memory.scope) else [RESTORE]
        return [EDIT, PIN, FORGET, ERASE] if self.erases(memory.scope) else [EDIT, PIN]

    # -- naming scopes in a call --

    def named_scope(self, context: Context, requested: str) -> str:
        """The scope a call names (`household`, `private` or `person:<id>`) when the caller
        may use it; refused (Refused) when it is another person's, whether or not it holds
        anything."""
        if requested == PRIVATE:
            return self.private_scope()
        if self.hass is not None:
            requested = canonical_scope(self.hass, requested)
        try:
            scope = validate_scope(requested)
        except MemoryInputError as err:
            raise translated(err) from err
        if not self.reads(scope):
            raise Refused(context, "memory_scope_not_yours", scope=scope)
        return scope

    def private_scope(self) -> str:
        """The caller's private scope; a translated error for a caller who is no person."""
        if self.own_scope is None:
            raise translated(MemoryInputError("memory_scope_no_person"))
        return self.own_scope

    def search_scopes(self, context: Context, requested: str | None) -> frozenset[str] | None:
        """What a search of this caller looks in: the named scope, else all they may see."""
        if requested is None:
            return self.memory_scopes()
        return frozenset({self.named_scope(context, requested)})

    def export_scopes(
        self, context: Context, requested: Iterable[str] | None
    ) -> frozenset[str] | None:
        """The scopes an export or import covers: an administrator's choice (None: all),
        or a person's own scope only."""
        if self.sees_everything:
            if requested is None:
                return None
            return frozenset(self.named_scope(context, one) for one in requested)
        own = self.own_scope
        if own is None:
            raise Refused(context, "memory_export_not_yours", scope=HOUSEHOLD_SCOPE)
        chosen = frozenset(
            own if one == PRIVATE else self.named_scope(context, one) for one in requested or [own]
        )
        if others := sorted(chosen - {own}):
            raise Refused(context, "memory_export_not_yours", scope=", ".join(others))
        return chosen

    # -- the history --

    def history_visibility(self) -> Visibility | None:
        """What the caller may read of the history (None: all of it): their own person's
        talk and the household's events."""
        if self.sees_everything:
            return None
        return Visibility(self.caller.person_id, TALK_AGENT_PREFIX)

    # -- summaries and conversation windows --

    def reads_group(self, group: str, household: bool) -> bool:
        """Whether a summary (or a group's profile) of this group is the caller's to read,
        in a service's answer, a turn's context and past_talk alike: everything for those
        who see everything; else their own person's group, and of the rest only what is the
        household's (`household`: said by no one known, without a user). Like the history,
        the talk of nobody known that is someone's (a user without a person) and all that
        was summarised before are for administrators."""
        if self.sees_everything:
            return True
        if is_person_group(group):
            person = self.caller.person_id
            return person is not None and group == person_group(person)
        return household

    # -- series --

    def reads_series(self) -> bool:
        """Whether the caller may read the time series: everyone (they are the home's,
        fetched by its automations, and hold no one's words); merging, cleaning up and
        deleting them are for administrators and automations."""
        return True

    def reads_window(self, person_id: str | None) -> bool:
        """Whether a conversation window (its figures, its messages) whose talk is this
        person's (None: nobody known) is the caller's to see: every one for those who see
        everything, else their own person's."""
        if self.sees_everything:
            return True
        return self.caller.person_id is not None and person_id == self.caller.person_id


def access(caller: Speaker, hass: HomeAssistant | None = None) -> Access:
    """The access policy applied to one caller (with hass: scopes named by a person's
    entity id are read as that person's)."""
    return Access(caller, hass)
