"""The timeline report of `tether replay --html`, opened in a real browser.

Headless Chromium (Debian's `chromium` and `chromium-driver`, driven by Selenium) loads each
report from disk, with no network: the DOM must show a lane per interface and per core category
with exactly the events the trace file holds, the expectations with their verdicts, and a click on
a failing expectation must highlight its events and scroll the timeline to them. Screenshots go to
.build/ci-artifacts/report/ (kept by CI).

Run: TETHER_BINARY=$PWD/.build/debug/tether python3 -m pytest -q Harness/report
"""

import collections
import json
import os
import pathlib
import shutil
import subprocess
import time

import pytest
import yaml
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / ".build" / "ci-artifacts" / "report"
TETHER = os.environ.get("TETHER_BINARY", str(ROOT / ".build" / "debug" / "tether"))
BENCH = os.environ.get("TETHER_BENCH_BINARY", str(pathlib.Path(TETHER).parent / "TetherBench"))
CHROMIUM = os.environ.get("CHROMIUM_BINARY", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER_BINARY", "/usr/bin/chromedriver")

# The lane a core's event goes to (docs/timeline-report.md), written out again here as the
# oracle the page is checked against.
VIOLATIONS = {"violation", "rejected", "time_backwards", "gap", "step_failed", "link_not_found"}


def category(event):
    if event == "timeout":
        return "timers"
    if event in VIOLATIONS or event.endswith("_malformed"):
        return "violations"
    if event.startswith("api_"):
        return "api"
    if event.startswith("frame_"):
        return "frames"
    return "callbacks"


def trace_counts(trace_path):
    """Per (core, category) lane, and the faults lane, the events the trace file holds."""
    counts = collections.Counter()
    total = 0
    with open(trace_path, "rb") as f:
        for line in f:
            if not line.strip():
                continue
            event = json.loads(line)
            total += 1
            if event["event"] == "fault_injected":
                counts["faults"] += 1
            else:
                counts[(event["core"], category(event["event"]))] += 1
    return counts, total


def frames_per_interface(set_path):
    out = subprocess.run([TETHER, "inspect", str(set_path), "--json"], check=True, capture_output=True, text=True).stdout
    return {i["index"]: i["frames"] for i in json.loads(out)["interfaces"]}


def replay(args, expect_status):
    started = time.monotonic()
    result = subprocess.run([TETHER, "replay", *map(str, args)], capture_output=True, text=True)
    elapsed = time.monotonic() - started
    assert result.returncode == expect_status, result.stdout + result.stderr
    return result, elapsed


@pytest.fixture(scope="module")
def browser():
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.fail(f"{CHROMIUM} and {CHROMEDRIVER} are needed (Debian packages chromium chromium-driver; CI/test installs them)")
    options = Options()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1600,1300"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(180)
    yield driver
    driver.quit()


def open_page(driver, path, scripted=True):
    """Loads a page and waits for its script (the index has none); returns the seconds from
    navigation to ready."""
    started = time.monotonic()
    driver.get(path.as_uri())
    ready = "return document.body.dataset.ready === 'true'" if scripted else "return document.readyState === 'complete'"
    WebDriverWait(driver, 180).until(lambda d: d.execute_script(ready))
    return time.monotonic() - started


def lanes(driver):
    return driver.execute_script("""
        return Array.from(document.querySelectorAll('.lane-label')).map(function (e) {
          return {name: e.dataset.name, kind: e.dataset.kind, core: e.dataset.core || null,
                  category: e.dataset.category || null, count: Number(e.dataset.count), kinds: JSON.parse(e.dataset.kinds)};
        });""")


def check_lanes_match_trace(driver, trace_path, set_path):
    counts, total = trace_counts(trace_path)
    shown = lanes(driver)
    core_lanes = {(l["core"], l["category"]): l["count"] for l in shown if l["kind"] == "core"}
    expected = {k: v for k, v in counts.items() if k != "faults"}
    assert core_lanes == expected, f"page {core_lanes} vs trace {expected}"
    faults = [l for l in shown if l["kind"] == "faults"]
    assert len(faults) == 1 and faults[0]["count"] == counts.get("faults", 0)
    assert sum(l["count"] for l in shown if l["kind"] in ("core", "faults")) == total
    interfaces = {l["name"]: l["count"] for l in shown if l["kind"] == "interface"}
    for index, frames in frames_per_interface(set_path).items():
        matching = [n for n in interfaces if n == f"if {index}" or n.startswith(f"if {index} ")]
        assert len(matching) == 1, f"no lane for interface {index}: {list(interfaces)}"
        assert interfaces[matching[0]] == frames
    assert shown[0]["kind"] == "interface"
    return shown


def expectations(driver):
    return driver.execute_script("""
        return Array.from(document.querySelectorAll('li.expectation')).map(function (e) {
          return {passed: e.dataset.passed === 'true', evidence: Number(e.dataset.evidence), message: e.querySelector('.message').textContent};
        });""")


def manifest_expectations(set_path):
    return yaml.safe_load((set_path / "manifest.yaml").read_text()).get("expectations") or []


def set_page(report):
    # The set's own page; its fault scenarios (SET / SCENARIO) have pages of their own, "set-SET___SCENARIO.html".
    pages = sorted(p for p in report.glob("set-*.html") if "___" not in p.name)
    assert len(pages) == 1, pages
    return pages[0]


def screenshot(driver, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    height = driver.execute_script("return document.body.scrollHeight")
    driver.set_window_size(1600, min(max(height + 40, 900), 4000))
    driver.save_screenshot(str(path))
    driver.set_window_size(1600, 1300)
    assert path.stat().st_size > 10_000
    print(f"screenshot: {path}")


def test_ciq_clean(browser, tmp_path):
    set_path = ROOT / "Captures" / "ciq-clean"
    report, trace = tmp_path / "report", tmp_path / "trace.jsonl"
    replay([set_path, "--html", report, "--trace", trace], 0)
    page = set_page(report)
    assert b"http://" not in page.read_bytes() and b"https://" not in page.read_bytes(), "the page fetches nothing"

    open_page(browser, report / "index.html", scripted=False)
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.set-row")
    # The set, then each of its fault scenarios (docs/faults.md), each a result of its own.
    scenarios = [s["name"] for s in yaml.safe_load((set_path / "manifest.yaml").read_text())["scenarios"]]
    assert [r.get_attribute("data-set") for r in rows] == ["ciq-clean"] + [f"ciq-clean / {name}" for name in scenarios]
    assert all(r.get_attribute("data-passed") == "true" for r in rows)

    # A scenario's page draws its injected faults in the faults lane.
    open_page(browser, report / "set-ciq-clean___window-ack-lost.html")
    faults = [l for l in lanes(browser) if l["kind"] == "faults"]
    assert len(faults) == 1 and faults[0]["count"] == 1, faults

    seconds = open_page(browser, page)
    shown = check_lanes_match_trace(browser, trace, set_path)
    assert {l["core"] for l in shown if l["kind"] == "core"} == {"messaging"}
    results = expectations(browser)
    assert len(results) == len(manifest_expectations(set_path)) and all(r["passed"] for r in results)
    assert browser.find_element(By.ID, "verdict").text == "PASS"
    plots = browser.execute_script("return Array.from(document.querySelectorAll('.plot')).map(p => p.dataset.title)")
    assert any("progress" in p for p in plots) and any("latency" in p for p in plots), plots
    print(f"ciq-clean: page {page.stat().st_size} bytes, loaded and drawn in {seconds:.2f} s")
    screenshot(browser, "ciq-clean.png")


def click_and_check(driver, item):
    """Clicks an expectation; its events are highlighted, in view, and the timeline is on screen."""
    driver.execute_script("arguments[0].scrollIntoView()", item)
    item.click()
    timeline = driver.find_element(By.ID, "timeline")
    highlighted = int(timeline.get_attribute("data-highlighted"))
    visible = int(timeline.get_attribute("data-highlighted-visible"))
    assert highlighted == int(item.get_attribute("data-evidence")) and highlighted > 0
    assert visible == highlighted, "every highlighted event is inside the view"
    assert "selected" in item.get_attribute("class")
    top = driver.execute_script("return document.getElementById('timeline').getBoundingClientRect().top")
    assert 0 <= top < 200, f"the timeline was scrolled to (top {top})"
    return highlighted


def test_failing_run_with_a_smaller_window(browser, tmp_path):
    """ciq-clean with window 4 and no frame matching: its baseline differs and its checks fail."""
    set_path = ROOT / "Captures" / "ciq-clean"
    report, trace = tmp_path / "report", tmp_path / "trace.jsonl"
    result, _ = replay([set_path, "--messaging-window-size", "4", "--frame-matching", "off", "--html", report, "--trace", trace], 1)
    page = set_page(report)
    open_page(browser, page)
    check_lanes_match_trace(browser, trace, set_path)
    assert browser.find_element(By.ID, "verdict").text == "FAIL"
    assert browser.execute_script("return document.querySelectorAll('.baseline[data-passed=false]').length") >= 1
    assert browser.execute_script("return document.querySelector('.lane-label[data-kind=baseline]').dataset.count") != "0"
    failing = browser.find_elements(By.CSS_SELECTOR, "li.expectation[data-passed=false]")
    if failing:
        click_and_check(browser, failing[0])
    screenshot(browser, "ciq-window-4.png")


def test_failing_expectation_links_to_its_events(browser, tmp_path):
    """A changed expectation: ciq-clean copied with an `absent` that its trace contradicts."""
    set_path = tmp_path / "ciq-changed"
    shutil.copytree(ROOT / "Captures" / "ciq-clean", set_path)
    manifest = yaml.safe_load((set_path / "manifest.yaml").read_text())
    manifest["expectations"].append({"type": "absent", "name": "no send ever completes", "core": "messaging", "event": "completion"})
    manifest["expectations"].append({"type": "max_gap", "name": "progress never pauses for 50 ms", "core": "messaging", "event": "progress", "max_ms": 50})
    (set_path / "manifest.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    report, trace = tmp_path / "report", tmp_path / "trace.jsonl"
    replay([set_path, "--html", report, "--trace", trace], 1)
    open_page(browser, set_page(report))
    check_lanes_match_trace(browser, trace, set_path)
    results = expectations(browser)
    assert len(results) == len(manifest["expectations"])
    assert [r["passed"] for r in results[-2:]] == [False, False]
    items = browser.find_elements(By.CSS_SELECTOR, "li.expectation")
    completions = sum(1 for line in open(trace) if '"event":"completion"' in line)
    assert click_and_check(browser, items[-2]) == completions, "absent links every offending completion"
    screenshot(browser, "ciq-changed-absent.png")
    assert click_and_check(browser, items[-1]) == 2, "max_gap links the two ends of its largest gap"
    screenshot(browser, "ciq-changed-max-gap.png")


def test_one_hour_plugin_set(browser, tmp_path):
    set_path = tmp_path / "plugin-hour"
    started = time.monotonic()
    subprocess.run([BENCH, "gen-plugin-session", str(set_path)], check=True, capture_output=True)
    generated = time.monotonic() - started
    report, trace = tmp_path / "report", tmp_path / "trace.jsonl"
    _, replayed = replay([set_path, "--html", report, "--trace", trace, "--no-verify"], 0)
    page = set_page(report)
    seconds = open_page(browser, page)
    shown = check_lanes_match_trace(browser, trace, set_path)
    _, total = trace_counts(trace)
    assert total > 400_000
    render_ms = float(browser.execute_script("return document.body.dataset.renderMs"))
    size = page.stat().st_size
    print(f"one-hour plugin set: generated in {generated:.1f} s, replayed with --html in {replayed:.1f} s; "
          f"{total} trace events, {sum(l['count'] for l in shown if l['kind'] == 'interface')} frames; "
          f"page {size} bytes ({size / 1e6:.1f} MB); loaded and drawn in {seconds:.2f} s (script {render_ms:.0f} ms)")
    assert size < 60_000_000
    assert seconds < 60
    screenshot(browser, "plugin-hour-whole.png")
    # Zoomed in far enough that single events are drawn: a redraw stays fast.
    timing = browser.execute_script("""
        const b = document.getElementById('zoom-in'); const t = performance.now();
        for (let i = 0; i < 14; i++) b.click();
        return performance.now() - t;""")
    print(f"one-hour plugin set: 14 zoom steps redrawn in {timing:.0f} ms")
    assert timing < 5000
    screenshot(browser, "plugin-hour-zoomed.png")
