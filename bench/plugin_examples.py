"""How many of CodefyUI's own plugin-pack example graphs (``plugins/*/examples/**/graph.json`` in
its repository) load and run here. They are read from a local copy of CodefyUI's repository,
never committed: ``--repo`` names it (a bare clone works; default the mirror under
/work/.mirror). Each graph is loaded with ``document.load`` and run through the engine on the
CPU with its own seed and a time limit; the reason for every one that does not is printed.

Run: .venv/bin/python bench/plugin_examples.py [--repo PATH] [--timeout S]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)] + [str(p) for p in sorted((ROOT / "packs").glob("*")) if p.is_dir()]

import torch  # noqa: E402

from apps.graphs import document  # noqa: E402
from apps.runs.engine import RunOptions, execute, plan_run  # noqa: E402

MIRROR = Path("/work/.mirror/CodefyUI+CodefyUI/repo")


def plugin_examples(repo: Path) -> dict[str, str]:
    """Path -> text of every plugin example graph at the repository's HEAD."""
    git = ["git", "-C", str(repo)]
    names = subprocess.run(git + ["ls-tree", "-r", "--name-only", "HEAD", "plugins"],
                           capture_output=True, text=True, check=True).stdout.split()
    return {name: subprocess.run(git + ["show", f"HEAD:{name}"], capture_output=True, text=True,
                                 check=True).stdout
            for name in names if "/examples/" in name and name.endswith(".json")}


def outcome_of(text: str, timeout: float) -> str:
    """'ran', or why not (the first line of the load or run error)."""
    try:
        doc = document.load(text)
    except document.DocumentError as exc:
        return f"does not load: {str(exc).splitlines()[0][:160]}"
    settings = document.run_settings(doc)
    result = execute(plan_run(doc), RunOptions(run_id="bench", record=False, seed=settings["seed"],
                                               timeout_s=timeout), lambda event: None)
    return "ran" if result.status == "succeeded" else f"does not run: {(result.error or '')[:160]}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", type=Path, default=MIRROR)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if not args.repo.exists():
        print(f"No CodefyUI repository at {args.repo}; name one with --repo PATH")
        print("figure: codefyui_plugin_examples_running = n/a")
        return
    graphs = plugin_examples(args.repo)
    ran = 0
    for name, text in sorted(graphs.items()):
        verdict = outcome_of(text, args.timeout)
        ran += verdict == "ran"
        print(f"{name.removeprefix('plugins/').removesuffix('/graph.json')}: {verdict}")
    print(f"figure: codefyui_plugin_examples_running = {ran}/{len(graphs)}")


if __name__ == "__main__":
    main()
