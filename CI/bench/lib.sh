# Shared by the CI/bench scripts (sourced, not run). Builds what a benchmark needs, once:
# the C reference programs into CI/bench/out/ and Tether's products in release mode under a scratch
# path of their own (.build-bench), so a benchmark never disturbs a debug build.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BENCH="$ROOT/CI/bench"
OUT="$BENCH/out"
SCRATCH="${TETHER_BENCH_SCRATCH:-$ROOT/.build-bench}"
# The package to build from: this checkout, unless pointed at a copy (useful while the checkout is
# being edited, since SwiftPM refuses a source file modified during the build).
PACKAGE="${TETHER_BENCH_PACKAGE:-$ROOT}"
mkdir -p "$OUT"

. "$ROOT/Harness/packages.sh"

# need TOOL APT_PACKAGE: installs APT_PACKAGE when TOOL is missing (these benchmarks are run by hand
# as root or with sudo on a Debian machine like CI's).
need() {
    command -v "$1" >/dev/null 2>&1 || install_missing "$2"
}

# build_c NAME: CI/bench/c/NAME.c → CI/bench/out/NAME, rebuilt when the source is newer.
build_c() {
    local src="$BENCH/c/$1.c" bin="$OUT/$1"
    if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
        [ -e /usr/include/pcap/pcap.h ] || need pcap-config libpcap-dev
        cc -O2 -Wall -o "$bin" "$src" -lpcap
    fi
}

# build_swift PRODUCT: release build of one product; sets SWIFT_BIN to the products' folder.
# With TETHER_BENCH_BIN=FOLDER nothing is built and that folder's binaries are timed instead (a
# build of an earlier commit kept aside, for a before/after table from the same script).
build_swift() {
    if [ -n "${TETHER_BENCH_BIN:-}" ]; then
        echo "using $1 from $TETHER_BENCH_BIN (TETHER_BENCH_BIN; not rebuilt)" >&2
        SWIFT_BIN=$TETHER_BENCH_BIN
        return
    fi
    echo "building $1 (release, scratch path $SCRATCH)…" >&2
    (cd "$PACKAGE" && swift build -c release --scratch-path "$SCRATCH" --product "$1" 2>&1 \
        | { grep -v "^warning: 'main': Source files for target" >&2 || true; })
    SWIFT_BIN=$(cd "$PACKAGE" && swift build -c release --scratch-path "$SCRATCH" --show-bin-path)
}

# field KEY LINE: the value of KEY=value in a line of key=value pairs.
field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }

# max_rss_kb FILE: "Maximum resident set size" from a /usr/bin/time -v report.
max_rss_kb() { sed -n 's/.*Maximum resident set size (kbytes): //p' "$1"; }

# cpu_note: one line about the machine, printed under every table (figures depend on it).
cpu_note() {
    local model
    model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
    echo "machine: $(nproc) CPU(s), ${model:-unknown CPU}; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
}
