#!/usr/bin/env python3
"""Finds checks that cannot fail in the test scripts.

1. Under `set -e` only the last command of an `&&` list can end the script:
   in `[ "$rc" -eq 2 ] && grep -q msg err` a wrong exit status is ignored and
   the script goes on, so the check passes whatever the program did. Every
   script under the given directories that turns `set -e` on is read for
   statements that are an `&&` list whose value nobody reads: not an
   `if`/`while`/`until` condition, not followed by `||`, not the last
   statement of a function body (whose status the caller sees).
2. In any script, `check "... $(cmd) ..." $?`: the command substitution runs
   before `$?` is expanded and sets it to its own status (0), so the check
   sees the message's command, not the condition. Take the status first
   (`st=$?; check "..." $st`).
Exit 1 with one line per finding.

Usage: lint_checks.py DIR...   (ctest lint_checks runs it on tests/; bench/
scripts use `[ cond ] && action` as a plain conditional, and check nothing)
"""
import os
import re
import sys

HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z_0-9]*)\1")


def strip_quotes_and_subst(line):
    """The line with quoted strings and $(...) / `...` bodies blanked out."""
    out, i, depth, quote = [], 0, 0, None
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = None
            i += 1
            continue
        if depth:
            if line.startswith("$(", i):
                depth += 1
                i += 2
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            i += 1
            continue
        if c in "'\"`":
            quote = c
        elif line.startswith("$(", i):
            depth = 1
            i += 2
            continue
        elif c == "#" and (i == 0 or line[i - 1] in " \t;"):
            break  # a comment
        else:
            out.append(c)
        i += 1
    return "".join(out)


def statements(text):
    """(first line number, logical statement) of a script, heredocs skipped."""
    lines = text.split("\n")
    i, cur, start = 0, "", 0
    while i < len(lines):
        raw = lines[i]
        code = strip_quotes_and_subst(raw)
        if not cur:
            start = i + 1
        cur += " " + code
        m = HEREDOC.search(raw)
        if m:  # the heredoc's body is data, not statements
            end = m.group(2)
            i += 1
            while i < len(lines) and lines[i].strip() != end:
                i += 1
        stripped = code.rstrip()
        if stripped.endswith(("&&", "||", "|", "\\")) and not m:
            i += 1
            continue
        yield start, cur.strip()
        cur = ""
        i += 1


def split_top(st):
    """The statement's parts between `;`, then, do, else outside { } groups."""
    parts, depth, cur = [], 0, []
    for tok in re.split(r"(;;|;|\bthen\b|\bdo\b|\belse\b|(?<!\S)\{(?!\S)|(?<!\S)\}(?=\s|;|$))", st):
        if tok in ("{",):
            depth += 1
        elif tok == "}":
            depth = max(0, depth - 1)
        elif tok in (";", "then", "do", "else") and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(tok)
    parts.append("".join(cur))
    return parts


def findings(path):
    text = open(path).read()
    if not re.search(r"^\s*set -[a-z]*e", text, re.M):
        return
    stmts = list(statements(text))
    for n, (line, st) in enumerate(stmts):
        for part in split_top(st):
            part = part.strip()
            part = re.sub(r"^[^()\s]*\)\s*", "", part)  # a case item's pattern
            if "&&" not in part:
                continue
            if re.match(r"(if|elif|while|until|\[\[?.*\]\]?\s*\|\|)\b", part) or part.startswith(("if ", "elif ", "while ", "until ", "!")):
                continue
            if "||" in part[part.rfind("&&"):]:
                continue
            nxt = stmts[n + 1][1] if n + 1 < len(stmts) else ""
            if nxt.startswith("}"):
                continue  # the last statement of a function: its status is returned
            yield line, part[:100]


def last_command_start(prefix):
    """Where the simple command that `prefix` ends in starts: after the last
    ;, &&, || or | outside $( ) (a pipe inside a substitution does not end
    the command around it)."""
    depth, start, k = 0, 0, 0
    while k < len(prefix):
        if prefix.startswith("$(", k):
            depth += 1
            k += 2
            continue
        c = prefix[k]
        if c == ")" and depth:
            depth -= 1
        elif depth == 0 and (prefix.startswith("&&", k) or prefix.startswith("||", k)):
            start = k + 2
            k += 2
            continue
        elif depth == 0 and c in ";|":
            start = k + 1
        k += 1
    return start


def status_after_substitution(path):
    """(line, text) of each simple command that reads $? after a $( or `."""
    lines = open(path).read().split("\n")
    i = 0
    while i < len(lines):
        start, text = i + 1, lines[i]
        m = HEREDOC.search(text)
        if m:
            end = m.group(2)
            i += 1
            while i < len(lines) and lines[i].strip() != end:
                i += 1
        while text.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text.rstrip()[:-1] + " " + lines[i]
        i += 1
        if text.lstrip().startswith("#"):
            continue
        for at in [k for k in range(len(text)) if text.startswith("$?", k)]:
            before = text[last_command_start(text[:at]):at]
            if re.search(r"\$\((?!\()", before) or "`" in before:  # $(( )) is arithmetic
                yield start, text.strip()[:100]
                break


def main(dirs):
    bad = 0
    for d in dirs:
        for root, _, files in os.walk(d):
            for f in sorted(files):
                if f.endswith(".sh"):
                    p = os.path.join(root, f)
                    for line, st in findings(p):
                        print(f"{p}:{line}: an && list under set -e that cannot fail: {st}")
                        bad += 1
                    for line, st in status_after_substitution(p):
                        print(f"{p}:{line}: $? read after a command substitution in the same command: {st}")
                        bad += 1
    if bad:
        print(f"{bad} check(s) that cannot fail: end && lists with `|| fail ...` or test with `if`; "
              "take $? before a message with $(...)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["tests"]))
