#!/usr/bin/env python3
"""The honest-manifest check (STYLE 16, run by `make test`): every target of Package.swift imports
exactly the modules it declares. SwiftPM's --explicit-target-dependency-import-check accepts anything
in the transitive closure, so it cannot see a module used through another's dependencies, nor a
dependency declared and never used. Prints each mismatch as `Target: ...` and exits 1 if any."""
import json
import os
import re
import subprocess
import sys

# Modules of the toolchain and the platform: imported without being declared.
SYSTEM = {"Foundation", "CoreFoundation", "FoundationEssentials", "FoundationNetworking", "Dispatch", "Glibc", "Musl", "Darwin",
          "Synchronization", "Testing", "XCTest", "_Concurrency", "os", "Android", "WinSDK"}
IMPORT = re.compile(r"^\s*(?:@testable\s+|@_exported\s+|@preconcurrency\s+|(?:public|package|internal)\s+)*"
                    r"import\s+(?:(?:struct|class|enum|protocol|typealias|func|var|let)\s+)?([A-Za-z_][A-Za-z0-9_]*)",
                    re.M)
MULTILINE_STRING = re.compile(r'#*"""(?:.|\n)*?"""#*')


def declared(target):
    names = set()
    for dependency in target.get("dependencies", []):
        for kind in ("byName", "target", "product"):
            if kind in dependency:
                names.add(dependency[kind][0])
    return names


def imported(directory):
    modules = set()
    for folder, _, files in os.walk(directory):
        for name in files:
            if name.endswith(".swift"):
                with open(os.path.join(folder, name), encoding="utf-8") as source:
                    text = MULTILINE_STRING.sub("", source.read())  # e.g. a Python script a test runs
                    modules.update(IMPORT.findall(text))
    return modules - SYSTEM


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    manifest = json.loads(subprocess.run(["swift", "package", "dump-package"], cwd=root, check=True,
                                         capture_output=True, text=True).stdout)
    problems = []
    for target in manifest["targets"]:
        if target["type"] == "system":
            continue
        name = target["name"]
        default = "Tests" if target["type"] == "test" else "Sources"
        directory = os.path.join(root, target.get("path") or os.path.join(default, name))
        uses, says = imported(directory), declared(target)
        for module in sorted(uses - says - {name}):
            problems.append(f"{name}: imports {module} without declaring it")
        for module in sorted(says - uses):
            problems.append(f"{name}: declares {module} but never imports it")
    for problem in problems:
        print(problem)
    if problems:
        print(f"check-imports: {len(problems)} mismatch(es) between Package.swift and the import lines")
        return 1
    print(f"check-imports: {len(manifest['targets'])} targets import exactly what they declare")
    return 0


if __name__ == "__main__":
    sys.exit(main())
