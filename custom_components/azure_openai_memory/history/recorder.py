"""What the agent did, recorded: the Home Assistant side of the history database.

One SQLite file for the installation (`<config>/azure_openai_memory/history.db`), kept by
lib/history (HistoryStore). Events of a turn are queued and committed in batches by the
store's writer thread, so a turn never waits on the disk; every recorded event is also
fired on the bus (ids and type only, never its data) for automations to trigger on.
"""

from collections.abc import Callable, Iterable
import logging
from pathlib import Path
import sqlite3
from typing import Any, Final

from homeassistant.core import Context, HomeAssistant, ServiceCall, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import intent, issue_registry as ir
import orjson

from ..const import (
    DOMAIN,
    MEMORY_SERVICE_PREFIX,
    RECOMMENDED_HISTORY_RETENTION_DAYS,
    TOOL_FORGET,
    TOOL_RECALL,
    TOOL_REMEMBER,
)
from ..lib.history.store import (
    PERSON_KEY,
    AgentHistoryEvent,
    HistoryError,
    HistoryEventType,
    HistoryPurge,
    HistoryStore,
    Visibility,
)
from ..people.access import access
from ..people.speakers import Speaker, person_id_of, person_of_user, scope_person

_LOGGER = logging.getLogger(__name__)

EVENT_HISTORY: Final = f"{DOMAIN}_event"
ISSUE_CORRUPT = "history_corrupt"
ISSUE_WRITE_FAILED = "history_write_failed"
ISSUE_EVENTS_DROPPED = "history_events_dropped"
ISSUE_UNAVAILABLE = "history_unavailable"
SETTING_RETENTION_DAYS = "retention_days"
# A tool's result kept in its event; the rest is cut (the window keeps what the model saw).
MAX_RECORDED_RESULT = 4096
# Bytes of a question or answer as stored (UTF-8, inside JSON): well within the store's
# limit on an event, in any script.
MAX_RECORDED_TEXT = 16_384
CUT_MARKER = " …"
# The earliest time a purge cuts at (year 1): keeping more days than that keeps everything.
_EARLIEST_CUTOFF = -62_135_596_800.0


def _issue(hass: HomeAssistant, issue_id: str, placeholders: dict[str, str]) -> None:
    ir.async_create_issue(
        hass,
        DOMAIN,
        issue_id,
        is_fixable=False,
        severity=ir.IssueSeverity.WARNING,
        translation_key=issue_id,
        translation_placeholders=placeholders,
    )


def _stored_size(text: str) -> int:
    return len(orjson.dumps(text)) - 2  # without the quotes


def _text(text: str) -> str:
    """A question or answer as recorded: whole, unless it is longer than anyone speaks.

    Measured in bytes as stored, not in characters: a character takes one to four bytes in
    UTF-8 (more once escaped in JSON), and an event over the store's limit would not be
    recorded at all. Cut at a character boundary, never inside one.
    """
    try:
        size = _stored_size(text)
    except orjson.JSONEncodeError:  # a lone surrogate, which UTF-8 cannot hold
        text = text.encode("utf-8", "replace").decode()
        size = _stored_size(text)
    if size <= MAX_RECORDED_TEXT:
        return text
    budget = MAX_RECORDED_TEXT - len(CUT_MARKER.encode())
    while (excess := size - budget) > 0:
        # A character is stored in at least its UTF-8 bytes, so dropping `excess` bytes
        # from the end is enough: one round.
        encoded = text.encode()
        text = encoded[: len(encoded) - excess].decode("utf-8", "ignore")
        size = _stored_size(text)
    return text + CUT_MARKER


# The field of a memory tool's answer that lists the memories it names (recall, remember,
# forget), and how many of them a cut answer keeps.
REFERENCE_IDS = "ids"
MAX_KEPT_IDS = 100


def _bounded(value: Any) -> Any:
    """Value as recorded: JSON-able, and no larger than MAX_RECORDED_RESULT once encoded."""
    try:
        text = orjson.dumps(value, default=str).decode()
    except TypeError:
        text = str(value)
    else:
        if len(text) <= MAX_RECORDED_RESULT:
            return orjson.loads(text)
    cut: dict[str, Any] = {"truncated": text[:MAX_RECORDED_RESULT]}
    # The memory ids an answer names stay whole beside the cut text: an erasure finds the
    # events that carried a memory by them, and nothing in a cut text is a reference.
    if isinstance(value, dict) and isinstance(ids := value.get(REFERENCE_IDS), list):
        cut[REFERENCE_IDS] = [one for one in ids if isinstance(one, str)][:MAX_KEPT_IDS]
    return cut


class HistoryRecorder:
    """The installation's history: record, query, purge; every call off the event loop."""

    def __init__(self, hass: HomeAssistant, store: HistoryStore, *, available: bool) -> None:
        self.hass = hass
        self.store = store
        self.available = available
        self._closed = False
        self._write_issue = False
        # Queued events the store has dropped (a full queue while writes fail), as told.
        self._dropped_told = 0

    @classmethod
    async def async_open(cls, hass: HomeAssistant) -> "HistoryRecorder":
        """Open (or create) the database in the executor.

        A corrupt file is set aside and a fresh one started. A database that cannot be opened
        at all (locked, a newer schema, a full disk, an unwritable folder) leaves the history
        unavailable until the next start, with a Repairs issue: the agent answers regardless.
        """
        recorder: HistoryRecorder

        def failed(err: Exception) -> None:  # the writer thread
            hass.loop.call_soon_threadsafe(recorder.async_write_failed, err)

        store = HistoryStore(Path(hass.config.path(DOMAIN, "history.db")), on_failure=failed)
        try:
            moved = await hass.async_add_executor_job(store.open)
        except (sqlite3.Error, OSError) as err:
            _LOGGER.warning("The history database cannot be opened; nothing is recorded: %s", err)
            _issue(hass, ISSUE_UNAVAILABLE, {"error": str(err)})
            return cls(hass, store, available=False)
        recorder = cls(hass, store, available=True)
        if moved is not None:
            _LOGGER.warning(
                "The history database was unreadable; it was moved to %s and a new one started",
                moved,
            )
            _issue(hass, ISSUE_CORRUPT, {"path": str(moved)})
        return recorder

    @callback
    def async_write_failed(self, err: Exception) -> None:
        """A batch could not be written (locked, disk full): say so once; it is retried."""
        _LOGGER.warning("History events could not be written and will be retried: %s", err)
        _issue(self.hass, ISSUE_WRITE_FAILED, {"error": str(err)})
        self._write_issue = True

    @callback
    def _async_check_recovered(self) -> None:
        """Writes work again: the Repairs issue about them goes. Events the queue had to
        drop (the oldest, past its bound, while writes failed) are counted in the log and
        in a Repairs issue of their own."""
        if self._write_issue and not self.store.failing:
            self._write_issue = False
            ir.async_delete_issue(self.hass, DOMAIN, ISSUE_WRITE_FAILED)
        if (dropped := self.store.dropped_events) > self._dropped_told:
            _LOGGER.warning(
                "%d history events were dropped in all (the oldest unwritten, past the "
                "queue's bound, while writes failed)",
                dropped,
            )
            _issue(self.hass, ISSUE_EVENTS_DROPPED, {"count": str(dropped)})
            self._dropped_told = dropped

    async def async_hold_writes(self) -> None:
        """For a backup's copy: commit what is queued, copy the log into the database and
        write nothing more until async_release_writes (see HistoryStore.hold_writes)."""
        if not self.available or self._closed:
            return
        await self.hass.async_add_executor_job(self.store.hold_writes)

    @callback
    def async_release_writes(self) -> None:
        """The backup's copy is taken: what waited is written now."""
        if self.available:
            self.store.release_writes()

    @callback
    def record(
        self,
        agent_id: str,
        event_type: HistoryEventType,
        data: dict[str, Any],
        *,
        session_id: str | None = None,
        parent: AgentHistoryEvent | None = None,
        tags: Iterable[str] = (),
    ) -> AgentHistoryEvent | None:
        """Queue an event of ours (never waits on the disk) and announce it on the bus."""
        try:
            event = AgentHistoryEvent.new(
                agent_id,
                event_type,
                data,
                session_id=session_id,
                parent_event_id=parent.event_id if parent is not None else None,
                tags=tuple(tags),
            )
        except HistoryError as err:  # our own data should always fit; never fail a turn
            _LOGGER.warning(
                "A %s event of %s was not recorded in the history (%s)",
                event_type.value,
                agent_id,
                err.key,
            )
            return None
        if not self.available:
            return None
        self.store.enqueue(event)
        self._async_check_recovered()
        self.async_announce(event)
        return event

    @callback
    def record_call(
        self,
        service: str,
        context: Context,
        data: dict[str, Any],
        *,
        tags: Iterable[str],
        scopes: Iterable[str] = (),
    ) -> None:
        """A call that changed state (a service's, or the Memory panel's): who is the
        service, the session is the call, whose talk it is as call_person says."""
        names, person = call_person(self.hass, context, scopes)
        if names:
            data = {**data, PERSON_KEY: person}
        self.record(
            f"{DOMAIN}.{service}",
            HistoryEventType.STATE_CHANGE,
            data,
            session_id=context.id,
            tags=tags,
        )

    @callback
    def async_announce(self, event: AgentHistoryEvent) -> None:
        """Fire the bus event automations trigger on: type and ids, never the data."""
        self.hass.bus.async_fire(
            EVENT_HISTORY,
            {
                "event_id": event.event_id,
                "event_type": event.event_type.value,
                "agent_id": event.agent_id,
                "session_id": event.session_id,
                "parent_event_id": event.parent_event_id,
            },
        )

    async def async_run[T](self, func: Callable[..., T], *args: Any) -> T:
        """Run a blocking store call in the executor; a database failure is a translated error."""
        if not self.available or self._closed:
            raise HomeAssistantError(
                translation_domain=DOMAIN,
                translation_key="history_unavailable",
                translation_placeholders={"error": "not open"},
            )
        try:
            return await self.hass.async_add_executor_job(func, *args)
        except sqlite3.Error as err:
            raise HomeAssistantError(
                translation_domain=DOMAIN,
                translation_key="history_unavailable",
                translation_placeholders={"error": str(err)},
            ) from err

    async def async_retention_days(self) -> float:
        """Days of history kept (installation-wide, stored in the database itself)."""
        days = await self.async_run(
            self.store.get_setting, SETTING_RETENTION_DAYS, RECOMMENDED_HISTORY_RETENTION_DAYS
        )
        return float(days)

    async def async_set_retention_days(self, days: float) -> None:
        """Change the retention; the next daily purge applies it."""
        await self.async_run(self.store.set_setting, SETTING_RETENTION_DAYS, days)

    async def async_delete_older_than(
        self, keep_days: float | None, now: float
    ) -> tuple[HistoryPurge, float]:
        """Delete what is older than keep_days (default: the retention): events and
        snapshots; (what went, the cut-off)."""
        if keep_days is None:
            keep_days = await self.async_retention_days()
        cutoff = max(now - keep_days * 86400, _EARLIEST_CUTOFF)
        return await self.async_run(self.store.purge_before, cutoff), cutoff

    async def async_purge(self, now: float) -> int:
        """Delete what is older than the retention; how many events went.

        A purge that cannot run (the database closed at shutdown, or locked) is skipped: the
        next day's purge catches up.
        """
        try:
            purged, cutoff = await self.async_delete_older_than(None, now)
        except (HomeAssistantError, RuntimeError) as err:
            _LOGGER.debug("History purge skipped: %s", err)
            return 0
        if purged.events or purged.snapshots:
            _LOGGER.debug(
                "History purge: %d events and %d snapshots older than %s deleted",
                purged.events,
                purged.snapshots,
                cutoff,
            )
        return purged.events

    async def async_erase_memories(self, ids: list[str], eraser: Speaker) -> int:
        """Delete the remember, recall and forget tool calls and memory_* service events
        that refer to erased memories by their ids, of those the eraser may read; how
        many events went."""
        if not ids:
            return 0
        return await self.async_run(
            self.store.delete_memory_events,
            ids,
            (TOOL_REMEMBER, TOOL_RECALL, TOOL_FORGET),
            MEMORY_SERVICE_PREFIX,
            visibility_of(eraser),
        )

    async def async_rename_people(self, renamed: Callable[[str], str | None]) -> dict[str, str]:
        """People's keys change in every event of their talk (see HistoryStore); old -> new."""
        return await self.async_run(self.store.rename_people, renamed)

    async def async_delete_person(self, person: str) -> int:
        """Delete every event of one person's talk (an erasure); how many went."""
        return await self.async_run(self.store.delete_person_events, person)

    async def async_close(self) -> None:
        """Commit what is queued and close the database."""
        if self.available and not self._closed:
            self._closed = True
            await self.hass.async_add_executor_job(self.store.close)


def tool_events(
    recorder: HistoryRecorder,
    agent_id: str,
    session_id: str,
    parent: AgentHistoryEvent | None,
    tool_name: str,
    arguments: dict[str, Any],
    result: Any,
    person_id: str | None = None,
    intent: str | None = None,
) -> AgentHistoryEvent | None:
    """A ToolUse event, then an Action event per device the tool acted on; both part of
    the talk of person_id (None: nobody known). The actions name the intent the tool ran
    (`intent`; by default the tool's name, which an API's prefix may lengthen)."""
    used = recorder.record(
        agent_id,
        HistoryEventType.TOOL_USE,
        {
            "tool": tool_name,
            "arguments": _bounded(arguments),
            "result": _bounded(result),
            PERSON_KEY: person_id,
        },
        session_id=session_id,
        parent=parent,
    )
    action_events(recorder, agent_id, session_id, used, intent or tool_name, result, person_id)
    return used


def action_events(
    recorder: HistoryRecorder,
    agent_id: str,
    session_id: str,
    parent: AgentHistoryEvent | None,
    intent: str,
    result: Any,
    person_id: str | None = None,
) -> None:
    """One Action event per target an intent reports as done (its `data.success`)."""
    data = result.get("data") if isinstance(result, dict) else None
    for target in (data or {}).get("success") or ():
        if not isinstance(target, dict):
            continue
        recorder.record(
            agent_id,
            HistoryEventType.ACTION,
            {
                "intent": intent,
                "target": target.get("id"),
                "name": target.get("name"),
                "type": target.get("type"),
                PERSON_KEY: person_id,
            },
            session_id=session_id,
            parent=parent,
        )


class TurnRecording:
    """The events of one turn, chained: question → decision → tools → actions → answer.

    Every event names the person whose talk it is part of (PERSON_KEY; None when nobody is
    known): a reader who is not an administrator sees only their own. With recording off
    (recorder None) every method does nothing, so the agent's code reads the same either
    way.
    """

    def __init__(
        self,
        recorder: HistoryRecorder | None,
        agent_id: str,
        session_id: str,
        person_id: str | None = None,
    ) -> None:
        self._recorder = recorder
        self._agent_id = agent_id
        self._session_id = session_id
        self._person_id = person_id
        self._question: AgentHistoryEvent | None = None
        self._decision: AgentHistoryEvent | None = None

    def _record(
        self,
        event_type: HistoryEventType,
        data: dict[str, Any],
        parent: AgentHistoryEvent | None,
        tags: Iterable[str] = (),
    ) -> AgentHistoryEvent | None:
        if self._recorder is None:
            return None
        return self._recorder.record(
            self._agent_id,
            event_type,
            {**data, PERSON_KEY: self._person_id},
            session_id=self._session_id,
            parent=parent,
            tags=tags,
        )

    def asked(
        self,
        text: str,
        language: str,
        device_id: str | None,
        satellite_id: str | None,
        user_id: str | None = None,
    ) -> None:
        """The user's words, where they came from and who said them (summaries group by it)."""
        self._question = self._record(
            HistoryEventType.COMMUNICATION,
            {
                "direction": "in",
                "text": _text(text),
                "language": language,
                "device_id": device_id,
                "satellite_id": satellite_id,
                "user_id": user_id,
            },
            None,
            ("user",),
        )

    def decided(self, route: str, reason: str) -> None:
        """Local route or LLM, and why."""
        self._decision = self._record(
            HistoryEventType.DECISION, {"route": route, "reason": reason}, self._question
        )

    def used_tool(
        self, tool_name: str, arguments: dict[str, Any], result: Any, intent: str | None = None
    ) -> None:
        """A tool call with its result, and the devices it acted on (by the intent it ran)."""
        if self._recorder is not None:
            tool_events(
                self._recorder,
                self._agent_id,
                self._session_id,
                self._decision,
                tool_name,
                arguments,
                result,
                self._person_id,
                intent,
            )

    def acted(self, response: intent.IntentResponse) -> None:
        """A local intent's actions (its response's successful targets)."""
        if self._recorder is not None:
            action_events(
                self._recorder,
                self._agent_id,
                self._session_id,
                self._decision,
                response.intent.intent_type if response.intent else "",
                response.as_dict(),
                self._person_id,
            )

    def failed(self, kind: str) -> None:
        """The turn failed: its kind only (never a key, never a request)."""
        self._record(HistoryEventType.ERROR, {"kind": kind}, self._decision)

    def answered(self, text: str, *, late: bool = False) -> None:
        """What the agent said (or posted, for a late answer)."""
        self._record(
            HistoryEventType.COMMUNICATION,
            {"direction": "out", "text": _text(text), "late": late},
            self._decision,
            ("agent",),
        )

    @property
    def question_event_id(self) -> str | None:
        """The event of the user's words, once recorded: where a remembered fact was said."""
        return self._question.event_id if self._question is not None else None


def visibility_of(caller: Speaker) -> Visibility | None:
    """What a caller may read of the history (the access policy's answer): everything
    (None) for administrators and calls without a user; else their own person's talk and
    the household's events."""
    return access(caller).history_visibility()


def call_person(
    hass: HomeAssistant, context: Context, scopes: Iterable[str] = ()
) -> tuple[bool, str | None]:
    """Whose talk a call's event is: (whether it names a person, which; None: nobody known).

    A call made by a user is that user's person's (None for a user without one): what it
    carries may be their words. A call without a user (an automation, a script) is the
    household's, unless it concerns private memories (`scopes`: the scopes of the memories
    it names): then it is that person's, and with several people's, nobody's (read by
    administrators only), so no one reads another's private memory through the history.
    """
    if (user_id := context.user_id) is not None:
        person = person_of_user(hass, user_id)
        return True, person_id_of(person) if person is not None else None
    owners = {owner for scope in scopes if (owner := scope_person(scope)) is not None}
    if not owners:
        return False, None
    return True, owners.pop() if len(owners) == 1 else None


def record_service_call(
    recorder: HistoryRecorder, call: ServiceCall, data: dict[str, Any], scopes: Iterable[str] = ()
) -> None:
    """A service call that changed state, in the history (`scopes`: of the memories it
    names; see call_person)."""
    recorder.record_call(call.service, call.context, data, tags=("service",), scopes=scopes)
