#!/usr/bin/env python3
# test_docs.py — the documentation runs as written (issue 42): every ```sh block of README.md and
# docs/*.md is run, page by page, and the figures live in docs/benchmarks.md alone.
#
#   test_docs.py SOURCE_DIR BUILD_DIR
#
# Running: the blocks of one page run in order in one temporary directory (a later block may use
# what an earlier one made), each with `bash -e` and a time limit, with BUILD_DIR first on PATH (so
# `tessera` is the built command) and links in the directory to the source tree's data/, build/
# (BUILD_DIR), python/, tools/, scripts/ and examples/, so that the paths the docs write resolve
# (and a `python3` that runs $TS_PYTHON3, the python3 the build's tests use, next). A
# block whose first line is `# long: WHY` (the demo, an install, a build, mpirun with many ranks)
# is not run; the test prints how many were skipped and why. A block that exits non-zero fails the
# test with its page, line, command and output.
#
# Expected output: a ```output block right after a ```sh block is what that block prints on stdout:
# compared line by line after stripping trailing blanks, where a line "..." stands for any number of
# lines and "..." inside a line for any text.
#
# Figures: outside docs/benchmarks.md and outside code blocks, no number may carry a unit of a
# measured rate (seq/s, req/s, GFLOP/s, TFLOP/s, rows/s, tokens/s, samples/s, images/s) or a latency
# in ms on a line that speaks of latency, p50/p90/p99 or a time taken, unless it sits inside a
# markdown link to benchmarks.md: a measured figure is written once, with its date, machine, command
# and commit, and linked to from elsewhere. Figures that are not measurements (a device's published
# peak, a published rate beside the planner's estimate of it) sit between the lines
# `<!-- not measured: WHY -->` and `<!-- end not measured -->`, which the check skips.
import os
import re
import shutil
import subprocess
import sys
import tempfile

BLOCK_TIMEOUT = int(os.environ.get("TS_DOCS_BLOCK_TIMEOUT", "300"))  # seconds a block may run
RATE = re.compile(r"\d[\d,.]*\s*(seq/s|req/s|GFLOP/s|TFLOP/s|rows/s|tokens/s|samples/s|images/s)\b")
MS = re.compile(r"\d[\d,.]*\s*ms\b")
TIMING_WORDS = re.compile(r"latency|p50|p90|p99|\btook\b|\btakes\b|faster|slower", re.I)
LINK_TO_BENCH = re.compile(r"\[[^\]]*\]\([^)]*benchmarks\.md[^)]*\)")
LINKS = ("data", "python", "tools", "scripts", "examples")


def pages(src):
    out = [os.path.join(src, "README.md")]
    docs = os.path.join(src, "docs")
    if os.path.isdir(docs):
        out += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    return [p for p in out if os.path.exists(p)]


def blocks(path):
    """The fenced blocks of a markdown file: (info string, first line number, text), in order."""
    out, info, start, buf = [], None, 0, []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            stripped = line.strip()
            if info is None and stripped.startswith("```"):
                info, start, buf = stripped[3:].strip(), n + 1, []
            elif info is not None and stripped.startswith("```"):
                out.append((info, start, "".join(buf)))
                info = None
            elif info is not None:
                buf.append(line)
    return out


def matches(expected, got):
    """Does output `got` (lines) fit `expected` (lines, "..." as described above)?"""
    def line_ok(e, g):
        parts = e.split("...")
        return re.fullmatch(".*".join(re.escape(p) for p in parts), g, re.S) is not None

    def go(i, j):
        if i == len(expected):
            return j == len(got)
        if expected[i] == "...":
            return any(go(i + 1, k) for k in range(j, len(got) + 1))
        return j < len(got) and line_ok(expected[i], got[j]) and go(i + 1, j + 1)
    return go(0, 0)


def python_shim(work):
    """A folder holding `python3`: $TS_PYTHON3 (the python3 the build's tests use, numpy and all),
    with $TS_DOCS_PY_PRELOAD preloaded and $TS_DOCS_PY_ASAN_OPTIONS in a sanitizer build, where it
    loads the sanitized library (only python: the ASan runtime preloaded into curl or bash hangs)."""
    d = os.path.join(work, ".bin")
    os.mkdir(d)
    py = os.environ.get("TS_PYTHON3") or shutil.which("python3") or "python3"
    pre = os.environ.get("TS_DOCS_PY_PRELOAD", "")
    opts = os.environ.get("TS_DOCS_PY_ASAN_OPTIONS", "")
    with open(os.path.join(d, "python3"), "w") as f:
        f.write("#!/bin/sh\n%s%sexec '%s' \"$@\"\n" % ("LD_PRELOAD='%s' " % pre if pre else "",
                                                   "ASAN_OPTIONS='%s' " % opts if opts else "", py))
    os.chmod(os.path.join(d, "python3"), 0o755)
    return d


def run_page(src, build, page, failures):
    bl = blocks(page)
    ran = skipped = 0
    reasons = []
    work = tempfile.mkdtemp(prefix="test_docs_")
    try:
        for name in LINKS:
            if os.path.exists(os.path.join(src, name)):
                os.symlink(os.path.join(src, name), os.path.join(work, name))
        os.symlink(build, os.path.join(work, "build"))
        bindir = python_shim(work)
        path = os.pathsep.join((build, bindir, os.environ.get("PATH", "")))
        env = dict(os.environ, PATH=path, OMP_WAIT_POLICY="passive")
        for k, (info, line, text) in enumerate(bl):
            if info != "sh":
                continue
            first = text.lstrip().splitlines()[0] if text.strip() else ""
            if first.startswith("# long:"):
                skipped += 1
                reasons.append(first[len("# long:"):].strip())
                continue
            try:
                r = subprocess.run(["bash", "-e", "-c", text], cwd=work, env=env, capture_output=True, text=True,
                                   timeout=BLOCK_TIMEOUT)
            except subprocess.TimeoutExpired:
                failures.append("%s:%d: ran past %d s:\n%s" % (page, line, BLOCK_TIMEOUT, text))
                continue
            ran += 1
            if r.returncode != 0:
                failures.append("%s:%d: exit %d\n%s\nstdout:\n%s\nstderr:\n%s" % (
                    page, line, r.returncode, text, r.stdout[-2000:], r.stderr[-2000:]))
                continue
            if k + 1 < len(bl) and bl[k + 1][0] == "output":
                want = [ln.rstrip() for ln in bl[k + 1][2].splitlines()]
                got = [ln.rstrip() for ln in r.stdout.splitlines()]
                if not matches(want, got):
                    failures.append("%s:%d: the output differs from the page's\nexpected:\n%s\ngot:\n%s" % (
                        page, line, "\n".join(want), "\n".join(got)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return ran, skipped, reasons


def figures_outside(page):
    """Lines of page (outside code blocks) quoting a measured figure not linked to benchmarks.md."""
    bad, fenced, exempt = [], False, False
    with open(page, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip().startswith("```"):
                fenced = not fenced
                continue
            if line.strip().startswith("<!-- not measured:"):
                exempt = True
            elif line.strip().startswith("<!-- end not measured"):
                exempt = False
            if fenced or exempt:
                continue
            text = LINK_TO_BENCH.sub("", line)
            if RATE.search(text) or (MS.search(text) and TIMING_WORDS.search(text)):
                bad.append("%s:%d: %s" % (page, n, line.strip()))
    return bad


def main():
    if len(sys.argv) != 3:
        print("usage: test_docs.py SOURCE_DIR BUILD_DIR")
        return 2
    src, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if not os.path.exists(os.path.join(build, "tessera")):
        print("test_docs: skipped, no built tessera in %s" % build)
        return 77
    failures, figures = [], []
    for page in pages(src):
        if os.path.basename(page) != "benchmarks.md":
            figures += figures_outside(page)
        ran, skipped, reasons = run_page(src, build, page, failures)
        print("%s: %d blocks run, %d long ones skipped%s" % (os.path.relpath(page, src), ran, skipped,
                                                              (" (" + "; ".join(reasons) + ")") if reasons else ""))
    for f in failures:
        print("FAIL " + f)
    for f in figures:
        print("FIGURE outside docs/benchmarks.md (link to it instead): " + f)
    if failures or figures:
        return 1
    print("test_docs: every runnable block ran as written; figures only in docs/benchmarks.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
