"""How Daphne takes in this server's HTTP requests (set up by codefyui/asgi.py, in the server
process, before Daphne builds its server).

Under Daphne, Twisted parsed every POST body that is a form into ``request.args``, which
Daphne never reads (it hands the raw body to Django), and did it with the email package on
the event loop: a 64 MB multipart upload held every request of the server for ~6.5 s
(bench/transfer_stall.py), and every POST paid ~0.1 ms to parse its Content-Type. Daphne then
queued the body for Django in 8 KiB pieces. Here requests leave their bodies to Django, in
1 MiB pieces (``SyncStackASGIHandler.read_body`` gives the event loop back between pieces),
and Twisted's own access line, formatted per request and then thrown away (Daphne sends
Twisted's log nowhere and writes its own access log), is not made.
"""
from __future__ import annotations

from daphne import cli, http_protocol, server

BODY_PIECE = 2**20


class Request(http_protocol.WebRequest):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, parsePOSTFormSubmission=False, **kwargs)


class Server(server.Server):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("request_buffer_size", BODY_PIECE)
        super().__init__(*args, **kwargs)


def _no_access_line(factory, request) -> None:
    pass


def tune_daphne() -> None:
    """Point Daphne's command line at the server and requests above. Daphne imports the
    application before it builds its server, so this runs in time; HTTPFactory.buildProtocol
    reads the request class from its module at each connection."""
    http_protocol.WebRequest = Request
    http_protocol.HTTPFactory.log = _no_access_line
    cli.CommandLineInterface.server_class = Server
