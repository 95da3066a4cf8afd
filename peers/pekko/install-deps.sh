#!/usr/bin/env bash
# Installs what the Pekko port needs: a JDK (Debian's openjdk-17-jdk-headless) and Maven, when
# either is missing. Non-interactive; runs as root, or through `sudo -n` (never prompts). Pekko
# itself comes from Maven Central on the port's first build (mvn package).
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

if command -v java >/dev/null && command -v javac >/dev/null && command -v mvn >/dev/null; then
    echo "$(java -version 2>&1 | head -1 | sed 's/\x1b\[[0-9;]*m//g') and $(mvn -B --version 2>/dev/null | head -1 | sed 's/\x1b\[[0-9;]*m//g') already installed"
    exit 0
fi
as_root apt-get update -qq </dev/null
as_root env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends openjdk-17-jdk-headless maven </dev/null
echo "installed $(java -version 2>&1 | head -1 | sed 's/\x1b\[[0-9;]*m//g') and $(mvn -B --version 2>/dev/null | head -1 | sed 's/\x1b\[[0-9;]*m//g')"
