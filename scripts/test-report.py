#!/usr/bin/env python3
"""What a `swift test` log says, for people: the tests that failed (with their first failure
line) and the slowest ones — or, given the logs of several runs, how often each test failed.

    test-report.py LOG                 failed tests, then the slowest 10
    test-report.py --runs LOG LOG…     per test: failures out of runs, and its first failure line

Reads Swift Testing's console lines ("✔ Test name() passed after 1.2 seconds.", "✘ Test name()
recorded an issue at File.swift:12:3: …", "✘ Test name() failed after …")."""
import re
import sys

PASSED = re.compile(r"^✔ Test (?!run with)(.+?) (?:with \d+ test cases? )?passed after ([0-9.]+) seconds")
FAILED = re.compile(r"^✘ Test (?!run with)(.+?) (?:with \d+ test cases? )?failed after ([0-9.]+) seconds")
ISSUE = re.compile(r"^✘ Test (.+?) recorded an issue(?: with \d+ arguments?.*?)? at (\S+): (.*)$")
CAUSE = re.compile(r"^↳ (.*)$")
RUN = re.compile(r"Test run with (\d+) tests? in (\d+) suites? (passed|failed) after ([0-9.]+) seconds")


def read(path):
    """{test: seconds}, {test: first failure line}, the run's summary line (or None)."""
    durations, failures, summary = {}, {}, None
    last_issue = None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if m := PASSED.match(line):
                durations[m.group(1)] = float(m.group(2))
            elif m := FAILED.match(line):
                durations[m.group(1)] = float(m.group(2))
                failures.setdefault(m.group(1), "(failed)")
            elif m := ISSUE.match(line):
                name = m.group(1)
                last_issue = name
                failures.setdefault(name, f"{m.group(2)}: {m.group(3)}")
            elif (m := CAUSE.match(line)) and last_issue and not m.group(1).startswith("///") and "↳" not in failures.get(last_issue, ""):
                failures[last_issue] += f" ↳ {m.group(1)}"
                last_issue = None
            elif m := RUN.search(line):
                summary = m.group(0)
    return durations, failures, summary


def one(path):
    durations, failures, summary = read(path)
    if failures:
        print(f"== {len(failures)} failed:")
        for name, first in sorted(failures.items()):
            print(f"  {name}\n      {first[:400]}")
    print("== the slowest 10 tests (a heavy test's time includes its wait for a slot: docs/testing.md):")
    for name, seconds in sorted(durations.items(), key=lambda kv: -kv[1])[:10]:
        print(f"  {seconds:7.1f} s  {name}")
    if summary:
        print(f"== {summary}")


def runs(paths):
    counts, firsts, totals = {}, {}, []
    for path in paths:
        durations, failures, summary = read(path)
        totals.append((path, summary or "(no summary: the run did not finish)", len(failures)))
        for name, first in failures.items():
            counts[name] = counts.get(name, 0) + 1
            firsts.setdefault(name, first)
    print("| run | result | failed tests |")
    print("|---|---|---|")
    for path, summary, failed in totals:
        print(f"| {path} | {summary} | {failed} |")
    if not counts:
        print(f"== no test failed in {len(paths)} runs")
        return
    print(f"== tests that failed, out of {len(paths)} runs:")
    for name, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {count}/{len(paths)}  {name}\n      {firsts[name][:400]}")


def main(argv):
    if len(argv) >= 2 and argv[0] == "--runs":
        runs(argv[1:])
    elif len(argv) == 1:
        one(argv[0])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
