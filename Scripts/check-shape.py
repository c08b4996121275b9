#!/usr/bin/env python3
"""The code's shape, checked in `make test` beside check-imports.py (issue 36; STYLE's rooms):

- no Swift file in Sources/, Tests/ or Benchmarks/ over 400 lines;
- no function, initializer, subscript, computed property (with its accessors) or closure assigned to a
  property over 100 lines (from its declaration to its closing brace), in Sources/, Tests/,
  Benchmarks/ and Fuzz/;
- every module in Sources/ has its banner file, `<Module>.swift`, opening with a `//` paragraph that
  says what the module is for (its job, in a sentence or more);
- every test suite (`@Suite`) carries a `.timeLimit`, so a test that hangs fails instead of stalling
  `make test` (waits that cannot see a time limit have deadlines of their own: LogWatch, OrderliveProcess);
- no comment in Sources/ names an issue number ("issue 61"): it says the rule, or points to DESIGN or
  docs/, and the history stays in commit messages;
- docs/ARCHITECTURE.md's module table lists exactly the package's modules, each with the in-house
  modules it depends on as Package.swift declares them.

A room over a limit is split by concern (`Type+Concern.swift`), never exempted here.
Usage: python3 Scripts/check-shape.py   (from the repository root; exit 1 with every finding)
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILE_LIMIT = 400
FUNCTION_LIMIT = 100
TREES = ["Sources", "Tests", "Benchmarks", "Fuzz"]
## "issue 61", "(issue 36)": a reader of the code cannot open an issue tracker's history.
ISSUE_REFERENCE = re.compile(r"\bissues? \d+", re.IGNORECASE)

DECLARATION = re.compile(
    r"^\s*(?:@[\w.]+(?:\([^)]*\))?\s+)*"
    r"(?:(?:public|private|fileprivate|internal|package|open|static|class|final|override|mutating|"
    r"nonmutating|nonisolated|convenience|required|dynamic|lazy|isolated|consuming|borrowing)(?:\([^)]*\))?\s+)*"
    r"(func\s+[^\s(<]+|init[?!]?\s*[(<]|deinit\b|subscript\s*[(<]"
    # A computed property (its accessors inside it) or a closure assigned to a property: `var x: T {`,
    # `let x: T = {`, `lazy var x = {`.
    r"|(?:var|let)\s+[A-Za-z_]\w*(?:\s*:\s*[^={]+?)?\s*(?:=\s*)?\{)")


def swift_files():
    for tree in TREES:
        for directory, subdirectories, files in os.walk(os.path.join(ROOT, tree)):
            subdirectories[:] = [d for d in subdirectories if not d.startswith(".build")]
            for name in files:
                if name.endswith(".swift"):
                    yield os.path.join(directory, name)


def code_only(lines):
    """The lines with string literals and comments blanked, so braces in them are not counted."""
    result = []
    in_block_comment = False
    in_multiline_string = False
    for line in lines:
        out = []
        i = 0
        while i < len(line):
            if in_block_comment:
                end = line.find("*/", i)
                if end < 0:
                    i = len(line)
                else:
                    in_block_comment = False
                    i = end + 2
                continue
            if in_multiline_string:
                end = line.find('"""', i)
                if end < 0:
                    i = len(line)
                else:
                    in_multiline_string = False
                    i = end + 3
                continue
            if line.startswith("//", i):
                break
            if line.startswith("/*", i):
                in_block_comment = True
                i += 2
                continue
            if line.startswith('"""', i):
                in_multiline_string = True
                i += 3
                continue
            raw = re.match(r'(#+)"', line[i:])
            if raw and not line.startswith('"""', i + len(raw.group(1))):
                # A raw string, #"…"#: quotes inside it do not end it.
                closing = '"' + raw.group(1)
                end = line.find(closing, i + len(raw.group(0)))
                i = len(line) if end < 0 else end + len(closing)
                out.append('""')
                continue
            if line[i] == '"':
                # A one-line string (raw or not): skip to its unescaped closing quote.
                j = i + 1
                while j < len(line) and line[j] != '"':
                    j += 2 if line[j] == "\\" else 1
                i = j + 1
                out.append('""')
                continue
            out.append(line[i])
            i += 1
        result.append("".join(out))
    return result


def long_functions(path, lines):
    code = code_only(lines)
    findings = []
    for index, line in enumerate(code):
        match = DECLARATION.match(line)
        if not match:
            continue
        # The body starts at the first "{" at or after the declaration (a protocol requirement has none).
        depth = 0
        started = False
        for end in range(index, len(code)):
            for character in code[end]:
                if character == "{":
                    depth += 1
                    started = True
                elif character == "}":
                    depth -= 1
            if not started and end > index and DECLARATION.match(code[end]):
                break
            if started and depth <= 0:
                length = end - index + 1
                if length > FUNCTION_LIMIT:
                    name = match.group(1).split("(")[0].split("<")[0].split(":")[0].split("=")[0].strip(" {")
                    findings.append(f"{os.path.relpath(path, ROOT)}:{index + 1}: {name} is {length} lines "
                                    f"(over {FUNCTION_LIMIT}): split it by step")
                break
    return findings


def package_targets():
    output = subprocess.run(["swift", "package", "dump-package"], cwd=ROOT, capture_output=True, text=True, check=True)
    package = json.loads(output.stdout)
    targets = {}
    for target in package["targets"]:
        if target["type"] == "test":
            continue
        dependencies = set()
        for dependency in target["dependencies"]:
            if "byName" in dependency:
                dependencies.add(dependency["byName"][0])
            elif "target" in dependency:
                dependencies.add(dependency["target"][0])
        targets[target["name"]] = (target["type"], target.get("path"), dependencies)
    return targets


def module_table():
    """The rows of ARCHITECTURE.md's module table: module -> set of in-house dependencies."""
    text = open(os.path.join(ROOT, "docs", "ARCHITECTURE.md"), encoding="utf-8").read()
    section = text.split("## Module map", 1)
    if len(section) < 2:
        return None
    rows = {}
    for line in section[1].splitlines():
        if line.startswith("## "):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        module = cells[0].strip("`")
        rows[module] = set(re.findall(r"`([^`]+)`", cells[3]))
    return rows


def main():
    findings = []
    for path in sorted(swift_files()):
        lines = open(path, encoding="utf-8").read().split("\n")
        count = len(lines) - (1 if lines and lines[-1] == "" else 0)
        if count > FILE_LIMIT:
            findings.append(f"{os.path.relpath(path, ROOT)}: {count} lines (over {FILE_LIMIT}): split it by concern")
        findings += long_functions(path, lines)
        if os.path.relpath(path, ROOT).startswith("Sources" + os.sep):
            for number, line in enumerate(lines, 1):
                if ISSUE_REFERENCE.search(line):
                    findings.append(f"{os.path.relpath(path, ROOT)}:{number}: names an issue number: say the rule "
                                    "(or its DESIGN § or docs/ section); the history stays in commit messages")
        if os.path.relpath(path, ROOT).startswith("Tests" + os.sep):
            for number, line in enumerate(lines, 1):
                if re.match(r"\s*@Suite\b", line) and ".timeLimit(" not in line:
                    findings.append(f"{os.path.relpath(path, ROOT)}:{number}: a suite without a .timeLimit: "
                                    "give it one, so a hang fails the test")

    targets = package_targets()
    for name, (kind, path, _) in sorted(targets.items()):
        if kind == "system":
            continue
        directory = os.path.join(ROOT, path or os.path.join("Sources", name))
        if not os.path.isdir(directory):
            continue
        banners = [entry for entry in os.listdir(directory) if entry.lower() == f"{name.lower()}.swift"]
        if not banners:
            findings.append(f"{os.path.relpath(directory, ROOT)}: no banner file {name}.swift saying what {name} is for")
            continue
        opening = []
        for line in open(os.path.join(directory, banners[0]), encoding="utf-8").read().split("\n"):
            if not line.startswith("//") or line.startswith("///"):
                break
            opening.append(line[2:].strip())
        if len(" ".join(opening)) < 60:
            findings.append(f"{os.path.relpath(directory, ROOT)}/{banners[0]}: does not open with a `//` paragraph "
                            f"saying what {name} is for (its job, in a sentence or more)")

    rows = module_table()
    if rows is None:
        findings.append("docs/ARCHITECTURE.md: no '## Module map' section with the module table")
    else:
        for name, (_, _, dependencies) in sorted(targets.items()):
            in_house = {dependency for dependency in dependencies if dependency in targets}
            if name not in rows:
                findings.append(f"docs/ARCHITECTURE.md: module {name} is missing from the module table")
            elif rows[name] != in_house:
                findings.append(f"docs/ARCHITECTURE.md: {name} depends on {sorted(in_house) or 'nothing in-house'} "
                                f"in Package.swift, the table says {sorted(rows[name])}")
        for name in sorted(set(rows) - set(targets)):
            findings.append(f"docs/ARCHITECTURE.md: the module table lists {name}, which Package.swift does not have")

    for finding in findings:
        print(f"check-shape: {finding}")
    if findings:
        print(f"check-shape: {len(findings)} finding(s)")
        return 1
    print(f"check-shape: {len(targets)} modules mapped; every file within {FILE_LIMIT} lines, every function within {FUNCTION_LIMIT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
