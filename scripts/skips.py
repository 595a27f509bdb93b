#!/usr/bin/env python3
"""Lists the tests that were skipped and fails on a skip nobody expected.

A skipped test passes in ctest's summary; a system test that skipped because
an install failed, or an equivalence case that skipped on a new backend, would
then read as a pass. This reads the JUnit file of a ctest run (ctest
--output-junit) and finds two kinds of skip:
  - a ctest entry that exited with its SKIP_RETURN_CODE (77), with the line
    it printed;
  - a GoogleTest case skipped inside an entry that passed (GTEST_SKIP), with
    its message.
Each must match a line of the expected list (tests/expected_skips.txt):
    NAME-GLOB    FLAVOUR    REASON-REGEX
where NAME-GLOB matches the ctest entry's name, or "entry/Suite.Case" for a
gtest case, FLAVOUR is the build flavour the skip is expected in (debian,
wheel or any), and REASON-REGEX must be found in what the test printed about
the skip. A skip that matches no line is unexpected: it is printed with its
reason and the exit status is 1 (0 with --allow, which only lists them).

Usage: skips.py JUNIT.xml EXPECTED.txt --flavour debian|wheel [--allow]
"""
import fnmatch
import re
import sys
import xml.etree.ElementTree as ET

# gtest: "[ RUN      ] Suite.Case" ... "[  SKIPPED ] Suite.Case (0 ms)".
RUN = re.compile(r"^\[ RUN      \] (\S+)")
SKIPPED = re.compile(r"^\[  SKIPPED \] (\S+) \(\d+ ms\)")


# Colour codes (gtest colours its output on a terminal, which mpiexec gives
# it), as the text and as ctest's JUnit file writes them.
COLOUR = re.compile(r"(\x1b|\[NON-XML-CHAR-0x1B\])\[[0-9;]*m")


def gtest_skips(out):
    """(case, message) of each gtest case the output shows skipped. The
    message is what was printed from the case's first "[ RUN ]" to its last
    "[ SKIPPED ]": the ranks of one job interleave their lines (a rank's
    message may come after another rank's RUN line, or after another rank's
    SKIPPED line), so the window spans every rank's; what else they printed
    meanwhile comes along."""
    lines = [COLOUR.sub("", l) for l in out.splitlines()]
    first_run, last_skip = {}, {}
    for i, line in enumerate(lines):
        m = RUN.match(line)
        if m:
            first_run.setdefault(m.group(1), i)
            continue
        m = SKIPPED.match(line)
        if m:
            last_skip[m.group(1)] = i
    found = []
    for case, end in sorted(last_skip.items()):
        between = lines[first_run.get(case, end) + 1:end]
        found.append((case, " ".join(x.strip() for x in between
                                     if x.strip() and not x.strip().endswith(": Skipped")
                                     and not RUN.match(x) and not SKIPPED.match(x))))
    return found


def skips(junit):
    """(name, reason) of every skip in a ctest JUnit file."""
    out = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name")
        text = (case.findtext("system-out") or "").strip()
        if case.find("skipped") is not None:
            reason = next((l for l in text.splitlines() if "skip" in l.lower()), text[-200:])
            out.append((name, reason.strip()))
        elif case.get("status") == "run":
            out.extend((f"{name}/{c}", msg) for c, msg in gtest_skips(text))
    return out


def expected(path):
    rules = []
    for n, line in enumerate(open(path), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) != 3 or parts[1] not in ("debian", "wheel", "any"):
            sys.exit(f"skips.py: {path}:{n}: expected 'NAME-GLOB debian|wheel|any REASON-REGEX', got {line!r}")
        rules.append((parts[0], parts[1], re.compile(parts[2])))
    return rules


def main(argv):
    args = [a for a in argv if a != "--allow"]
    flavour = None
    if "--flavour" in args:
        i = args.index("--flavour")
        flavour = args[i + 1] if i + 1 < len(args) else None
        del args[i:i + 2]
    if len(args) != 2 or flavour not in ("debian", "wheel"):
        sys.exit(__doc__.strip().splitlines()[-1])
    rules = [(g, r) for g, f, r in expected(args[1]) if f in ("any", flavour)]
    found = skips(args[0])
    bad = 0
    print(f"skips: {len(found)} skipped test(s)" + (":" if found else ""))
    for name, reason in found:
        ok = any(fnmatch.fnmatchcase(name, g) and r.search(reason) for g, r in rules)
        bad += not ok
        print(f"skips:   {'expected  ' if ok else 'UNEXPECTED'} {name}: {reason[:160]}")
    if bad and "--allow" not in argv:
        print(f"skips: {bad} unexpected skip(s): make what they need available, or add them to "
              f"{args[1]} with their reason")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
