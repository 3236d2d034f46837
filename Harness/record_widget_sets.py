#!/usr/bin/env python3
"""Records the committed widget-channel capture sets, for real, on this machine.

Each scenario in Harness/scenarios/widget/ runs both processes of the host-app <-> widget channel
as live hosts (`tether live widget --role host|widget`) on one App Group folder, against a real
mosquitto (rigs/mqtt_broker.py, on a free port) and the IoT cloud simulator (rigs/iot_cloud.py).
One process records (`--record`): libpcap on lo for the broker's port, inotify on the folder, and
its API calls, on one timeline. Which one is the scenario's `record` in SCENARIO_SETUP: `widget`
(the default) or `host`; replay then replays that process. The widget starts first, so the host's
first writes reach it as changes; the host starts once the widget has printed its `start` call.

While both run, the scenario's side actions (NAME.rig.yaml) are carried out in order: each waits
for a line of a process's live output (every callback is printed as `event_name key=value...`;
the recording process's unless the step names the other), or sleeps, or sends the simulator a
control command on its stdin (and checks its ack), or stops, starts or restarts the broker
(signals to mqtt_broker.py; once it is back, the rig waits for the simulator to subscribe again).

Then the scenario's expectations go into the manifest, the recording process's own trace is kept
as `live/ROLE.jsonl`, replay must pass, the replayed trace becomes the baseline
(`tether replay --update-baseline`), and `tether diff` compares the live trace with the replayed
one (frame_matched and summary left out, 50 ms of slack; a difference is reported, not fatal).
A set is recorded in the log folder first and moved into --out only when all of that passed.

Files per scenario (Harness/scenarios/widget): NAME.widget.yaml and NAME.host.yaml (the
processes' scripts), NAME.rig.yaml (side actions), NAME.expect.yaml (expectations); the set is
`widget-NAME`.

Side actions (NAME.rig.yaml, a list run in order; each entry has one key):
    - until: {event: NAME, has: TEXT or [TEXT, ...], timeout: 10s, process: host|widget}
          the process (default: the recording one) prints a line for event NAME containing every
          TEXT, after the line the previous `until` on that process matched (lines already
          printed count)
    - sleep: 300ms
    - control: {op: ..., ...}        a command on the simulator's stdin; its ack must say ok
    - restart_broker: true           SIGUSR1 to mqtt_broker.py: it stops and starts at once
                                     (every connection drops); waits for READY and the
                                     simulator's new subscription
    - restart_broker: {down: 2s}     the same, but the broker stays down that long in between
                                     (stop_broker, sleep, start_broker)
    - stop_broker: true              SIGUSR2 to mqtt_broker.py: every connection drops and the
                                     broker stays down (connecting is refused) until
    - start_broker: true             SIGUSR1 to the stopped broker; waits for READY and the
                                     simulator's new subscription

The tether executable is copied into the log folder first, so a rebuild during the run does not
change it. Every process started is stopped at the end of its scenario, also on failure.

Usage:
    python3 Harness/record_widget_sets.py [--tether .build/debug/tether] [--out Captures]
                                          [--logs /tmp/tether-widget-logs] [--replace] [NAME ...]

NAME is a scenario (`broker-drop`) or its set (`widget-broker-drop`); default all. An existing
set is refused unless --replace is given, in which case it is replaced once the new one passed.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from record_ciq_sets import add_expectations, run, stop  # noqa: E402  (the Connect IQ recorder beside this file)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RIGS = os.path.join(ROOT, "Harness", "rigs")
SCENARIOS = os.path.join(ROOT, "Harness", "scenarios", "widget")

# name → title, the widget's seed (the host's is seed + 100), and which process records
# (`record`: widget, the default, or host)
SCENARIO_SETUP = {
    "property-change": dict(title="A device-side property change reaches the widget after a refresh showed the old value", seed=21),
    "set-response-notification": dict(title="The widget sets a property: a refused set (9201), then response before change notification",
                                      seed=22),
    "broker-drop": dict(title="The broker restarts mid-run: the widget reconnects, re-subscribes, re-reads, and ignores a stale notification",
                        seed=23),
    "refresh-overrun": dict(title="A refresh with a 1 s budget while the cloud answers 2.5 s late: one overrun result, the work goes on",
                            seed=24),
    "write-race": dict(title="The host writes its settings 20 times within ~100 ms while the widget reads: versions only grow, never half-read",
                       seed=25),
    "scene-fire": dict(title="The widget fires a scene: the response, then a change notification per device of the scene", seed=26),
    "host-open-url": dict(title="The widget asks to open the host app twice: the host opens the first and refuses the second",
                          seed=27, record="host"),
    "broker-outage": dict(title="The broker stays down for 2 s: a reconnect attempt is refused, the next one gets through",
                          seed=28),
    "call-while-connecting": dict(title="The widget refreshes while its connection comes up and sets the lamp while a device-side change is in flight",
                                  seed=29),
}
ROLES = ("widget", "host")

STEP_TIMEOUT_S = 10.0
RUN_TIMEOUT_S = 60.0


class RigError(Exception):
    """A scenario could not be run as written; the message says where to look."""


def seconds(text):
    """`300ms`, `2s`, `1m` or a number of seconds."""
    if isinstance(text, (int, float)):
        return float(text)
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ms|s|m)?\s*", str(text))
    if not match:
        raise RigError(f"not a duration: {text!r} (e.g. 300ms, 2s)")
    value = float(match.group(1))
    return value * {"ms": 0.001, "s": 1.0, "m": 60.0, None: 1.0}[match.group(2)]


class Lines:
    """A process's stdout, read on a thread: every line kept (and copied to a log file), waitable."""

    def __init__(self, process, log_path):
        self.process = process
        self.lines = []
        self.closed = False
        self.cond = threading.Condition()
        self.log = open(log_path, "w")
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.process.stdout:
            line = line.rstrip("\n")
            self.log.write(line + "\n")
            self.log.flush()
            with self.cond:
                self.lines.append(line)
                self.cond.notify_all()
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def wait(self, predicate, start, timeout, what):
        """Index of the first line at or after `start` for which predicate holds."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for index in range(start, len(self.lines)):
                    if predicate(self.lines[index]):
                        return index
                start = len(self.lines)
                remaining = deadline - time.monotonic()
                if self.closed or remaining <= 0:
                    state = "the process ended" if self.closed else f"not within {timeout:g} s"
                    raise RigError(f"waiting for {what}: {state}")
                self.cond.wait(remaining)


def start_rig(args, name, work, stdin=False):
    """Starts a rig script; returns (process, its stdout Lines) once it printed READY."""
    with open(os.path.join(work, f"{name}.err"), "w") as err:
        process = subprocess.Popen([sys.executable] + args, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1)
    lines = Lines(process, os.path.join(work, f"{name}.out"))
    try:
        index = lines.wait(lambda line: line.startswith("READY"), 0, 30, f"{name} READY")
    except RigError:
        stop(process)
        raise RigError(f"{name} did not become ready; see {work}/{name}.err")
    return process, lines, lines.lines[index].split()[1:]


class Rig:
    """The broker, the simulator and both processes' output: what the side actions act on."""

    def __init__(self, work, recorder="widget"):
        self.work = work
        self.recorder = recorder  # whose output an `until` without `process` watches
        self.processes = []
        self.broker = self.cloud = None
        self.broker_lines = self.cloud_lines = None
        self.lines = {}        # role → its output (Lines)
        self.position = {}     # role → the output line after which its next `until` looks
        self.cloud_log = os.path.join(work, "cloud.jsonl")
        self.commands = 0
        self.broker_down = False

    def launch_broker(self):
        self.broker, self.broker_lines, words = start_rig([os.path.join(RIGS, "mqtt_broker.py"), "--port", "0"], "broker", self.work)
        self.processes.append(self.broker)
        self.port = int(words[0])

    def launch_cloud(self):
        self.cloud, self.cloud_lines, _ = start_rig([os.path.join(RIGS, "iot_cloud.py"), "--port", str(self.port), "--log", self.cloud_log],
                                                    "cloud", self.work, stdin=True)
        self.processes.append(self.cloud)

    def start_live(self, command, name):
        print("+ " + " ".join(command), flush=True)
        with open(os.path.join(self.work, f"{name}.err"), "w") as err:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1)
        self.processes.append(process)
        self.lines[name] = Lines(process, os.path.join(self.work, f"{name}.out"))
        self.position[name] = 0
        return process, self.lines[name]

    def stop_all(self):
        for process in reversed(self.processes):
            stop(process)

    # side actions

    def until(self, spec):
        if not isinstance(spec, dict) or "event" not in spec:
            raise RigError(f"until: give at least an event, e.g. {{event: refresh_completed}}, not {spec!r}")
        unknown = set(spec) - {"event", "has", "timeout", "process"}
        if unknown:
            raise RigError(f"until: unknown key(s) {', '.join(sorted(unknown))}; known: event, has, timeout, process")
        event = spec["event"]
        has = spec.get("has", [])
        has = [has] if isinstance(has, str) else list(has)
        timeout = seconds(spec.get("timeout", STEP_TIMEOUT_S))
        who = spec.get("process", self.recorder)
        if who not in ROLES:
            raise RigError(f"until: process must be host or widget, not {who!r}")
        lines = self.lines[who]

        def matches(line):
            return line.split(" ", 1)[0] == event and all(text in line for text in has)
        what = f"the {who}'s {event}" + (f" with {has}" if has else "")
        index = lines.wait(matches, self.position[who], timeout, what)
        self.position[who] = index + 1
        print(f"  rig: saw ({who}) {lines.lines[index][:160]}", flush=True)

    def control(self, command):
        self.commands += 1
        command = dict(command, id=f"rig-{self.commands}")
        print(f"  rig: control {json.dumps(command)}", flush=True)
        start = len(self.cloud_lines.lines)
        self.cloud.stdin.write(json.dumps(command, separators=(",", ":")) + "\n")
        self.cloud.stdin.flush()

        def is_ack(line):
            try:
                ack = json.loads(line)
            except ValueError:
                return False
            return isinstance(ack, dict) and ack.get("id") == command["id"]
        index = self.cloud_lines.wait(is_ack, start, 5, f"the simulator's ack of {command['op']}")
        ack = json.loads(self.cloud_lines.lines[index])
        if not ack.get("ok"):
            raise RigError(f"the simulator refused {command}: {ack.get('detail')}")

    def subscriptions(self):
        try:
            with open(self.cloud_log) as f:
                return sum(1 for line in f if '"event":"subscribed"' in line)
        except FileNotFoundError:
            return 0

    def broker_signal(self, signum, word, what):
        """Sends mqtt_broker.py a signal and waits for its answer line (READY or STOPPED)."""
        start = len(self.broker_lines.lines)
        print(f"  rig: {signal.Signals(signum).name} to mqtt_broker.py ({what})", flush=True)
        self.broker.send_signal(signum)
        self.broker_lines.wait(lambda line: line.startswith(word), start, 15, f"the broker's {word} after {what}")

    def wait_resubscribed(self, before):
        deadline = time.monotonic() + 10
        while self.subscriptions() <= before:
            if time.monotonic() > deadline:
                raise RigError("the simulator did not subscribe again once the broker was back; see cloud.jsonl")
            time.sleep(0.01)
        print("  rig: broker back, simulator subscribed again", flush=True)

    def restart_broker(self, value):
        if isinstance(value, dict):
            unknown = set(value) - {"down"}
            if unknown:
                raise RigError(f"restart_broker: unknown key(s) {', '.join(sorted(unknown))}; known: down")
            down = seconds(value.get("down", 0))
        elif value is True:
            down = 0.0
        else:
            raise RigError(f"restart_broker: true or {{down: 2s}}, not {value!r}")
        if down > 0:
            self.stop_broker()
            time.sleep(down)
            self.start_broker()
            return
        if self.broker_down:
            raise RigError("restart_broker: the broker is stopped; use start_broker")
        before = self.subscriptions()
        self.broker_signal(signal.SIGUSR1, "READY", "restart")
        self.wait_resubscribed(before)

    def stop_broker(self):
        if self.broker_down:
            raise RigError("stop_broker: the broker is stopped already")
        self.broker_signal(signal.SIGUSR2, "STOPPED", "stop, staying down")
        self.broker_down = True

    def start_broker(self):
        if not self.broker_down:
            raise RigError("start_broker: the broker is running; stop_broker first")
        before = self.subscriptions()
        self.broker_signal(signal.SIGUSR1, "READY", "start again")
        self.broker_down = False
        self.wait_resubscribed(before)

    def carry_out(self, steps):
        actions = ("until", "sleep", "control", "restart_broker", "stop_broker", "start_broker")
        for number, step in enumerate(steps, 1):
            if not isinstance(step, dict) or len(step) != 1:
                raise RigError(f"rig step {number}: one of {', '.join(actions)}, not {step!r}")
            (kind, value), = step.items()
            try:
                if kind == "until":
                    self.until(value)
                elif kind == "sleep":
                    time.sleep(seconds(value))
                elif kind == "control":
                    self.control(value)
                elif kind == "restart_broker":
                    self.restart_broker(value)
                elif kind == "stop_broker":
                    self.stop_broker()
                elif kind == "start_broker":
                    self.start_broker()
                else:
                    raise RigError(f"unknown action {kind!r}; known: {', '.join(actions)}")
            except RigError as error:
                raise RigError(f"rig step {number}: {error}") from None


def scenario_file(name, kind):
    return os.path.join(SCENARIOS, f"{name}.{kind}.yaml")


def record(name, tether, out, logs, replace):
    setup = SCENARIO_SETUP[name]
    recorder = setup.get("record", "widget")
    if recorder not in ROLES:
        raise RigError(f"SCENARIO_SETUP[{name!r}]: record must be host or widget, not {recorder!r}")
    set_name = f"widget-{name}"
    final = os.path.join(out, set_name)
    work = os.path.join(logs, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    container = os.path.join(work, "app-group")
    os.makedirs(container)
    staged = os.path.join(work, set_name)
    live_trace = os.path.join(work, f"live-{recorder}.jsonl")
    with open(scenario_file(name, "rig")) as f:
        steps = yaml.safe_load(f) or []
    seeds = {"widget": setup["seed"], "host": setup["seed"] + 100}

    def live(role):
        command = [tether, "live", "widget", "--role", role, "--container", container, "--broker", f"127.0.0.1:{rig.port}",
                   "--script", scenario_file(name, role), "--seed", str(seeds[role]),
                   "--trace", os.path.join(work, f"live-{role}.jsonl")]
        if role == recorder:
            command += ["--record", staged, "--title", setup["title"]]
        return rig.start_live(command, role)

    rig = Rig(work, recorder)
    started = time.monotonic()
    try:
        rig.launch_broker()
        rig.launch_cloud()
        widget, widget_lines = live("widget")
        widget_lines.wait(lambda line: line.startswith("api_call") and 'call="start"' in line, 0, 20,
                          "the widget's start" + (" (recording running)" if recorder == "widget" else ""))
        host, _ = live("host")
        if recorder == "host":
            # The host's start is its recording's first record; the steps' `until`s watch the host.
            rig.lines["host"].wait(lambda line: line.startswith("api_call") and 'call="start"' in line, 0, 20,
                                   "the host's start (recording running)")
        rig.carry_out(steps)
        for process, who in ((widget, "widget"), (host, "host")):
            try:
                process.wait(timeout=max(1.0, RUN_TIMEOUT_S - (time.monotonic() - started)))
            except subprocess.TimeoutExpired:
                raise RigError(f"the {who} process did not finish within {RUN_TIMEOUT_S:g} s; see {work}/{who}.out")
            if process.returncode != 0:
                raise RigError(f"the {who} process failed ({process.returncode}); see {work}/{who}.out and {who}.err")
    finally:
        rig.stop_all()
    print(f"  ran in {time.monotonic() - started:.1f} s", flush=True)

    os.makedirs(os.path.join(staged, "live"), exist_ok=True)
    kept = os.path.join(staged, "live", f"{recorder}.jsonl")
    shutil.copy(live_trace, kept)
    run([tether, "seal", staged], stdout=subprocess.DEVNULL)  # the seal covers live/ too (live_traces_sha256)
    scripts = ", ".join(f"{name}.{kind}.yaml" for kind in ("widget", "host", "rig"))
    add_expectations(staged, scenario_file(name, "expect"),
                     f"Recorded on the {recorder} side by Harness/record_widget_sets.py: {setup['title']}. "
                     f"Host and widget share one App Group folder; mosquitto (rigs/mqtt_broker.py) and the IoT cloud "
                     f"simulator (rigs/iot_cloud.py, built-in world). Scripts (Harness/scenarios/widget): {scripts}; "
                     f"seeds {seeds['widget']} (widget) and {seeds['host']} (host). "
                     f"live/{recorder}.jsonl is the live {recorder} process's own trace.")
    replayed = os.path.join(work, f"replayed-{recorder}.jsonl")
    check = run([tether, "replay", staged, "--trace", replayed], check=False, capture_output=True, text=True)
    print(check.stdout + check.stderr, end="", flush=True)
    if check.returncode != 0:
        raise RigError(f"replay of the new set failed; it is left in {staged}")
    verdict = next((line for line in check.stdout.splitlines() if line.startswith("== ")), "== ?")
    run([tether, "replay", staged, "--update-baseline"], stdout=subprocess.DEVNULL)
    diff = run([tether, "diff", kept, replayed,
                "--ignore-event", "frame_matched", "--ignore-event", "summary", "--tolerance-ms", "50"],
               check=False, capture_output=True, text=True)
    print(diff.stdout + diff.stderr, end="", flush=True)

    if os.path.exists(final):
        if not replace:
            raise RigError(f"{final} appeared during the run; the new set is left in {staged}")
        shutil.rmtree(final)
    shutil.move(staged, final)
    with open(os.path.join(final, "manifest.yaml")) as f:
        manifest = yaml.safe_load(f)
    frames = ", ".join(f"{i['role']} {i['frames']}" for i in manifest["interfaces"])
    diff_line = (diff.stdout.splitlines() or ["?"])[0]
    summary = f"{set_name}: {verdict.split(': ', 1)[-1]}; frames {frames}; live vs replayed: {diff_line}"
    print(f"  recorded into {final}", flush=True)
    return summary, diff.returncode == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tether", default=os.path.join(ROOT, ".build", "debug", "tether"))
    parser.add_argument("--out", default=os.path.join(ROOT, "Captures"))
    parser.add_argument("--logs", default="/tmp/tether-widget-logs")
    parser.add_argument("--replace", action="store_true", help="replace sets that exist already (default: refuse)")
    parser.add_argument("names", nargs="*", help="scenarios (or their widget-… sets) to record; default all")
    args = parser.parse_args()
    names = []
    for name in args.names or list(SCENARIO_SETUP):
        short = name[len("widget-"):] if name.startswith("widget-") else name
        if short not in SCENARIO_SETUP:
            parser.error(f"unknown scenario {name!r}; known: {', '.join(SCENARIO_SETUP)}")
        names.append(short)
    existing = [f"widget-{name}" for name in names if os.path.exists(os.path.join(args.out, f"widget-{name}"))]
    if existing and not args.replace:
        parser.error(f"{', '.join(existing)} exist(s) in {args.out}; give --replace to record them again")
    if not os.path.exists(args.tether):
        parser.error(f"{args.tether} does not exist (build it with swift build)")
    os.makedirs(args.logs, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    # One executable for the whole run, whatever happens to the build folder meanwhile.
    tether = os.path.join(os.path.abspath(args.logs), "tether")
    shutil.copy(args.tether, tether)

    failed, differing, summaries = [], [], []
    for name in names:
        print(f"== widget-{name}", flush=True)
        try:
            summary, same = record(name, tether, os.path.abspath(args.out), os.path.abspath(args.logs), args.replace)
            summaries.append(summary)
            if not same:
                differing.append(name)
        except (RigError, subprocess.CalledProcessError) as error:
            print(f"FAILED widget-{name}: {error}", flush=True)
            failed.append(name)
    print("\nsummary:", flush=True)
    for summary in summaries:
        print("  " + summary, flush=True)
    if differing:
        print("live and replayed traces differ (see above): " + ", ".join(differing), flush=True)
    if failed:
        print("failed: " + ", ".join(failed), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
