"""Starting and stopping rig processes from a recording script.

A rig (ciq_controllers.py, ciq_watch.py, heart_rate_peripheral.py, ...) prints `READY ...` on
stdout once it serves; `start` runs one with this Python and waits for that line, `stop` ends a
process the script started, by its own handle. `wait_for_line` is the wait itself, for a process
that announces itself with another line (`tether record`).

Used by Harness/record_ciq_sets.py, Harness/record_session_sets.py and
Examples/HeartRate/record_sets.py (each puts Harness/rigs on sys.path first).
"""

import signal
import subprocess
import sys
import time


def wait_for_line(process, prefix, timeout=30):
    """The first line of `process`'s stdout (a text pipe) that starts with `prefix`; None when
    stdout ends first or `timeout` seconds have passed (checked between lines)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        if line.startswith(prefix):
            return line
    return None


def start(args, log_path):
    """Starts a rig with this Python, its stderr into `log_path`, and waits for its `READY ...`
    line; returns (process, the line's words). A rig that does not become ready is killed and the
    script exits, naming the log."""
    log = open(log_path, "w")
    process = subprocess.Popen([sys.executable] + args, stdout=subprocess.PIPE, stderr=log, text=True)
    line = wait_for_line(process, "READY")
    if line is None:
        process.kill()
        raise SystemExit(f"{args[0]} did not become ready; see {log_path}")
    return process, line.split()[1:]


def stop(process, signum=signal.SIGTERM, timeout=10):
    """Stops a process we started, by its own handle: `signum`, then SIGKILL if it has not ended
    within `timeout` seconds. Returns its exit code."""
    if process.poll() is None:
        process.send_signal(signum)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode
