"""Django settings. Embedded defaults run a class on one machine: SQLite under var/, the
in-memory channel layer, runs in worker processes the server starts (apps/runs/workers.py)."""
from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF

from codefyui import conf

BASE_DIR = Path(__file__).resolve().parent.parent


def private_dir(path: Path) -> Path:
    """A folder only the server's user may enter (0700), whatever the umask; an existing one is mended."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def private_file(path: Path) -> Path:
    """A file only the server's user may read (0600), created empty if missing, whatever the umask.
    SQLite gives its -wal and -shm files the database's mode; they are mended too."""
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    for each in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if each.exists():
            each.chmod(0o600)
    return path


# var/ holds the database, the secret key and the students' files: the server's user's alone.
VAR_DIR = private_dir(conf.VAR_DIR)


def _secret_key() -> str:
    """DJANGO_SECRET_KEY, else one generated once and kept in var/ (never committed)."""
    if os.environ.get("DJANGO_SECRET_KEY"):
        return os.environ["DJANGO_SECRET_KEY"]
    path = private_file(VAR_DIR / "secret_key")
    if not path.read_text().strip():
        import secrets
        path.write_text(secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = os.environ.get("DJANGO_DEBUG", "") == "1"
ALLOWED_HOSTS = [h for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.humanize",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "template_partials",
    "axes",
    "apps.accounts",
    "apps.graphs",
    "apps.runs",
    "apps.stats",
    "apps.inspector",
    "apps.editor",
    "apps.classes",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "axes.middleware.AxesMiddleware",
]
# A request to the JSON API that carries an API token (codefyui/handler.py) has no session,
# CSRF cookie, messages, htmx or static file: it passes through these only. Axes answers an
# address locked out for wrong tokens; JSON carries its own Content-Security-Policy (codefyui/api.py).
TOKEN_API_MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "codefyui.urls"
ASGI_APPLICATION = "codefyui.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "OPTIONS": {
            # The site's, the apps', then each installed pack's templates/ (its Inspector panel),
            # cached, under django-template-partials (which would otherwise set these up itself).
            "loaders": [("template_partials.loader.Loader", [("django.template.loaders.cached.Loader", [
                "django.template.loaders.filesystem.Loader",
                "django.template.loaders.app_directories.Loader",
                "apps.graphs.pack_templates.Loader",
            ])])],
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'codefyui.sqlite3'}"), conn_max_age=600,
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    if DATABASES["default"]["NAME"] not in ("", ":memory:"):
        private_file(Path(DATABASES["default"]["NAME"]))
    # Run threads write beside request handlers: WAL lets reads go on during a write, and
    # writers wait for the lock instead of failing. Tests use a file too (not shared-cache
    # memory, whose table locks ignore the timeout).
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20, "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-{os.getpid()}.sqlite3")}  # one per test process

CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
if os.environ.get("REDIS_URL"):
    CHANNEL_LAYERS = {"default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        # socket_timeout None: channels-redis 4.3 + redis-py 8 otherwise drops idle consumers.
        "CONFIG": {"hosts": [{"address": os.environ["REDIS_URL"], "socket_timeout": None}]},
    }}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Authorization: Bearer <token> on the JSON API and the run socket (codefyui.api asks it
# before ``authenticate``).
API_TOKEN_BACKEND = "apps.accounts.backends.ApiTokenBackend"
# Login throttling (django-axes, first): wrong passwords count per username and address
# together, so one student's typos pause only that account on that computer: after
# LOGIN_FAILURE_LIMIT, its logins there are refused for LOGIN_LOCKOUT_MINUTES before any
# password is hashed. A try meanwhile neither counts nor starts the wait again. From one
# address, every username's failures together pause that address at LOGIN_ADDRESS_FAILURE_LIMIT
# (AXES_HANDLER: axes has one limit). The teacher unlocks by deleting the Access attempts.
AUTHENTICATION_BACKENDS = [
    # The token's backend first, so that a valid token (a class's every API request) costs
    # one lookup; a wrong one falls through to axes, which counts it and answers a lockout.
    # A wrong token names no username: it counts for "no username" on its address.
    # Throttling guards guessable secrets; a token is 256 random bits.
    API_TOKEN_BACKEND,
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_HANDLER = "apps.accounts.lockout.LockoutHandler"
AXES_FAILURE_LIMIT = conf.LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=conf.LOGIN_LOCKOUT_MINUTES)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_CALLABLE = "apps.accounts.lockout.locked_out"  # JSON under /api/ (a wrong API token counts too)
AXES_CLIENT_IP_CALLABLE = "codefyui.access.client_address"  # X-Forwarded-For only from CODEFYUI_TRUSTED_PROXIES

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "editor:index"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
TIME_ZONE = os.environ.get("TZ", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
private_dir(conf.USER_FILES_DIR)   # the students' files (My files), wherever an administrator puts them
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
DATA_UPLOAD_MAX_MEMORY_SIZE = 16 * 2**20  # a graph file with a big values grid still fits

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"codefyui": {"handlers": ["console"], "level": os.environ.get("CODEFYUI_LOG_LEVEL", "INFO")}},
}
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"  # the session row is read from memory, not per request

# Content-Security-Policy (django-csp): scripts, styles, images and sockets from this server
# only, nothing inline and no eval. Pages draw colours and positions with classes
# (apps/editor/views/stylesheet.py), and htmx is told to add no style of its own.
CONTENT_SECURITY_POLICY = {"DIRECTIVES": {
    "default-src": [SELF], "script-src": [SELF], "style-src": [SELF], "img-src": [SELF],
    "connect-src": [SELF], "font-src": [SELF], "object-src": [NONE], "base-uri": [NONE],
    "form-action": [SELF], "frame-ancestors": [NONE],
}}

# A lab PC is shared: a login ends when the browser closes, unless the school keeps it
# CODEFYUI_SESSION_DAYS days. The server forgets a browser-close session after a day.
SESSION_EXPIRE_AT_BROWSER_CLOSE = conf.SESSION_DAYS == 0
SESSION_COOKIE_AGE = max(conf.SESSION_DAYS, 1) * 24 * 3600

# CODEFYUI_HTTPS=1: served over HTTPS behind the school's proxy, which terminates TLS and
# says so in X-Forwarded-Proto (and passes the browser's Host and X-Forwarded-For, read only
# from a proxy listed in CODEFYUI_TRUSTED_PROXIES: apps/accounts/checks.py warns without one).
if conf.HTTPS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = 365 * 24 * 3600
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SILENCED_SYSTEM_CHECKS = ["security.W021"]  # HSTS preload: an intranet name is on no browser's list
