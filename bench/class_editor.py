"""A class presses Run in the editor at once: 30 students, each logged in with a browser
session and a tab holding the CNN lesson (examples/cnn.json), press Run within the same
second as htmx does (the Run form's POST with HX-Request, then the GET of the page its 302
names, whose #editor partial htmx swaps in). Times each from the POST to the partial's last
byte, the moment the student sees the run on the page (its end then arrives on the run's
socket, which bench/class_burst.py --follow measures). Real server as in class_burst.py.

Each burst adds a run to every student's Runs panel, as a lesson does. Prints each burst's
median and p95, their medians over the bursts, the page's size, and the server's CPU per
press (its process and its run workers). Django serves every view on one thread, so the
server process's CPU for a whole burst bounds its p95 from below.

No issue names a goal for this yet: it is the class's own path, where class_burst.py is a
script's. Run: .venv/bin/python bench/class_editor.py [--students N] [--bursts B]
"""
from __future__ import annotations

import argparse
import asyncio
import html
import json
import re
import statistics
import subprocess
import sys
import time
from urllib.parse import urlencode

from class_burst import ROOT, cpu_ms, percentile, running, server_env, session_lines, spent

CSRF_FIELD = re.compile(rb'name="csrfmiddlewaretoken" value="([^"]+)"')
STATE_FIELD = re.compile(rb'name="_state" value="([^"]*)"')
CSRF_COOKIE = re.compile(r"csrftoken=([^;]+)")


def students(env: dict, count: int) -> tuple[list[tuple[str, int]], str]:
    """Each student's session key and tab (the CNN lesson), made in one manage.py process; and
    an API token of the first, with which the server's health is read."""
    cnn = json.loads((ROOT / "examples" / "cnn.json").read_text())
    script = ("import json\n"
              "from django.core.management import call_command\n"
              "from django.contrib.auth import get_user_model\n"
              "from apps.accounts.models import ApiToken\n"
              "from apps.editor.models import Tab\n"
              "from apps.graphs import document\n"
              "call_command('migrate', interactive=False, verbosity=0)\n"
              f"doc = document.normalise(json.loads({json.dumps(json.dumps(cnn))}))\n"
              "found = []\n"
              f"for i in range({count}):\n"
              "    student = get_user_model().objects.create_user(f'student{i}')\n"
              "    tab = Tab.objects.create(owner=student, title='CNN lesson', document=doc)\n"
              + "".join("    " + line + "\n" for line in session_lines("student").splitlines())
              + "    found.append(f'{session.session_key}:{tab.pk}')\n"
              "print(ApiToken.issue(get_user_model().objects.get(username='student0')), ' '.join(found))\n")
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", script], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True)
    token, *pairs = done.stdout.split()[-(count + 1):]
    return [(key, int(tab)) for key, tab in (pair.split(":") for pair in pairs)], token


class Browser:
    """One student's connection, kept alive, with their session cookie and the CSRF cookie
    and token the editor page gave them."""

    def __init__(self, port: int, session: str, tab: int):
        self.port, self.tab, self.cookies = port, tab, {"sessionid": session}

    async def open(self) -> "Browser":
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        page = await self.get(f"/editor/{self.tab}/", htmx=False)
        self.csrf, self.state = CSRF_FIELD.search(page)[1].decode(), html.unescape(STATE_FIELD.search(page)[1].decode())
        return self

    async def request(self, method: str, path: str, body: bytes = b"", htmx: bool = True) -> tuple[int, dict, bytes]:
        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        extra = "HX-Request: true\r\n" if htmx else ""
        typed = "Content-Type: application/x-www-form-urlencoded\r\n" if body else ""
        self.writer.write(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nCookie: {cookie}\r\n{extra}"
                          f"{typed}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        headers: dict[str, str] = {}
        for line in head[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
                if name.strip().lower() == "set-cookie" and (found := CSRF_COOKIE.match(value.strip())):
                    self.cookies["csrftoken"] = found[1]
        content = await self.reader.readexactly(int(headers.get("content-length", "0")))
        return int(head[0].split()[1]), headers, content

    async def get(self, path: str, htmx: bool = True) -> bytes:
        status, _, content = await self.request("GET", path, htmx=htmx)
        assert status == 200, (path, status)
        return content

    async def press_run(self) -> tuple[float, int]:
        """Run, as htmx sends it: (seconds until the page it answers with has come, its bytes)."""
        form = urlencode({"csrfmiddlewaretoken": self.csrf, "_state": self.state, "device": "follow"}).encode()
        started = time.perf_counter()
        status, headers, _ = await self.request("POST", f"/editor/{self.tab}/run", form)
        assert status == 302 and "location" in headers, (status, headers)
        page = await self.get(headers["location"])
        seconds = time.perf_counter() - started
        assert b'id="run-status"' in page or b"run-status" in page, page[:200]
        return seconds, len(page)

    def close(self) -> None:
        self.writer.close()


async def burst(port: int, pairs: list[tuple[str, int]], pid: int) -> tuple[list[tuple[float, int]], tuple[float, float]]:
    """Each student's page loaded, then Run pressed by all at once: (seconds, bytes) of each
    press, and the server's CPU per press (the pages' loads not counted)."""
    browsers = [await Browser(port, session, tab).open() for session, tab in pairs]
    await asyncio.sleep(0.2)   # the pages' own requests are done
    before = cpu_ms(pid)
    pressed = await asyncio.gather(*(b.press_run() for b in browsers))
    cpu = spent(before, cpu_ms(pid), len(pairs))
    for b in browsers:
        b.close()
    return pressed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--bursts", type=int, default=5)
    args = parser.parse_args()
    var, env = server_env("codefyui-class-editor-")
    pairs, token = students(env, args.students)
    with running(var, env, token) as (server, port, workers):
        asyncio.run(burst(port, pairs[:2], server.pid))   # warm-up: templates, the plan, the workers
        rows = []
        for _ in range(args.bursts):
            pressed, cpu = asyncio.run(burst(port, pairs, server.pid))
            times = [seconds for seconds, _ in pressed]
            rows.append((statistics.median(times), percentile(times, 0.95), cpu, statistics.median(b for _, b in pressed)))
            time.sleep(1.0)   # the runs end; their sockets would follow them
    print(f"{args.students} students press Run in the editor at once (htmx's POST, then the page its 302 names), "
          f"{workers['workers']} run workers, {args.bursts} bursts")
    print("each burst's p95: " + ", ".join(f"{p95:.3f}" for _, p95, _, _ in rows) + " s")
    median, p95 = (statistics.median(r[i] for r in rows) for i in (0, 1))
    own, children = (statistics.median(r[2][i] for r in rows) for i in (0, 1))
    print(f"press to page: median {median:.3f} s, p95 {p95:.3f} s (medians over the bursts); the page "
          f"{statistics.median(r[3] for r in rows) / 1024:.0f} KB; server CPU {own + children:.1f} ms per press "
          f"({own:.1f} server process + {children:.1f} run workers)")
    print(f"figure: class_editor_p95_s = {p95:.3f}")


if __name__ == "__main__":
    main()
