#!/usr/bin/env python3
"""Reads JUnit files with junitparser (a reader that is not layout-gate's) and checks what CI
systems need of them: every testsuite has name, tests, failures, errors, skipped, time,
timestamp and hostname, with counts that match its testcases; every testcase has name,
classname (without dots, which Jenkins would split into packages) and time, and a name that
carries no provenance; every failure and error has message and type; every testsuite's
system-out names an evidence folder that holds evidence.json.

Usage: check-junit.py FILE...   (exit 0: all good; 1: problems, one per line on stderr)
Prints one line per file on stdout: path, suites, testcases, failures, errors.
"""
import os
import sys

try:
    from junitparser import Error, Failure, JUnitXml, TestSuite
except ImportError:
    sys.exit("junitparser is not installed: run scripts/install-report-tools.sh")

SUITE_ATTRS = ("name", "tests", "failures", "errors", "skipped", "time", "timestamp", "hostname")
CASE_ATTRS = ("name", "classname", "time")


def check(path):
    problems = []
    xml = JUnitXml.fromfile(path)
    suites = [xml] if isinstance(xml, TestSuite) else list(xml)
    if not suites:
        problems.append(f"{path}: no testsuite")
    totals = [0, 0, 0]
    for suite in suites:
        where = f"{path}: testsuite {suite.name!r}"
        for a in SUITE_ATTRS:
            if suite._elem.get(a) in (None, ""):
                problems.append(f"{where}: no {a} attribute")
        cases = list(suite)
        failures = errors = 0
        for case in cases:
            cw = f"{where}: testcase {case.name!r}"
            for a in CASE_ATTRS:
                if case._elem.get(a) in (None, ""):
                    problems.append(f"{cw}: no {a} attribute")
            if "." in (case.classname or ""):
                problems.append(f"{cw}: classname {case.classname!r} has dots")
            if "[" in (case.name or "") or "(" in (case.name or "").split(" ")[0]:
                problems.append(f"{cw}: the name carries more than aspect and subject")
            for r in case.result:
                if isinstance(r, (Failure, Error)):
                    failures += isinstance(r, Failure)
                    errors += isinstance(r, Error)
                    for a in ("message", "type"):
                        if r._elem.get(a) in (None, ""):
                            problems.append(f"{cw}: {r._tag} without {a}")
        if suite.tests != len(cases):
            problems.append(f"{where}: tests={suite.tests} but {len(cases)} testcases")
        if suite.failures != failures or suite.errors != errors:
            problems.append(f"{where}: failures={suite.failures} errors={suite.errors}, counted {failures} and {errors}")
        out = suite._elem.find("system-out")
        text = out.text if out is not None and out.text else ""
        folder = next((l.split(": ", 1)[1] for l in text.splitlines() if l.startswith("evidence folder: ")), None)
        if folder is None:
            problems.append(f"{where}: system-out does not name the evidence folder")
        elif not os.path.isfile(os.path.join(folder, "evidence.json")):
            problems.append(f"{where}: system-out names {folder}, which holds no evidence.json")
        totals[0] += len(cases)
        totals[1] += failures
        totals[2] += errors
    print(f"{path}: {len(suites)} suites, {totals[0]} testcases, {totals[1]} failures, {totals[2]} errors")
    return problems


def main(paths):
    if not paths:
        sys.exit(__doc__)
    problems = []
    for p in paths:
        try:
            problems += check(p)
        except Exception as e:  # a file junitparser cannot read is the finding
            problems.append(f"{p}: junitparser cannot read it: {e}")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
