#!/usr/bin/env python3
"""Turns `cohort-bench compare --json` output into the markdown table of docs/PERFORMANCE.md.

    cohort-bench compare --quick --json > compare.json
    python3 scripts/compare-table.py compare.json

One row per framework and case, cohort first: median, min-max and cohort's advantage (its rate
over the peer's, or the peer's latency over cohort's). Rates in millions (M), latencies in
ns/µs. A peer that failed or was skipped is left out of its case.
"""

import json
import sys


def rate(v):
    m = v / 1e6
    return f"{m:.2f} M" if m >= 1 else f"{m:.3f} M"


def latency(ns):
    if ns >= 1000:
        return f"{ns / 1000:.1f} µs"
    return f"{ns:.0f} ns"


def main(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    cases = {}
    order = []
    for r in rows:
        key = (r["scenario"], r["metric"])
        if key not in cases:
            cases[key] = []
            order.append(key)
        cases[key].append(r)
    print("| scenario | framework | median | min-max | cohort's advantage |")
    print("|---|---|---:|---:|---:|")
    for key in order:
        group = [r for r in cases[key] if r.get("ok", True)]
        if not group or group[0]["variant"] != "cohort":
            continue
        lower = key[1].startswith("latency")
        fmt = latency if lower else rate
        case = group[0]["params"].get("case", key[0])
        for k, r in enumerate(group):
            name = case if k == 0 else ""
            adv = "—"
            if k > 0:
                ratio = r["params"].get("ratio_to_cohort")
                adv = f"**{ratio:.2f}x**" if ratio else "—"
            span = f"{fmt(r['min'])}-{fmt(r['max'])}"
            print(f"| {name} | {r['variant']} | {fmt(r['value'])} | {span} | {adv} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 scripts/compare-table.py COMPARE.json")
    main(sys.argv[1])
