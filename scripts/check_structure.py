#!/usr/bin/env python3
"""The tree's structure, checked from its sources (no build needed; well
under a second). Run by .ci/run; exits 1 with one line per finding.

1. Layer order (docs/design/architecture.md): the folders under src/ are
   layers, base, types, memory, server, comm, backends/*, client, mpi,
   tune, in that order, and a file includes only headers of its own layer
   or of the layers above it. A backend includes no other backend's
   headers, and nothing above the client includes ruda/client.h.
2. tools/ uses the public API only (include/ruda/): no header of src/.
   bench/ reaches src/ through bench/bench_internal.h alone.
3. No include circle: following the quoted includes between the tree's
   own files never leads back to where it started.
4. No unused internal function: every non-static ruda__* function defined
   in src/ is named somewhere else than its definition and its
   declarations (comments do not count) - in src/, tools/, bench/, tests/
   or examples/.
5. No file includes a .c file: code shared between programs is a library
   (tools/parts.cmake), and a kernel file that a program compiles natively
   is a header (name_kernels.h, the way the guide writes them).

Usage: scripts/check_structure.py [ROOT]   (ROOT: the repository, default
the folder above this script)."""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), ".."))
LAYERS = ["base", "types", "memory", "server", "comm", "backends", "client", "mpi", "tune"]
RANK = {name: i for i, name in enumerate(LAYERS)}
SOURCES = (".c", ".h")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

findings = []


def rel(path):
    return os.path.relpath(path, ROOT)


def files_under(top, endings=SOURCES):
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
        dirnames[:] = [d for d in dirnames if not d.startswith((".", "build"))]
        out += [os.path.join(dirpath, f) for f in filenames if f.endswith(endings)]
    return sorted(out)


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def includes(path):
    """(line, target) of each quoted include, comments left out."""
    text = strip_comments(read(path))
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in INCLUDE.finditer(text)]


def layer_of(src_rel):
    """('backends', 'cuda') for src/backends/cuda/x.c, ('server', None) ..."""
    parts = src_rel.split("/")
    if parts[0] == "backends":
        return "backends", parts[1] if len(parts) > 2 else None
    return parts[0], None


# ---- 1. layer order ----
for path in files_under("src"):
    own, own_backend = layer_of(os.path.relpath(path, os.path.join(ROOT, "src")))
    if own not in RANK:
        continue
    for line, target in includes(path):
        first = target.split("/")[0]
        where = f"{rel(path)}:{line}"
        if target == "ruda/client.h" and RANK[own] < RANK["client"]:
            findings.append(f"{where}: layer {own} includes ruda/client.h (only the client and "
                            "the layers after it may)")
        if first not in RANK:
            continue
        inc, inc_backend = layer_of(target)
        if RANK[inc] > RANK[own]:
            findings.append(f"{where}: layer {own} includes {target} of layer {inc}, which "
                            "comes after it")
        elif inc == "backends" and own == "backends" and inc_backend != own_backend:
            findings.append(f"{where}: backend {own_backend} includes {target} of backend "
                            f"{inc_backend}")

# ---- 2. tools/ and bench/ ----
for top in ("tools", "bench"):
    for path in files_under(top):
        for line, target in includes(path):
            if target.split("/")[0] not in RANK:
                continue
            if top == "bench" and os.path.basename(path) == "bench_internal.h":
                continue
            door = ("tools/ uses the public API only" if top == "tools" else
                    "bench/ reaches src/ through bench/bench_internal.h only")
            findings.append(f"{rel(path)}:{line}: includes {target} ({door})")

# ---- 3. include circles ----
all_files = {}
for top in ("src", "include", "tools", "bench", "tests"):
    for path in files_under(top):
        all_files[path] = None
include_dirs = [os.path.join(ROOT, d) for d in ("src", "include", "tools", "bench",
                                                 "tests/harness")]


def resolve(path, target):
    for base in [os.path.dirname(path)] + include_dirs:
        cand = os.path.normpath(os.path.join(base, target))
        if cand in all_files:
            return cand
    return None


graph = {p: sorted({r for _, t in includes(p) for r in [resolve(p, t)] if r}) for p in all_files}
state = {}
stack = []


def visit(p):
    state[p] = 1
    stack.append(p)
    for q in graph[p]:
        if state.get(q) == 1:
            circle = stack[stack.index(q):] + [q]
            findings.append("include circle: " + " -> ".join(rel(x) for x in circle))
        elif q not in state:
            visit(q)
    stack.pop()
    state[p] = 2


sys.setrecursionlimit(10000)
for p in sorted(graph):
    if p not in state:
        visit(p)

# ---- 4. unused internal functions ----
DEF = re.compile(r"^(?!static\b)(?!#)(?!typedef\b)[A-Za-z_][\w \t*]*?\b(ruda__\w+)\s*\(")
defs = {}
texts = {}
for top in ("src", "tools", "bench", "tests", "examples"):
    for path in files_under(top, SOURCES + (".in", ".cpp")):
        texts[path] = strip_comments(read(path)).split("\n")
for path, lines in texts.items():
    if not (path.endswith(".c") and rel(path).startswith("src/")):
        continue
    for i, line in enumerate(lines):
        m = DEF.match(line)
        if m and not line.rstrip().endswith(";"):
            defs.setdefault(m.group(1), (path, i + 1))
NAME = re.compile(r"\bruda__\w+")
used = set()
for path, lines in texts.items():
    for i, line in enumerate(lines):
        for m in NAME.finditer(line):
            name = m.group(0)
            if name not in defs or name in used:
                continue
            if (path, i + 1) == defs[name]:
                continue  # the definition
            if path.endswith(".h") and DEF.match(line) and line.rstrip().endswith((";", ",")):
                continue  # a declaration
            if path.endswith(".h") and DEF.match(line):
                # a declaration over several lines
                continue
            used.add(name)
for name, (path, line) in sorted(defs.items(), key=lambda kv: kv[1]):
    if name not in used:
        findings.append(f"{rel(path)}:{line}: {name} is defined but never used (remove it, "
                        "or make it static if only its file needs it)")

# ---- 5. no included .c file ----
for top in ("src", "include", "tools", "bench", "tests", "examples", "docs"):
    for path in files_under(top):
        for line, target in includes(path):
            if target.endswith(".c"):
                findings.append(f"{rel(path)}:{line}: includes the .c file {target} (build it "
                                "as its own object or library, or name a kernel file .h)")

for f in findings:
    print(f)
print(f"check_structure: {len(findings)} finding{'s' if len(findings) != 1 else ''}",
      file=sys.stderr)
sys.exit(1 if findings else 0)
