"""How Daphne takes in requests (codefyui/serving.py): Twisted leaves a form's body to Django,
bodies come in 1 MiB pieces, and no access line of Twisted's is made. An upload through the
real server is tests/e2e/test_files.py's; what a big upload costs others is bench/transfer_stall.py's."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from daphne import cli, http_protocol
from twisted.web import http
from twisted.web.test.requesthelper import DummyChannel

from codefyui.serving import BODY_PIECE, tune_daphne

FORM = b'--b\r\nContent-Disposition: form-data; name="file"; filename="model.pt"\r\n\r\nweights\r\n--b--\r\n'


@pytest.fixture(autouse=True)
def tuned():
    tune_daphne()


def received(request_class) -> http.Request:
    """A multipart POST as Twisted takes it in, up to where Daphne would start the application."""
    channel = DummyChannel()
    channel.factory = SimpleNamespace(server=SimpleNamespace(protocol_connected=lambda request: None))
    request = request_class(channel)
    request.gotLength(len(FORM))
    request.handleContentChunk(FORM)
    request.requestHeaders.setRawHeaders(b"content-type", [b"multipart/form-data; boundary=b"])
    request.process = lambda: None
    request.requestReceived(b"POST", b"/files/upload", b"HTTP/1.1")
    return request


def test_twisted_leaves_a_forms_body_to_django():
    assert received(http.Request).args == {b"file": [b"weights"]}   # what Twisted did under Daphne
    request = received(http_protocol.WebRequest)
    assert request.args == {}
    request.content.seek(0)
    assert request.content.read() == FORM   # the body as it came, for Daphne to hand to Django


def test_daphnes_command_line_builds_a_server_that_hands_bodies_over_in_big_pieces():
    built = cli.CommandLineInterface.server_class(application=None, endpoints=["tcp:port=0"])
    assert built.request_buffer_size == BODY_PIECE


def test_no_access_line_of_twisteds_is_made():
    """Daphne writes its own access log; Twisted's line was formatted for each request, then dropped."""
    factory, lines = http_protocol.HTTPFactory(server=None), []
    factory._logFile = SimpleNamespace(write=lines.append)
    factory.log(received(http_protocol.WebRequest))
    assert lines == []
