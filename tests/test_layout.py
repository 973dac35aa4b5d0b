"""The package's layout rules and the tests' own, read from the source (AST, no imports).

Package: no import cycles among its modules (importing a submodule also runs its
subpackage's `__init__`, so that counts as an import of the subpackage too); no run-time
`from . import …` of the integration's own `__init__` (loading one platform must not load
everything; a subpackage's `__init__` is its public face and may be imported from); no import of
another module's private (`_`-prefixed) name; every `HassKey` made in `data.py`. Imports
count at any depth (inside functions too); for these rules, those under `if TYPE_CHECKING:`
do not run and do not count.

What may import what: the pure package `lib/` imports nothing of Home Assistant and no module
of the package outside `lib/`; only `azure/` imports `openai`. For these two rules an import
under `if TYPE_CHECKING:` counts too: a type is knowledge, and the pure package's types must
not name Home Assistant's (nor any module but `azure/` name the SDK's).

Where things are: the top of the package holds only the modules and folders listed in
TOP_LEVEL (platforms and flows, where Home Assistant expects them, and one folder per kind);
each kind has its Home Assistant folder and its pure `lib/<kind>/`, under the same name.

Tests: they go through public surfaces, so none imports a private name of the package, none
puts anything into `hass.data` and none reads one of the integration's own `hass.data` keys
(Home Assistant's own keys, such as the storage semaphore, may be read).

Each failure lists every violation, one per line.
"""

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parents[1]
PACKAGE = "custom_components.azure_openai_memory"
PACKAGE_DIR = ROOT / "custom_components" / "azure_openai_memory"
TESTS_DIR = ROOT / "tests"
DATA_MODULE = f"{PACKAGE}.data"
LIB = f"{PACKAGE}.lib"
# ARCHITECTURE.md calls this folder llm/; Home Assistant 2026.10 loads an integration's `llm`
# module as a platform (as it loads `sensor` or `conversation`), so the folder is `azure`.
SDK_HOME = f"{PACKAGE}.azure"
# The kinds of data: each has a Home Assistant folder and a pure lib/<kind>/ of the same name.
KINDS = ("windows", "memories", "history", "summaries", "series")
# Everything the top of the package may hold. Modules: set-up, runtime, constants, version
# differences and the base entity; the platforms and flows Home Assistant looks for there
# (`repairs` among them, for the day a repair needs a fix flow); `services`, `storage` and
# `title`, shared by several kinds. Folders: one per kind, and the other parts ARCHITECTURE.md
# names. A new top-level module fails here: it belongs in the folder of its kind.
TOP_LEVEL_MODULES = frozenset(
    {
        "__init__",
        "ai_task",
        "backup",
        "compat",
        "config_flow",
        "const",
        "conversation",
        "data",
        "diagnostics",
        "entity",
        "flow_common",
        "options_flow",
        "repairs",
        "sensor",
        "services",
        "storage",
        "subentry_flow",
        "switch",
        "title",
    }
)
TOP_LEVEL_FOLDERS = frozenset(
    {*KINDS, "agent", "azure", "brand", "lib", "panel", "people", "translations"}
)


@dataclass(frozen=True)
class Import:
    """One imported module, or one name from a module, where the source says so."""

    importer: str
    line: int
    module: str  # the module the import executes (a submodule when one is named)
    name: str | None  # the name taken from `module`; None for `import x` or a submodule
    from_package_init: bool  # the name is taken from a package's __init__


def module_name(path: Path, top: Path, prefix: str) -> str:
    """The dotted name of a file below top (a package's __init__ is the package)."""
    parts = list(path.relative_to(top).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([prefix, *parts]) if parts else prefix


def package_modules() -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    return {
        module_name(path, PACKAGE_DIR, PACKAGE): path for path in sorted(PACKAGE_DIR.rglob("*.py"))
    }


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def run_time_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node at any depth, except what sits under `if TYPE_CHECKING:`."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and is_type_checking(node):
            stack.extend(node.orelse)  # the else branch does run
            continue
        stack.extend(ast.iter_child_nodes(node))


def resolve(importer: str, is_package: bool, level: int, module: str | None) -> str:
    """The absolute name of a relative import's module."""
    if level == 0:
        return module or ""
    base = importer.split(".")
    if not is_package:
        base.pop()  # a module's imports are relative to its package
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def imports_of(name: str, path: Path, known: dict[str, Path]) -> list[Import]:
    """What a module imports at run time; `known` tells modules from names."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    found: list[Import] = []
    for node in run_time_nodes(tree):
        if isinstance(node, ast.Import):
            found.extend(Import(name, node.lineno, a.name, None, False) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = resolve(name, is_package, node.level, node.module)
            source_is_package = source in known and known[source].name == "__init__.py"
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule in known:
                    found.append(Import(name, node.lineno, submodule, None, False))
                else:
                    found.append(Import(name, node.lineno, source, alias.name, source_is_package))
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with a cycle in them (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def package_imports() -> list[Import]:
    modules = package_modules()
    return [imp for name, path in modules.items() for imp in imports_of(name, path, modules)]


def short(module: str) -> str:
    return module.removeprefix(f"{PACKAGE}.") if module != PACKAGE else "__init__"


def report(title: str, lines: list[str]) -> str:
    return "\n".join([f"{title} ({len(lines)}):", *(f"  {line}" for line in lines)])


# -- The package's layout --------------------------------------------------------------------


def test_no_import_cycles() -> None:
    modules = package_modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for imp in package_imports():
        targets = [imp.module]
        # Importing a.b.c runs a.b's __init__ first (the integration's own is always running).
        parts = imp.module.split(".")
        targets += [".".join(parts[:n]) for n in range(len(PACKAGE.split(".")) + 1, len(parts))]
        for target in targets:
            inside = imp.importer.startswith(f"{target}.")  # a sibling of its own package
            if target in modules and target not in (imp.importer, PACKAGE) and not inside:
                graph[imp.importer].add(target)
    found = [" -> ".join(short(m) for m in component) for component in cycles(graph)]
    assert found == [], report("Modules importing each other", found)


def test_nothing_is_imported_from_the_integration_init() -> None:
    found = [
        f"{short(imp.importer)}:{imp.line} takes {imp.name} from {short(imp.module)}"
        for imp in package_imports()
        if imp.module == PACKAGE and imp.importer != PACKAGE
    ]
    assert found == [], report("Names taken from the integration's __init__ at run time", found)


def test_no_private_name_of_another_module_is_imported() -> None:
    found = [
        f"{short(imp.importer)}:{imp.line} imports {imp.name} from {short(imp.module)}"
        for imp in package_imports()
        if imp.module.startswith(PACKAGE)
        and imp.name is not None
        and imp.name.startswith("_")
        and not imp.name.startswith("__")
        and imp.module != imp.importer
    ]
    assert found == [], report("Private names imported from another module", found)


def test_every_hass_key_is_made_in_data() -> None:
    found = []
    for name, path in package_modules().items():
        if name == DATA_MODULE:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and (
                (isinstance(node.func, ast.Name) and node.func.id == "HassKey")
                or (isinstance(node.func, ast.Attribute) and node.func.attr == "HassKey")
            ):
                found.append(f"{short(name)}:{node.lineno}")
    assert found == [], report("HassKeys made outside data.py", found)


def test_the_rules_see_what_they_check() -> None:
    """The readers above find what they look for: a guard against checks that pass on nothing."""
    modules = package_modules()
    assert f"{PACKAGE}.const" in modules
    assert f"{PACKAGE}.lib.windows.window" in modules
    imported = {(imp.importer, imp.module) for imp in package_imports()}
    assert (PACKAGE, f"{PACKAGE}.const") in imported
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert cycles({"a": {"a"}}) == [["a"]]
    assert resolve(f"{PACKAGE}.lib.windows.window", False, 3, "const") == f"{PACKAGE}.const"
    assert resolve(f"{PACKAGE}.llm", True, 1, "client") == f"{PACKAGE}.llm.client"
    tree = ast.parse("if TYPE_CHECKING:\n    import a\nelse:\n    import b\nimport c\n")
    names = [a.name for n in run_time_nodes(tree) if isinstance(n, ast.Import) for a in n.names]
    assert sorted(names) == ["b", "c"]


# -- What may import what --------------------------------------------------------------------


def every_import(name: str, is_package: bool, tree: ast.AST) -> list[tuple[int, str]]:
    """Each imported module's absolute name, at any depth, under TYPE_CHECKING too; by line."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append((node.lineno, resolve(name, is_package, node.level, node.module)))
    return sorted(found)


def is_within(module: str, top: str) -> bool:
    return module == top or module.startswith(f"{top}.")


def impure_imports(name: str, is_package: bool, tree: ast.AST) -> Iterator[str]:
    """What a module of the pure package must not import: Home Assistant, or the package
    outside lib/ (its Home Assistant side)."""
    for line, module in every_import(name, is_package, tree):
        if is_within(module, "homeassistant") or (
            is_within(module, PACKAGE) and not is_within(module, LIB)
        ):
            yield f"{short(name)}:{line} imports {module}"


def sdk_imports(name: str, is_package: bool, tree: ast.AST) -> Iterator[str]:
    """The `openai` imports of a module outside azure/."""
    if is_within(name, SDK_HOME):
        return
    for line, module in every_import(name, is_package, tree):
        if is_within(module, "openai"):
            yield f"{short(name)}:{line} imports {module}"


def parsed_modules() -> Iterator[tuple[str, bool, ast.AST]]:
    for name, path in package_modules().items():
        yield name, path.name == "__init__.py", ast.parse(path.read_text(), str(path))


def test_the_pure_package_knows_nothing_of_home_assistant() -> None:
    found = [
        line
        for name, is_package, tree in parsed_modules()
        if is_within(name, LIB)
        for line in impure_imports(name, is_package, tree)
    ]
    assert found == [], report("lib/ importing Home Assistant or the package outside lib/", found)


def test_only_azure_imports_the_sdk() -> None:
    found = [line for module in parsed_modules() for line in sdk_imports(*module)]
    assert found == [], report("Modules outside azure/ importing openai", found)


# -- Where things are ------------------------------------------------------------------------


def strays(entries: Iterable[tuple[str, bool]]) -> list[str]:
    """The top-level modules and folders (name, is a folder) that TOP_LEVEL does not allow;
    data files (manifest, strings, icons, ...) are not code and are not listed."""
    found = []
    for entry, is_folder in sorted(entries):
        if is_folder:
            if entry not in TOP_LEVEL_FOLDERS and entry != "__pycache__":
                found.append(f"{entry}/")
        elif entry.endswith(".py") and entry.removesuffix(".py") not in TOP_LEVEL_MODULES:
            found.append(entry)
    return found


def missing_kinds(packages: Iterable[str]) -> list[str]:
    """The folders of a kind (kind/ or lib/kind/) missing among these package folders."""
    present = set(packages)
    return [folder for kind in KINDS for folder in (kind, f"lib/{kind}") if folder not in present]


def holds_files(folder: Path) -> bool:
    """Whether a folder holds anything besides compiled caches (a folder a move left with
    only __pycache__ in a working copy is not part of the package)."""
    return any(
        path.is_file() and "__pycache__" not in path.relative_to(folder).parts
        for path in folder.rglob("*")
    )


def test_the_top_level_holds_only_platforms_flows_and_folders() -> None:
    found = strays(
        (entry.name, entry.is_dir())
        for entry in PACKAGE_DIR.iterdir()
        if not entry.is_dir() or holds_files(entry)
    )
    assert found == [], report("Top-level entries ARCHITECTURE.md does not allow", found)


# Folders of tests/ that help the tests and mirror nothing of the package.
TEST_HELPER_FOLDERS = frozenset({"azure_stub", "devhome", "e2e", "snapshots"})
# A top-level test file whose name starts with one of these belongs in that kind's folder.
KIND_WORDS = (*KINDS, "memory", "window", "timeseries", "agent", "people", "panel")


def unmirrored(test_files: Iterable[str], package_folders: Iterable[str]) -> list[str]:
    """Test files (paths below tests/) that are not where the package's layout puts them:
    in a folder the package does not have, or at the top though named after a kind."""
    folders = set(package_folders)
    found = []
    for test_file in sorted(test_files):
        folder, _, name = test_file.rpartition("/")
        if folder.split("/")[0] in TEST_HELPER_FOLDERS:
            continue
        if folder and folder not in folders:
            found.append(f"{test_file}: the package has no {folder}/")
        elif not folder and name.removeprefix("test_").startswith(KIND_WORDS):
            found.append(f"{test_file}: belongs in its kind's folder")
    return found


def test_the_tests_mirror_the_package() -> None:
    """tests/<kind>/ for a kind's Home Assistant side, tests/lib/<kind>/ for its pure side,
    tests/ itself for the platforms, flows and the rules of the whole."""
    package = [
        path.parent.relative_to(PACKAGE_DIR).as_posix() for path in PACKAGE_DIR.rglob("__init__.py")
    ]
    tests = [path.relative_to(TESTS_DIR).as_posix() for path in TESTS_DIR.rglob("test_*.py")]
    found = unmirrored(tests, package)
    assert found == [], report("Tests outside the folder that mirrors their code", found)


def test_the_mirror_rule_sees_what_it_checks() -> None:
    found = unmirrored(
        [
            "test_memories_cap.py",
            "test_init.py",
            "facts/test_store.py",
            "lib/memories/test_store.py",
            "e2e/test_restart.py",
        ],
        ["lib", "lib/memories", "memories"],
    )
    assert found == [
        "facts/test_store.py: the package has no facts/",
        "test_memories_cap.py: belongs in its kind's folder",
    ]


def test_each_kind_has_its_home_assistant_folder_and_its_pure_one() -> None:
    packages = [
        path.parent.relative_to(PACKAGE_DIR).as_posix() for path in PACKAGE_DIR.rglob("__init__.py")
    ]
    found = missing_kinds(packages)
    assert found == [], report("Folders of a kind missing (each needs an __init__.py)", found)


def test_the_import_and_layout_rules_see_what_they_check() -> None:
    """Each reader above finds a violation in a small sample."""
    window = f"{PACKAGE}.lib.windows.window"
    sample = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from homeassistant.core import HomeAssistant\n"
        "from ...const import DOMAIN\nfrom ..tokens import count\nfrom . import queue\n"
        "def later():\n    import homeassistant.util.dt\n"
    )
    assert list(impure_imports(window, False, sample)) == [
        "lib.windows.window:3 imports homeassistant.core",
        f"lib.windows.window:4 imports {PACKAGE}.const",
        "lib.windows.window:8 imports homeassistant.util.dt",
    ]
    sdk = ast.parse("if TYPE_CHECKING:\n    from openai import AsyncOpenAI\nimport openai.types\n")
    assert list(sdk_imports(f"{PACKAGE}.agent.turn", False, sdk)) == [
        "agent.turn:2 imports openai",
        "agent.turn:3 imports openai.types",
    ]
    assert list(sdk_imports(f"{PACKAGE}.azure.client", False, sdk)) == []
    assert list(sdk_imports(SDK_HOME, True, sdk)) == []
    # The package's own modules are read: azure/ imports the SDK, lib/ imports lib/.
    imported = {
        (name, module.split(".")[0] if not is_within(module, LIB) else LIB)
        for name, is_package, tree in parsed_modules()
        for _, module in every_import(name, is_package, tree)
    }
    assert (f"{SDK_HOME}.client", "openai") in imported
    assert (f"{LIB}.memories", LIB) in imported
    listing = [
        ("conversation.py", False),
        ("agent", True),
        ("cache.py", False),
        ("helpers", True),
        ("manifest.json", False),
        ("__pycache__", True),
    ]
    assert strays(listing) == ["cache.py", "helpers/"]
    assert missing_kinds(["windows", "lib/windows", "memories", "lib/history"]) == [
        "lib/memories",
        "history",
        "summaries",
        "lib/summaries",
        "series",
        "lib/series",
    ]


# -- The tests' own rules --------------------------------------------------------------------


def files_under_tests() -> list[Path]:
    """Every Python file under tests/."""
    return sorted(TESTS_DIR.rglob("*.py"))


def is_hass_data(node: ast.AST) -> bool:
    """`hass.data` or `<anything>.hass.data`."""
    if not (isinstance(node, ast.Attribute) and node.attr == "data"):
        return False
    owner = node.value
    return (isinstance(owner, ast.Name) and owner.id == "hass") or (
        isinstance(owner, ast.Attribute) and owner.attr == "hass"
    )


def hass_data_writes(tree: ast.AST) -> Iterator[int]:
    """Lines that put an entry into hass.data (or take one out)."""
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        for target in targets:
            if isinstance(target, ast.Subscript) and is_hass_data(target.value):
                yield target.lineno
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("setdefault", "update", "__setitem__")
            and is_hass_data(node.func.value)
        ):
            yield node.lineno


def package_names(tree: ast.AST) -> set[str]:
    """The names a test binds by importing from the package (`DATA_MEMORIES`, `DOMAIN`, ...)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.startswith(PACKAGE):
                names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE):
                    names.add(alias.asname or alias.name.split(".")[0])
    return names


def hass_data_reads_of_ours(tree: ast.AST) -> Iterator[int]:
    """Lines that look up one of the integration's own keys in hass.data: `hass.data[KEY]`
    or `hass.data.get(KEY)`, KEY made of a name imported from the package (`DATA_MEMORIES`,
    `data.DATA_MEMORIES`, f"{DOMAIN}_memories") or a text naming the domain. Home
    Assistant's own keys (imported from homeassistant) are not ours."""
    ours = package_names(tree)

    def is_ours(key: ast.AST) -> bool:
        return any(
            (isinstance(part, ast.Name) and part.id in ours)
            or (
                isinstance(part, ast.Constant)
                and isinstance(part.value, str)
                and part.value.startswith("azure_openai_memory")
            )
            for part in ast.walk(key)
        )

    for node in ast.walk(tree):
        key = hass_data_key(node)
        if key is not None and is_ours(key):
            yield node.lineno


def hass_data_key(node: ast.AST) -> ast.AST | None:
    """The key a node looks up in hass.data (`[key]`, `.get(key)`, `key in`), if it does."""
    if isinstance(node, ast.Subscript) and is_hass_data(node.value):
        return node.slice
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("get", "pop", "__getitem__", "__contains__")
        and is_hass_data(node.func.value)
        and node.args
    ):
        return node.args[0]
    if (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.In | ast.NotIn)
        and is_hass_data(node.comparators[0])
    ):
        return node.left
    return None


def private_package_imports(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if not node.module.startswith(PACKAGE):
                continue
            if any(
                part.startswith("_") and not part.startswith("__")
                for part in node.module.split(".")
            ):
                yield f"{node.lineno}: from {node.module}"
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    yield f"{node.lineno}: {alias.name} from {node.module}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if alias.name.startswith(PACKAGE) and any(
                    p.startswith("_") and not p.startswith("__") for p in parts
                ):
                    yield f"{node.lineno}: import {alias.name}"


def test_no_test_imports_a_private_name_of_the_package() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{where}"
        for path in files_under_tests()
        for where in private_package_imports(ast.parse(path.read_text(), str(path)))
    ]
    assert found == [], report("Tests importing private names of the package", found)


def test_no_test_puts_anything_into_hass_data() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in files_under_tests()
        for line in hass_data_writes(ast.parse(path.read_text(), str(path)))
    ]
    assert found == [], report("Tests writing hass.data", found)


def test_no_test_reads_the_integration_s_hass_data() -> None:
    """A test asks a public surface (a service, a WebSocket command, the options flow or an
    accessor of data.py such as memories_of) for what the integration keeps."""
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in files_under_tests()
        for line in sorted(set(hass_data_reads_of_ours(ast.parse(path.read_text(), str(path)))))
    ]
    assert found == [], report("Tests reading the integration's hass.data keys", found)


def test_the_test_rules_see_what_they_check() -> None:
    """The readers above find what they look for."""
    writes = ast.parse(
        "hass.data[KEY] = 1\nself.hass.data[KEY] += 1\nhass.data.setdefault(KEY, {})\n"
        "del hass.data[KEY]\nvalue = hass.data[KEY]\n"
    )
    assert sorted(hass_data_writes(writes)) == [1, 2, 3, 4]
    imports = ast.parse(
        f"from {PACKAGE}.lib import tokens\nfrom {PACKAGE}.lib.history.store import _MIGRATIONS\n"
    )
    assert list(private_package_imports(imports)) == [
        f"2: _MIGRATIONS from {PACKAGE}.lib.history.store"
    ]
    reads = ast.parse(
        f"from {PACKAGE}.data import DATA_MEMORIES\n"
        f"from {PACKAGE} import data\n"
        f"from {PACKAGE}.const import DOMAIN\n"
        "from homeassistant.helpers.storage import STORAGE_SEMAPHORE\n"
        "memories = hass.data[DATA_MEMORIES]\n"
        "self.hass.data.get(data.DATA_HISTORY)\n"
        'hass.data[f"{DOMAIN}_memories"].facts\n'
        'assert "azure_openai_memory_history" in hass.data\n'
        "reads = hass.data[STORAGE_SEMAPHORE]\n"
    )
    assert sorted(hass_data_reads_of_ours(reads)) == [5, 6, 7, 8]
    assert Path(__file__) in files_under_tests()
