"""The server: ``python -m codefyui.serve [--host H] [--port P]`` serves codefyui.asgi with
Daphne, HTTP and WebSockets on one port, as ``make run`` starts it (the browser tests and the
benches start it the same way). Nothing else (no nginx, no broker) is needed for a class.
What the product needs beyond Daphne's own behaviour (bodies as they arrive, long answers
paced by the client, a head bounded in size and time, small socket messages, the open-files
limit) is codefyui/serving.py's; docs/decisions/serving.md says why.
"""
from __future__ import annotations

import signal

if __name__ == "__mp_main__":
    # A run worker starting: multiprocessing's spawn runs the server's main module first, then
    # imports torch for seconds. Ctrl+C in the server's terminal reaches the whole process
    # group; a worker leaves its ending to the server (workers.worker_main) from here on,
    # instead of printing a KeyboardInterrupt traceback from the middle of its imports.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

import argparse

APPLICATION = "codefyui.asgi:application"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve CodefyUI (HTTP and WebSockets) on one port.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--app", default=APPLICATION, help="the ASGI application, module:attribute")
    args = parser.parse_args(argv)
    # Imported here, not above: a run worker imports this module too, and needs no Twisted.
    from codefyui import serving
    try:
        serving.run(args.app, args.host, args.port)
    except KeyboardInterrupt:   # Ctrl+C while the application loads (Twisted handles it once serving)
        pass


if __name__ == "__main__":
    main()
