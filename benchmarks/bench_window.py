"""ConversationMemoryManager figures, each next to its target (issue 3).

Run with scripts/bench. Times are medians of many runs; ratios compare against a
reference measured in the same process (raw tiktoken), so they hold on a busy machine.
"""

from collections.abc import Callable
import gc
import statistics
import time
import tracemalloc

from custom_components.azure_openai_memory.lib.tokens import load_counter
from custom_components.azure_openai_memory.lib.windows.window import (
    ConversationMemoryManager,
    WindowSettings,
)

TEXT_60 = (
    "Could you turn on the kitchen lights, set the living room thermostat to "
    "twenty one degrees, and remind me to water the plants tomorrow morning at eight? "
    "Also, what was the name of that recipe we talked about yesterday evening, the one "
    "with lentils and smoked paprika?"
)


def median_us(fn: Callable[[], object], repeat: int = 2000) -> float:
    """Median wall time of fn in microseconds."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1000


def report(name: str, value: float, unit: str, target: str, ok: bool) -> bool:
    print(f"{name:<58} {value:>10.2f} {unit:<4} target {target:<14} {'OK' if ok else 'MISSED'}")
    return ok


def main() -> int:
    counter = load_counter("gpt-4", None)
    encoding = counter.encoding
    assert encoding is not None
    tokens = len(encoding.encode_ordinary(TEXT_60))
    print(f"encoding {counter.name}; message of {tokens} tokens\n")
    results = []

    # 1. add_message, counting included, against encoding the text alone.
    manager = ConversationMemoryManager(counter, WindowSettings(max_tokens=4000))
    texts = [f"{TEXT_60} #{i}" for i in range(4000)]
    index = iter(range(10**9))

    def add() -> None:
        manager.add_message("c", "user", texts[next(index) % 4000], ("input",))

    def encode() -> None:
        encoding.encode_ordinary(texts[next(index) % 4000])

    for _ in range(500):
        add()
    gc.disable()
    raw = min(median_us(encode) for _ in range(5))
    ours = min(median_us(add) for _ in range(5))
    gc.enable()
    results.append(report("add_message median", ours, "us", "<= 50 us", ours <= 50))
    results.append(
        report("add_message / tiktoken encode alone", ours / raw, "x", "<= 1.3x", ours / raw <= 1.3)
    )

    # 2. Eviction is O(1) amortized: cost per add after 100 vs 100,000 messages seen.
    def per_add_cost(seen: int) -> float:
        m = ConversationMemoryManager(counter, WindowSettings(max_tokens=4000))
        entries = [f"message {i} " + "word " * 50 for i in range(seen + 2000)]
        for text in entries[:seen]:
            m.add_message("c", "user", text)
        start = time.perf_counter_ns()
        for text in entries[seen:]:
            m.add_message("c", "user", text)
        return (time.perf_counter_ns() - start) / 2000 / 1000

    small = min(per_add_cost(100) for _ in range(3))
    large = min(per_add_cost(100_000) for _ in range(3))
    results.append(
        report(
            "per-add cost, 100,000 seen / 100 seen",
            large / small,
            "x",
            "<= 1.5x",
            large / small <= 1.5,
        )
    )

    # 3. What a turn reads: the newest messages of a full 4,000-token window that fit.
    full = ConversationMemoryManager(counter, WindowSettings(max_tokens=4000))
    for i in range(400):
        tags = ("input", "context:lights") if i % 3 == 0 else ("output",)
        full.add_message("c", "user", f"{TEXT_60} {i}", tags)
    stats = full.get_stats("c")
    assert stats is not None
    print(f"\nfull window: {stats['message_count']} messages, {stats['current_tokens']} tokens")
    whole = min(median_us(lambda: full.get_recent_messages("c", 4000)) for _ in range(5))
    half = min(median_us(lambda: full.get_recent_messages("c", 2000)) for _ in range(5))
    results.append(report("recent messages, whole window", whole, "us", "<= 50 us", whole <= 50))
    results.append(report("recent messages, half the window", half, "us", "<= 50 us", half <= 50))

    # 4. Memory: 100 live conversations with full windows.
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    many = ConversationMemoryManager(counter, WindowSettings(max_tokens=4000))
    for c in range(100):
        for i in range(120):
            many.add_message(f"conv{c}", "user", f"{TEXT_60} {c} {i}", ("input",))
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename")) / 2**20
    results.append(
        report("100 full conversations, memory added", grown, "MB", "<= 50 MB", grown <= 50)
    )
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
