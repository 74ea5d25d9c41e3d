"""Editor cost against graph size: server time of the editor page, of the page with a node
selected (its panel's connect choices and the Inspector), and of Node details, for graphs of
50, 200 and 500 nodes, median of several requests each, through Django's test client with a
logged-in student. The sizes are measured side by side in one run, so a loaded machine
shifts them together and the growth stays readable.

Graph: Start, a TensorInput, then a chain of Activation nodes with a Print on every tenth,
wired one to the next (the middle node of the chain is the selected one).

Goals (issue 12): a 500-node graph's page and selected node each under 300 ms, and the growth
from 200 to 500 nodes at most 3x.
Run: .venv/bin/python bench/editor_scale.py
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
_tmp = tempfile.mkdtemp(prefix="codefyui-bench-")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "codefyui.settings")
os.environ["DATABASE_URL"] = f"sqlite:///{_tmp}/bench.sqlite3"
os.environ["CODEFYUI_VAR_DIR"] = _tmp
os.environ["DJANGO_ALLOWED_HOSTS"] = "testserver"

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from apps.editor.models import Tab  # noqa: E402
from apps.graphs import document  # noqa: E402

SIZES, REPEATS = (50, 200, 500), 7


def graph(size: int) -> dict:
    nodes = [{"id": "start", "type": "Start", "position": {"x": 0, "y": 0}},
             {"id": "n1", "type": "TensorInput", "position": {"x": 0, "y": 100},
              "data": {"params": {"shape": "1,4", "value_mode": "random"}}}]
    edges = [{"id": "t", "type": "trigger", "source": "start", "sourceHandle": "trigger", "target": "n1"}]
    for i in range(2, size):
        kind = "Print" if i % 10 == 0 else "Activation"
        nodes.append({"id": f"n{i}", "type": kind, "position": {"x": 200 * (i % 20), "y": 100 * (i // 20)}})
        source = f"n{i - 1}" if nodes[-2]["type"] != "Print" else f"n{i - 2}"
        edges.append({"id": f"e{i}", "source": source, "sourceHandle": "tensor", "target": f"n{i}",
                      "targetHandle": "tensor" if kind == "Activation" else "value"})
    return document.normalise({"nodes": nodes, "edges": edges})


def median_ms(client: Client, url: str) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    return statistics.median(times)


def main() -> None:
    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench", password="pw-bench-123")
    client = Client()
    client.force_login(user)
    tabs = {size: Tab.objects.create(owner=user, title=f"{size} nodes", document=graph(size)) for size in SIZES}
    results: dict[int, dict[str, float]] = {}
    for size, tab in tabs.items():
        middle = f"n{size // 2 + 1}"
        client.get(f"/editor/{tab.pk}/")  # warm the templates
        results[size] = {"page": median_ms(client, f"/editor/{tab.pk}/"),
                         "selected": median_ms(client, f"/editor/{tab.pk}/?node={middle}"),
                         "details": median_ms(client, f"/editor/{tab.pk}/details/{middle}/")}
    for size, row in results.items():
        print(f"{size:4d} nodes: page {row['page']:7.1f} ms, selected {row['selected']:7.1f} ms, "
              f"details {row['details']:7.1f} ms")
    for what in ("page", "selected", "details"):
        print(f"growth 200 -> 500 nodes, {what}: {results[500][what] / results[200][what]:.2f}x")
    print(f"figure: editor_500_selected_ms = {results[500]['selected']:.1f}")


if __name__ == "__main__":
    main()
