#!/usr/bin/env bash
# Builds one peer port, with the commands `cohort-bench compare` runs (after it has checked
# that the port's toolchain is installed) and CI's background build runs: they live here once.
#   bash peers/build.sh rust PROFILE   the Rust peers (actix, kameo, ractor), cargo profile
#                                      PROFILE (release or ci), into rust/target/PROFILE/
#   bash peers/build.sh caf            the CAF port with cmake, into caf/build/peer-caf
#   bash peers/build.sh protoactor     the Proto.Actor port with go build, into
#                                      protoactor/build/peer-protoactor
#   bash peers/build.sh pekko          the Pekko port's jar with Maven, into
#                                      pekko/target/peer-pekko.jar
# Each build is a no-op when up to date. Exit status: the build's; 2 on bad usage.
set -euo pipefail

dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() {
    echo "usage: bash peers/build.sh rust PROFILE | caf | protoactor | pekko" >&2
    exit 2
}

case "${1:-}" in
    rust)
        [[ $# -eq 2 ]] || usage
        # The caller's RUSTFLAGS (cohort's own build settings) are not the peers'.
        env -u RUSTFLAGS "${CARGO:-cargo}" build --profile "$2" \
            --manifest-path "$dir/rust/Cargo.toml"
        ;;
    caf)
        [[ $# -eq 1 ]] || usage
        cmake -S "$dir/caf" -B "$dir/caf/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
        cmake --build "$dir/caf/build"
        ;;
    protoactor)
        [[ $# -eq 1 ]] || usage
        cd "$dir/protoactor"
        go build -o build/peer-protoactor .
        ;;
    pekko)
        [[ $# -eq 1 ]] || usage
        # Offline first: after the first build the local repository usually has every
        # dependency; online only when it lacks one.
        mvn -B -q -o package -f "$dir/pekko/pom.xml" >/dev/null 2>&1 \
            || mvn -B -q package -f "$dir/pekko/pom.xml"
        ;;
    *)
        usage
        ;;
esac
