"""Memories that stay correct, through the services: patterns count what was reported,
tags in any script, and numbers that change."""

from homeassistant.core import HomeAssistant

from ..conftest import family

call = family("memory")


async def test_three_knee_reports_make_a_recurring_injury_pattern(
    hass: HomeAssistant, services: None
) -> None:
    """The specification's scenario: each report supersedes the last, the pattern holds."""
    saved = [
        await call(hass, "save", content=text, type="injury_history", tags=["body:knee"])
        for text in (
            "Occasional knee soreness",
            "Chronic knee pain after runs over 15km",
            "Knee pain now also comes on after cycling",
        )
    ]
    assert [s["action"] for s in saved] == ["created", "superseded", "superseded"]
    result = await call(hass, "patterns")
    assert result == {
        "patterns": [
            {
                "pattern_type": "recurring_body",
                "description": "Recurring body knee in injury_history memories (3 occurrences)",
                "evidence": [s["memory"]["id"] for s in saved],
                "confidence": "high",
            }
        ]
    }


async def test_names_in_any_script_and_with_apostrophes_tag_memories(
    hass: HomeAssistant, services: None
) -> None:
    """`person:İlkay` and `person:o'brien` were refused as malformed tags."""
    ilkay = await call(
        hass,
        "save",
        content="İlkay takes her tea without sugar",
        type="preference",
        tags=["person:İlkay", "topic:tea"],
    )
    brien = await call(
        hass,
        "save",
        content="Mr O'Brien feeds the cat when we travel",
        type="household",
        tags=["person:O\u2019Brien"],
    )
    assert ilkay["memory"]["tags"] == ["person:i\u0307lkay", "topic:tea"]
    assert brien["memory"]["tags"] == ["person:o'brien"]
    found = await call(hass, "search", tags=["person:İLKAY"])
    assert [m["id"] for m in found["memories"]] == [ilkay["memory"]["id"]]
    forgot = await call(hass, "forget", tag="person:o'brien")
    assert [a["id"] for a in forgot["archived"]] == [brien["memory"]["id"]]
