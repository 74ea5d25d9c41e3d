"""python manage.py rungraph GRAPH.json: run a graph file without a server.

Exit codes: 0 the run succeeded, 1 the graph is invalid or the run failed, 2 bad arguments.
"""
from __future__ import annotations

import sys
from pathlib import Path

import orjson
from django.core.management.base import BaseCommand, CommandParser

from apps.graphs import document
from codefyui import conf
from apps.runs import service
from apps.runs.engine import events as ev

MARKS = {ev.NODE_COMPLETED: "ok", ev.NODE_CACHED: "cached", ev.NODE_ERROR: "ERROR", ev.NODE_SKIPPED: "not run"}


class Command(BaseCommand):
    help = "Run a CodefyUI graph file and print each node's status and Print output."
    requires_system_checks: list = []
    requires_migrations_checks = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("graph", help="a CodefyUI graph JSON file")
        parser.add_argument("--seed", type=int, help="random seed (overrides settings.seed)")
        parser.add_argument("--deterministic", action="store_true", default=None,
                            help="ask PyTorch for deterministic algorithms")
        parser.add_argument("--device", help="cpu, cuda, cuda:N, mps or auto")
        parser.add_argument("--validate-only", action="store_true", help="check the graph, run nothing")
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
        parser.add_argument("--files", metavar="FOLDER",
                            help="the folder file nodes save to and load from (a student's My files on the server)")

    def handle(self, *args, graph: str, json: bool, validate_only: bool, files: str | None, **opts) -> None:
        path = Path(graph)
        if not path.is_file():
            self._fail(f"No such graph file: {graph}", code=2)
        try:
            doc = document.load(path.read_bytes())
            overrides = {k: opts[k] for k in ("seed", "deterministic", "device") if opts.get(k) is not None}
            options = service.run_options(doc, overrides)
            if files:
                options.update(files_dir=str(Path(files).resolve()), files_max_bytes=conf.USER_FILES_MAX_MB * 2**20,
                               files_max_files=conf.USER_FILES_MAX_FILES)
            planned = service.plan(doc)
        except (document.DocumentError, service.RunRefused) as exc:
            problems = getattr(exc, "problems", [str(exc)])
            if json:
                self._print_json({"status": "invalid", "problems": problems, "nodes": {}, "log": []})
                sys.exit(1)
            self._fail("\n".join(["The graph cannot run:"] + [f"  - {p}" for p in problems]), code=1)
        if validate_only:
            if json:
                self._print_json({"status": "valid", "nodes": {i: {"status": "planned"} for i in planned.nodes},
                                  "log": planned.warnings})
            else:
                self.stdout.write(f"Valid: {len(planned.nodes)} nodes would run.")
                for warning in planned.warnings:
                    self.stdout.write(f"  {warning}")
            return

        outcome = service.run_now(doc, options, emit=None if json else self._print_event)
        if json:
            self._print_json({
                "status": outcome.status, "error": outcome.error, "device": outcome.device,
                "nodes": {i: {"status": r.status, **({"error": r.error} if r.error else {}),
                              "outputs": r.summary or {}} for i, r in outcome.nodes.items()},
                "log": outcome.log,
            })
        else:
            self.stdout.write(f"Run {outcome.status}" + (f": {outcome.error}" if outcome.error else ""))
        if outcome.status != "succeeded":
            sys.exit(1)

    def _print_event(self, event: ev.Event) -> None:
        if event.kind == ev.LOG:
            self.stdout.write(f"  {event.text}")
        elif event.kind in MARKS:
            line = f"[{MARKS[event.kind]}] {event.node_id}"
            if event.error:
                line += f": {event.error}"
            for port, summary in (event.summary or {}).items():
                if summary.get("type") == "tensor":
                    line += f"  {port} {summary['shape']} {summary['dtype']}"
            self.stdout.write(line)

    def _print_json(self, data: dict) -> None:
        self.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())

    def _fail(self, message: str, code: int) -> None:
        self.stderr.write(message)
        sys.exit(code)
