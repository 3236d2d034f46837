# Shared by Harness/tether, CI/test and CI/bench/lib.sh (sourced, not run): which Debian packages
# Tether needs, and one way to install the missing ones.

# What building Tether needs: libpcap and libbluetooth headers (LiveCapture), pkg-config to find
# them, SQLite (GRDB).
tether_build_packages=(libpcap-dev libbluetooth-dev pkg-config libsqlite3-dev)

# package_present PACKAGE: dpkg has it, or (for the few tools that also come from elsewhere, such
# as a pyenv python3) the tool it provides already works.
package_present() {
    dpkg -s "$1" >/dev/null 2>&1 && return 0
    case "$1" in
        python3) command -v python3 >/dev/null 2>&1 ;;
        python3-pip) python3 -m pip --version >/dev/null 2>&1 ;;
        tshark) command -v tshark >/dev/null 2>&1 ;;
        *) return 1 ;;
    esac
}

# install_missing PACKAGE...: installs with apt-get (sudo when not root) the packages that are not
# present; prints what it installs on stderr. Does nothing on a machine without dpkg.
install_missing() {
    command -v dpkg >/dev/null 2>&1 || return 0
    local missing=() package
    for package in "$@"; do
        package_present "$package" || missing+=("$package")
    done
    ((${#missing[@]} == 0)) && return 0
    local sudo=()
    [[ "$(id -u)" -ne 0 ]] && sudo=(sudo)
    echo "installing: ${missing[*]}" >&2
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
}
