"""Statistics of every turn an entry's agents served."""

from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
import statistics
import time
from typing import Any

ROUTE_LOCAL = "local"
ROUTE_LLM = "llm"
LATENCY_SAMPLES = 1000


def ms_since(started: float) -> float:
    """Milliseconds since started, a time.perf_counter() reading (a turn's latency)."""
    return (time.perf_counter() - started) * 1000


@dataclass
class TurnStatistics:
    """Counters per entry; listeners (the sensors) hear about every change."""

    turns: int = 0
    local_turns: int = 0
    llm_turns: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    early_timeouts: int = 0
    late_answers: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    # Input tokens Azure read from its prompt cache (billed at a discount).
    tokens_in_cached: int = 0
    last_turn_tokens_in: int = 0
    last_turn_tokens_in_cached: int = 0
    last_request_tokens: int = 0
    last_prompt_tokens: int = 0
    requests_trimmed: int = 0
    latencies_ms: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_SAMPLES))
    listeners: list[Callable[[], None]] = field(default_factory=list, repr=False)

    def _changed(self) -> None:
        for listener in self.listeners:
            listener()

    def record_turn(self, route: str, latency_ms: float) -> None:
        """A turn was answered (locally or by the LLM, in time or with an early answer)."""
        self.turns += 1
        if route == ROUTE_LOCAL:
            self.local_turns += 1
        else:
            self.llm_turns += 1
        self.latencies_ms.append(latency_ms)
        self._changed()

    def record_usage(self, tokens_in: int, tokens_out: int, tokens_in_cached: int = 0) -> None:
        """Tokens the API reported for one turn or task (all its tool rounds).

        Listeners hear of them with the turn, error or late answer.
        """
        self.tokens_in += tokens_in
        self.tokens_out += tokens_out
        self.tokens_in_cached += tokens_in_cached
        if tokens_in:
            self.last_turn_tokens_in = tokens_in
            self.last_turn_tokens_in_cached = tokens_in_cached

    def cached_input_share(self) -> float | None:
        """Percent of all input tokens so far that Azure read from its prompt cache."""
        if not self.tokens_in:
            return None
        return round(100 * self.tokens_in_cached / self.tokens_in, 1)

    def record_request(self, total_tokens: int, prompt_tokens: int, left_out: int) -> None:
        """What the last request carried (counted by us); left_out: history messages not sent."""
        self.last_request_tokens = total_tokens
        self.last_prompt_tokens = prompt_tokens
        if left_out:
            self.requests_trimmed += 1

    def record_error(self, kind: str) -> None:
        """A request failed; kind is an ErrorKind value."""
        self.errors[kind] += 1
        self._changed()

    def record_early_timeout(self) -> None:
        """The user heard 'still working on it'; record_turn follows and notifies."""
        self.early_timeouts += 1

    def record_late_answer(self) -> None:
        """An answer arrived after the early timeout."""
        self.late_answers += 1
        self._changed()

    def latency_percentile(self, percent: int) -> float | None:
        """p50/p95 of recent turns, in milliseconds."""
        if not self.latencies_ms:
            return None
        if len(self.latencies_ms) == 1:
            return round(self.latencies_ms[0], 1)
        cuts = statistics.quantiles(self.latencies_ms, n=100, method="inclusive")
        return round(cuts[percent - 1], 1)

    def as_dict(self) -> dict[str, Any]:
        """For services, sensors and diagnostics."""
        return {
            "turns": self.turns,
            "local_turns": self.local_turns,
            "llm_turns": self.llm_turns,
            "errors": dict(self.errors),
            "error_count": sum(self.errors.values()),
            "early_timeouts": self.early_timeouts,
            "late_answers": self.late_answers,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "tokens_in_cached": self.tokens_in_cached,
            "cached_input_share": self.cached_input_share(),
            "last_turn_tokens_in": self.last_turn_tokens_in,
            "last_turn_tokens_in_cached": self.last_turn_tokens_in_cached,
            "last_turn_cached_share": (
                round(100 * self.last_turn_tokens_in_cached / self.last_turn_tokens_in, 1)
                if self.last_turn_tokens_in
                else None
            ),
            "last_request_tokens": self.last_request_tokens,
            "last_prompt_tokens": self.last_prompt_tokens,
            "last_prompt_share": (
                round(100 * self.last_prompt_tokens / self.last_request_tokens, 1)
                if self.last_request_tokens
                else None
            ),
            "requests_trimmed": self.requests_trimmed,
            "latency_p50_ms": self.latency_percentile(50),
            "latency_p95_ms": self.latency_percentile(95),
        }
