#!/usr/bin/env python3
"""The include rules of estc's folders (docs/conventions.md, "Where code goes").

Every `#include "..."` of the tree's C and C++ files names a folder of the
repository; a folder may include only the folders below it in this order:

  lib                      foundations shared by compiler and runtime
  dialects                 the est dialect (lib)
  runtime                  what compiled code and trainers run (lib)
  compiler                 the compiler (lib, dialects, runtime's ABI)
  estimator                the public Estimator API (all of the above)
  tools, examples, bench   programs (all of the above; tools never examples)
  test                     everything

and estimator/include/estc (the public prefix, "estc/...") is open to all
but lib, dialects, runtime and compiler. Generated headers ("*.pb.h",
"*.inc") count as their folder; an include without a folder (a sibling
file, a generated model header) is not checked.

usage: check_includes.py REPO_ROOT
Exit status 0 when no include runs upward; 1 otherwise, one line per
offending include: FILE:LINE: FOLDER may not include "PATH".
"""

import os
import re
import subprocess
import sys

ALLOWED = {
    "lib": {"lib"},
    "dialects": {"lib", "dialects"},
    "runtime": {"lib", "runtime"},
    "compiler": {"lib", "dialects", "runtime", "compiler"},
    "estimator": {"lib", "dialects", "runtime", "compiler", "estimator", "estc"},
    "tools": {"lib", "dialects", "runtime", "compiler", "estimator", "estc",
              "tools"},
    "examples": {"lib", "dialects", "runtime", "compiler", "estimator", "estc",
                 "examples"},
    "bench": {"lib", "dialects", "runtime", "compiler", "estimator", "estc",
              "tools", "examples", "bench", "test"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = (".h", ".hpp", ".c", ".cc", ".cpp", ".inc")


def folder_of_include(path):
    top = path.split("/", 1)[0]
    return top if "/" in path else None


def main():
    root = sys.argv[1]
    files = subprocess.run(["git", "-C", root, "ls-files", "--cached",
                            "--others", "--exclude-standard"], check=True,
                           capture_output=True, text=True).stdout.split()
    bad = []
    for f in files:
        if not f.endswith(SOURCES) or not os.path.exists(os.path.join(root, f)):
            continue
        top = f.split("/", 1)[0]
        if top not in ALLOWED:
            continue
        allowed = ALLOWED[top]
        with open(os.path.join(root, f), encoding="utf-8",
                  errors="replace") as text:
            for n, line in enumerate(text, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = folder_of_include(m.group(1))
                if target is None or target not in ALLOWED and target != "estc":
                    continue
                if target not in allowed:
                    bad.append(f'{f}:{n}: {top} may not include "{m.group(1)}"')
    for line in bad:
        print(line)
    if not bad:
        print(f"check_includes: every include of {len(files)} files runs "
              "downward")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
