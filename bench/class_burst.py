"""A class presses Run at once: 30 students, each with their own account and API token,
submit the CNN lesson example (examples/cnn.json) within the same second through the JSON
API of a real server (codefyui.serve on a free loopback port with its own var dir, its run workers
started with it), and wait for their run with ``GET /api/runs/{id}?wait=30``.

Prints the median and p95 from submit to the terminal status, unseeded and seeded (other
students for each burst, so no one's execution cache helps), each kind burst ``--bursts``
times (5) in turns, and the median over those bursts: one burst's p95 is its 29th-fastest
run, and on this shared VM one tree read 0.112 s and then 0.158 s. Also the server's CPU
milliseconds per run (its process and its run workers: utime + stime from /proc), and the
same for examples/walkthrough.json run on its own (50 runs one after another). The server process's
CPU for a whole burst is printed too: its Python work (HTTP, Django, reading the workers'
results) is serialised by the GIL, so it bounds the p95 from below on any machine.

Goals (issue 11): p95 <= 0.15 s with seeded within 10 % of unseeded, <= 10 ms of server CPU
per CNN run, <= 10 ms for one walkthrough run. The issue measured CodefyUI's backend at
0.141 s and 4.9 ms on its machine; machines here differ two- to three-fold in Python's speed,
so with ``--codefyui BACKEND`` the same burst also goes, in turns with ours in this run, to
CodefyUI's own backend (the backend/ folder of a CodefyUI checkout, v1.4.2; its Python, with
its requirements installed, from ``--codefyui-python``): one request per run, its synchronous
``POST /api/graph/run/{name}`` on the same graph (plus the GraphOutput that endpoint returns),
``--bursts`` times between our two kinds after a first burst of the same size (its first
burst grows its thread pool), and the median over those bursts.
Nothing of CodefyUI's is in this repository: fetch and install it beside it, e.g. from the
search tool's mirror, ``git --git-dir /work/.mirror/CodefyUI+CodefyUI/repo archive HEAD backend/app
backend/pyproject.toml backend/run_graph.py | tar x -C /tmp/cfy`` (its MNIST files are not in the
mirror, so a whole-tree archive fails), then in a venv of its own ``pip install torch==2.14.1
torchvision==0.29.1`` and ``pip install -e /tmp/cfy/backend``.

With ``--follow`` each student's page also follows their run through its socket (with their
token, as a script may), as the editor in a browser does: what a class in front of the
editor costs, printed as ``class_burst_followed_p95_s``.

With ``--one-request`` each student submits and waits in one request, ``POST
/api/runs?wait=30``, as CodefyUI's own run endpoint answers (its burst below is one request a
run too), printed as ``class_burst_one_request_p95_s``; the issue's figure is the two
requests above.

With ``--against TREE`` (another checkout of this project, e.g. ``git worktree add /tmp/before
HEAD~1``, run with this tree's Python) its server runs beside this one, each burst goes to both
in turns, the order alternating, and both trees' figures and their ratio are printed: on a
machine whose speed drifts within minutes, the only before/after comparison worth a change.
Run it both ways round (each tree as this one): on 2026-12-05 this tree read 2-8 % slower
than TREE in six runs, whichever of two trees was this one (p95 1.02-1.05 one way, 1.08 the
other), a bias of the set-up, not of the code.
Run: .venv/bin/python bench/class_burst.py [--students N] [--bursts B] [--follow | --one-request] [--against TREE]
     [--codefyui BACKEND --codefyui-python PY]
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")
ALONE_RUNS = 50   # CPU time counts in 10 ms ticks: enough runs for a figure to 0.2 ms


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[round(q * (len(values) - 1))]


def ticks(stat: Path) -> int:
    """utime + stime, in clock ticks, from a /proc stat file (0 once its process or thread is gone)."""
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


def cpu_ms(pid: int) -> tuple[float, float]:
    """utime + stime of the server process, and of its living children (the run workers)."""
    children = [int(c) for t in Path(f"/proc/{pid}/task").iterdir()
                for c in (t / "children").read_text().split()]
    own = ticks(Path(f"/proc/{pid}/stat"))
    return own * 1000 / TICK, sum(ticks(Path(f"/proc/{c}/stat")) for c in children) * 1000 / TICK


def spent(before: tuple[float, float], after: tuple[float, float], runs: int) -> tuple[float, float]:
    return (after[0] - before[0]) / runs, (after[1] - before[1]) / runs


class Client:
    """One student's HTTP/1.1 connection, kept alive, with their token (in ``auth``'s header);
    ``follow``: their page follows each run they submit through its socket, as the editor does."""

    def __init__(self, port: int, token: str, auth: str = "Authorization: Bearer ", follow: bool = False,
                 one_request: bool = False):
        self.port, self.token, self.auth, self.follow = port, token, auth + token, follow
        self.one_request = one_request   # submit and wait in one request (POST /api/runs?wait=30)

    async def open(self) -> "Client":
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        return self

    async def call(self, method: str, path: str, body: bytes = b"") -> tuple[int, dict]:
        typed = "Content-Type: application/json\r\n" if body else ""  # as an HTTP client sends it
        self.writer.write(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n{self.auth}\r\n"
                          f"{typed}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        length = next(int(h.split(":", 1)[1]) for h in head if h.lower().startswith("content-length:"))
        return int(head[0].split()[1]), json.loads(await self.reader.readexactly(length))

    async def run(self, doc: dict, options: dict) -> tuple[float, dict]:
        """Submit, then wait for the end: (seconds from submit to terminal status, the run)."""
        started = time.perf_counter()
        submit = "/api/runs?wait=30" if self.one_request else "/api/runs"
        status, run = await self.call("POST", submit, json.dumps({"graph": doc, "options": options}).encode())
        assert status == (200 if self.one_request else 202), (status, run)
        page = asyncio.ensure_future(follow(self.port, self.token, run["run_id"])) if self.follow else None
        while True:
            if run["status"] in ("queued", "running"):
                _, run = await self.call("GET", f"/api/runs/{run['run_id']}?wait=30")
            if run["status"] not in ("queued", "running"):
                seconds = time.perf_counter() - started
                if page is not None:
                    await page
                return seconds, run

    def close(self) -> None:
        self.writer.close()


def server_env(prefix: str, root: Path = ROOT, **settings: str) -> tuple[Path, dict]:
    """A var dir of its own and the environment a bench's server and manage.py run with (the
    checkout at ``root``): SQLite there, no Redis, production settings, plus ``settings``
    (CODEFYUI_* names)."""
    var = Path(tempfile.mkdtemp(prefix=prefix))
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "DJANGO_DEBUG"}}
    env.update(DATABASE_URL=f"sqlite:///{var / 'bench.sqlite3'}", CODEFYUI_VAR_DIR=str(var),
               DJANGO_SETTINGS_MODULE="codefyui.settings", DJANGO_ALLOWED_HOSTS="127.0.0.1",
               PYTHONPATH=str(root), **settings)
    return var, env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(var: Path, env: dict, root: Path = ROOT) -> tuple[subprocess.Popen, int]:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "codefyui.serve", "--port", str(port)], cwd=root, env=env,
                              stdout=open(var / "server.log", "wb"), stderr=subprocess.STDOUT)
    return server, port


@contextmanager
def running(var: Path, env: dict, token: str, root: Path = ROOT) -> Iterator[tuple[subprocess.Popen, int, dict]]:
    """A bench's server (start_server), once it answers with every run worker idle (healthy):
    the process, its port and /api/health's run workers; stopped with SIGINT at the end."""
    server, port = start_server(var, env, root)
    try:
        yield server, port, asyncio.run(healthy(port, token))
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(30)


def session_lines(user: str) -> str:
    """manage.py shell lines that log the script's ``user`` in: its session key is in ``session``."""
    return ("from importlib import import_module\n"
            "from django.conf import settings\n"
            "from django.contrib import auth\n"
            "session = import_module(settings.SESSION_ENGINE).SessionStore()\n"
            f"session.update({{auth.SESSION_KEY: str({user}.pk), auth.HASH_SESSION_KEY: {user}.get_session_auth_hash(),\n"
            "                auth.BACKEND_SESSION_KEY: 'django.contrib.auth.backends.ModelBackend'})\n"
            "session.save()\n")


def profiler(server: subprocess.Popen, var: Path) -> subprocess.Popen | None:
    """With BENCH_PYSPY=/path/to/py-spy: py-spy samples the server and its run workers while
    the bursts run (GIL holders only, so the samples are CPU), into var/server.txt as
    collapsed stacks; stopped with SIGINT before the server's shutdown."""
    if not os.environ.get("BENCH_PYSPY"):
        return None
    stacks = var / "server.txt"
    print(f"py-spy writes {stacks} (collapsed stacks)")
    return subprocess.Popen([os.environ["BENCH_PYSPY"], "record", "-f", "raw", "-o", str(stacks), "-r", "1000",
                             "--threads", "--gil", "--subprocesses", "-p", str(server.pid)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def accounts(env: dict, count: int, root: Path = ROOT) -> list[str]:
    """Students and their API tokens, made in one manage.py process (each start imports torch)."""
    script = ("from django.core.management import call_command\n"
              "from django.contrib.auth import get_user_model\n"
              "from apps.accounts.models import ApiToken\n"
              "call_command('migrate', interactive=False, verbosity=0)\n"
              "User = get_user_model()\n"
              f"users = User.objects.bulk_create([User(username=f'student{{i}}') for i in range({count})])\n"
              "print(' '.join(ApiToken.issue(u) for u in User.objects.order_by('pk')))\n")
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", script], cwd=root, env=env,
                          capture_output=True, text=True, check=True)
    return done.stdout.split()[-count:]


async def healthy(port: int, token: str, timeout: float = 120) -> dict:
    """Wait until the server answers and every run worker is started and idle."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            client = await Client(port, token).open()
            _, health = await client.call("GET", "/api/health")
            client.close()
            workers = health["run_workers"]
            if workers["workers"] and workers["idle"] == workers["workers"]:
                return workers
        except (OSError, asyncio.IncompleteReadError):
            pass
        await asyncio.sleep(0.2)
    raise SystemExit("the server did not start with idle run workers")


_ENDED = re.compile(rb'class="run-status status-(?!running|queued)')


async def follow(port: int, token: str, run_id: str, timeout: float = 60) -> None:
    """A page following a run through its socket (with the token, as a script may): the
    socket's frames until one shows the run ended."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(f"GET /ws/runs/{run_id}/?token={token} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                 f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
    try:
        async with asyncio.timeout(timeout):
            head = await reader.readuntil(b"\r\n\r\n")
            assert b" 101 " in head.split(b"\r\n", 1)[0], head
            while True:   # a server's frames are not masked
                first, length = await reader.readexactly(2)
                length &= 0x7F
                if length >= 126:
                    length = int.from_bytes(await reader.readexactly(2 if length == 126 else 8), "big")
                payload = await reader.readexactly(length)
                assert first & 0x0F != 8, f"the socket closed: {payload!r}"
                if _ENDED.search(payload):
                    return
    finally:
        writer.close()


async def burst(port: int, tokens: list[str], doc: dict, options: dict, follow: bool = False,
                one_request: bool = False) -> list[float]:
    clients = [await Client(port, t, follow=follow, one_request=one_request).open() for t in tokens]
    results = await asyncio.gather(*(c.run(doc, options) for c in clients))
    for c in clients:
        c.close()
    bad = [run["error"] for _, run in results if run["status"] != "succeeded"]
    assert not bad, bad
    return [seconds for seconds, _ in results]


async def one_by_one(pid: int, port: int, token: str, doc: dict, runs: int = ALONE_RUNS) -> tuple[float, tuple[float, float]]:
    """The walkthrough run alone, several times one after another (the server's CPU counts in
    10 ms ticks): the median seconds and the CPU per run."""
    client = await Client(port, token).open()
    await asyncio.sleep(0.5)
    before, times = cpu_ms(pid), []
    for _ in range(runs):
        seconds, run = await client.run(doc, {})
        assert run["status"] == "succeeded", run["error"]
        times.append(seconds)
    client.close()
    return statistics.median(times), spent(before, cpu_ms(pid), runs)


def over_bursts(each: list[tuple[float, float, tuple[float, float]]]) -> tuple:
    """The medians of the bursts' medians and p95s, their mean CPU per run (server process,
    run workers) and each burst's p95."""
    medians, p95s, cpus = zip(*each)
    return statistics.median(medians), statistics.median(p95s), tuple(map(statistics.mean, zip(*cpus))), p95s


def codefyui_graph(doc: dict) -> dict:
    """The CNN example as CodefyUI's run endpoint takes it: its answer is what reaches a
    GraphOutput, so the last node's value goes to one."""
    last = doc["nodes"][-1]["id"]
    return {"name": "class_burst", "nodes": [*doc["nodes"], {"id": "out", "type": "GraphOutput",
                                                             "data": {"params": {"name": "probs"}}}],
            "edges": [{"type": "data", **e} for e in doc["edges"]]
            + [{"id": "to-out", "type": "data", "source": last, "sourceHandle": "value", "target": "out",
                "targetHandle": "value"}]}


CODEFYUI_TOKEN = "X-CodefyUI-Token: "   # its one shared token's header


@dataclass
class Reference:
    """CodefyUI's backend beside ours: its process, port, one shared token and the graph it keeps."""
    process: subprocess.Popen
    port: int
    token: str
    graph: dict


async def codefyui_ready(port: int, graph: dict) -> str:
    """Once CodefyUI's backend answers: its one token, with the graph saved and run twice."""
    deadline = time.monotonic() + 120
    while True:
        try:
            client = await Client(port, "", CODEFYUI_TOKEN).open()
            _, bootstrap = await client.call("GET", "/api/auth/bootstrap")
            client.close()
            break
        except (OSError, asyncio.IncompleteReadError):
            if time.monotonic() > deadline:
                raise SystemExit("CodefyUI's backend did not start") from None
            await asyncio.sleep(0.2)
    token = bootstrap["token"]
    client = await Client(port, token, CODEFYUI_TOKEN).open()
    status, saved = await client.call("POST", "/api/graph/save", json.dumps(graph).encode())
    assert status == 200, saved
    for _ in range(2):
        await codefyui_run(client, graph)
    client.close()
    return token


async def codefyui_run(client: Client, graph: dict) -> float:
    started = time.perf_counter()
    status, answer = await client.call("POST", f"/api/graph/run/{graph['name']}", b"{}")
    assert status == 200 and answer["status"] == "ok", answer
    return time.perf_counter() - started


async def codefyui_burst(reference: Reference, n: int) -> tuple[float, float, tuple[float, float]]:
    """n students at once, one synchronous run request each: the median, the p95 and its
    process's CPU ms per run (no workers: the second figure is 0)."""
    clients = [await Client(reference.port, reference.token, CODEFYUI_TOKEN).open() for _ in range(n)]
    before = cpu_ms(reference.process.pid)
    times = await asyncio.gather(*(codefyui_run(c, reference.graph) for c in clients))
    cpu = sum(spent(before, cpu_ms(reference.process.pid), n))
    for c in clients:
        c.close()
    return statistics.median(times), percentile(times, 0.95), (cpu, 0.0)


def codefyui_served(stack: ExitStack, backend: Path, python: str, doc: dict, n: int) -> Reference:
    """CodefyUI's backend started as its start script does (one uvicorn process), with its data
    in a temp dir, ready and warmed by a first burst (which grows its thread pool)."""
    var, port = Path(tempfile.mkdtemp(prefix="codefyui-reference-")), free_port()
    env = {**os.environ, "CODEFYUI_HOST": "127.0.0.1", "CODEFYUI_PORT": str(port),   # the Host it accepts
           "CODEFYUI_USER_DATA_DIR": str(var / "data"), "CODEFYUI_GRAPHS_DIR": str(var / "graphs"),
           "CODEFYUI_DB_PATH": str(var / "codefyui.db")}
    server = subprocess.Popen([python, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1", "--port", str(port)],
                              cwd=backend, env=env, stdout=open(var / "server.log", "wb"), stderr=subprocess.STDOUT)

    def stop() -> None:
        server.send_signal(signal.SIGINT)
        server.wait(30)

    stack.callback(stop)
    graph = codefyui_graph(doc)
    reference = Reference(server, port, asyncio.run(codefyui_ready(port, graph)), graph)
    asyncio.run(codefyui_burst(reference, n))
    return reference


KINDS = (("unseeded", {"seed": None}), ("seeded", {"seed": 42}))


@dataclass
class Served:
    """One checkout's server in this bench: its process, port, run workers, students' tokens."""
    root: Path
    var: Path
    process: subprocess.Popen
    port: int
    workers: dict
    tokens: list[str]


def serve(stack: ExitStack, root: Path, n: int, bursts: int, cnn: dict) -> Served:
    """A server of the checkout at ``root``, its students made, every worker warmed by a run."""
    var, env = server_env("codefyui-burst-", root, CODEFYUI_RUN_OUTPUT_STORE_MAX_RUNS=str(2 * n + 4))
    tokens = accounts(env, 2 * bursts * n + 2, root)
    process, port, workers = stack.enter_context(running(var, env, tokens[-1], root))
    asyncio.run(burst(port, tokens[-2:], cnn, {"seed": None}))   # one run each of a warm-up student
    return Served(root, var, process, port, workers, tokens)


def worst_p95(figures: dict) -> float:
    return max(p95 for _, p95, _, _ in figures.values())


def report(name: str, figures: dict, n: int) -> None:
    for kind, (median, p95, cpu, each) in figures.items():
        print(f"{name}{kind:9s}: each burst's p95 {', '.join(f'{p:.3f}' for p in each)} s")
        print(f"{name}{kind:9s}: submit to terminal status median {median:.3f} s, p95 {p95:.3f} s (medians over the bursts); "
              f"server CPU {sum(cpu):.1f} ms per run ({cpu[0]:.1f} server process + {cpu[1]:.1f} run workers); "
              f"the server process computed {cpu[0] * n / 1e3:.3f} s of the burst on its one interpreter")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--bursts", type=int, default=5, help="bursts of each kind; the figures are their median")
    parser.add_argument("--follow", action="store_true", help="each student's page follows their run through its "
                        "socket, as the editor does (the figure is then class_burst_followed_p95_s)")
    parser.add_argument("--one-request", action="store_true", help="each student submits and waits in one request, "
                        "POST /api/runs?wait=30 (the figure is then class_burst_one_request_p95_s)")
    parser.add_argument("--against", type=Path, metavar="TREE", help="another checkout of this project (git worktree "
                        "add), served side by side with its bursts in turns with this one's")
    parser.add_argument("--codefyui", type=Path, metavar="BACKEND", help="CodefyUI's backend/ folder, to burst side by side")
    parser.add_argument("--codefyui-python", default=sys.executable, metavar="PY", help="a Python with its requirements")
    args = parser.parse_args()
    if args.follow and args.one_request:
        parser.error("--follow needs the run's id before its end: not with --one-request")
    n, bursts = args.students, args.bursts
    cnn = json.loads((ROOT / "examples" / "cnn.json").read_text())
    walkthrough = json.loads((ROOT / "examples" / "walkthrough.json").read_text())
    with ExitStack() as stack:
        servers = [serve(stack, root, n, bursts, cnn) for root in [ROOT, *([args.against.resolve()] if args.against else [])]]
        ours = servers[0]
        reference = codefyui_served(stack, args.codefyui, args.codefyui_python, cnn, n) if args.codefyui else None
        spy = profiler(ours.process, ours.var)
        runs = [{kind: [] for kind, _ in KINDS} for _ in servers]   # each burst's (median, p95, CPU per run)
        theirs: list[tuple] = []                                      # CodefyUI's, the same
        pairs = list(zip(servers, runs))
        for i in range(bursts):   # in turns: a slow spell of the machine lands on both kinds (and both trees)
            for k, (kind, options) in enumerate(KINDS):
                group = slice((2 * i + k) * n, (2 * i + k + 1) * n)
                for s, served in pairs if (i + k) % 2 == 0 else pairs[::-1]:
                    before = cpu_ms(s.process.pid)
                    times = asyncio.run(burst(s.port, s.tokens[group], cnn, options, args.follow, args.one_request))
                    served[kind].append(
                        (statistics.median(times), percentile(times, 0.95), spent(before, cpu_ms(s.process.pid), n)))
                if reference is not None and k == i % 2:   # between our kinds, on alternate sides
                    theirs.append(asyncio.run(codefyui_burst(reference, n)))
        figures = [{kind: over_bursts(each) for kind, each in r.items()} for r in runs]
        alone, alone_cpu = asyncio.run(one_by_one(ours.process.pid, ours.port, ours.tokens[-1], walkthrough))
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(30)
    print(f"{n} students submit examples/cnn.json at once through the JSON API and wait with ?wait= "
          f"{'(each page following its run through the run socket) ' if args.follow else ''}"
          f"{'(in one request, POST /api/runs?wait=30) ' if args.one_request else ''}"
          f"({ours.workers['workers']} run workers, {os.cpu_count()} cores), {bursts} bursts of each kind")
    report("", figures[0], n)
    ratio = figures[0]["seeded"][1] / figures[0]["unseeded"][1]
    p95 = worst_p95(figures[0])   # the figure
    print(f"seeded p95 / unseeded p95 = {ratio:.2f}")
    if args.against:
        report(f"{servers[1].root}: ", figures[1], n)
        other = worst_p95(figures[1])
        print(f"this tree / {servers[1].root}, bursts in turns: p95 {p95 / other:.2f}×, server process CPU per run "
              f"{figures[0]['unseeded'][2][0] / figures[1]['unseeded'][2][0]:.2f}× (unseeded)")
    if theirs:
        median, their_p95, (cpu, _), each = over_bursts(theirs)
        print(f"CodefyUI's backend, in turns with ours (one POST /api/graph/run each): each burst's p95 "
              f"{', '.join(f'{p:.3f}' for p in each)} s; median {median:.3f} s, p95 {their_p95:.3f} s; its process's "
              f"CPU {cpu:.1f} ms per run. Ours / CodefyUI's: p95 {p95 / their_p95:.2f}×, "
              f"CPU {sum(figures[0]['unseeded'][2]) / cpu:.2f}× (unseeded)")
    print(f"one walkthrough run alone ({ALONE_RUNS} one after another): median {alone:.3f} s, server CPU "
          f"{sum(alone_cpu):.1f} ms per run ({alone_cpu[0]:.1f} server process + {alone_cpu[1]:.1f} run workers)")
    kind = "_followed" if args.follow else "_one_request" if args.one_request else ""
    print(f"figure: class_burst{kind}_p95_s = {p95:.3f}")


if __name__ == "__main__":
    main()
