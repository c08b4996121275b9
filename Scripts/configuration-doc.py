#!/usr/bin/env python3
"""Writes the key tables of docs/CONFIGURATION.md from Config/orderlive.yaml.

Config/orderlive.yaml is the one sample of every key with its default and a comment, and a test
(`ConfigurationTests.theDocumentedFileHoldsExactlyTheDefaults`) holds it to the code's defaults. This
script renders it as one table per section — key, default, environment variable, meaning — between
the `<!-- keys:begin -->` and `<!-- keys:end -->` markers of docs/CONFIGURATION.md, and
`ConfigurationDocumentTests` fails when the document, the sample and the code's key list disagree.

    python3 Scripts/configuration-doc.py          # rewrite the tables
    python3 Scripts/configuration-doc.py --check  # exit 1 when they are out of date
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "Config", "orderlive.yaml")
DOCUMENT = os.path.join(ROOT, "docs", "CONFIGURATION.md")
BEGIN, END = "<!-- keys:begin -->", "<!-- keys:end -->"


def keys():
    """(section, [(key, default, meaning)]) in the sample's order."""
    sections, section, group, last = [], None, "", None
    for raw in open(SAMPLE, encoding="utf-8").read().split("\n"):
        if not raw.strip() or raw.startswith("#"):
            continue
        stripped = raw.strip()
        if stripped.startswith("#"):
            # A comment line continuing the previous key's comment.
            if last is not None:
                last[2] += " " + stripped.lstrip("#").strip()
            continue
        if not raw.startswith(" ") and stripped.endswith(":"):
            section, group, last = stripped[:-1], "", None
            sections.append((section, []))
            continue
        if raw.startswith("  ") and not raw.startswith("   ") and stripped.endswith(":"):
            group, last = stripped[:-1] + ".", None
            continue
        if not raw.startswith("    "):
            group = ""
        match = re.match(r'^([a-z][a-z0-9_]*):\s*("(?:[^"\\]|\\.)*"|[^#\s]+)\s*(?:#\s*(.*))?$', stripped)
        if not match:
            raise SystemExit(f"Config/orderlive.yaml: cannot read the line {raw!r}")
        name, value, comment = match.group(1), match.group(2), match.group(3) or ""
        if value.startswith('"'):
            value = value[1:-1]
        last = [f"{section}.{group}{name}", value, comment.strip()]
        sections[-1][1].append(last)
    return sections


def cell(text):
    return text.replace("|", "\\|")


def tables():
    out = []
    for section, entries in keys():
        out.append(f"### `{section}`")
        out.append("")
        out.append("| key | default | environment | meaning |")
        out.append("| --- | --- | --- | --- |")
        for key, default, meaning in entries:
            environment = "ORDERLIVE_" + key.upper().replace(".", "_")
            shown = f"`{default}`" if default else '`""`'
            out.append(f"| `{key}` | {cell(shown)} | `{environment}` | {cell(meaning)} |")
        out.append("")
    return "\n".join(out)


def main():
    document = open(DOCUMENT, encoding="utf-8").read()
    start, end = document.index(BEGIN) + len(BEGIN), document.index(END)
    updated = document[:start] + "\n" + tables() + "\n" + document[end:]
    if "--check" in sys.argv:
        if updated != document:
            print("docs/CONFIGURATION.md is out of date: run python3 Scripts/configuration-doc.py")
            sys.exit(1)
        return
    if updated != document:
        open(DOCUMENT, "w", encoding="utf-8").write(updated)


if __name__ == "__main__":
    main()
