"""JUnit XML for CI systems: one test case per deployment x machine x requirement.

Why JUnit: GitHub Actions, GitLab and Jenkins all render it; a failed requirement
shows up as a failed test with the measured value and the bound in its message.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass

from .escape import no_commands


@dataclass(frozen=True)
class Case:
    suite: str  # deployment name
    name: str  # "<machine>: <requirement>"
    passed: bool
    message: str = ""
    skipped: bool = False


# Characters XML 1.0 cannot hold even escaped (C0 controls but tab/LF/CR, lone surrogates, U+FFFE/U+FFFF):
# ElementTree writes them raw and no parser accepts the document.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """`text` with every character XML cannot carry written as a Python escape (`\\x1b`), so the document parses."""
    return _NOT_XML.sub(lambda m: repr(m.group())[1:-1], text)


def render(cases: Sequence[Case], *, name: str = "planner check") -> str:
    """Cases -> a <testsuites> document, one <testsuite> per deployment; names and messages made XML-safe."""
    cases = [Case(xml_text(c.suite), xml_text(c.name), c.passed, xml_text(c.message), c.skipped) for c in cases]
    name = xml_text(name)
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
    # A message's own lines sit in text nodes: none may start `::` should the file be printed in CI.
    xml = no_commands(ET.tostring(root, encoding="unicode"), "&#58;")
    return '<?xml version="1.0" encoding="utf-8"?>\n' + xml + "\n"
