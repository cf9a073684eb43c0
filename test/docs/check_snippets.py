#!/usr/bin/env python3
"""Compiles every ```cpp block of the given Markdown files (-fsyntax-only).

All blocks are first compiled as one translation unit (each block's unit
below in a namespace of its own, the #include lines of all of them at the
top): the public headers are parsed once. Only when that fails is each
block compiled alone, which names the blocks at fault (when every block
compiles alone, the check passes, with a line saying the one unit did not:
two blocks' #includes or names at the top collide, which costs the check
its speed).

The documentation's C++ must compile as printed. Each block becomes one
translation unit, built from its top-level pieces (a piece ends at a `;` or
`}` outside any bracket):

  - `#include` lines and `using` declarations and directives come first;
  - definitions (functions, classes, structs: a piece whose text before its
    first `{` ends with `)` or starts with struct/class/enum/namespace) stay
    at namespace scope;
  - everything else (statements, declarations of local variables) becomes,
    in order, the body of `void snippet(ARGS) { ... }`.

ARGS, the names a fragment uses without declaring them, come from an HTML
comment right before the block (invisible on a rendered page):

  <!-- snippet: Estimator &estimator, const InputFn &input_fn -->

`<!-- snippet: skip -->` leaves a block out (say why in the text). Every
other block is compiled; a block that is not C++ should not be fenced as
cpp.

User code includes the public headers: a quoted #include with a '/' must
start with "estc/" ("estc/estimator.h"; "MyModel.h", <vector> are fine).
Any other, even in a skipped block, fails with one line naming the file
and line.

usage: check_snippets.py --cxx CXX --flags-file FILE [--keep DIR] [-j N]
                         FILE.md...
Exit status 0 when every block compiles, 1 otherwise (each failure names the
file and the block's first line).
"""

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(\w*)\s*$")
DIRECTIVE = re.compile(r"^<!--\s*snippet:\s*(.*?)\s*-->\s*$")
CONTROL = re.compile(r"^(if|for|while|switch|do|else|return|try)\b")
DEFINITION_START = re.compile(r"^(template\s*<.*>\s*)?(struct|class|enum|namespace|union)\b")
SIGNATURE_END = re.compile(r"\)\s*(const\s*)?(noexcept\s*)?(override\s*)?$")
QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def private_includes(path, line, code):
    """'file:line: ...' for each quoted #include of `code` (a block whose
    fence is at `line`) that is not a public header."""
    out = []
    for k, text in enumerate(code.split("\n")):
        m = QUOTED_INCLUDE.match(text)
        if m and "/" in m.group(1) and not m.group(1).startswith("estc/"):
            out.append('%s:%d: #include "%s" is not a public header: user '
                       'code includes "estc/..." (estimator/include/estc)'
                       % (path, line + 1 + k, m.group(1)))
    return out


def blocks(path):
    """(line number, directive or None, code) for every ```cpp block."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang = m.group(1)
        start = i
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1
        if lang != "cpp":
            continue
        directive = None
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j >= 0:
            d = DIRECTIVE.match(lines[j])
            if d:
                directive = d.group(1)
        out.append((start + 1, directive, "\n".join(body)))
    return out


def strip_literals(line):
    """The line without string/char literals and // comments (for counting
    brackets)."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split("//", 1)[0]


def pieces(code):
    """Splits a block into top-level pieces (lists of lines)."""
    result, current, depth = [], [], 0
    for line in code.split("\n"):
        stripped = line.strip()
        if depth == 0 and stripped.startswith("#"):
            if current and all(not l.strip() or l.strip().startswith("//") for l in current):
                current = []
            result.append([line])
            continue
        current.append(line)
        text = strip_literals(line)
        for c in text:
            if c in "({[":
                depth += 1
            elif c in ")}]":
                depth -= 1
        end = text.rstrip()
        if depth == 0 and (end.endswith(";") or end.endswith("}")):
            result.append(current)
            current = []
    if any(l.strip() and not l.strip().startswith("//") for l in current):
        result.append(current)
    return result


def classify(piece):
    code = "\n".join(strip_literals(l) for l in piece)
    head = code.strip()
    # Leading comment lines are not part of the head.
    head = "\n".join(l for l in head.split("\n") if l.strip()).strip()
    if head.startswith("#"):
        return "header"
    if re.match(r"^using\b", head):
        return "header"
    if DEFINITION_START.match(head):
        return "definition"
    if CONTROL.match(head):
        return "statement"
    brace = head.find("{")
    if brace > 0 and SIGNATURE_END.search(head[:brace].strip()) and "=" not in head[:brace]:
        return "definition"
    return "statement"


def split_unit(code, args):
    """(#include lines, the rest of the unit: using lines, definitions and
    the snippet() function)."""
    includes, headers, definitions, statements = [], [], [], []
    for piece in pieces(code):
        kind = classify(piece)
        text = "\n".join(piece)
        if kind == "header" and text.strip().startswith("#"):
            includes.append(text)
            continue
        {"header": headers, "definition": definitions,
         "statement": statements}[kind].append(text)
    parts = headers + definitions
    if statements or args:
        body = "\n".join(statements)
        parts.append("[[maybe_unused]] void snippet(%s) {\n%s\n}" % (args or "", body))
    return includes, parts


def translation_unit(code, args):
    includes, parts = split_unit(code, args)
    return "\n".join(includes + parts) + "\n"


def combined_unit(units):
    """One translation unit of every block: their #include lines once, at
    the top, then each block's unit in a namespace of its own (the headers
    are parsed once instead of once per block)."""
    includes, bodies = [], []
    for k, (code, args) in enumerate(units):
        block_includes, parts = split_unit(code, args)
        for line in block_includes:
            if line not in includes:
                includes.append(line)
        bodies.append("namespace estc_snippet_%d {\n%s\n} // namespace "
                      "estc_snippet_%d" % (k, "\n".join(parts), k))
    return "\n".join(includes + bodies) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cxx", required=True)
    parser.add_argument("--flags-file", required=True,
                        help="compiler flags, one per line")
    parser.add_argument("--keep", help="write the translation units here")
    parser.add_argument("-j", "--jobs", type=int, default=2,
                        help="compilers run at once (default 2)")
    parser.add_argument("files", nargs="+")
    opts = parser.parse_args()
    # Each flag once, in order; -I/usr/include would hide the C++ library's
    # own wrappers (#include_next).
    flags = []
    with open(opts.flags_file, encoding="utf-8") as f:
        for flag in f.read().split("\n"):
            if flag and flag not in flags and flag != "-I/usr/include":
                flags.append(flag)

    workdir = opts.keep or tempfile.mkdtemp(prefix="estc-snippets-")
    os.makedirs(workdir, exist_ok=True)
    jobs, skipped, private, units = [], 0, [], []
    for path in opts.files:
        for line, directive, code in blocks(path):
            private += private_includes(path, line, code)
            where = "%s:%d" % (os.path.basename(path), line)
            if directive is not None and directive.split()[0:1] == ["skip"]:
                skipped += 1
                continue
            source = os.path.join(workdir, re.sub(r"[^\w]", "_", where) + ".cpp")
            with open(source, "w", encoding="utf-8") as f:
                f.write(translation_unit(code, directive))
            jobs.append((where, code, source))
            units.append((code, directive))

    def compile_one(job):
        where, code, source = job
        return job, subprocess.run([opts.cxx, "-fsyntax-only", *flags, source],
                                   capture_output=True, text=True)

    failures = len(private)
    for message in private:
        print("FAIL: %s" % message)
    # All blocks in one unit first; only when it fails is each compiled
    # alone, to name the blocks at fault.
    combined = os.path.join(workdir, "all_blocks.cpp")
    with open(combined, "w", encoding="utf-8") as f:
        f.write(combined_unit(units))
    r = subprocess.run([opts.cxx, "-fsyntax-only", *flags, combined],
                       capture_output=True, text=True)
    if r.returncode == 0 and not private:
        print("%d blocks compiled (as one unit, %s), 0 failed, %d skipped, 0 "
              "private includes" % (len(jobs), combined, skipped))
        return 0
    if r.returncode != 0:
        print("the blocks as one unit (%s) do not compile; each alone:"
              % combined)
    with concurrent.futures.ThreadPoolExecutor(opts.jobs) as pool:
        for (where, code, source), r in pool.map(compile_one, jobs):
            if r.returncode == 0:
                print("ok: %s" % where)
                continue
            failures += 1
            first = next((l for l in code.split("\n") if l.strip()), "")
            print("FAIL: %s: the ```cpp block starting '%s' does not compile "
                  "(%s):" % (where, first.strip(), source))
            print(r.stderr)
    print("%d blocks compiled, %d failed, %d skipped, %d private includes"
          % (len(jobs), failures - len(private), skipped, len(private)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
