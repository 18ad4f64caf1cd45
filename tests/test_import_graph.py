"""Issue 41 item 12: kubeletemu's modules import each other without a circle, and no layer reaches up to the
daemon or the CLI above it.

Every import counts, wherever it is written (module level, inside a function, under ``TYPE_CHECKING``):
a lazy or type-only import still ties the two modules together for whoever reads or moves them. The graph is
read from the sources with ``ast``; an import names the module it loads (``from a import b`` names ``a.b``
when that is a module, else ``a``), not the packages on the way. The generated stubs (``_proto``) are left
out.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "kubeletemu"

# Who may import a top layer: the layer itself and what runs it.
TOP_LAYERS = {
    # kubeletemu nodes is a server process beside the daemon: it serves podresources and locks its state
    # directory with the daemon's own socket and lock helpers, and only the CLI starts it.
    "kubeletemu.daemon": ("kubeletemu.daemon", "kubeletemu.cli", "kubeletemu.nodes"),
    # The extender binds pods (its optional Bind verb) with the nodes' API server client.
    "kubeletemu.nodes": ("kubeletemu.nodes", "kubeletemu.cli", "kubeletemu.extender"),
    # kubeletemu extender is a server process too: only the CLI starts it.
    "kubeletemu.extender": ("kubeletemu.extender", "kubeletemu.cli"),
    # protogen writes the CLI's wire schema with the CLI's generator (a build step, not the library).
    "kubeletemu.cli": ("kubeletemu.cli", "kubeletemu.__main__", "kubeletemu.protogen"),
}


def module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module → the kubeletemu modules it imports."""
    files = {module_name(path, package): path for path in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        if name.startswith("kubeletemu._proto"):
            continue
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        named: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                named.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the package ``level - 1`` above this one
                    parts = here.split(".")
                    base = ".".join([*parts[: len(parts) - node.level + 1], *([base] if base else [])])
                for alias in node.names:
                    named.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base)
        graph[name] = {target for target in named if target in files and target != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_no_module_imports_itself_round_a_circle() -> None:
    graph = import_graph()
    assert len(graph) > 200  # the walk found the package
    assert cycles(graph) == []


@pytest.mark.parametrize("layer", sorted(TOP_LAYERS))
def test_no_layer_imports_upward(layer: str) -> None:
    allowed = TOP_LAYERS[layer]
    upward = sorted(
        f"{module} imports {target}"
        for module, targets in import_graph().items()
        for target in targets
        if _within(target, layer) and not any(_within(module, a) for a in allowed)
    )
    assert upward == []


def test_the_checks_see_what_they_guard(tmp_path: Path) -> None:
    """A circle through a lazy import and an upward type-only import are both caught."""
    package = tmp_path / "kubeletemu"
    (package / "daemon").mkdir(parents=True)
    (package / "shadow").mkdir()
    for init in (package, package / "daemon", package / "shadow"):
        (init / "__init__.py").write_text("")
    (package / "a.py").write_text("from kubeletemu import b\n")
    (package / "b.py").write_text("def f() -> None:\n    from kubeletemu.a import thing\n")
    (package / "daemon" / "metrics.py").write_text("class KubeletMetrics: ...\n")
    (package / "shadow" / "runner.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from ..daemon.metrics import KubeletMetrics\n"
    )
    graph = import_graph(package)
    assert cycles(graph) == [["kubeletemu.a", "kubeletemu.b"]]
    assert graph["kubeletemu.shadow.runner"] == {"kubeletemu.daemon.metrics"}
