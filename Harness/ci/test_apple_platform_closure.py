"""What the SDK facades and the Swift test API link, read from the package's own manifest
(`swift package dump-package`): none of the targets that open sockets or link libpcap, BlueZ,
NIO's POSIX layer or SQLite, so TetherTesting, TetherConnectIQ, TetherWatchConnectivity and TetherCoreBluetooth can
be built for iOS, watchOS and macOS (docs/app-in-the-loop.md says what was compiled where)."""

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Targets and products that need Linux or a socket: the live hosts, the capture sources, the stores.
LIVE_ONLY = {"LiveCapture", "LiveHosts", "NIOPosix", "NIOCore", "GRDB", "CPcap", "CBluetooth", "IngestStore",
             "StoreFiles", "CDatagramBatch", "IngestLive", "MessagingLive", "SessionLive", "WidgetLive", "TetherLive"}


@pytest.fixture(scope="module")
def manifest() -> dict:
    text = subprocess.run(["swift", "package", "dump-package"], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return json.loads(text)


def dependency_names(target: dict) -> list[str]:
    names = []
    for dependency in target.get("dependencies", []):
        for kind, value in dependency.items():
            # byName / target: [name, condition]; product: [name, package, moduleAliases, condition]
            names.append(value[0])
    return names


def closure(manifest: dict, name: str) -> set[str]:
    targets = {target["name"]: target for target in manifest["targets"]}
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        if current in targets:
            todo.extend(dependency_names(targets[current]))
    return seen


@pytest.mark.parametrize("library", ["TetherTesting", "TetherConnectIQ", "TetherWatchConnectivity", "TetherCoreBluetooth"])
def test_library_is_a_product(manifest: dict, library: str) -> None:
    products = {product["name"]: product for product in manifest["products"]}
    assert library in products, f"{library} is not a product of Package.swift"
    assert "library" in products[library]["type"]


@pytest.mark.parametrize("library", ["TetherTesting", "TetherConnectIQ", "TetherWatchConnectivity", "TetherCoreBluetooth"])
def test_library_links_no_live_target(manifest: dict, library: str) -> None:
    linked = closure(manifest, library)
    assert len(linked) > 3, f"the closure of {library} is suspiciously small: {sorted(linked)}"
    assert not (linked & LIVE_ONLY), f"{library} links {sorted(linked & LIVE_ONLY)}"


def test_apple_platforms_are_declared(manifest: dict) -> None:
    platforms = {platform["platformName"]: platform["version"] for platform in manifest.get("platforms", [])}
    assert platforms.get("ios") == "18.0"
    assert platforms.get("watchos") == "11.0"
    assert platforms.get("macos") == "15.0"
