"""The layering contract: each layer imports only the layers below it, and no module imports
itself back through others.

import-linter (grimp) cannot check this project: it finds a package's modules by walking the
package's own directory, and ``orbitree.skills``, ``orbitree.behaviours`` and ``orbitree.drivers``
live in ``skills/``, ``behaviours/`` and ``drivers/`` (pyproject ``package-dir``), so it sees
neither them nor the imports of them. The same contract is checked here from the source: every
``import`` statement of every module, at any depth (function-level and ``TYPE_CHECKING`` imports
are dependencies too).
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = {"orbitree": "orbitree", "orbitree.skills": "skills", "orbitree.behaviours": "behaviours",
                "orbitree.drivers": "drivers"}

# Bottom to top. A module may import its own layer and the layers below; never one above.
LAYERS: list[tuple[str, ...]] = [
    ("orbitree",),  # the package's own __init__: the version, nothing else
    ("orbitree.skills",),
    ("orbitree.drivers",),
    ("orbitree.language",),
    ("orbitree.nodes",),
    ("orbitree.behaviours",),
    ("orbitree.faults",),
    ("orbitree.runtime",),
    ("orbitree.report", "orbitree.views"),  # siblings: neither imports the other
    ("orbitree.campaign",),
    ("orbitree.calibration",),  # Monte Carlo of calibrations: uses campaign's Dask connection
    ("orbitree.cli",),
]
# views draw snapshots and logs: of the layers below they may only import these
VIEWS_MAY_IMPORT = (
    "orbitree.runtime.snapshot", "orbitree.runtime.recorder", "orbitree.nodes.structure", "orbitree.language.keys",
    "orbitree.runtime.scene",  # the log's scene records
    # the camera panel finds the markers in a frame as perception does (pure functions)
    "orbitree.skills.board", "orbitree.skills.board_model",
)


def module_files() -> dict[str, Path]:
    """Every module of the installed package, by its dotted name."""
    found: dict[str, Path] = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def imports_of(path: Path, module: str) -> set[str]:
    """The orbitree modules ``path`` imports, resolved to modules (not names in them)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in out if name == "orbitree" or name.startswith("orbitree.")}


def import_graph(files: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        targets = set()
        for name in imports_of(path, module):
            while name not in files and "." in name:  # 'orbitree.x.y.Name' -> module 'orbitree.x.y'
                name = name.rpartition(".")[0]
            if name in files and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def layer_of(module: str) -> tuple[int, str]:
    best: tuple[int, str] | None = None
    for index, layer in enumerate(LAYERS):
        for prefix in layer:
            if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > len(best[1])
            ):
                best = (index, prefix)
    assert best is not None, f"{module} is in no layer"
    return best


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    problems = []
    for module, targets in sorted(graph.items()):
        mine, my_prefix = layer_of(module)
        for target in sorted(targets):
            theirs, their_prefix = layer_of(target)
            if theirs > mine:
                problems.append(f"{module} imports {target}: {their_prefix} is above {my_prefix}")
            elif theirs == mine and their_prefix != my_prefix:
                problems.append(f"{module} imports {target}: {my_prefix} and {their_prefix} are independent")
            elif my_prefix == "orbitree.views" and theirs < mine and target not in VIEWS_MAY_IMPORT:
                problems.append(f"{module} imports {target}: views read snapshots and logs only")
    return problems


def cycles(graph: dict[str, set[str]]) -> list[str]:
    """The first import cycle found, as 'a -> b -> a', or nothing."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        return [" -> ".join(error.args[1])]
    return []


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(module_files())


def test_every_module_sits_in_a_layer_and_the_graph_is_complete(graph):
    assert "orbitree.skills.pbvs" in graph and "orbitree.behaviours.approach" in graph
    assert "orbitree.nodes.leaf" in graph["orbitree.behaviours.approach"] or any(
        target.startswith("orbitree.nodes.") for target in graph["orbitree.behaviours.approach"]
    )
    for module in graph:
        layer_of(module)


def test_no_module_imports_a_layer_above_it(graph):
    assert layer_violations(graph) == []


def test_no_import_cycles(graph):
    assert cycles(graph) == []


def test_skills_import_nothing_of_orbitree_outside_skills(graph):
    outside = {(m, t) for m, ts in graph.items() if m.startswith("orbitree.skills") for t in ts
               if not t.startswith("orbitree.skills")}
    assert outside == set()


def test_contract_fails_when_an_upward_import_or_a_cycle_is_added_back(graph):
    # the two imports issue 10 removed: the core reaching into a leaf, and faults into perception
    broken = {module: set(targets) for module, targets in graph.items()}
    broken["orbitree.nodes.control"].add("orbitree.behaviours.condition")
    broken["orbitree.skills.board_model"].add("orbitree.drivers.interfaces")
    problems = layer_violations(broken)
    assert "orbitree.nodes.control imports orbitree.behaviours.condition: orbitree.behaviours is above " \
           "orbitree.nodes" in problems
    assert any(p.startswith("orbitree.skills.board_model imports orbitree.drivers.interfaces") for p in problems)
    # campaign.py <-> campaign_dask.py, as it was
    broken["orbitree.campaign.runs"].add("orbitree.campaign.dask_pool")
    found = cycles(broken)
    assert found and "orbitree.campaign.dask_pool" in found[0] and "orbitree.campaign.runs" in found[0]


def test_views_read_snapshots_only(graph):
    broken = {module: set(targets) for module, targets in graph.items()}
    broken["orbitree.views.web"].add("orbitree.nodes.build")
    assert any("views read snapshots and logs only" in p for p in layer_violations(broken))
    assert not [p for p in layer_violations(graph) if "views" in p]
