#!/usr/bin/env bash
# Installs what the CAF port needs: Debian's libcaf-dev (CAF 0.17.6), a C++ compiler and
# cmake. Non-interactive; runs as root, or through `sudo -n` (never prompts).
set -euo pipefail

as_root() {
    if [[ "$(id -u)" -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo -n "$@"
    else
        echo "install-deps.sh: need root or password-less sudo to run: $*" >&2
        exit 1
    fi
}

if dpkg -s libcaf-dev >/dev/null 2>&1 && command -v g++ >/dev/null && command -v cmake >/dev/null; then
    echo "libcaf-dev $(dpkg-query -W -f='${Version}' libcaf-dev), g++ and cmake already installed"
    exit 0
fi
as_root apt-get update -qq </dev/null
as_root env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends libcaf-dev g++ cmake make </dev/null
echo "installed libcaf-dev $(dpkg-query -W -f='${Version}' libcaf-dev)"
