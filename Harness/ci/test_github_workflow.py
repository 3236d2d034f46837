"""The GitHub Actions workflows of docs/ci-sharding.md, checked two ways: against GitHub's workflow
schema (check-jsonschema's vendored copy of SchemaStore's github-workflow schema), and by running
their replay and merge commands here, shard by shard (or part by part), as the matrix would."""

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "docs" / "examples" / "github-actions-replay-shards.yml"
SWEEP_WORKFLOW = ROOT / "docs" / "examples" / "github-actions-sweep-shards.yml"


def tether_binary() -> str:
    binary = os.environ.get("TETHER_BINARY", str(ROOT / ".build" / "debug" / "tether"))
    if not Path(binary).exists():
        pytest.fail(f"no tether binary at {binary}: build first (swift build) or set TETHER_BINARY")
    return binary


def load_workflow(path: Path = WORKFLOW) -> dict:
    # PyYAML reads the key `on` as the boolean True (YAML 1.1); the schema check below reads it
    # as GitHub does.
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("path", [WORKFLOW, SWEEP_WORKFLOW], ids=lambda p: p.name)
def test_the_workflow_matches_githubs_schema(path):
    checker = shutil.which("check-jsonschema")
    command = [checker] if checker else [sys.executable, "-m", "check_jsonschema"]
    result = subprocess.run(command + ["--builtin-schema", "vendor.github-workflows", str(path)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_matrix_runs_every_shard_once_and_the_merge_waits_for_all():
    workflow = load_workflow()
    replay, merge = workflow["jobs"]["replay"], workflow["jobs"]["merge"]
    shards = replay["strategy"]["matrix"]["shard"]
    count = len(shards)
    assert shards == list(range(1, count + 1))
    assert replay["strategy"]["fail-fast"] is False
    command = next(step["run"] for step in replay["steps"] if "--shard" in step.get("run", ""))
    assert f"--shard ${{{{ matrix.shard }}}}/{count}" in command
    assert merge["needs"] == "replay" and merge["if"] == "always()"
    merge_command = next(step["run"] for step in merge["steps"] if "junit merge" in step.get("run", ""))
    for shard in shards:
        assert f"out/replay-{shard}.xml" in merge_command


def run_step(command: str, shard: int | None, cwd: Path, binary: str, key: str = "shard") -> subprocess.CompletedProcess:
    command = command.replace("${{ matrix.%s }}" % key, str(shard)) if shard is not None else command
    command = command.replace("./Harness/tether", binary).replace("chmod +x bin/tether && bin/tether", binary)
    assert "${{" not in command, f"an expression the test does not know: {command}"
    return subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True)


def test_running_the_workflows_commands_replays_every_set_exactly_once(tmp_path):
    binary = tether_binary()
    workflow = load_workflow()
    # The job's working copy: Captures/ as checked out, out/ as the steps write it.
    (tmp_path / "Captures").symlink_to(ROOT / "Captures")
    replay = workflow["jobs"]["replay"]
    command = next(step["run"] for step in replay["steps"] if "--shard" in step.get("run", ""))
    suites_per_shard = []
    for shard in replay["strategy"]["matrix"]["shard"]:
        result = run_step(command, shard, tmp_path, binary)
        assert result.returncode == 0, result.stdout + result.stderr
        assert re.search(rf"^Shard {shard}/\d+: ", result.stdout, re.M), result.stdout
        report = ET.parse(tmp_path / "out" / f"replay-{shard}.xml").getroot()
        suites_per_shard.append([suite.get("name") for suite in report.iter("testsuite")])
    merge = workflow["jobs"]["merge"]
    merge_command = next(step["run"] for step in merge["steps"] if "junit merge" in step.get("run", ""))
    result = run_step(merge_command, None, tmp_path, binary)
    assert result.returncode == 0, result.stdout + result.stderr

    # Every set, and each of its fault scenarios, which the shard that replays the set replays too.
    every_set = []
    for manifest in (ROOT / "Captures").glob("*/manifest.yaml"):
        name = manifest.parent.name
        every_set.append(name)
        scenarios = yaml.safe_load(manifest.read_text()).get("scenarios") or []
        every_set += [f"{name} / {scenario['name']}" for scenario in scenarios]
    every_set.sort()
    flattened = [name for suites in suites_per_shard for name in suites]
    assert sorted(flattened) == every_set, "the shards are not disjoint and complete"
    merged = ET.parse(tmp_path / "replay.xml").getroot()
    assert sorted(suite.get("name") for suite in merged.iter("testsuite")) == every_set
    assert int(merged.get("tests")) == sum(1 for _ in merged.iter("testcase"))
    assert merged.get("failures") == "0"


def test_running_the_sweep_workflows_commands_gives_the_report_of_one_job(tmp_path):
    """The parts' commands, run here one after another as the matrix would, and their merge: the
    merged report is byte for byte the report of one job sweeping the whole set. The workflow
    sweeps plugin-faulty (1,213 variants); the test sweeps ciq-clean (132) with the same commands,
    to keep CI short: the splitting and merging are the same for any set."""
    binary = tether_binary()
    workflow = load_workflow(SWEEP_WORKFLOW)
    (tmp_path / "Captures").symlink_to(ROOT / "Captures")
    sweep, merge = workflow["jobs"]["sweep"], workflow["jobs"]["merge"]
    parts = sweep["strategy"]["matrix"]["part"]
    assert parts == list(range(1, len(parts) + 1)) and sweep["strategy"]["fail-fast"] is False
    assert merge["needs"] == "sweep" and merge["if"] == "always()"
    command = next(step["run"] for step in sweep["steps"] if "--sweep" in step.get("run", ""))
    assert f"--shard ${{{{ matrix.part }}}}/{len(parts)}" in command
    command = command.replace("Captures/plugin-faulty", "Captures/ciq-clean")
    for part in parts:
        result = run_step(command, part, tmp_path, binary, key="part")
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"(part {part}/{len(parts)}: variants " in result.stdout, result.stdout
    merge_command = next(step["run"] for step in merge["steps"] if "junit merge" in step.get("run", ""))
    result = run_step(merge_command, None, tmp_path, binary)
    assert result.returncode == 0 and "warning" not in result.stderr, result.stdout + result.stderr
    whole = subprocess.run([binary, "replay", "Captures/ciq-clean", "--sweep", "drop", "--junit", "whole.xml"],
                           cwd=tmp_path, capture_output=True, text=True)
    assert whole.returncode == 0, whole.stdout + whole.stderr
    assert (tmp_path / "sweep.xml").read_bytes() == (tmp_path / "whole.xml").read_bytes()
