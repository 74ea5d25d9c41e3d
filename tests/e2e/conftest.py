"""Browser tests: a live server with its own database and Debian's Chromium driven by Playwright.

The server runs in a subprocess (`python -m codefyui.serve --app tests.e2e.asgi:application`, as
`make run` starts the product's
codefyui.asgi application plus one test-only node, see asgi.py) with its own SQLite file and
var dir under a temp dir, so the tests see exactly what a student's browser sees: real HTTP,
real WebSockets, whitenoise's static files. Nothing here skips: without /usr/bin/chromium
every test fails loudly (`make test` installs it). The fixture is `web_server`, not
`live_server`: pytest-django owns that name (and would set up a test database for it).

Playwright's sync API marks an asyncio loop as running in the main thread while it is
alive, which Django's ORM and pytest-asyncio refuse; so Playwright lives only as long as
this package's tests (package scope), and these tests never touch the ORM in-process.
"""
from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
STUDENTS = 160          # one fresh account per test: each starts on the welcome screen
PASSWORD = "pw-e2e-student-4711"
# The product's codefyui.asgi:application, plus the test-only node test:Gate (see asgi.py).
ASGI_APP = "tests.e2e.asgi:application"
EXPECT_TIMEOUT_MS = 10_000
RUN_TIMEOUT_MS = 15_000


def pytest_configure(config):
    config.addinivalue_line("markers", "e2e: browser test against a live server with Debian's Chromium")


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


@dataclass
class LiveServer:
    url: str
    var_dir: Path
    log: Path
    env: dict

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"

    def manage(self, *args: str, timeout: float = 120) -> str:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until_answering(url: str, proc: subprocess.Popen, server: LiveServer, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}:\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the server did not answer {url} within {timeout:.0f} s:\n{server.log_tail()}")


@pytest.fixture(scope="session")
def web_server(tmp_path_factory):
    """The server on a free port with its own database and var dir; terminated at the end."""
    var_dir = tmp_path_factory.mktemp("e2e-server")
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "DJANGO_DEBUG", "DATABASE_URL"}}
    env.update(DATABASE_URL=f"sqlite:///{var_dir / 'e2e.sqlite3'}", CODEFYUI_VAR_DIR=str(var_dir),
               DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost", DJANGO_SETTINGS_MODULE="codefyui.settings",
               PYTHONUNBUFFERED="1",
               # the checkout and its packs first, as pytest's ini has them, ahead of whichever
               # checkout the packs were installed from
               PYTHONPATH=os.pathsep.join([str(ROOT), *(str(p.parent) for p in sorted(ROOT.glob("packs/*/pyproject.toml")))]))
    port = _free_port()
    server = LiveServer(url=f"http://127.0.0.1:{port}", var_dir=var_dir, log=var_dir / "server.log", env=env)
    # migrate, collectstatic (whitenoise serves var/static) and the students, in one process:
    # each manage.py start costs seconds (it imports torch).
    server.manage("shell", "-c", (
        "from django.core.management import call_command\n"
        "from django.contrib.auth import get_user_model\n"
        "from django.contrib.auth.hashers import make_password\n"
        "call_command('migrate', interactive=False, verbosity=0)\n"
        "call_command('collectstatic', interactive=False, verbosity=0)\n"
        "User = get_user_model()\n"
        f"hashed = make_password({PASSWORD!r})  # one hash for all: hashing is slow on purpose\n"
        f"User.objects.bulk_create([User(username=f'student{{i}}', password=hashed)\n"
        f"                          for i in range(1, {STUDENTS + 1})])\n"
    ))
    command = [sys.executable, "-m", "codefyui.serve", "--port", str(port), "--app", ASGI_APP]
    with open(server.log, "wb") as log:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_until_answering(server.url + "/login/", proc, server)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def student_accounts(web_server):
    """Usernames of the fresh student accounts, handed out one per test."""
    return itertools.count(1)


@pytest.fixture
def student(student_accounts) -> tuple[str, str]:
    n = next(student_accounts)
    if n > STUDENTS:
        pytest.fail(f"tests/e2e/conftest.py creates {STUDENTS} student accounts; raise STUDENTS")
    return f"student{n}", PASSWORD


@pytest.fixture(scope="package")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: the browser tests need Debian's chromium "
                    "(`make test` installs it: apt-get install chromium)", pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def _context(browser, web_server, **options):
    from playwright.sync_api import expect

    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    options.setdefault("viewport", {"width": 1920, "height": 1200})
    context = browser.new_context(base_url=web_server.url, **options)
    context.set_default_timeout(EXPECT_TIMEOUT_MS)
    return context


def log_in(page, username: str, password: str) -> None:
    """Through the real login form, fields found by their labels."""
    from playwright.sync_api import expect

    page.goto("/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in", exact=True).click()
    expect(page.get_by_role("button", name="Log out")).to_be_visible()


@pytest.fixture
def page(browser, web_server, student, request):
    """A student logged in, JavaScript on."""
    context = _context(browser, web_server)
    page = context.new_page()
    _collect_errors(page, request)
    log_in(page, *student)
    yield page
    context.close()


@pytest.fixture
def nojs_page(browser, web_server, student, request):
    """A student logged in, in a context with JavaScript switched off."""
    context = _context(browser, web_server, java_script_enabled=False)
    page = context.new_page()
    _collect_errors(page, request)
    log_in(page, *student)
    yield page
    context.close()


SCREENS = {"1366x768": {"width": 1366, "height": 768}, "1920x1080": {"width": 1920, "height": 1080}}


@pytest.fixture(params=[(size, js) for size in SCREENS for js in (True, False)],
                ids=lambda p: f"{p[0]}-{'js' if p[1] else 'nojs'}")
def screen_page(browser, web_server, student, request):
    """A student logged in on a school laptop's screen (1366x768) or a classroom display
    (1920x1080), with JavaScript on and off: the page and whether it runs scripts."""
    size, js = request.param
    context = _context(browser, web_server, viewport=SCREENS[size], java_script_enabled=js)
    page = context.new_page()
    if js:
        _collect_errors(page, request)
    log_in(page, *student)
    page.screen_name = f"{size}-{'js' if js else 'nojs'}"
    yield page, js
    context.close()


def _collect_errors(page, request) -> None:
    """Script errors and anything the Content-Security-Policy refused fail the test that
    caused them; other console errors are shown with a failure (a 404 favicon is one, so
    they do not fail a test by themselves)."""
    errors: list[str] = []
    console: list[str] = []

    def on_console(msg) -> None:
        if msg.type == "error":
            console.append(f"{msg.type}: {msg.text}")
            if "Content Security Policy" in msg.text:
                errors.append(msg.text)

    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", on_console)
    request.node.stash[PAGE_ERRORS] = errors
    request.node.stash[CONSOLE_ERRORS] = console


PAGE_ERRORS = pytest.StashKey[list]()
CONSOLE_ERRORS = pytest.StashKey[list]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield
    errors = item.stash.get(PAGE_ERRORS, [])
    if errors:
        raise AssertionError("JavaScript errors or Content-Security-Policy refusals on the page:\n" + "\n".join(errors))
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call" and report.failed and "web_server" in item.fixturenames:
        server = item.funcargs.get("web_server")
        if server is not None:
            report.sections.append(("server log (tail)", server.log_tail()))
        console = item.stash.get(CONSOLE_ERRORS, [])
        if console:
            report.sections.append(("browser console errors", "\n".join(console)))
    return report
