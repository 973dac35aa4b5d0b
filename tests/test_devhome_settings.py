"""scripts/develop's choice of model: real Azure only when all three variables are set."""

import pytest

from .devhome import ResourceSettings

STAND_IN = "http://127.0.0.1:8124"


@pytest.fixture(autouse=True)
def no_azure_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sets what it needs; the developer's own Azure settings play no part."""
    for name in (
        "AZURE_OPENAI_ENDPOINT",
        "AZURE_OPENAI_API_KEY",
        "AZURE_OPENAI_DEPLOYMENT",
        "AZURE_OPENAI_API_STYLE",
        "AZURE_OPENAI_API_VERSION",
    ):
        monkeypatch.delenv(name, raising=False)


def test_stand_in_without_azure_variables() -> None:
    settings = ResourceSettings.from_environment(STAND_IN)
    assert settings == ResourceSettings(STAND_IN, "stub-key-0123456789")
    assert settings.is_stand_in


def test_real_azure_when_endpoint_key_and_deployment_are_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://my-resource.openai.azure.com")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "a-real-key")
    monkeypatch.setenv("AZURE_OPENAI_DEPLOYMENT", "gpt-4.1-mini")
    monkeypatch.setenv("AZURE_OPENAI_API_STYLE", "deployment")
    settings = ResourceSettings.from_environment(STAND_IN)
    assert settings == ResourceSettings(
        "https://my-resource.openai.azure.com",
        "a-real-key",
        deployment="gpt-4.1-mini",
        api_style="deployment",
        api_version="2024-10-21",
    )
    assert not settings.is_stand_in


@pytest.mark.parametrize("missing", ["AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_DEPLOYMENT"])
def test_stand_in_when_one_variable_is_missing(
    monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    for name, value in {
        "AZURE_OPENAI_ENDPOINT": "https://my-resource.openai.azure.com",
        "AZURE_OPENAI_API_KEY": "a-real-key",
        "AZURE_OPENAI_DEPLOYMENT": "gpt-4.1-mini",
    }.items():
        if name != missing:
            monkeypatch.setenv(name, value)
    assert ResourceSettings.from_environment(STAND_IN).is_stand_in
