# test_layer_symbols.py — the layers of src/ checked by the symbols their objects use, not only by
# their #include lines (test_layers.c). Reads, with nm, the defined and the undefined symbols of
# every object of the library (<build>/CMakeFiles/tessera_obj.dir/src/**.o), maps each object to
# its folder's entry in the table of layers (the `rows` of tests/test_layers.c, the same rows as
# docs/architecture.md), and finds every call that climbs: an object using a symbol defined in a
# folder on a higher row, or in another folder of the same row.
#
# Calls that climb today are the debt listed in KNOWN below, each pair of folders with what it
# is. The test fails on a climbing pair not listed (a new call that climbs, named with the file,
# the symbol and where it is defined), and on a listed pair that no longer climbs (remove it from
# KNOWN: the list only shrinks). Exit 0 pass, 1 fail, 77 skipped (no nm or no objects).
# Usage: python3 test_layer_symbols.py SOURCE_DIR BUILD_DIR
import collections
import os
import re
import shutil
import subprocess
import sys

# (from, to): why it climbs today. Issue 38's split of the core and the applications removes these.
KNOWN = {
    ("backend", "backend/cpu"): "the registry registers the built-in CPU backend",
    ("data", "runtime"): "the pretraining held-out set and SQuAD decoding run programs",
    ("data", "train"): "the pretraining held-out set feeds the training batches",
    ("graph", "ops"): "autodiff and the graph passes build ops",
    ("models", "ops"): "the models build their graphs with ops",
    ("models", "optim"): "the bag-of-words model adds its optimizer",
    ("models", "runtime"): "BERT's weights are loaded into programs; bow compiles and trains",
    ("onnx", "runtime"): "import and export read and write programs' parameters",
}

LINE = re.compile(r"^(.*?\.o):\s*(?:[0-9a-f]+\s+)?(\S)\s+(\S+)$")


def main():
    if len(sys.argv) != 3:
        print("usage: test_layer_symbols.py SOURCE_DIR BUILD_DIR")
        return 2
    src, build = sys.argv[1], sys.argv[2]
    if not shutil.which("nm"):
        print("test_layer_symbols: skipped, no nm")
        return 77
    rows = {m.group(1): int(m.group(2))
            for m in re.finditer(r'\{"([a-z/]+)", (\d+)\}', open(os.path.join(src, "tests", "test_layers.c")).read())}
    if len(rows) < 10:
        print("test_layer_symbols: FAIL the table of layers was not found in tests/test_layers.c")
        return 1
    objdir = os.path.join(build, "CMakeFiles", "tessera_obj.dir", "src")
    objs = [os.path.join(d, f) for d, _, fs in os.walk(objdir) for f in fs if f.endswith(".o")]
    if not objs:
        print("test_layer_symbols: skipped, no objects under " + objdir)
        return 77

    def entry(obj):
        """The table's entry of an object's folder: its own, else its nearest listed parent's."""
        folder = os.path.relpath(os.path.dirname(obj), objdir)
        while folder and folder != ".":
            if folder in rows:
                return folder
            folder = os.path.dirname(folder)
        return None

    def nm(*args):
        r = subprocess.run(["nm", "-A", *args, *objs], capture_output=True, text=True)
        return [m.groups() for m in map(LINE.match, r.stdout.splitlines()) if m]

    defined = {sym: obj for obj, kind, sym in nm("--defined-only") if kind in "TDBRVWGS"}
    climbs = collections.defaultdict(list)
    nrefs = 0
    for obj, _, sym in nm("-u"):
        if sym not in defined:
            continue  # a system library's
        a, b = entry(obj), entry(defined[sym])
        if a is None or b is None or a == b:
            continue
        nrefs += 1
        if rows[b] >= rows[a]:
            name = lambda o: os.path.relpath(o, objdir).replace(".c.o", ".c")
            climbs[(a, b)].append("%s uses %s (%s)" % (name(obj), sym, name(defined[sym])))

    failures = 0
    for pair, uses in sorted(climbs.items()):
        if pair not in KNOWN:
            failures += 1
            print("test_layer_symbols: FAIL %s (row %d) uses %s (row %d), which climbs:" % (pair[0], rows[pair[0]],
                                                                                          pair[1], rows[pair[1]]))
            for u in sorted(uses)[:10]:
                print("    " + u)
    for pair in sorted(KNOWN):
        if pair not in climbs:
            failures += 1
            print("test_layer_symbols: FAIL %s -> %s no longer climbs: remove it from KNOWN" % pair)
    print("test_layer_symbols: %d objects, %d references between folders, %d climbing pairs (%d known)"
          % (len(objs), nrefs, len(climbs), len(KNOWN)))
    return 1 if failures else 0


def self_check():
    """The line parser on nm's two shapes (defined with an address, undefined without)."""
    a = LINE.match("x/src/core/file.c.o:0000000000000040 T ts_read_file")
    b = LINE.match("x/src/data/a.c.o:                 U ts_program_run")
    assert a and a.groups() == ("x/src/core/file.c.o", "T", "ts_read_file"), a
    assert b and b.groups() == ("x/src/data/a.c.o", "U", "ts_program_run"), b


if __name__ == "__main__":
    self_check()
    sys.exit(main())
