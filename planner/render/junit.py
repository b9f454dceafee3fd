"""JUnit XML for CI systems: one test case per deployment x machine x requirement.

Why JUnit: GitHub Actions, GitLab and Jenkins all render it; a failed requirement
shows up as a failed test with the measured value and the bound in its message.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    suite: str  # deployment name
    name: str  # "<machine>: <requirement>"
    passed: bool
    message: str = ""
    skipped: bool = False


def render(cases: Sequence[Case], *, name: str = "planner check") -> str:
    """Cases -> a <testsuites> document, one <testsuite> per deployment."""
    root = ET.Element("testsuites", name=name, tests=str(len(cases)),
                      failures=str(sum(not c.passed and not c.skipped for c in cases)),
                      skipped=str(sum(c.skipped for c in cases)))
    suites: dict[str, ET.Element] = {}
    for c in cases:
        suite = suites.get(c.suite)
        if suite is None:
            suite = suites[c.suite] = ET.SubElement(root, "testsuite", name=c.suite)
        case = ET.SubElement(suite, "testcase", classname=c.suite, name=c.name)
        if c.skipped:
            ET.SubElement(case, "skipped", message=c.message)
        elif not c.passed:
            ET.SubElement(case, "failure", message=c.message).text = c.message
        elif c.message:
            ET.SubElement(case, "system-out").text = c.message
    for suite in suites.values():
        cs = suite.findall("testcase")
        suite.set("tests", str(len(cs)))
        suite.set("failures", str(sum(tc.find("failure") is not None for tc in cs)))
        suite.set("skipped", str(sum(tc.find("skipped") is not None for tc in cs)))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
