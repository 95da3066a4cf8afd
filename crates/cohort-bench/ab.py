#!/usr/bin/env python3
r"""Interleaved A/B runs of two cohort-bench binaries, with an optional A/A run for the noise.

Usage:
    python3 crates/cohort-bench/ab.py OLD NEW [options] -- BENCH-ARGS...

    OLD, NEW      two cohort-bench binaries (for example target/release/cohort-bench of two
                  commits, each copied somewhere before the other is built)
    BENCH-ARGS    what each run gets, for example `quick --runs 3` or `thread-ring --hops 1000000`
                  (`--json` is added when missing)

Options:
    --rounds N    rounds, default 3; a round runs OLD then NEW (then the A/A copy)
    --aa          also run a second copy of OLD in every round: the A/A spread of a row is how
                  far the copy's median lies from OLD's, and a row is flagged only when NEW is
                  worse than OLD by more than the threshold beyond that spread (each side runs
                  from a fresh copy of its binary, so the three files are alike)
    --threshold P percent, default 3
    --out DIR     keep every run's JSON lines there (old-1.json, new-1.json, aa-1.json, ...)
    --peer BIN    also run a peer's port in every round (peers/rust/target/release/peer-actix,
                  say) with --peer-args, and print each side's rate over the peer's; the peer's
                  rate is its JSON line's `messages` over `elapsed_s`
    --peer-args A the peer's arguments, one string (`'async-ask-one-thread --count 2000000
                  --timed 0'`)
    --verbose     pass the runs' stderr (progress bars) through

With `--runs 1` in BENCH-ARGS every round is one run of each side: on this project's 2-vCPU
VM a one-thread scenario runs at one of two speeds, run by run, so many short rounds give
both sides the same mix where a median of three runs per side can compare different modes.

Example, from the workspace root (build each side and copy its binary away, since the next
build overwrites target/release/cohort-bench):
    git switch --detach OLD-COMMIT && cargo build --release -p cohort-bench
    cp target/release/cohort-bench /tmp/cohort-bench-old
    git switch - && cargo build --release -p cohort-bench
    cp target/release/cohort-bench /tmp/cohort-bench-new
    python3 crates/cohort-bench/ab.py /tmp/cohort-bench-old /tmp/cohort-bench-new --aa \
        --out /tmp/ab-quick -- quick --runs 3
    python3 crates/cohort-bench/ab.py /tmp/cohort-bench-old /tmp/cohort-bench-new --aa \
        -- compare --quick
(`compare` prints the same records, one per framework, so its peers' rows act as a further
A/A check: their binaries are the same on both sides.)

Runs go OLD, NEW, OLD, NEW ... (with --aa: OLD, NEW, COPY, OLD, NEW, COPY ...), so load on the
machine falls on both sides alike. Each run prints one record per (scenario, variant, metric)
whose `value` is the median of its `--runs`; per row this prints the median over the rounds of
each side, NEW/OLD, and the row's direction: `_per_s` is higher-is-better; `_s`, `_ms`, `_us`,
`_ns...`, `..._bytes...` and `_mib` are lower-is-better; any other metric (ratios, percentages,
counts) is shown but never flagged. `worse %` is how much worse NEW is in that direction.

Exit status: 0, or 1 when a row is flagged or is measured on one side only (failed or missing
on the other), or 2 on bad usage or when a binary printed no record at all. A row that fails
on both sides (with `compare`, a peer that is not installed) is listed but changes nothing.

Only the standard library: python3 3.8 or later.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HIGHER = "higher"
LOWER = "lower"


def direction(metric):
    """Which way is better for `metric`, or None when neither (ratios, percentages, counts)."""
    if metric.endswith("_per_s"):
        return HIGHER
    lower_ends = ("_s", "_ms", "_us", "_ns", "_bytes", "_mib")
    if metric.endswith(lower_ends) or "_ns_" in metric or "_bytes_" in metric:
        return LOWER
    return None


def worse_pct(metric, old, new):
    """How much worse NEW is than OLD in the metric's direction, in percent (negative: better)."""
    d = direction(metric)
    if d is None or old == 0 or new == 0:
        return None
    if d == HIGHER:
        return (old / new - 1.0) * 100.0
    return (new / old - 1.0) * 100.0


def run_once(binary, bench_args, verbose):
    """Runs one binary; returns its records keyed by (scenario, variant, metric, occurrence)."""
    cmd = [binary] + bench_args
    proc = subprocess.run(
        cmd,
        stdout=subprocess.PIPE,
        stderr=None if verbose else subprocess.PIPE,
        universal_newlines=True,
    )
    if proc.returncode != 0:
        print("ab.py: `{}` exited with {}".format(" ".join(cmd), proc.returncode), file=sys.stderr)
        if proc.stderr:
            print("\n".join(proc.stderr.splitlines()[-10:]), file=sys.stderr)
    records = {}
    seen = {}
    for line in proc.stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        base = (r["scenario"], r["variant"], r["metric"])
        n = seen.get(base, 0)
        seen[base] = n + 1
        records[base + (n,)] = r
    if not records and proc.returncode != 0:
        sys.exit(2)
    return proc.stdout, records


def main():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="%(prog)s OLD NEW [--rounds N] [--aa] [--threshold P] [--out DIR] [--peer BIN "
              "--peer-args A] -- BENCH-ARGS...",
    )
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--aa", action="store_true")
    ap.add_argument("--threshold", type=float, default=3.0)
    ap.add_argument("--out")
    ap.add_argument("--peer")
    ap.add_argument("--peer-args", default="")
    ap.add_argument("--verbose", action="store_true")
    argv = sys.argv[1:]
    opts = argv[: argv.index("--")] if "--" in argv else argv
    if "-h" in opts or "--help" in opts:
        ap.print_help()
        return 0
    if "--" not in argv:
        ap.error("give the bench arguments after `--`, for example: -- quick --runs 3")
    split = argv.index("--")
    args = ap.parse_args(argv[:split])
    bench_args = argv[split + 1:]
    if not bench_args:
        ap.error("no bench arguments after `--`")
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    if "--json" not in bench_args:
        bench_args = bench_args + ["--json"]
    for b in (args.old, args.new):
        if not (os.path.isfile(b) and os.access(b, os.X_OK)):
            ap.error("{} is not an executable file".format(b))
    if args.out:
        os.makedirs(args.out, exist_ok=True)

    tmp = tempfile.mkdtemp(prefix="cohort-ab-")
    try:
        # Every side runs from a copy written here, the same way: the kernel maps a binary's
        # code by the page-cache pieces its file was written or read back in, so one binary
        # in two files can show a different resident size (peak RSS rows of a few MiB moved
        # by about 1 MiB between a file and its fresh copy).
        sides = []
        for name, path in [("old", args.old), ("new", args.new)] + (
            [("aa", args.old)] if args.aa else []
        ):
            copy = os.path.join(tmp, "cohort-bench-" + name)
            shutil.copy2(path, copy)
            sides.append((name, copy))
        values = {name: {} for name, _ in sides}
        failed = set()
        order = []
        peer_rates = []
        for rnd in range(1, args.rounds + 1):
            if args.peer:
                rate = run_peer(args.peer, args.peer_args.split(), args.verbose)
                if rate is not None:
                    peer_rates.append(rate)
            for name, binary in sides:
                print("ab.py: round {}/{}: {}".format(rnd, args.rounds, name), file=sys.stderr)
                text, records = run_once(binary, bench_args, args.verbose)
                if args.out:
                    path = os.path.join(args.out, "{}-{}.json".format(name, rnd))
                    with open(path, "w") as f:
                        f.write(text)
                for key, r in records.items():
                    if key not in order:
                        order.append(key)
                    if not r.get("ok", False) or r.get("value") is None:
                        failed.add((name, key))
                        continue
                    values[name].setdefault(key, []).append(float(r["value"]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    status = report(order, values, failed, args)
    if args.peer:
        report_peer(order, values, peer_rates, args)
    return status


def run_peer(binary, peer_args, verbose):
    """Runs a peer's port once; its rate (messages per second), or None if it failed."""
    proc = subprocess.run([binary] + peer_args, stdout=subprocess.PIPE,
                          stderr=None if verbose else subprocess.PIPE, universal_newlines=True)
    lines = [l for l in proc.stdout.splitlines() if l.strip().startswith("{")]
    if proc.returncode != 0 or not lines:
        print("ab.py: the peer `{}` failed".format(" ".join([binary] + peer_args)),
              file=sys.stderr)
        return None
    r = json.loads(lines[-1])
    return r["messages"] / r["elapsed_s"] if r.get("ok") and r.get("elapsed_s") else None


def report_peer(order, values, peer_rates, args):
    """Prints the peer's median rate and each side's rate rows over it."""
    print()
    if not peer_rates:
        print("peer: no successful run")
        return
    peer = statistics.median(peer_rates)
    print("peer {}: median {:.4g}/s over {} runs".format(
        os.path.basename(args.peer), peer, len(peer_rates)))
    for key in order:
        if not key[2].endswith("_per_s"):
            continue
        cells = ["{} x{:.3f}".format(name.upper(), statistics.median(values[name][key]) / peer)
                 for name in values if values[name].get(key)]
        print("  {} / {} / {}: {}".format(key[0], key[1], key[2], ", ".join(cells)))


def report(order, values, failed, args):
    """Prints one line per row and the summary; returns the exit status."""
    head = ["scenario", "variant", "metric", "OLD", "NEW", "NEW/OLD", "better", "worse %"]
    if args.aa:
        head += ["A/A %"]
    head += ["flag"]
    rows = []
    flagged = 0
    missing = 0
    both_failed = 0
    spreads = []
    for key in order:
        scenario, variant, metric, n = key
        old = values["old"].get(key)
        new = values["new"].get(key)
        old_bad = ("old", key) in failed or not old
        new_bad = ("new", key) in failed or not new
        if old_bad or new_bad:
            if old_bad and new_bad:
                both_failed += 1
                why = "FAILED on both sides"
            else:
                missing += 1
                why = "FAILED or MISSING in " + ("OLD" if old_bad else "NEW")
            rows.append([scenario, variant, metric, fmt(old), fmt(new), "", "", ""]
                        + ([""] if args.aa else []) + [why])
            continue
        mo, mn = statistics.median(old), statistics.median(new)
        ratio = mn / mo if mo else float("nan")
        worse = worse_pct(metric, mo, mn)
        spread = 0.0
        cells = []
        if args.aa:
            aa = values["aa"].get(key)
            if aa and mo:
                spread = abs(statistics.median(aa) / mo - 1.0) * 100.0
                cells = ["{:.1f}".format(spread)]
                if direction(metric):
                    spreads.append((spread, scenario, variant, metric))
            else:
                cells = ["?"]
        flag = ""
        if worse is not None and worse > args.threshold + spread:
            flag = "WORSE"
            flagged += 1
        rows.append([
            scenario, variant, metric, fmt(old), fmt(new), "{:.3f}".format(ratio),
            direction(metric) or "-", "" if worse is None else "{:+.1f}".format(worse),
        ] + cells + [flag])
    print_table(head, rows)
    print()
    print("{} rows; {} worse by more than {}%{}; {} failed or missing on one side; {} failed on "
          "both (a peer not installed, say)".format(
              len(rows), flagged, args.threshold,
              " beyond their A/A spread" if args.aa else "", missing, both_failed))
    if spreads:
        spreads.sort(reverse=True)
        print("A/A spread: median {:.1f}%, largest {:.1f}% ({} / {} / {})".format(
            statistics.median(s[0] for s in spreads), *spreads[0]))
    return 1 if flagged or missing else 0


def fmt(samples):
    """The median of one side's samples, in a short form."""
    if not samples:
        return "-"
    return "{:.4g}".format(statistics.median(samples))


def print_table(head, rows):
    widths = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())


if __name__ == "__main__":
    sys.exit(main())
