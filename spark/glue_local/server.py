"""Glue's JSON 1.1 protocol over HTTP, as boto3 speaks it.

POST / with `X-Amz-Target: AWSGlue.<Operation>` and a JSON body; replies JSON, errors
as HTTP 400 `{"__type": code, "message": ...}` so botocore raises
`client.exceptions.<code>`. Operations come from jobs_api.OPERATIONS, tags_api.OPERATIONS
(job tags, ListJobs) and, when present,
catalog_api.OPERATIONS and partitions_api.OPERATIONS; each is `(ctx, request) -> response`.
Each request is signed (sigv4) by a known client, which may call only what its AWS role
may (glue_local.access); a client gets REQUEST_DEADLINE_S to send a request and to take
its response, whatever it sends or stalls.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import logging
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from glue_local import (
    access,
    code_sources,
    jobs_api,
    request_types,
    sigv4,
    state_upgrade,
    tags_api,
)
from glue_local.errors import GlueError
from glue_local.runner import Runner
from pipeline_contract import settings
from pipeline_contract.listen import bind_host
from pipeline_contract.service_kit import ENV_GLUE_CLIENTS

log = logging.getLogger("glue_local.server")

TARGET_PREFIX = "AWSGlue."
CONTENT_TYPE = "application/x-amz-json-1.1"
LOOPBACK = "127.0.0.1"
ENV_GLUE_PORT = "CDCLAB_GLUE_PORT"  # the port when --port is not given
# ENV_GLUE_CLIENTS: the clients the API accepts, `name:access_key:secret_key,...`
# (pipeline_contract.minio_users format; names are glue_local.access's clients): every
# request must carry their AWS SigV4 signature. Read once at start and removed from the
# environment, so job runs never see it. Unset: no check, every caller is the
# administrator (in-process test servers).
# cdclab's cap on a request body (Glue documents none; its requests are small JSON)
MAX_BODY_BYTES = 1024 * 1024
# How long a client has to send one whole request (request line, headers, body) and,
# apart, to take its whole response. Requests are small JSON (MAX_BODY_BYTES), so 30 s is
# ample on any link; a client that stalls after Content-Length, or trickles a byte at a
# time, is dropped then instead of holding one of the server's threads forever.
REQUEST_DEADLINE_S = 30.0

Operation = Callable[[object, dict], dict]


@dataclass
class ServerContext:
    """What operations get as ctx (duck-compatible with StackContext: state_dir, env)."""

    state_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    jobs: jobs_api.JobStore | None = None
    runner: Runner | None = None
    # where job code may come from (jobs_api.default_code_places of the server's settings)
    code_places: code_sources.CodePlaces = field(kw_only=True)
    caller: str = access.ADMIN  # the client of the request being served


@dataclass(frozen=True)
class Client:
    name: str  # one of glue_local.access.CLIENTS
    secret: str


def operations() -> dict[str, Operation]:
    ops: dict[str, Operation] = {**jobs_api.OPERATIONS, **tags_api.OPERATIONS}
    try:
        catalog_api = importlib.import_module("glue_local.catalog_api")
    except ModuleNotFoundError as e:
        if e.name != "glue_local.catalog_api":
            raise
        log.warning("glue_local.catalog_api not found: Data Catalog operations disabled")
    else:
        ops.update(catalog_api.OPERATIONS)
        ops.update(importlib.import_module("glue_local.partitions_api").OPERATIONS)
    return ops


def dispatch(ops: Mapping[str, Operation], ctx, target: str | None, body: bytes,
             client: str = access.ADMIN) -> tuple[int, dict]:
    """One request of `client` -> (HTTP status, JSON payload). Pure apart from the
    operation itself."""
    try:
        if not target or not target.startswith(TARGET_PREFIX):
            raise GlueError("InvalidInputException",
                            f"missing or foreign X-Amz-Target header {target!r}; "
                            f"expected {TARGET_PREFIX}<Operation>")
        name = target[len(TARGET_PREFIX):]
        op = ops.get(name)
        if op is None:
            raise GlueError("InvalidInputException",
                            f"operation {name} is not supported by the local Glue API; "
                            f"supported: {', '.join(sorted(ops))}")
        try:
            request = json.loads(body or b"{}")
        except ValueError as e:
            raise GlueError("InvalidInputException", f"{name}: body is not JSON: {e}") from e
        if not isinstance(request, dict):
            raise GlueError("SerializationException",
                            f"{name}: the body must be a JSON object")
        try:
            access.check(client, name, request, tags_api.local_region(getattr(ctx, "env", None)))
        except GlueError:
            log.warning("refused %s to client %s: its role's policy does not allow it",
                        name, client)
            raise
        request_types.check(name, request)  # wrong JSON types: AWS's 400, never a 500
        if dataclasses.is_dataclass(ctx) and hasattr(ctx, "caller"):
            ctx = dataclasses.replace(ctx, caller=client)
        return 200, op(ctx, request)
    except GlueError as e:
        return getattr(e, "status", 400), {"__type": e.code, "message": e.message}
    except Exception as e:  # a bug: say where, as Glue's 500
        log.exception("operation %s failed", target)
        return 500, {"__type": "InternalServiceException",
                     "message": f"{target}: {type(e).__name__}: {e}"}


class _Deadlines:
    """Shuts a connection's socket down once its deadline passes: a read or write blocked
    on it then fails at once (EOF or a broken pipe), so its thread is free again."""

    def __init__(self) -> None:
        self._due: dict[socket.socket, float] = {}
        self._cond = threading.Condition()
        self._closed = False
        threading.Thread(target=self._loop, name="glue-api-deadlines", daemon=True).start()

    def arm(self, sock: socket.socket, seconds: float) -> None:
        with self._cond:
            self._due[sock] = time.monotonic() + seconds
            self._cond.notify()

    def disarm(self, sock: socket.socket) -> None:
        with self._cond:
            self._due.pop(sock, None)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                if self._closed:
                    return
                now = time.monotonic()
                late = [s for s, due in self._due.items() if due <= now]
                for sock in late:
                    del self._due[sock]
                if not late:
                    wait = min(self._due.values(), default=now + 1.0) - now
                    self._cond.wait(timeout=max(wait, 0.01))
                    continue
            for sock in late:
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    server: GlueApiServer
    protocol_version = "HTTP/1.1"
    # each blocking socket operation (StreamRequestHandler sets it); _Deadlines bounds
    # the whole request
    timeout = REQUEST_DEADLINE_S

    def handle_one_request(self) -> None:
        self.server.deadlines.arm(self.connection, REQUEST_DEADLINE_S)
        try:
            super().handle_one_request()
        finally:
            self.server.deadlines.disarm(self.connection)

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY_BYTES:  # never read an unbounded body
            self.close_connection = True
            status, payload = 413, {"__type": "InvalidInputException",
                                    "message": f"request body must be 0 to {MAX_BODY_BYTES} "
                                               "bytes (Content-Length)"}
        else:
            body = self.rfile.read(length) if length else b""
            if len(body) < length:  # the client stopped sending, or took too long
                self.close_connection = True
                log.warning("dropped a request from %s: %d of %d body bytes within %.0f s",
                            self.address_string(), len(body), length, REQUEST_DEADLINE_S)
                return
            self.server.deadlines.disarm(self.connection)  # the operation is not the client's
            status, payload = self._served(body)
            self.server.deadlines.arm(self.connection, REQUEST_DEADLINE_S)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        self.end_headers()
        self.wfile.write(data)

    def _served(self, body: bytes) -> tuple[int, dict]:
        """The response: a signature refusal, or what dispatch answers for the client
        that signed (the administrator when no clients are set)."""
        client = access.ADMIN
        if self.server.clients is not None:
            try:
                key = sigv4.verify("POST", self.path, dict(self.headers.items()), body,
                                   {k: c.secret for k, c in self.server.clients.items()})
            except sigv4.SignatureError as e:
                log.warning("refused a request from %s: %s", self.address_string(), e.code)
                return e.status, {"__type": e.code, "message": e.message}
            client = self.server.clients[key].name
        return dispatch(self.server.ops, self.server.ctx, self.headers.get("X-Amz-Target"),
                        body, client)

    def log_message(self, fmt: str, *args) -> None:
        # straight to the real stderr: never into a job run's captured output
        sys.__stderr__.write(f"{self.address_string()} {fmt % args}\n")


class GlueApiServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, ctx: ServerContext, ops: Mapping[str, Operation],
                 clients: Mapping[str, Client] | None = None) -> None:
        # loopback unless a container runtime sets CDCLAB_BIND_HOST (compose: 0.0.0.0)
        super().__init__((bind_host(), port), _Handler)
        self.ctx, self.ops = ctx, ops
        self.clients = clients  # access key -> client; None: requests are not checked
        self.deadlines = _Deadlines()

    def handle_error(self, request, client_address) -> None:
        """A client that went away or was dropped (its deadline) is no server error."""
        if isinstance(sys.exc_info()[1], OSError):
            log.info("connection from %s ended: %s", client_address[0], sys.exc_info()[1])
            return
        super().handle_error(request, client_address)

    def server_close(self) -> None:
        super().server_close()
        self.deadlines.close()

    @property
    def endpoint(self) -> str:
        return f"http://{LOOPBACK}:{self.server_address[1]}"


def make_server(state_dir: Path, port: int = 0, env: Mapping[str, str] | None = None, *,
                pipeline: settings.PipelineSettings, warm: bool = False, session_factory=None,
                quiet: bool = False) -> GlueApiServer:
    """Server + store + runner, with runs from before a restart recovered and re-queued;
    `pipeline` as its entry point read it, handed to the runner and the API."""
    state_dir = Path(state_dir)
    env = dict(os.environ if env is None else env)
    clients = accepted_clients(env)
    state_upgrade.upgrade(state_dir)  # earlier versions' per-job file names, once
    store = jobs_api.JobStore(state_dir)
    runner = Runner(store, env, state_dir, pipeline, session_factory=session_factory)
    ctx = ServerContext(state_dir=state_dir, env=env, jobs=store, runner=runner,
                        code_places=jobs_api.default_code_places(pipeline))
    server = GlueApiServer(port, ctx, operations(), clients)
    if quiet:
        _Handler.log_message = lambda *a, **k: None  # type: ignore[method-assign]
    requeue = store.recover(time.time())
    runner.start(warm=warm)
    for run in requeue:
        runner.submit(run["JobName"], run["Id"])
    return server


def accepted_clients(env: dict[str, str]) -> dict[str, Client] | None:
    """access key -> client of ENV_GLUE_CLIENTS, taken out of `env` and os.environ."""
    value = env.pop(ENV_GLUE_CLIENTS, None)
    os.environ.pop(ENV_GLUE_CLIENTS, None)
    if value is None:
        return None
    clients: dict[str, Client] = {}
    for item in filter(None, value.split(",")):
        name, key, secret = item.split(":")
        if name not in access.CLIENTS:
            raise ValueError(f"{ENV_GLUE_CLIENTS}: client {name!r} is unknown; clients are "
                             f"{', '.join(access.CLIENTS)}")
        if key in clients and clients[key].name != name:
            raise ValueError(f"{ENV_GLUE_CLIENTS}: clients {clients[key].name} and {name} "
                             "share one access key; each needs its own")
        clients[key] = Client(name, secret)
    return clients


@contextmanager
def running_server(state_dir: Path, **kwargs) -> Iterator[GlueApiServer]:
    """In-process server on a free port, for tests and embedding: this entry point reads
    pipeline.toml once, unless given `pipeline=`."""
    if "pipeline" not in kwargs:
        kwargs["pipeline"] = settings.load_pipeline()
    server = make_server(state_dir, **kwargs)
    thread = threading.Thread(target=server.serve_forever, name="glue-api", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        server.ctx.runner.shutdown()
