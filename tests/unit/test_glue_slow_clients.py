"""A client that stalls or trickles is dropped after the request deadline, and the API
answers others meanwhile (real sockets against an in-process server)."""

from __future__ import annotations

import socket
import time

import boto3
import pytest

from glue_local import server as glue_server
from glue_local.server import running_server

DEADLINE = 2.0  # the test's; the server's is REQUEST_DEADLINE_S (30 s)


@pytest.fixture()
def api(tmp_path, monkeypatch):
    monkeypatch.setattr(glue_server, "REQUEST_DEADLINE_S", DEADLINE)
    monkeypatch.setattr(glue_server._Handler, "timeout", DEADLINE * 5)  # the deadline acts
    with running_server(tmp_path, env={}, quiet=True) as server:
        yield server


def _connect(server) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=10)
    return sock


def _closed_after(sock: socket.socket, started: float) -> float:
    """Seconds from `started` until the server closed the connection."""
    try:
        while sock.recv(4096):  # whatever it sends, then EOF
            pass
    except ConnectionResetError:
        pass
    return time.monotonic() - started


def _glue(server):
    return boto3.client("glue", endpoint_url=server.endpoint, region_name="us-east-1",
                        aws_access_key_id="x", aws_secret_access_key="y")


def _still_open(sock: socket.socket) -> bool:
    """The server has neither closed nor reset this connection (a peek, no wait)."""
    sock.setblocking(False)
    try:
        return sock.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except ConnectionResetError:
        return False
    finally:
        sock.settimeout(10)


def test_a_client_stalling_after_content_length_is_dropped(api):
    glue = _glue(api)  # made first: building a client is not the server's time
    stalled = [_connect(api) for _ in range(3)]
    started = time.monotonic()
    for sock in stalled:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: AWSGlue.GetJobs\r\n"
                     b"Content-Length: 100\r\n\r\n{")
    assert glue.get_jobs()["Jobs"] == []
    # Served meanwhile: the answer came while every stalled request was still held.
    assert all(_still_open(sock) for sock in stalled)
    for sock in stalled:
        assert DEADLINE * 0.8 <= _closed_after(sock, started) < DEADLINE + 2
        sock.close()
    assert glue.get_jobs()["Jobs"] == []


def test_a_client_trickling_its_headers_is_dropped_at_the_deadline(api):
    sock = _connect(api)
    started = time.monotonic()
    request = b"POST / HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: " + b"a" * 200
    sent = 0
    try:
        for byte in request:  # one byte per 50 ms: each read succeeds, the total is long
            sock.sendall(bytes([byte]))
            sent += 1
            time.sleep(0.05)
            if time.monotonic() - started > DEADLINE + 3:
                break
    except (BrokenPipeError, ConnectionResetError):
        pass
    assert _closed_after(sock, started) < DEADLINE + 3
    assert sent < len(request)  # cut off before it finished
    sock.close()


def test_an_idle_keep_alive_connection_is_closed(api):
    sock = _connect(api)
    started = time.monotonic()
    assert _closed_after(sock, started) < DEADLINE + 2
    sock.close()


def test_the_deadline_is_a_bounded_constant():
    assert 0 < glue_server.REQUEST_DEADLINE_S <= 60
    assert glue_server._Handler.timeout == glue_server.REQUEST_DEADLINE_S
