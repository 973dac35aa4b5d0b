"""A series' data block tells the model when its coverage is only approximate."""

from datetime import UTC

from custom_components.azure_openai_memory.agent.context import build_turn_context
from custom_components.azure_openai_memory.lib.series.store import Series
from custom_components.azure_openai_memory.lib.times import format_time
from custom_components.azure_openai_memory.lib.tokens import load_counter

START = 1_760_000_000.0


def _series_of_windows(count: int) -> Series:
    """count fetch windows of 100 s, 10 s apart, one entry each."""
    series = Series("power_timeseries")
    for n in range(count):
        begin = START + n * 110
        prepared = series.prepare(
            [{"id": f"e{n}", "timestamp": begin + 50, "watts": n}], "id", "timestamp", UTC, "x"
        )
        series.merge(prepared, format_time(begin), (begin, begin + 100))
    return series


def test_a_bridged_range_is_not_called_complete() -> None:
    """Past 1,000 intervals the closest windows merge: the model hears coverage is approximate."""
    counter = load_counter("gpt-4", None)
    series = _series_of_windows(1001)
    first_two = (START, START + 210)  # the first gap (the oldest of equally close) is bridged
    result = series.query(*first_two)
    assert (result["coverage"], result["coverage_approximate"]) == ("full", True)
    context = build_turn_context([series], *first_two, counter, 2000)
    assert context is not None
    assert "coverage is approximate" in context.message
    assert "Complete for the asked range" not in context.message


def test_an_exact_range_is_called_complete() -> None:
    counter = load_counter("gpt-4", None)
    series = _series_of_windows(3)
    result = series.query(START, START + 100)
    assert (result["coverage"], result["coverage_approximate"]) == ("full", False)
    context = build_turn_context([series], START, START + 100, counter, 2000)
    assert context is not None
    assert "Complete for the asked range: answer from it" in context.message
    assert "approximate" not in context.message
