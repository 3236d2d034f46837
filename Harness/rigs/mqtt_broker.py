#!/usr/bin/env python3
"""A mosquitto broker on loopback for the widget rigs: our own config, our own port, in the foreground.

Starts Debian's `mosquitto` with a config generated in a temporary folder (never /etc/mosquitto):

    listener PORT 127.0.0.1
    allow_anonymous true
    persistence false
    log_dest stderr

waits until the broker answers an MQTT 3.1.1 CONNECT with a CONNACK (return code 0), prints one
line `READY <port>` on stdout (flushed), and runs until SIGTERM or SIGINT, when it stops the broker
(SIGTERM, then SIGKILL after 5 s) and exits 0. SIGUSR1 restarts the broker on the same port (every
client's connection drops) and prints `READY <port>` again: that is how a scenario run from another
process drops the widget's long-lived connection. SIGUSR2 stops the broker and leaves it down
(every connection drops, and connecting is refused: a SYN answered by RST) and prints
`STOPPED <port>`; the next SIGUSR1 starts it again on the same port and prints `READY <port>`: that
is how a scenario keeps the broker away for a while. A SIGUSR2 while stopped only prints `STOPPED`
again. `--port 0` picks a free port.

The broker's log goes to stderr (or `--log FILE`). Debian's own mosquitto service, when a system
runs it, listens on 1883 too: the default port then fails with a message saying so; use another
port (tests use `--port 0`).

As a library (used by test_iot_cloud.py):

    with Broker(port=0) as broker:      # started; broker.port is the port picked
        ...                             # clients connect to 127.0.0.1:broker.port
        broker.restart()                # stop and start again on the same port
        broker.pause()                  # stop, keeping the port and folder: connecting is refused
        broker.resume()                 # start again on the same port
    # stopped, temporary folder removed

Usage:
    python3 mqtt_broker.py                     # 127.0.0.1:1883
    python3 mqtt_broker.py --port 0 -v         # a free port, every log type
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_PORT = 1883
STARTUP_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 5.0
PROBE_INTERVAL_S = 0.02
INSTALL_HINT = "install it with apt-get install mosquitto, or run ./CI/test which installs it"
# Debian installs the broker in /usr/sbin, which is not on a normal user's PATH.
SEARCH_DIRS = ("/usr/sbin", "/usr/local/sbin", "/sbin")


class BrokerError(RuntimeError):
    """mosquitto is missing, did not start, or died; the message says what to do."""


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the process that started it dies (Linux
    PR_SET_PDEATHSIG), so a killed rig (SIGKILL, a crashed test runner) leaves no broker behind."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass


def find_mosquitto(explicit: str | None = None) -> str:
    """The mosquitto executable: `explicit`, else $MOSQUITTO, else PATH, else /usr/sbin etc."""
    candidate = explicit or os.environ.get("MOSQUITTO")
    if candidate:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
        raise BrokerError(f"mosquitto not found at {candidate}; {INSTALL_HINT}")
    found = shutil.which("mosquitto")
    if found:
        return found
    for folder in SEARCH_DIRS:
        path = os.path.join(folder, "mosquitto")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise BrokerError(f"mosquitto is not installed; {INSTALL_HINT}")


def free_port(host: str) -> int:
    """A TCP port nobody listens on right now (bound and released at once)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_in_use(host: str, port: int) -> bool:
    """True when something already listens on host:port (binding it, as mosquitto will, fails)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as mosquitto does
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def connect_packet(client_id: str) -> bytes:
    """An MQTT 3.1.1 CONNECT (section 3.1): clean session, keep alive 10 s, no will, no login."""
    ident = client_id.encode()
    variable = b"\x00\x04MQTT" + bytes([4, 0x02]) + (10).to_bytes(2, "big")
    payload = len(ident).to_bytes(2, "big") + ident
    body = variable + payload
    assert len(body) < 128  # one-byte remaining length
    return bytes([0x10, len(body)]) + body


def mqtt_probe(host: str, port: int, timeout: float = 1.0) -> bool:
    """True when host:port answers CONNECT with CONNACK 0 (section 3.2: 20 02 00 00)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(connect_packet(f"tether-probe-{os.getpid()}"))
            answer = b""
            while len(answer) < 4:
                chunk = sock.recv(4 - len(answer))
                if not chunk:
                    return False
                answer += chunk
            sock.sendall(b"\xe0\x00")  # DISCONNECT
            return answer == b"\x20\x02\x00\x00"
    except OSError:
        return False


def config_text(host: str, port: int, verbose: bool) -> str:
    """The generated mosquitto.conf."""
    types = ["all"] if verbose else ["error", "warning", "notice", "information"]
    lines = [
        "# Generated by Harness/rigs/mqtt_broker.py; not read from /etc/mosquitto.",
        f"listener {port} {host}",
        "allow_anonymous true",
        "persistence false",
        "log_dest stderr",
        *[f"log_type {kind}" for kind in types],
        "connection_messages true",
        "log_timestamp true",
        "log_timestamp_format %Y-%m-%dT%H:%M:%S",
        "set_tcp_nodelay true",
        # Run as whoever started us: as root mosquitto would otherwise switch to the `mosquitto` user.
        f"user {pwd.getpwuid(os.geteuid()).pw_name}",
    ]
    return "\n".join(lines) + "\n"


class Broker:
    """One mosquitto process on `host`:`port` with a generated config; start/stop/restart.

    `port=0` picks a free port at the first start and keeps it across restarts. The broker's log
    goes to `log` (an open file, e.g. sys.stderr) when given, else to `broker.log` in the temporary
    folder (`log_text()` reads it).
    """

    def __init__(self, port: int = DEFAULT_PORT, host: str = "127.0.0.1", log=None,
                 mosquitto: str | None = None, verbose: bool = False,
                 startup_timeout: float = STARTUP_TIMEOUT_S):
        self.host = host
        self.port = port
        self.verbose = verbose
        self.startup_timeout = startup_timeout
        self._mosquitto = mosquitto
        self._log = log
        self._dir: Path | None = None
        self._log_file = None
        self.process: subprocess.Popen | None = None

    # --- lifecycle ---
    def start(self) -> "Broker":
        """Write the config and start the broker; returns once it answers CONNECT."""
        if self.process is not None:
            raise BrokerError("the broker is already running")
        executable = find_mosquitto(self._mosquitto)
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="tether-mosquitto-"))
        picked = self.port == 0
        for attempt in range(3):
            port = free_port(self.host) if picked else self.port
            try:
                self._launch(executable, port)
                self.port = port
                return self
            except BrokerError as error:
                # A picked port may be taken between the probe bind and mosquitto's bind.
                if not (picked and "in use" in str(error) and attempt < 2):
                    self._remove_dir()
                    raise
        raise AssertionError("unreachable")

    def stop(self) -> int | None:
        """Stop the broker and remove its folder; returns mosquitto's exit code (None if not running)."""
        code = self._terminate()
        self._remove_dir()
        return code

    def restart(self) -> "Broker":
        """Stop the broker (every connection drops) and start it again on the same port."""
        self.pause()
        return self.resume()

    def pause(self) -> "Broker":
        """Stop the broker (every connection drops) but keep its port and folder, so ``resume()``
        starts it again where it was; meanwhile connecting to the port is refused."""
        if self._dir is None:
            raise BrokerError("the broker was never started")
        self._terminate()
        return self

    def resume(self) -> "Broker":
        """Start a paused broker again on the same port (a running one is left alone)."""
        if self._dir is None:
            raise BrokerError("the broker was never started")
        if not self.running:
            self._launch(find_mosquitto(self._mosquitto), self.port)
        return self

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_text(self) -> str:
        """The broker's log so far (when it goes to the temporary folder)."""
        if self._dir is None or self._log is not None:
            return ""
        path = self._dir / "broker.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def __enter__(self) -> "Broker":
        return self.start()

    def __exit__(self, *_exc) -> None:
        self.stop()

    # --- internals ---
    def _launch(self, executable: str, port: int) -> None:
        if port_in_use(self.host, port):
            raise BrokerError(self._in_use(port, ""))
        config = self._dir / "mosquitto.conf"
        config.write_text(config_text(self.host, port, self.verbose))
        if self._log is not None:
            stderr = self._log
        else:
            if self._log_file is None:
                self._log_file = open(self._dir / "broker.log", "ab")
            stderr = self._log_file
        self.process = subprocess.Popen(
            [executable, "-c", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=stderr,
            stderr=stderr,
            # Our own SIGINT (a Ctrl-C in the terminal) must not reach mosquitto before we stop it;
            # if we are killed outright, mosquitto gets SIGTERM from the kernel.
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        deadline = time.monotonic() + self.startup_timeout
        while not mqtt_probe(self.host, port):
            code = self.process.poll()
            if code is not None:
                self.process = None
                raise BrokerError(self._start_failure(port, code))
            if time.monotonic() > deadline:
                self._terminate()
                raise BrokerError(f"mosquitto did not accept MQTT connections on {self.host}:{port} "
                                  f"within {self.startup_timeout} s{self._tail()}")
            time.sleep(PROBE_INTERVAL_S)

    def _start_failure(self, port: int, code: int) -> str:
        tail = self._tail()
        if "in use" in tail.lower():
            return self._in_use(port, tail)
        return f"mosquitto exited with {code} at start{tail}"

    def _in_use(self, port: int, tail: str) -> str:
        hint = (" (Debian's own mosquitto service listens there when it runs: "
                "`systemctl disable --now mosquitto` stops it)") if port == DEFAULT_PORT else ""
        return f"port {port} on {self.host} is already in use{hint}; pick another with --port (0 = a free one){tail}"

    def _tail(self) -> str:
        text = self.log_text().strip()
        return ("\n" + "\n".join(text.splitlines()[-10:])) if text else ""

    def _terminate(self) -> int | None:
        process, self.process = self.process, None
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_TIMEOUT_S)
        return process.returncode

    def _remove_dir(self) -> None:
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def main() -> int:
    # A rig started by a Swift host may inherit blocked stop signals (see bumble_local.py).
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGUSR2})
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples:\n  mqtt_broker.py --port 0\n  mqtt_broker.py --port 1883 --log /tmp/broker.log -v\n"
        "SIGUSR1 restarts the broker on the same port and prints READY again; SIGUSR2 stops it and leaves it\n"
        "down (prints STOPPED; the next SIGUSR1 starts it again); SIGTERM/SIGINT stop it and exit.",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="TCP port (default 1883; 0 picks a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--log", type=Path, help="append the broker's log to this file (default: stderr)")
    parser.add_argument("--mosquitto", help="the mosquitto executable (default: $MOSQUITTO, PATH, /usr/sbin)")
    parser.add_argument("-v", "--verbose", action="store_true", help="every mosquitto log type")
    args = parser.parse_args()
    if not 0 <= args.port <= 65535:
        parser.error("--port must be 0 to 65535")

    log = open(args.log, "ab") if args.log else sys.stderr
    broker = Broker(port=args.port, host=args.host, log=log, mosquitto=args.mosquitto, verbose=args.verbose)
    pending = []  # signals not yet acted on, in order

    def on_signal(signum, _frame):
        pending.append(signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(signum, on_signal)
    try:
        broker.start()
    except BrokerError as error:
        print(f"mqtt_broker.py: {error}", file=sys.stderr)
        return 1
    print(f"READY {broker.port}", flush=True)
    paused = False  # stopped on purpose (SIGUSR2) until the next SIGUSR1
    try:
        while True:
            while pending:
                signum = pending.pop(0)
                if signum == signal.SIGUSR1:
                    if paused:
                        print(f"mqtt_broker.py: starting again on port {broker.port}", file=sys.stderr, flush=True)
                        broker.resume()
                        paused = False
                    else:
                        print(f"mqtt_broker.py: restarting on port {broker.port}", file=sys.stderr, flush=True)
                        broker.restart()
                    print(f"READY {broker.port}", flush=True)
                elif signum == signal.SIGUSR2:
                    if not paused:
                        print(f"mqtt_broker.py: stopping, staying down on port {broker.port} until SIGUSR1",
                              file=sys.stderr, flush=True)
                        broker.pause()
                        paused = True
                    print(f"STOPPED {broker.port}", flush=True)
                else:
                    return 0
            if not paused and not broker.running:
                code = broker.process.returncode if broker.process else None
                print(f"mqtt_broker.py: mosquitto exited with {code}", file=sys.stderr)
                return 1
            time.sleep(0.05)
    except BrokerError as error:
        print(f"mqtt_broker.py: {error}", file=sys.stderr)
        return 1
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGUSR2})
        broker.stop()
        if args.log:
            log.close()


if __name__ == "__main__":
    sys.exit(main())
