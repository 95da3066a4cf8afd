#!/usr/bin/env python3
"""Many single runs of several cohort-bench binaries (and optionally a Rust peer's port),
interleaved round after round, reported as medians and quartiles.

Usage:
    python3 crates/cohort-bench/singles.py --rounds N --metric METRIC [--peer BIN
        --peer-args 'ARGS'] BIN... -- BENCH-ARGS...

    BIN          cohort-bench binaries (copies of two commits' builds, say, and a second copy
                 of one of them for the A/A spread)
    BENCH-ARGS   one run's arguments, e.g. `async-ask --threads 1 --timeout-ms 0 --untimed
                 --count 2000000` (`--runs 1 --json` are added)
    --metric     the record's metric to keep, e.g. round_trips_per_s
    --peer       a peer's port (peers/rust/target/release/peer-actix), run with --peer-args;
                 its rate is its JSON line's messages over elapsed_s

Why single runs: on a shared 2-vCPU VM a one-thread scenario runs in two speeds, run by run
with the same binary, so a median over a few runs of each side can land in different modes;
many short runs, interleaved, give both sides the same mix. Quartiles show the spread.
"""
import json
import statistics
import subprocess
import sys


def usage(msg):
    sys.exit(f"singles.py: {msg}\n{__doc__}")


def parse(argv):
    if "--" not in argv:
        usage("missing `--` before the bench arguments")
    cut = argv.index("--")
    opts, bench = argv[:cut], argv[cut + 1:]
    rounds, metric, peer, peer_args, bins = 10, None, None, [], []
    i = 0
    while i < len(opts):
        a = opts[i]
        if a in ("--rounds", "--metric", "--peer", "--peer-args"):
            if i + 1 >= len(opts):
                usage(f"{a} needs a value")
            v = opts[i + 1]
            if a == "--rounds":
                rounds = int(v)
            elif a == "--metric":
                metric = v
            elif a == "--peer":
                peer = v
            else:
                peer_args = v.split()
            i += 2
        else:
            bins.append(a)
            i += 1
    if not metric or not bins or not bench:
        usage("give --metric, at least one BIN and the bench arguments")
    return rounds, metric, peer, peer_args, bins, bench


def cohort_value(binary, bench, metric):
    out = subprocess.run([binary, *bench, "--runs", "1", "--json"], capture_output=True,
                         text=True, check=False).stdout
    for line in out.splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if rec.get("metric") == metric:
            return rec["value"]
    return None


def peer_value(binary, args):
    out = subprocess.run([binary, *args], capture_output=True, text=True, check=False).stdout
    lines = out.strip().splitlines()
    if not lines:
        return None
    rec = json.loads(lines[-1])
    return rec["messages"] / rec["elapsed_s"] if rec.get("ok") else None


def main():
    rounds, metric, peer, peer_args, bins, bench = parse(sys.argv[1:])
    sides = bins + ([peer] if peer else [])
    values = {s: [] for s in sides}
    for r in range(rounds):
        print(f"singles.py: round {r + 1}/{rounds}", file=sys.stderr)
        for s in sides:
            v = peer_value(s, peer_args) if s == peer else cohort_value(s, bench, metric)
            if v is not None:
                values[s].append(v)
    medians = {}
    for s in sides:
        v = sorted(values[s])
        if len(v) < 2:
            print(f"{s}: {len(v)} runs, too few")
            continue
        q1, _, q3 = statistics.quantiles(v, n=4)
        medians[s] = statistics.median(v)
        print(f"{s:40s} median {medians[s]:12.4g}  q1 {q1:12.4g}  q3 {q3:12.4g}  "
              f"min {v[0]:12.4g}  max {v[-1]:12.4g}  ({len(v)} runs)")
    first = bins[0]
    for s in sides:
        if s != first and s in medians and first in medians:
            print(f"{s} / {first}: x{medians[s] / medians[first]:.3f} by median")


if __name__ == "__main__":
    main()
