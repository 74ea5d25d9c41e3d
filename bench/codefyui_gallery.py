"""CodefyUI's own gallery as the compatibility target: how many of its example graphs
(``examples/**/graph.json`` and ``plugins/*/examples/**/graph.json`` in its repository) load and
run here, each through our CLI (``manage.py rungraph --json``) in a process of its own, as a
teacher would run a file. The reason for every graph that does not is printed.

The repository is read from a local copy, never committed (CodefyUI is AGPL-3.0): PATH names a
clone or a bare mirror (default: the search tool's mirror under /work/.mirror). With
``--codefyui-python PY`` (an interpreter with CodefyUI's backend requirements installed) and a
clone with a work tree, each graph is also run by CodefyUI's own ``backend/run_graph.py`` and
the shapes of every node's tensor outputs are compared with ours.

Run: .venv/bin/python bench/codefyui_gallery.py [PATH] [--timeout S] [--jobs N] [--codefyui-python PY]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)] + [str(p) for p in sorted((ROOT / "packs").glob("*")) if p.is_dir()]

from apps.graphs import document  # noqa: E402  (plain Python: loading a graph needs no Django)
MIRROR = Path("/work/.mirror/CodefyUI+CodefyUI/repo")
IS_EXAMPLE = re.compile(r"^(plugins/[^/]+/)?examples/.+\.json$")
CODEFYUI_DONE = re.compile(r"\[(?P<node>[^\]]+)\] completed\s+->\s+(?P<outputs>.*)$")
CODEFYUI_TENSOR = re.compile(r"(?P<port>\w+): Tensor(?P<shape>\[[\d, ]*\])")


def gallery(repo: Path) -> dict[str, str]:
    """Path in the repository -> text of every example graph (HEAD of a git copy, else files)."""
    if (repo / "HEAD").exists() and not (repo / ".git").exists():  # a bare mirror
        git = ["git", "--git-dir", str(repo)]
        names = subprocess.run(git + ["ls-tree", "-r", "--name-only", "HEAD"], capture_output=True,
                               text=True, check=True).stdout.split("\n")
        return {n: subprocess.run(git + ["show", f"HEAD:{n}"], capture_output=True, text=True, check=True).stdout
                for n in names if IS_EXAMPLE.match(n)}
    return {str(p.relative_to(repo)): p.read_text(encoding="utf-8") for p in sorted(repo.rglob("*.json"))
            if IS_EXAMPLE.match(str(p.relative_to(repo)))}


def ours(text: str, timeout: float) -> dict:
    """Our CLI's JSON answer for one graph, or {"status": "timeout"}."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "graph.json"
        path.write_text(text, encoding="utf-8")
        env = {**os.environ, "CODEFYUI_VAR_DIR": scratch, "OMP_NUM_THREADS": "1"}
        try:
            done = subprocess.run([sys.executable, str(ROOT / "manage.py"), "rungraph", "--json", "--device", "cpu",
                                   "--files", str(Path(scratch) / "files"), str(path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"status": "timeout"}
    try:
        return json.loads(done.stdout)
    except ValueError:
        return {"status": "crashed", "error": (done.stderr.strip().splitlines() or ["no output"])[-1]}


def load_problem(text: str) -> str | None:
    """Why a graph does not open in the editor, or None when it does."""
    try:
        document.load(text)
    except document.DocumentError as exc:
        return str(exc).splitlines()[0][:220]
    return None


def verdict(answer: dict) -> str:
    """'ran', or why not, in one line."""
    status = answer.get("status")
    if status == "succeeded":
        return "ran"
    if status == "invalid":
        return "opens, but Run is refused: " + "; ".join(answer.get("problems", []))[:220]
    if status == "timeout":
        return "does not finish within the time limit"
    failed = [f"{node}: {r['error']}" for node, r in answer.get("nodes", {}).items() if r.get("error")]
    return f"does not run: {(failed[0] if failed else answer.get('error') or status)[:220]}"


def our_shapes(answer: dict) -> dict[tuple[str, str], list[int]]:
    return {(node, port): s["shape"] for node, r in answer.get("nodes", {}).items()
            for port, s in (r.get("outputs") or {}).items() if s.get("type") == "tensor"}


def codefyui_user_dir(repo: Path, scratch: str) -> dict[str, str]:
    """The environment for CodefyUI's CLI: a user folder whose lockfile enables every pack the
    repository ships (its CLI loads only the packs a lockfile names)."""
    packs = sorted(p.name for p in (repo / "plugins").iterdir() if (p / "cdui.plugin.toml").exists())
    lockfile = Path(scratch) / "plugins" / "installed.json"
    lockfile.parent.mkdir(parents=True)
    lockfile.write_text(json.dumps({"schema": 1, "plugins": {p: {"source_kind": "builtin", "enabled": True}
                                                             for p in packs}}))
    return {**os.environ, "CODEFYUI_USER_DATA_DIR": scratch, "OMP_NUM_THREADS": "1"}


def codefyui_shapes(python: str, repo: Path, name: str, env: dict[str, str],
                    timeout: float) -> dict[tuple[str, str], list[int]] | None:
    """Tensor output shapes from CodefyUI's own CLI run of one graph, or None when it fails."""
    try:
        done = subprocess.run([python, "run_graph.py", str(repo / name)], cwd=repo / "backend", env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    shapes = {}
    for line in (done.stdout + done.stderr).splitlines():
        if done_line := CODEFYUI_DONE.search(line):
            for t in CODEFYUI_TENSOR.finditer(done_line["outputs"]):
                shapes[(done_line["node"], t["port"])] = json.loads(t["shape"])
    return shapes if done.returncode == 0 else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("path", nargs="?", type=Path, default=MIRROR)
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per graph")
    parser.add_argument("--jobs", type=int, default=max(1, min(4, (os.cpu_count() or 2) // 2)))
    parser.add_argument("--codefyui-python", help="an interpreter that runs CodefyUI's backend")
    args = parser.parse_args()
    if not args.path.exists():
        print(f"No CodefyUI repository at {args.path}; fetch it (github:CodefyUI/CodefyUI) and name it")
        print("figure: gallery_runs = n/a")
        return
    graphs = gallery(args.path)
    scratch = tempfile.TemporaryDirectory()
    codefyui_env = codefyui_user_dir(args.path, scratch.name) if args.codefyui_python else {}

    def both(name: str) -> tuple[dict, dict | None]:
        answer = ours(graphs[name], args.timeout)
        theirs = (codefyui_shapes(args.codefyui_python, args.path, name, codefyui_env, args.timeout)
                  if args.codefyui_python and answer.get("status") == "succeeded" else None)
        return answer, theirs

    with ThreadPoolExecutor(args.jobs) as pool:
        results = dict(zip(graphs, pool.map(both, graphs)))
    loaded = ran = same = compared = 0
    for name, (answer, theirs) in results.items():
        problem = load_problem(graphs[name])
        said = f"does not load: {problem}" if problem else verdict(answer)
        loaded += problem is None
        ran += said == "ran"
        if theirs is not None:
            compared += 1
            mine = our_shapes(answer)
            differ = {k: (v, mine.get(k)) for k, v in theirs.items() if mine.get(k) != v}
            same += not differ
            said += "; shapes equal to CodefyUI's" if not differ else f"; shapes differ (CodefyUI's, ours): {differ}"
        print(f"{name.removesuffix('/graph.json')}: {said}")
    print(f"loaded {loaded}/{len(graphs)}, ran {ran}/{len(graphs)}"
          + (f", shapes equal in {same} of the {compared} CodefyUI also ran" if args.codefyui_python else ""))
    print(f"figure: gallery_runs = {ran}")


if __name__ == "__main__":
    main()
