#!/usr/bin/env python3
"""The one-way stack (issue #44): every #include between two folders of
src/ and capi/ points down the order stated on the "Stack:" line at the top
of docs/architecture.md, so that each folder can be read, tested and
changed knowing only those below it. Folders joined by "," share a level and
include neither each other. The public C header (include/ztensor.h) is the
C layer's: only the folders on the "C header:" line include it. And no
file is longer than the "File size:" line allows (one concern a file).

  python3 tests/layout/check_includes.py [SOURCE_ROOT]

Prints each include against the order (file, line, what it includes) and
exits 1 if there is one; 0 with a summary otherwise.
"""
import os
import re
import sys


def stack(architecture):
    """(folder -> level, folders allowed the C header) from the doc."""
    with open(architecture, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^Stack[^:]*: `([^`]+)`", text, re.M)
    if not m:
        sys.exit("check_includes: docs/architecture.md has no 'Stack: `a < b < ...`' line")
    level = {}
    for i, group in enumerate(m.group(1).split("<")):
        for folder in group.split(","):
            level[folder.strip()] = i
    h = re.search(r"^C header[^:]*: `([^`]+)`", text, re.M)
    header = {f.strip() for f in h.group(1).split(",")} if h else set()
    n = re.search(r"^File size[^:]*: `(\d+)` lines", text, re.M)
    return level, header, int(n.group(1)) if n else None


def folder_of(root, path):
    rel = os.path.relpath(path, root)
    parts = rel.split(os.sep)
    return "capi" if parts[0] == "capi" else parts[1]


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
    level, header_users, max_lines = stack(os.path.join(root, "docs", "architecture.md"))
    bad, edges, files = [], set(), 0
    for top in ("src", "capi"):
        for d, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith((".h", ".hpp", ".cpp", ".c")):
                    continue
                path = os.path.join(d, name)
                files += 1
                here = folder_of(root, path)
                if here not in level:
                    bad.append(f"{os.path.relpath(path, root)}: folder '{here}' is not on the Stack line")
                    continue
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                count = text.count("\n")
                if max_lines and count > max_lines:
                    bad.append(f"{os.path.relpath(path, root)}: {count} lines, over the {max_lines} "
                               "a file of one concern may have")
                for n, line in enumerate(text.splitlines(), 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m:
                        continue
                    inc = m.group(1)
                    where = f"{os.path.relpath(path, root)}:{n}: #include \"{inc}\""
                    if "/" not in inc:
                        if os.path.exists(os.path.join(d, inc)):
                            continue  # beside it
                        if os.path.exists(os.path.join(root, "include", inc)):
                            if here not in header_users:
                                bad.append(f"{where}: only {', '.join(sorted(header_users))} "
                                           "include the C header")
                            continue
                        bad.append(f"{where}: not found beside it or in include/")
                        continue
                    there = inc.split("/")[0]
                    if there == here:
                        continue
                    if there not in level:
                        bad.append(f"{where}: folder '{there}' is not on the Stack line")
                    elif level[there] >= level[here]:
                        bad.append(f"{where}: '{here}' may include only folders below it, "
                                   f"and '{there}' is {'beside' if level[there] == level[here] else 'above'} it")
                    else:
                        edges.add((here, there))
    if bad:
        print("\n".join(bad))
        print(f"check_includes: {len(bad)} line(s) against the rules of docs/architecture.md")
        return 1
    print(f"check_includes: {files} files, {len(edges)} folder-to-folder edges, all down the stack"
          + (f"; none over {max_lines} lines" if max_lines else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
