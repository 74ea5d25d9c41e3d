"""The house: imports between the apps run one way, and the project package names the apps
only where it wires their URLs and start-up (docs/architecture.md, "Layout")."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# What each app may import besides itself (and the project package's shared helpers).
ALLOWED = {
    "graphs": set(),
    "runs": {"graphs"},
    "stats": {"runs", "graphs"},
    "inspector": {"graphs", "runs", "stats"},
    "editor": {"graphs", "runs", "stats", "inspector", "accounts"},
    "accounts": set(),
    "classes": {"accounts", "graphs", "runs", "stats", "inspector", "editor"},
}
# The project package's modules that wire the apps together; the rest (settings, access,
# api, conf, handler) import no app.
WIRING = {"urls.py", "routing.py", "asgi.py"}


def imported_modules(path: Path) -> set[str]:
    """Every absolute module a file imports, wherever in the file (a late import counts too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def apps_named(path: Path) -> set[str]:
    return {name.split(".")[1] for name in imported_modules(path) if name.startswith("apps.") and name.count(".") >= 1}


def test_every_app_is_in_the_allowed_graph():
    assert {p.name for p in (ROOT / "apps").iterdir() if (p / "apps.py").exists()} == set(ALLOWED)


@pytest.mark.parametrize("app", sorted(ALLOWED))
def test_an_app_imports_only_the_apps_below_it(app):
    wrong = {}
    for path in (ROOT / "apps" / app).rglob("*.py"):
        extra = apps_named(path) - ALLOWED[app] - {app}
        if extra:
            wrong[str(path.relative_to(ROOT))] = sorted(extra)
    assert wrong == {}


def test_the_project_package_names_apps_only_to_wire_them():
    wrong = {str(p.relative_to(ROOT)): sorted(apps_named(p)) for p in (ROOT / "codefyui").rglob("*.py")
             if p.name not in WIRING and apps_named(p)}
    assert wrong == {}


def test_the_engine_knows_nothing_of_django():
    """Boundary 1: the engine, and what it imports of apps.graphs, is plain Python."""
    engine = list((ROOT / "apps" / "runs" / "engine").rglob("*.py"))
    graphs = [ROOT / "apps" / "graphs" / f"{name}.py" for name in ("document", "edits", "segments", "subgraphs", "reach")]
    wrong = {str(p.relative_to(ROOT)): sorted(m for m in imported_modules(p) if m.split(".")[0] in ("django", "channels"))
             for p in engine + graphs}
    assert {k: v for k, v in wrong.items() if v} == {}


def test_the_check_sees_a_late_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from apps.editor.context import badge\n    import apps.runs.service\n")
    assert apps_named(module) == {"editor", "runs"}
