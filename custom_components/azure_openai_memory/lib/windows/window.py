"""Per-conversation windows limited in tokens: a ConversationWindow per conversation, and
the ConversationMemoryManager holding one agent's windows.

Eviction is first in, first out over *groups*: a message alone, or an assistant tool
call together with its tool results (the API rejects a tool result whose call is gone).
Groups live in three queues, so `ephemeral` ones go first and `important` ones last, and
every add costs O(1) amortized however long the conversation has run.

A conversation that resumes after a pause gains a note saying how much later it is: the
window survives restarts, and what it observed hours ago is not what is true now.
"""

from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
import json
import time
from typing import Any

from ..tokens import TokenCounter

IMPORTANT = "important"
EPHEMERAL = "ephemeral"
# The tag of the note a conversation gains when it resumes after a pause.
RESUMED = "resumed"
# A pause longer than this earns the note; a follow-up within it is the same moment.
RESUME_AFTER_SECONDS = 10 * 60
# Chat formats spend a few tokens per message on role and separators.
MESSAGE_OVERHEAD_TOKENS = 4
# A turn of someone else than a conversation's person gets a window of its own, kept apart
# under "<conversation id>@<person entity id>" ("@nobody" when nobody is known).
APART = "@"
NOBODY = "nobody"

_EPHEMERAL_TIER, _NORMAL_TIER, _IMPORTANT_TIER = 0, 1, 2


def _tier(tags: frozenset[str]) -> int:
    if EPHEMERAL in tags:
        return _EPHEMERAL_TIER
    if IMPORTANT in tags:
        return _IMPORTANT_TIER
    return _NORMAL_TIER


@dataclass(slots=True)
class ToolCallEntry:
    """One function call an assistant message made."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(slots=True)
class MessageEntry:
    """One message of a conversation, its cost in tokens counted once."""

    role: str
    content: str
    timestamp: float
    token_count: int
    tags: frozenset[str] = frozenset()
    tool_calls: tuple[ToolCallEntry, ...] = ()
    tool_call_id: str | None = None

    def to_api_message(self) -> dict[str, Any]:
        """The Chat Completions form of this message."""
        message: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
                for call in self.tool_calls
            ]
        if self.tool_call_id is not None:
            message["tool_call_id"] = self.tool_call_id
        return message

    def to_langgraph_message(self) -> dict[str, Any]:
        """The dict LangGraph's message state takes (LangChain message fields)."""
        message: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": call.id, "name": call.name, "args": call.arguments, "type": "tool_call"}
                for call in self.tool_calls
            ]
        if self.tool_call_id is not None:
            message["tool_call_id"] = self.tool_call_id
        return message

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready form for storage."""
        data: dict[str, Any] = {
            "role": self.role,
            "content": self.content,
            "timestamp": self.timestamp,
            "token_count": self.token_count,
        }
        if self.tags:
            data["tags"] = sorted(self.tags)
        if self.tool_calls:
            data["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MessageEntry":
        """Read what as_dict wrote."""
        return cls(
            role=data["role"],
            content=data["content"],
            timestamp=data["timestamp"],
            token_count=data["token_count"],
            tags=frozenset(data.get("tags", ())),
            tool_calls=tuple(ToolCallEntry(**c) for c in data.get("tool_calls", ())),
            tool_call_id=data.get("tool_call_id"),
        )


_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _elapsed(seconds: float) -> str:
    """A pause in whole units: minutes below an hour, hours below two days, then days."""
    if seconds >= 2 * 86400:
        count, unit = int(seconds // 86400), "day"
    elif seconds >= 3600:
        count, unit = int(seconds // 3600), "hour"
    else:
        count, unit = max(int(seconds // 60), 1), "minute"
    return f"{count} {unit}{'' if count == 1 else 's'}"


def resumption_note(paused: float, now: datetime, before: datetime) -> str:
    """The note between a conversation's past and its present.

    `now` and `before` are the home's local times of the resumption and of the last
    message: a pause into another day names the day, as "14:05" alone would mislead.
    """
    when = f"{now:%H:%M}"
    if now.date() != before.date():
        when = f"{_WEEKDAYS[now.weekday()]} {now:%Y-%m-%d}, {when}"
    return (
        f"— Note, not from the user: {_elapsed(paused)} later, {when}; "
        "what was observed before this line may have changed —"
    )


def _starts_exchange(entry: MessageEntry) -> bool:
    """A question starts an exchange; the note of a resumption does not."""
    return entry.role == "user" and RESUMED not in entry.tags


class ConversationWindow:
    """The messages of one conversation that fit in max_tokens."""

    def __init__(self, conversation_id: str, max_tokens: int, preserve_system: bool = True) -> None:
        self.conversation_id = conversation_id
        self.max_tokens = max_tokens
        self.preserve_system = preserve_system
        self.system: MessageEntry | None = None
        self.current_tokens = 0
        self.evicted_count = 0
        self.last_activity = 0.0
        self.tag_counts: dict[str, int] = {}
        self._messages: dict[int, MessageEntry] = {}
        self._groups: dict[int, list[int]] = {}
        self._queues: tuple[deque[int], deque[int], deque[int]] = (deque(), deque(), deque())
        self._group_of_call: dict[str, int] = {}
        self._next_seq = 0
        # Whose talk this is: the person of its last turn (None: nobody known).
        self.person_id: str | None = None
        # Incognito: the window as it was before its first incognito turn (None when it
        # began incognito). Storage keeps that, never what the incognito turns added.
        self.incognito = False
        self.before_incognito: dict[str, Any] | None = None

    def __len__(self) -> int:
        return len(self._messages) + (self.system is not None)

    @property
    def utilization(self) -> float:
        """Percent of the budget in use."""
        return round(100.0 * self.current_tokens / self.max_tokens, 2) if self.max_tokens else 0.0

    def said_anything(self) -> bool:
        """Whether anything was said in the window (beyond its system message)."""
        return bool(self._messages)

    def messages(self) -> list[MessageEntry]:
        """Every message, system first, in order."""
        if self.system is None:
            return list(self._messages.values())
        return [self.system, *self._messages.values()]

    def groups(self) -> list[list[MessageEntry]]:
        """The eviction groups, in order (what storage keeps)."""
        return [[self._messages[seq] for seq in seqs] for seqs in self._groups.values()]

    def add(self, entry: MessageEntry, counter: TokenCounter | None = None) -> None:
        """Add a message, truncating one that alone exceeds the budget, then evict."""
        budget = self.max_tokens - (self.system.token_count if self.system else 0)
        if entry.role != "system" and entry.token_count > budget and counter is not None:
            entry.content = counter.truncate(
                entry.content, max(budget - MESSAGE_OVERHEAD_TOKENS, 0)
            )
            entry.token_count = counter.count(entry.content) + MESSAGE_OVERHEAD_TOKENS
        self.last_activity = max(self.last_activity, entry.timestamp)
        if entry.role == "system":
            self._set_system(entry)
        else:
            group = self._group_of_call.get(entry.tool_call_id) if entry.tool_call_id else None
            self._insert(entry, group)
        self._evict()

    def _set_system(self, entry: MessageEntry) -> None:
        """One system prompt per conversation: a new one replaces the old."""
        if self.system is not None:
            self._forget(self.system)
        self.system = entry
        self.current_tokens += entry.token_count
        self._count_tags(entry.tags)

    def _insert(self, entry: MessageEntry, group: int | None) -> int:
        seq = self._next_seq
        self._next_seq += 1
        self._messages[seq] = entry
        self.current_tokens += entry.token_count
        if entry.tags:
            self._count_tags(entry.tags)
        if group is None or group not in self._groups:
            group = seq
            self._groups[seq] = [seq]
            self._queues[_tier(entry.tags)].append(seq)
        else:
            self._groups[group].append(seq)
        for call in entry.tool_calls:
            # A call without an id cannot be answered by id: it never joins a group.
            if call.id:
                self._group_of_call[call.id] = group
        return group

    def _count_tags(self, tags: frozenset[str]) -> None:
        counts = self.tag_counts
        for tag in tags:
            counts[tag] = counts.get(tag, 0) + 1

    def _forget(self, entry: MessageEntry) -> None:
        self.current_tokens -= entry.token_count
        counts = self.tag_counts
        for tag in entry.tags:
            if counts[tag] == 1:
                del counts[tag]
            else:
                counts[tag] -= 1

    def _evict(self) -> None:
        """Drop the oldest groups, lowest tier first, until the window fits.

        The newest group is never dropped, so the message just added always stays.
        """
        if self.current_tokens <= self.max_tokens:
            return
        if self.system is not None and not self.preserve_system:
            self._forget(self.system)
            self.system = None
            self.evicted_count += 1
        newest = next(reversed(self._groups), None)
        messages, groups = self._messages, self._groups
        while self.current_tokens > self.max_tokens:
            for queue in self._queues:
                if queue and queue[0] != newest:
                    break
            else:
                return
            for seq in groups.pop(queue.popleft()):
                entry = messages.pop(seq)
                self._forget(entry)
                for call in entry.tool_calls:
                    self._group_of_call.pop(call.id, None)
                self.evicted_count += 1

    @property
    def window_tokens(self) -> int:
        """Tokens of the conversation's messages, its system message aside."""
        return self.current_tokens - (self.system.token_count if self.system else 0)

    def recent_within(self, budget: int) -> tuple[list[MessageEntry], int]:
        """The newest messages (system aside) that fit in budget tokens, and how many did not.

        What a request can carry is not what the window keeps: the window keeps its
        messages, a request leaves out the oldest groups. The last complete exchange (the
        last question and everything after it, a resumption's note included) is always
        included, even over budget.
        """
        messages = self._messages
        if self.window_tokens <= budget:
            return list(messages.values()), 0
        kept: list[int] = []
        used = 0
        exchange_complete = False
        for seqs in reversed(self._groups.values()):
            cost = sum(messages[seq].token_count for seq in seqs)
            if exchange_complete and used + cost > budget:
                break
            kept.extend(seqs)
            used += cost
            exchange_complete = exchange_complete or _starts_exchange(messages[seqs[0]])
        kept.sort()
        return [messages[seq] for seq in kept], len(messages) - len(kept)

    def last_exchange_tokens(self) -> int:
        """Tokens of the last question and everything after it (what a request always carries)."""
        messages = self._messages
        used = 0
        for seqs in reversed(self._groups.values()):
            used += sum(messages[seq].token_count for seq in seqs)
            if _starts_exchange(messages[seqs[0]]):
                break
        return used

    def stats(self) -> dict[str, Any]:
        """The conversation's figures: messages, tokens, utilisation, tags, evictions."""
        return {
            "message_count": len(self),
            "current_tokens": self.current_tokens,
            "max_tokens": self.max_tokens,
            "utilization": self.utilization,
            "tag_distribution": dict(self.tag_counts),
            "evicted_count": self.evicted_count,
        }

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready form for storage."""
        stored: dict[str, Any] = {
            "max_tokens": self.max_tokens,
            "preserve_system": self.preserve_system,
            "last_activity": self.last_activity,
            "evicted_count": self.evicted_count,
            "system": self.system.as_dict() if self.system else None,
            "groups": [[m.as_dict() for m in group] for group in self.groups()],
        }
        if self.person_id is not None:
            stored["person_id"] = self.person_id
        return stored

    def kept(self) -> dict[str, Any] | None:
        """What storage keeps of the window: all of it, or while incognito what it was
        before (None: nothing)."""
        return self.before_incognito if self.incognito else self.as_dict()

    @classmethod
    def from_dict(cls, conversation_id: str, data: dict[str, Any]) -> "ConversationWindow":
        """Rebuild a window exactly as stored (no recounting, no eviction)."""
        window = cls(conversation_id, data["max_tokens"], data["preserve_system"])
        window.last_activity = data["last_activity"]
        window.evicted_count = data["evicted_count"]
        window.person_id = data.get("person_id")
        if data.get("system"):
            window._set_system(MessageEntry.from_dict(data["system"]))
        for group in data["groups"]:
            group_id: int | None = None
            for raw in group:
                group_id = window._insert(MessageEntry.from_dict(raw), group_id)
        return window


# Version 2: an agent's windows hold the conversation only; its prompt is rebuilt every turn.
WINDOWS_VERSION = 2


def migrate_windows(version: int, data: dict[str, Any]) -> dict[str, Any]:
    """Stored windows of an older version, as this version stores them."""
    if version < 2:
        for manager in data.get("agents", {}).values():
            for window in manager.get("conversations", {}).values():
                window.pop("system", None)
    return data


# The defaults of an agent's window options; const.py offers them as its RECOMMENDED_ values.
DEFAULT_MAX_TOKENS = 4000
DEFAULT_MAX_CONVERSATIONS = 100
DEFAULT_IDLE_MINUTES = 24 * 60
DEFAULT_CONTINUATION_MINUTES = 30


@dataclass
class WindowSettings:
    """How windows behave; one set per agent."""

    max_tokens: int = DEFAULT_MAX_TOKENS
    preserve_system: bool = True
    max_conversations: int = DEFAULT_MAX_CONVERSATIONS
    idle_seconds: float = DEFAULT_IDLE_MINUTES * 60
    continuation_seconds: float = DEFAULT_CONTINUATION_MINUTES * 60


@dataclass
class ConversationMemoryManager:
    """All conversation windows of one agent: add_message, get_messages (by tag),
    get_stats and totals, reset.

    The one place where "memory" names the window manager rather than a durable fact:
    the mission that specified the integration calls it so, and the name stays findable.
    """

    counter: TokenCounter
    settings: WindowSettings = field(default_factory=WindowSettings)
    # Looked up when the manager is made, so a clock patched by then (tests) is the one used.
    clock: Callable[[], float] = field(default_factory=lambda: time.time)
    windows: OrderedDict[str, ConversationWindow] = field(default_factory=OrderedDict)
    dropped_conversations: int = 0
    _last_by_source: dict[str, tuple[str, float]] = field(default_factory=dict)

    def _window(self, conversation_id: str) -> ConversationWindow:
        window = self.windows.get(conversation_id)
        if window is None:
            window = ConversationWindow(
                conversation_id, self.settings.max_tokens, self.settings.preserve_system
            )
            self.windows[conversation_id] = window
            self._keep_cap(None, keep=conversation_id)
        else:
            self.windows.move_to_end(conversation_id)
        return window

    def _keep_cap(self, person_id: str | None, keep: str | None = None) -> None:
        """Beyond max_conversations windows of one person (or of nobody known), that
        person's least recently used go: each person has the cap to themselves, so one
        person's new conversations never push out another person's."""
        mine = [
            cid
            for cid, window in self.windows.items()
            if window.person_id == person_id and cid != keep
        ]
        over = len(mine) + (keep is not None) - self.settings.max_conversations
        for cid in mine[: max(over, 0)]:
            del self.windows[cid]
            self.dropped_conversations += 1

    def count_tokens(self, content: str, tool_calls: tuple[ToolCallEntry, ...] = ()) -> int:
        """What a message costs in the window."""
        tokens = self.counter.count(content) + MESSAGE_OVERHEAD_TOKENS
        for call in tool_calls:
            tokens += self.counter.count(call.name) + self.counter.count(json.dumps(call.arguments))
        return tokens

    def add_message(
        self,
        conversation_id: str,
        role: str,
        content: str,
        tags: Iterable[str] | None = None,
        *,
        tool_calls: Iterable[ToolCallEntry] = (),
        tool_call_id: str | None = None,
    ) -> MessageEntry:
        """Add a message to a conversation, evicting what no longer fits."""
        calls = tool_calls if isinstance(tool_calls, tuple) else tuple(tool_calls)
        entry = MessageEntry(
            role,
            content,
            self.clock(),
            self.count_tokens(content, calls),
            frozenset(tags) if tags else frozenset(),
            calls,
            tool_call_id,
        )
        self._window(conversation_id).add(entry, self.counter)
        return entry

    def get_messages(
        self, conversation_id: str, tag_filter: str | Iterable[str] | None = None
    ) -> list[MessageEntry]:
        """A conversation's messages in order (none when unknown); with tag_filter (a tag
        or a collection of them), only those carrying at least one of its tags."""
        window = self.windows.get(conversation_id)
        if window is None:
            return []
        if tag_filter is None:
            return window.messages()
        wanted = frozenset((tag_filter,) if isinstance(tag_filter, str) else tag_filter)
        return [m for m in window.messages() if not m.tags.isdisjoint(wanted)]

    def window_tokens(self, conversation_id: str) -> int:
        """Tokens of a conversation's window (its system message aside)."""
        window = self.windows.get(conversation_id)
        return window.window_tokens if window is not None else 0

    def last_exchange_tokens(self, conversation_id: str) -> int:
        """Tokens of a conversation's last question and everything after it."""
        window = self.windows.get(conversation_id)
        return window.last_exchange_tokens() if window is not None else 0

    def get_recent_messages(
        self, conversation_id: str, budget: int
    ) -> tuple[list[MessageEntry], int]:
        """The newest messages that fit in budget tokens, and how many were left out."""
        window = self.windows.get(conversation_id)
        if window is None:
            return [], 0
        return window.recent_within(budget)

    def window_for(self, conversation_id: str, person_id: str | None) -> str:
        """The window a turn of this person (None: nobody known) reads and writes under a
        conversation id: the conversation's own, unless it is another person's (or a
        person's, and nobody is known now) — then one kept apart for this speaker, so that
        no one is answered from another person's words nor adds to them."""
        window = self.windows.get(conversation_id)
        owner = window.person_id if window is not None else None
        if owner == person_id:
            return conversation_id
        # Nobody known's talk is nobody's to take over: a person's turn under its id (a
        # guest's, a user's without a person, an automation's) gets a window of its own,
        # unless nothing has been said there yet.
        if owner is None and (window is None or not window.said_anything()):
            return conversation_id
        return f"{conversation_id}{APART}{person_id or NOBODY}"

    def continue_conversation(
        self, conversation_id: str, source: str | None, person_id: str | None = None
    ) -> str:
        """Pick up the source's recent window under a new conversation id.

        Home Assistant starts a new conversation id after a few idle minutes; a follow-up
        from the same device (or user) within the continuation time still means the same
        conversation to the person speaking. Each person's follow-ups at a shared device
        continue their own window, never another person's.
        """
        now = self.clock()
        if source is not None:
            if person_id is not None:
                source = f"{source}{APART}{person_id}"
            previous = self._last_by_source.get(source)
            if (
                conversation_id not in self.windows
                and previous is not None
                and previous[0] in self.windows
                and self.windows[previous[0]].person_id == person_id
                and now - previous[1] <= self.settings.continuation_seconds
            ):
                window = self.windows.pop(previous[0])
                window.conversation_id = conversation_id
                self.windows[conversation_id] = window
            self._last_by_source[source] = (conversation_id, now)
        return conversation_id

    def note_resumption(self, conversation_id: str, time_zone: tzinfo) -> MessageEntry | None:
        """After a pause, a note that time has passed, stored before the next question.

        Stored once, as a message of its own, so that everything before it stays exactly
        as the earlier requests sent it; it is counted and evicted like any message.
        The home's time zone says what "14:05" means.
        """
        window = self.windows.get(conversation_id)
        if window is None or len(window) == 0:
            return None
        now = self.clock()
        paused = now - window.last_activity
        if paused <= RESUME_AFTER_SECONDS:
            return None
        note = resumption_note(
            paused,
            datetime.fromtimestamp(now, time_zone),
            datetime.fromtimestamp(window.last_activity, time_zone),
        )
        return self.add_message(conversation_id, "user", note, {RESUMED})

    def set_person(self, conversation_id: str, person_id: str | None) -> None:
        """The person whose talk the conversation is: the first known one of its turns.
        It never changes after (another person's turns go to a window of their own,
        window_for)."""
        window = self._window(conversation_id)
        if window.person_id is None and person_id is not None:
            window.person_id = person_id
            self._keep_cap(person_id)

    def person_of(self, conversation_id: str) -> str | None:
        """Whose talk a conversation is (None: nobody known, or no such conversation)."""
        window = self.windows.get(conversation_id)
        return window.person_id if window is not None else None

    def rename_people(self, renamed: Callable[[str], str | None]) -> int:
        """Give each conversation of a person whose key changes its new key (`renamed`:
        a key's new key, or None when it stays): its person, and the ids of windows and
        sources kept apart for them. How many conversations changed."""
        # Only the keys of the conversations' own people: a conversation id may hold APART.
        mapping = {person: new for person in self.people() if (new := renamed(person)) is not None}
        changed = 0
        for window in self.windows.values():
            if window.person_id in mapping:
                window.person_id = mapping[window.person_id]
                changed += 1
            before = window.before_incognito
            if before is not None and before.get("person_id") in mapping:
                window.before_incognito = {**before, "person_id": mapping[before["person_id"]]}

        def key(text: str) -> str:
            head, apart, person = text.rpartition(APART)
            if not apart or person not in mapping:
                return text
            return f"{head}{APART}{mapping[person]}"

        windows = OrderedDict((key(cid), window) for cid, window in self.windows.items())
        for cid, window in windows.items():
            window.conversation_id = cid
        self.windows = windows
        self._last_by_source = {
            key(source): (key(last[0]), last[1]) for source, last in self._last_by_source.items()
        }
        return changed

    def people(self) -> set[str]:
        """Every person key the conversations hold."""
        return {w.person_id for w in self.windows.values() if w.person_id is not None}

    def drop_person(self, person_id: str) -> int:
        """Forget every conversation of a person (for an erasure); how many went."""
        gone = [cid for cid, w in self.windows.items() if w.person_id == person_id]
        for cid in gone:
            del self.windows[cid]
        return len(gone)

    def go_incognito(self, conversation_id: str) -> None:
        """From now on the conversation's turns live in memory only: storage keeps the
        window as it is now (nothing, for a new conversation) until incognito ends."""
        window = self.windows.get(conversation_id)
        if window is None:
            window = self._window(conversation_id)
            window.incognito, window.before_incognito = True, None
        elif not window.incognito:
            window.before_incognito = window.as_dict()
            window.incognito = True

    def end_incognito(self, idle_seconds: float | None = None) -> int:
        """Drop what incognito turns added: every incognito window goes back to what it was
        before (or goes, when it began incognito); with idle_seconds, only those idle longer.
        How many went back."""
        cutoff = None if idle_seconds is None else self.clock() - idle_seconds
        ended = [
            cid
            for cid, window in self.windows.items()
            if window.incognito and (cutoff is None or window.last_activity < cutoff)
        ]
        for cid in ended:
            before = self.windows[cid].before_incognito
            if before is None:
                del self.windows[cid]
                continue
            window = ConversationWindow.from_dict(cid, before)
            window.max_tokens = self.settings.max_tokens
            window.preserve_system = self.settings.preserve_system
            self.windows[cid] = window
        return len(ended)

    def reset(self, conversation_id: str | None = None) -> int:
        """Forget one conversation (with the windows kept apart from it for other
        speakers), or all; returns how many windows were forgotten."""
        if conversation_id is None:
            count = len(self.windows)
            self.windows.clear()
            self._last_by_source.clear()
            return count
        apart = f"{conversation_id}{APART}"
        gone = [cid for cid in self.windows if cid == conversation_id or cid.startswith(apart)]
        for cid in gone:
            del self.windows[cid]
        return len(gone)

    def get_stats(self, conversation_id: str) -> dict[str, Any] | None:
        """One conversation's statistics, or None when unknown."""
        window = self.windows.get(conversation_id)
        if window is None:
            return None
        return {
            **window.stats(),
            "tokens_estimated": self.counter.estimated,
            "person_id": window.person_id,
        }

    def get_all_conversations(self) -> list[str]:
        """Ids of the live conversations, least recently used first."""
        return list(self.windows)

    def expire_idle(self) -> int:
        """Drop conversations idle longer than the idle time; returns how many."""
        cutoff = self.clock() - self.settings.idle_seconds
        stale = [cid for cid, w in self.windows.items() if w.last_activity < cutoff]
        for cid in stale:
            del self.windows[cid]
        return len(stale)

    def health(self) -> list[str]:
        """Warnings worth a log line: too many conversations, windows nearly full."""
        warnings = []
        if len(self.windows) >= self.settings.max_conversations:
            warnings.append(
                f"{len(self.windows)} live conversations reached the cap of "
                f"{self.settings.max_conversations}; the least recently used are dropped"
            )
        warnings.extend(
            f"conversation {cid} is {w.utilization:.0f}% full; oldest messages are evicted"
            for cid, w in self.windows.items()
            if w.utilization > 95
        )
        return warnings

    def totals(self) -> dict[str, Any]:
        """Figures across all conversations, for sensors and diagnostics."""
        return {
            "conversations": len(self.windows),
            "messages": sum(len(w) for w in self.windows.values()),
            "tokens": sum(w.current_tokens for w in self.windows.values()),
            "evicted_messages": sum(w.evicted_count for w in self.windows.values()),
            "dropped_conversations": self.dropped_conversations,
            "encoding": self.counter.name,
            "tokens_estimated": self.counter.estimated,
        }

    def as_dict(self) -> dict[str, Any]:
        """Everything worth keeping across restarts; of an incognito window, what it was
        before its first incognito turn."""
        kept = {cid: w.kept() for cid, w in self.windows.items()}
        return {
            "conversations": {cid: w for cid, w in kept.items() if w is not None},
            "sources": {
                k: list(v)
                for k, v in self._last_by_source.items()
                if v[0] not in kept or kept[v[0]] is not None
            },
            "dropped_conversations": self.dropped_conversations,
        }

    def load(self, data: dict[str, Any]) -> None:
        """Restore what as_dict wrote; the current settings apply from the next add."""
        self.windows = OrderedDict(
            (cid, ConversationWindow.from_dict(cid, raw))
            for cid, raw in data.get("conversations", {}).items()
        )
        for window in self.windows.values():
            window.max_tokens = self.settings.max_tokens
            window.preserve_system = self.settings.preserve_system
        self._last_by_source = {k: (v[0], v[1]) for k, v in data.get("sources", {}).items()}
        self.dropped_conversations = data.get("dropped_conversations", 0)


def rename_stored_people(agent: dict[str, Any], renamed: Callable[[str], str | None]) -> int:
    """rename_people on one agent's stored windows (ConversationMemoryManager.as_dict's
    form), for the windows of an entry not loaded now; how many conversations changed."""
    conversations = agent.get("conversations")
    if not isinstance(conversations, dict):
        return 0
    people = {
        raw["person_id"]
        for raw in conversations.values()
        if isinstance(raw, dict) and isinstance(raw.get("person_id"), str)
    }
    mapping = {person: new for person in people if (new := renamed(person)) is not None}
    if not mapping:
        return 0

    def key(text: str) -> str:
        head, apart, person = text.rpartition(APART)
        return f"{head}{APART}{mapping[person]}" if apart and person in mapping else text

    changed = 0
    moved: dict[str, Any] = {}
    for cid, raw in conversations.items():
        kept = raw
        if isinstance(raw, dict) and raw.get("person_id") in mapping:
            kept = {**raw, "person_id": mapping[raw["person_id"]]}
            changed += 1
        moved[key(cid)] = kept
    agent["conversations"] = moved
    sources = agent.get("sources")
    if isinstance(sources, dict):
        agent["sources"] = {
            key(source): [key(last[0]), *last[1:]]
            if isinstance(last, list) and last and isinstance(last[0], str)
            else last
            for source, last in sources.items()
        }
    return changed


def drop_stored_person(agent: dict[str, Any], person_id: str) -> int:
    """drop_person on one agent's stored windows; how many conversations went."""
    conversations = agent.get("conversations")
    if not isinstance(conversations, dict):
        return 0
    gone = [
        cid
        for cid, raw in conversations.items()
        if isinstance(raw, dict) and raw.get("person_id") == person_id
    ]
    for cid in gone:
        del conversations[cid]
    return len(gone)
