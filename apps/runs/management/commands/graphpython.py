"""python manage.py graphpython GRAPH.json [-o FILE.py]: a graph file as a plain PyTorch script.

The script goes to standard output (or to FILE.py); how many nodes are plain PyTorch goes to
standard error. Exit codes: 0 written, 1 the graph cannot run (the same problems Run names),
2 bad arguments.
"""
from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandParser

from apps.graphs import document
from apps.runs.as_python import RunRefused, python_script


class Command(BaseCommand):
    help = "Write a CodefyUI graph file as a Python script that computes the same numbers with PyTorch."
    requires_system_checks: list = []
    requires_migrations_checks = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("graph", help="a CodefyUI graph JSON file")
        parser.add_argument("-o", "--output", metavar="FILE.py", help="write the script here instead of printing it")

    def handle(self, *args, graph: str, output: str | None, **opts) -> None:
        path = Path(graph)
        if not path.is_file():
            self._fail(f"No such graph file: {graph}", code=2)
        try:
            made = python_script(document.load(path.read_bytes()), switches=False)
        except (document.DocumentError, RunRefused) as exc:
            problems = getattr(exc, "problems", [str(exc)])
            self._fail("\n".join(["The graph cannot be written as Python:"] + [f"  - {p}" for p in problems]), code=1)
        if output:
            Path(output).write_text(made.text)
        else:
            self.stdout.write(made.text, ending="")
        self.stderr.write(f"{made.plain} of {made.total} nodes are plain PyTorch (or scikit-learn)"
                          + ("" if made.exact else "; the script says at its top why its numbers differ"))

    def _fail(self, message: str, code: int) -> None:
        self.stderr.write(message)
        sys.exit(code)
