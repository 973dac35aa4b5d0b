"""Patterns count what was reported, not what is still active: superseded reports count."""

import numpy as np

from custom_components.azure_openai_memory.lib.memories import MemoryStore, SaveAction

NOW = 1_760_000_000.0
DAY = 86_400.0
KNEE = [
    "Occasional knee soreness",
    "Chronic knee pain after runs over 15km",
    "Knee pain now also comes on after cycling",
]


def test_three_knee_reports_superseding_one_another_are_a_recurring_injury() -> None:
    """The specification's own scenario: each report updates the last, one stays active."""
    store = MemoryStore()
    saved = [
        store.save(text, "injury_history", ["body:knee"], now=NOW + n * DAY)
        for n, text in enumerate(KNEE)
    ]
    assert [r.action for r in saved] == [
        SaveAction.CREATED,
        SaveAction.SUPERSEDED,
        SaveAction.SUPERSEDED,
    ]
    assert len(store) == 1
    (insight,) = [i for i in store.patterns() if i.pattern_type == "recurring_body"]
    assert insight.description == "Recurring body knee in injury_history memories (3 occurrences)"
    assert insight.evidence == [r.memory.id for r in saved]
    # Read back from storage, the count and the chain hold.
    (again,) = [
        i
        for i in MemoryStore.from_dict(store.as_dict()).patterns()
        if i.pattern_type.endswith("body")
    ]
    assert again == insight


def test_superseded_reports_count_once_their_archive_record_is_gone() -> None:
    """The count is carried by the record: cleaning the archive does not undo a pattern."""
    store = MemoryStore()
    for n, text in enumerate(KNEE):
        store.save(text, "injury_history", ["body:knee"], vector=np.ones(3), now=NOW + n * DAY)
    (active,) = list(store)
    assert active.occurrences == 3
    store.cleanup_archived(retention_days=0, now=NOW + 10 * DAY)
    assert store.archived() == []
    (insight,) = store.patterns()
    assert insight.description.endswith("(3 occurrences)")
    assert insight.evidence == [active.id]


def test_one_report_with_two_distinct_facts_is_no_pattern() -> None:
    store = MemoryStore()
    store.save("Anna's left knee aches after 10 km", "injury_history", ["body:knee"], now=NOW)
    store.save("Tom twisted his ankle", "injury_history", ["body:ankle"], now=NOW)
    store.save("Tom's ankle hurts again", "injury_history", ["body:ankle"], now=NOW + DAY)
    assert store.patterns() == []
