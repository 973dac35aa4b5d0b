"""What HACS and hassfest check of hacs.json, manifest.json and the licence, and that the
manifest's requirements are what the code imports.

The rule sets are HACS' (custom_components/hacs/utils/validate.py, hacs.xyz/docs/publish/)
and hassfest's (home-assistant/core script/hassfest/manifest.py and requirements.py), which
the workflows in .github/workflows/validate.yaml run; here they fail before a push does.
Order and range-only requirements are test_metadata.py's.
"""

import ast
from collections import defaultdict
from functools import cache
import importlib
import importlib.metadata
import json
from pathlib import Path
import re
import sys
from typing import Any

from awesomeversion import AwesomeVersion, AwesomeVersionStrategy
from homeassistant.const import __version__ as HA_VERSION
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).parents[1]
INTEGRATIONS = ROOT / "custom_components"
PACKAGE = INTEGRATIONS / "azure_openai_memory"

# hacs.json's keys as hacs.xyz/docs/publish/start#hacsjson documents them, with their types.
# HACS' schema (extra=PREVENT_EXTRA) also still accepts render_readme, which nothing in HACS
# has read since 2.0: the README is always shown.
HACS_JSON_KEYS: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "content_in_root": bool,
    "zip_release": bool,
    "filename": str,
    "hide_default_branch": bool,
    "country": (str, list),
    "homeassistant": str,
    "hacs": str,
    "persistent_directory": str,
}

# Required of a custom integration's manifest: by hassfest (domain, name, documentation and
# codeowners in its schema; version by validate_version; iot_class for every domain not in
# NO_IOT_CLASS) and by HACS (INTEGRATION_MANIFEST_JSON_SCHEMA adds issue_tracker).
MANIFEST_REQUIRED = {
    "domain",
    "name",
    "codeowners",
    "documentation",
    "iot_class",
    "issue_tracker",
    "version",
}
# Every key hassfest's CUSTOM_INTEGRATION_MANIFEST_SCHEMA knows; it rejects any other.
MANIFEST_KEYS = MANIFEST_REQUIRED | {
    "after_dependencies",
    "bluetooth",
    "config_flow",
    "dependencies",
    "dhcp",
    "disabled",
    "homekit",
    "import_executor",
    "integration_type",
    "loggers",
    "mqtt",
    "preview_features",
    "quality_scale",
    "requirements",
    "single_config_entry",
    "ssdp",
    "usb",
    "zeroconf",
}
IOT_CLASSES = {
    "assumed_state",
    "calculated",
    "cloud_polling",
    "cloud_push",
    "local_polling",
    "local_push",
}
# "virtual" is only for core's virtual integrations, which have no code.
INTEGRATION_TYPES = {"device", "entity", "hardware", "helper", "hub", "service", "system"}
QUALITY_SCALES = {
    "bronze",
    "silver",
    "gold",
    "platinum",
    "custom",
    "no_score",
    "internal",
    "legacy",
}
# The version strategies hassfest's verify_version accepts.
VERSION_STRATEGIES = {
    AwesomeVersionStrategy.CALVER,
    AwesomeVersionStrategy.SEMVER,
    AwesomeVersionStrategy.SIMPLEVER,
    AwesomeVersionStrategy.BUILDVER,
    AwesomeVersionStrategy.PEP440,
}
CORE_DOCUMENTATION = "https://www.home-assistant.io/integrations"


def load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    assert isinstance(data, dict), path
    return data


def manifest_requirements() -> dict[str, Requirement]:
    """The manifest's requirements by canonical distribution name."""
    parsed = [Requirement(r) for r in load(PACKAGE / "manifest.json")["requirements"]]
    return {canonicalize_name(r.name): r for r in parsed}


def home_assistant_requirements() -> set[str]:
    """What the installed homeassistant itself requires (not its extras), canonical names."""
    names = set()
    for line in importlib.metadata.requires("homeassistant") or []:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            names.add(canonicalize_name(requirement.name))
    return names


@cache
def distributions_by_module() -> dict[str, set[str]]:
    """Top-level import name -> the installed distributions providing it (canonical names)."""
    return {
        module: {canonicalize_name(d) for d in dists}
        for module, dists in importlib.metadata.packages_distributions().items()
    }


def _guards_import_error(node: ast.Try | ast.TryStar) -> bool:
    """Whether a try statement handles a missing module."""
    names = set()
    for handler in node.handlers:
        caught = handler.type
        for item in caught.elts if isinstance(caught, ast.Tuple) else [caught]:
            if isinstance(item, ast.Name):
                names.add(item.id)
    return bool(names & {"ImportError", "ModuleNotFoundError"})


def _checks_python_version(node: ast.If) -> bool:
    """Whether an if statement tests `sys.version_info` (its body runs on newer Pythons only,
    whose standard library this Python may not know: annotationlib on 3.13)."""
    return any(
        isinstance(inner, ast.Attribute) and inner.attr == "version_info"
        for inner in ast.walk(node.test)
    )


def third_party_imports(*, optional: bool) -> dict[str, set[str]]:
    """Top-level third-party modules the package imports -> the files importing them.

    Absolute imports only (relative ones are the package's own), without the standard library,
    Home Assistant itself and custom_components. With optional=False, without the imports in
    the body of a try that handles ImportError: the code runs without those modules (as with
    one that only some Home Assistant versions install).
    """
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        guarded = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.Try | ast.TryStar) and _guards_import_error(node)
            for statement in node.body
            for inner in ast.walk(statement)
        }
        newer_python = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and _checks_python_version(node)
            for statement in node.body
            for inner in ast.walk(statement)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            if id(node) in newer_python and sys.version_info < (3, 14):
                continue  # the standard library of a Python newer than this one
            if not optional and id(node) in guarded:
                continue
            for module in modules:
                top = module.split(".", 1)[0]
                if top in sys.stdlib_module_names or top in {"homeassistant", "custom_components"}:
                    continue
                found[top].add(str(path.relative_to(PACKAGE)))
    return dict(found)


def test_hacs_json_follows_hacs_rules() -> None:
    """Only HACS' keys, of their types; a name; a Home Assistant version HACS can compare."""
    hacs = load(ROOT / "hacs.json")
    assert set(hacs) <= set(HACS_JSON_KEYS), set(hacs) - set(HACS_JSON_KEYS)
    for key, value in hacs.items():
        assert isinstance(value, HACS_JSON_KEYS[key]), (key, value)
    assert hacs["name"].strip()
    minimum = AwesomeVersion(hacs["homeassistant"])
    assert minimum.strategy == AwesomeVersionStrategy.CALVER, minimum
    # HACS offers the integration only from this version on: the one tested here is included.
    assert AwesomeVersion(HA_VERSION) >= minimum, (HA_VERSION, minimum)


def test_one_integration_named_by_its_domain() -> None:
    """HACS manages one integration per repository; hassfest wants the folder named as the domain."""
    folders = [p.name for p in INTEGRATIONS.iterdir() if p.is_dir() and p.name != "__pycache__"]
    assert folders == [PACKAGE.name]
    assert load(PACKAGE / "manifest.json")["domain"] == PACKAGE.name


def test_manifest_follows_hassfest_and_hacs_rules() -> None:
    manifest = load(PACKAGE / "manifest.json")
    assert set(manifest) >= MANIFEST_REQUIRED, MANIFEST_REQUIRED - set(manifest)
    assert set(manifest) <= MANIFEST_KEYS, set(manifest) - MANIFEST_KEYS
    version = AwesomeVersion(manifest["version"])
    assert version.strategy in VERSION_STRATEGIES, (version, version.strategy)
    assert manifest["iot_class"] in IOT_CLASSES
    assert manifest["integration_type"] in INTEGRATION_TYPES
    assert manifest["quality_scale"] in QUALITY_SCALES
    assert manifest["codeowners"]
    for owner in manifest["codeowners"]:
        assert re.fullmatch(r"@[A-Za-z0-9][A-Za-z0-9-]*(/[A-Za-z0-9._-]+)?", owner), owner
    for key in ("documentation", "issue_tracker"):
        assert re.fullmatch(r"https://[^\s/]+\.[a-z]+/\S*", manifest[key]), key
    # hassfest: a custom integration documents itself, not on home-assistant.io/integrations
    assert not manifest["documentation"].startswith(CORE_DOCUMENTATION)


def test_requirements_parse_and_are_met_here() -> None:
    """Each requirement is a PEP 508 line without spaces (hassfest rejects them) whose versions
    AwesomeVersion parses, and the version these tests run with satisfies it."""
    raw = load(PACKAGE / "manifest.json")["requirements"]
    assert raw
    for line in raw:
        assert " " not in line, line
        requirement = Requirement(line)
        assert requirement.specifier, line
        for specifier in requirement.specifier:
            strategy = AwesomeVersion(specifier.version).strategy
            assert strategy != AwesomeVersionStrategy.UNKNOWN, (line, specifier)
        installed = importlib.metadata.version(requirement.name)
        assert requirement.specifier.contains(installed, prereleases=True), (line, installed)


def modules_home_assistant_aliases() -> set[str]:
    """Top-level modules that importing Home Assistant puts in place under another package's
    name (2026.10 makes `voluptuous` an alias of probatio, whether voluptuous is installed)."""
    importlib.import_module("homeassistant")
    return {
        name
        for name, module in list(sys.modules.items())
        if "." not in name and getattr(module, "__name__", name).split(".")[0] != name
    }


def test_every_third_party_import_is_a_requirement() -> None:
    """What the code imports is installed with it: by the manifest, or by Home Assistant."""
    provided = set(manifest_requirements()) | home_assistant_requirements()
    imports = third_party_imports(optional=False)
    assert imports
    unprovided = {}
    for module, files in sorted(imports.items()):
        if module in modules_home_assistant_aliases():
            continue
        distributions = distributions_by_module().get(module, set())
        if not distributions & provided:
            unprovided[module] = (sorted(distributions) or "not installed", sorted(files))
    # module -> (its distributions, the files importing it)
    assert unprovided == {}, (
        f"imported, but neither in manifest.json's requirements nor among "
        f"Home Assistant {HA_VERSION}'s own: {unprovided}"
    )


def test_every_requirement_is_imported() -> None:
    """No requirement is installed for nothing."""
    imported = set(third_party_imports(optional=True))
    unused = {}
    for name in manifest_requirements():
        modules = {m for m, dists in distributions_by_module().items() if name in dists}
        if not modules & imported:
            unused[name] = sorted(modules) or "not installed"
    assert unused == {}, f"requirements the code never imports: {unused}"


def test_mit_license() -> None:
    """HACS checks for an OSI-approved licence (GitHub's detection of LICENSE)."""
    text = (ROOT / "LICENSE").read_text()
    assert text.splitlines()[0] == "MIT License"
    assert "Permission is hereby granted, free of charge, to any person obtaining a copy" in text
    assert re.search(r"^Copyright \(c\) \d{4} \S", text, re.M)
