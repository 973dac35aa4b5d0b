"""The compatibility module picks the right side on each Home Assistant version."""

from awesomeversion import AwesomeVersion
from homeassistant.const import __version__ as HA_VERSION

from custom_components.azure_openai_memory import compat

ON_2025_4 = AwesomeVersion(HA_VERSION) < AwesomeVersion("2025.5.0")


def test_llm_api_option_matches_this_version() -> None:
    """2025.4 stores one LLM API id; newer versions store a list."""
    assert compat.LLM_API_ACCEPTS_LIST is not ON_2025_4
    if ON_2025_4:
        assert compat.llm_api_option(["assist"]) == "assist"
        assert compat.llm_api_option("assist") == "assist"
    else:
        assert compat.llm_api_option("assist") == ["assist"]
        assert compat.llm_api_option(["assist", "other"]) == ["assist", "other"]
    assert compat.llm_api_option(None) is None
    assert compat.llm_api_option([]) is None


def test_llm_api_ids_reads_either_form() -> None:
    """A value written by either version reads back as a list."""
    assert compat.llm_api_ids("assist") == ["assist"]
    assert compat.llm_api_ids(["a", "b"]) == ["a", "b"]
    assert compat.llm_api_ids(None) == []
