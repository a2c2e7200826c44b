"""Run processes forked from one that imported PySpark and awsglue once.

Importing PySpark, awsglue and botocore's models costs a new run process ~2 s of CPU; on a
small machine the spare process paid that while the previous run was merging, on the same
cores. `python -m glue_local.run_forks FD` imports them once, then forks a run process
per request on the Unix socket FD: the request carries the child's stdin and stdout
(SCM_RIGHTS), the child leads its own session and continues as `glue_local.run_process`
would after its imports. The server is single-threaded when it forks and never connects
to the Spark driver, so a child inherits no thread and no py4j socket; each run is still
its own process (sys.modules, globals, argv), as before.

The server reaps its children and reports each exit on the socket, so the runner sees a
forked run like a subprocess.Popen one (ForkedProcess): pid, stdin, stdout, poll, wait,
kill. When the runner goes, the socket closes and the server exits; its children end as
spare processes do, at the end of their stdin.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping

log = logging.getLogger(__name__)

FORK_REQUEST = b"F"
REPLY_TIMEOUT_SECONDS = 60.0  # the first fork waits for the imports
UNKNOWN_EXIT = 255  # the server died before reporting a child's exit


class ForkedProcess:
    """A forked run process as the runner uses a Popen one."""

    def __init__(self, pid: int, stdin_fd: int, stdout_fd: int) -> None:
        self.pid = pid
        self.stdin = os.fdopen(stdin_fd, "w", encoding="utf-8", buffering=1)
        self.stdout = os.fdopen(stdout_fd, "r", encoding="utf-8", errors="replace")
        self.returncode: int | None = None
        self._ended = threading.Event()

    def exited(self, code: int) -> None:
        self.returncode = code
        self._ended.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(f"run process {self.pid}", timeout or 0)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pid, signal.SIGKILL)


class ForkServer:
    """The runner's end: starts the server, asks it for run processes, hears their exits."""

    def __init__(self, python: str, env: Mapping[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            # its own session: a Ctrl-C meant for the service reaches no run through it
            self._server = subprocess.Popen(
                [python, "-m", "glue_local.run_forks", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, env=dict(env), start_new_session=True)
        finally:
            theirs.close()
        self._sock = ours
        self._lock = threading.Lock()  # one request at a time
        self._state = threading.Lock()
        self._children: dict[int, ForkedProcess] = {}
        self._early_exits: dict[int, int] = {}  # reported before fork() registered it
        self._replies: list[int] = []
        self._reply = threading.Condition(self._state)
        self._closed = False
        threading.Thread(target=self._read, name="run-forks", daemon=True).start()

    @property
    def alive(self) -> bool:
        return not self._closed and self._server.poll() is None

    def fork(self) -> ForkedProcess:
        """A new run process, ready as a spawned one is once it prints "ready"."""
        with self._lock:
            in_r, in_w = os.pipe()
            out_r, out_w = os.pipe()
            try:
                socket.send_fds(self._sock, [FORK_REQUEST], [in_r, out_w])
            except OSError:
                os.close(in_w)
                os.close(out_r)
                raise
            finally:  # the child's ends: the server has its copies
                os.close(in_r)
                os.close(out_w)
            with self._state:
                if not self._reply.wait_for(lambda: self._replies or self._closed,
                                            REPLY_TIMEOUT_SECONDS) or not self._replies:
                    os.close(in_w)
                    os.close(out_r)
                    raise OSError("the run fork server did not answer")
                pid = self._replies.pop(0)
                proc = ForkedProcess(pid, in_w, out_r)
                if pid in self._early_exits:
                    proc.exited(self._early_exits.pop(pid))
                else:
                    self._children[pid] = proc
                return proc

    def close(self, timeout: float = 5.0) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        try:
            self._server.wait(timeout)
        except subprocess.TimeoutExpired:
            self._server.kill()
            self._server.wait()

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                data = self._sock.recv(4096)
            except OSError:
                data = b""
            if not data:
                break
            buffer += data
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                self._heard(line.decode().split())
        with self._state:
            self._closed = True
            self._reply.notify_all()
            orphans = [p for p in self._children.values() if p.returncode is None]
            self._children.clear()
        if orphans:
            log.warning("the run fork server ended; %d run process(es) left to end alone",
                        len(orphans))
        for proc in orphans:  # init reaps them now: wait for their pids to go
            threading.Thread(target=_await_orphan, args=(proc,), daemon=True).start()

    def _heard(self, words: list[str]) -> None:
        with self._state:
            if words[:1] == ["pid"]:
                self._replies.append(int(words[1]))
                self._reply.notify_all()
            elif words[:1] == ["exit"]:
                pid, code = int(words[1]), int(words[2])
                proc = self._children.pop(pid, None)
                if proc is None:
                    self._early_exits[pid] = code
                else:
                    proc.exited(code)


def _await_orphan(proc: ForkedProcess) -> None:
    import time

    while True:
        try:
            os.kill(proc.pid, 0)
        except ProcessLookupError:
            proc.exited(UNKNOWN_EXIT)
            return
        except PermissionError:
            pass
        time.sleep(0.2)


# --- the server ---------------------------------------------------------------------------
def serve(sock: socket.socket) -> None:
    from glue_local import run_process

    run_process.preload()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)  # a child's exit wakes select below
    while True:
        ready, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 512)
            _report_exits(sock)
        if sock in ready:
            message, fds, _flags, _addr = socket.recv_fds(sock, 16, 2)
            if not message:
                return  # the runner is gone
            if message != FORK_REQUEST or len(fds) != 2:
                for fd in fds:
                    os.close(fd)
                continue
            pid = os.fork()
            if pid == 0:
                _become_run_process(sock, (wake_r, wake_w), *fds)
            for fd in fds:
                os.close(fd)
            sock.sendall(f"pid {pid}\n".encode())
        _report_exits(sock)


def _report_exits(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        sock.sendall(f"exit {pid} {os.waitstatus_to_exitcode(status)}\n".encode())


def _become_run_process(sock: socket.socket, wake: tuple[int, int], stdin_fd: int,
                        stdout_fd: int) -> None:
    """In the child: the run process, as `python -m glue_local.run_process` after its
    imports. Never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        sock.close()
        for fd in wake:
            os.close(fd)
        os.setsid()
        os.dup2(stdin_fd, 0)
        os.dup2(stdout_fd, 1)
        os.dup2(stdout_fd, 2)
        os.close(stdin_fd)
        os.close(stdout_fd)
        sys.stdin = sys.__stdin__ = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stdout = sys.__stdout__ = _unbuffered(1, "strict")
        sys.stderr = sys.__stderr__ = _unbuffered(2, "backslashreplace")
        from glue_local import run_process

        run_process.main()
        code = 0
    except BaseException:  # noqa: BLE001 - a child never returns into the server's loop
        import traceback

        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _unbuffered(fd: int, errors: str):
    """A standard stream as PYTHONUNBUFFERED makes it (the runner sets it for spawned
    run processes): every write reaches the pipe at once."""
    import io

    raw = open(fd, "wb", buffering=0, closefd=False)  # noqa: SIM115
    return io.TextIOWrapper(raw, encoding="utf-8", errors=errors, line_buffering=True,
                            write_through=True)


def main() -> None:
    serve(socket.socket(fileno=int(sys.argv[1])))


if __name__ == "__main__":
    main()
