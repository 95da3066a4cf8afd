#!/usr/bin/env bash
# Installs what the Proto.Actor port needs: a Go toolchain of at least 1.21 (go.mod's `go`
# line; protoactor-go needs it). Uses the `go` already on PATH when it is recent enough,
# else Debian's golang-go. Non-interactive; runs as root, or through `sudo -n` (never prompts).
# The modules themselves come from the Go module proxy at the first `go build`.
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

# Succeeds when `go` is on PATH and at least 1.21.
recent_go() {
    command -v go >/dev/null || return 1
    local v
    v=$(go env GOVERSION 2>/dev/null) || return 1
    v=${v#go}
    local major=${v%%.*} rest=${v#*.}
    local minor=${rest%%[!0-9]*}
    [[ "$major" -gt 1 || ( "$major" -eq 1 && "$minor" -ge 21 ) ]]
}

if recent_go; then
    echo "$(go version) already installed"
    exit 0
fi
if ! command -v go >/dev/null; then
    as_root apt-get update -qq </dev/null
    as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends golang-go ca-certificates </dev/null
fi
if recent_go; then
    echo "installed $(go version)"
    exit 0
fi
echo "install-deps.sh: $(go version 2>/dev/null || echo 'no go') is older than 1.21, which" \
    "protoactor-go needs; install a newer Go (Debian bookworm: apt-get install -t" \
    "bookworm-backports golang-go, after enabling bookworm-backports)" >&2
exit 1
