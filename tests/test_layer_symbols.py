# test_layer_symbols.py — the layers checked by the symbols their objects use, not only by their
# #include lines (test_layers.c). Reads, with nm, the defined and the undefined symbols of every
# object of the core (<build>/CMakeFiles/tessera_obj.dir/src/**.o) and of the applications
# (<build>/CMakeFiles/tessera_apps_obj.dir/apps/**.o), and the dynamic symbols libtessera.so
# exports. Three checks:
#
#  1. The applications use only the core's public API: every symbol an application object needs
#     from a core object is one libtessera.so exports (a TS_API declaration of include/*.h).
#     (libtessera_apps.so is also linked with --no-undefined against libtessera.so, so the build
#     fails first; this names the object and the symbol.)
#  2. The core needs nothing of the applications: no core object uses a symbol an application
#     object defines.
#  3. Within the rows of tests/test_layers.c (the same rows as docs/architecture.md), no call
#     climbs: an object using a symbol defined in a folder on a higher row, or in another folder
#     of the same row. Calls that climb today are the debt in KNOWN below, each pair with what it
#     is; a climbing pair not listed fails (named with the file, the symbol and where it is
#     defined), and so does a listed pair that no longer climbs (the list only shrinks), unless
#     this build left sources of its folder out (a feature built out: src/onnx/ with
#     TS_WITH_ONNX=OFF, every apps/ folder with TS_WITH_APPS=OFF, whose objects are then the
#     core's alone; a stub, <name>_off.c, is compiled only then and never counts as left out).
#
# Exit 0 pass, 1 fail, 77 skipped (no nm or no objects).
# Usage: python3 test_layer_symbols.py SOURCE_DIR BUILD_DIR
import collections
import os
import re
import shutil
import subprocess
import sys

# (from, to): why it climbs today.
KNOWN = {
    ("src/backend", "src/backend/cpu"): "the registry registers the built-in CPU backend",
    ("src/graph", "src/ops"): "autodiff and the graph passes build ops",
    ("src/onnx", "src/runtime"): "import and export read and write programs' parameters",
    ("apps/data", "apps/train"): "the pretraining held-out set feeds the training batches",
}

LINE = re.compile(r"^(.*?\.o):\s*(?:[0-9a-f]+\s+)?(\S)\s+(\S+)$")
LAYERS = (("tessera_obj.dir", "src"), ("tessera_apps_obj.dir", "apps"))


def objects(src, build):
    """{object path: its path in the tree without .o ("src/core/file.c")} of both libraries: the
    objects of sources the tree still has (an object left by a source moved away is not read)."""
    out = {}
    for target, top in LAYERS:
        base = os.path.join(build, "CMakeFiles", target)
        for d, _, fs in os.walk(os.path.join(base, top)):
            for f in fs:
                if f.endswith(".c.o"):
                    path = os.path.join(d, f)
                    rel = os.path.relpath(path, base)[:-2]
                    if os.path.exists(os.path.join(src, rel)):
                        out[path] = rel
    return out


def left_out(src, objs, entry):
    """The table's entries with a source (a .c file of src/ or apps/, stubs *_off.c aside) that this
    build compiled no object of: a folder built only in part, or not at all."""
    built = set(objs.values())
    out = set()
    for _, top in LAYERS:
        for d, _, fs in os.walk(os.path.join(src, top)):
            for f in fs:
                rel = os.path.relpath(os.path.join(d, f), src)
                if f.endswith(".c") and not f.endswith("_off.c") and rel not in built:
                    out.add(entry(rel))
    return out


def nm(objs, *args):
    r = subprocess.run(["nm", "-A", *args, *objs], capture_output=True, text=True)
    return [m.groups() for m in map(LINE.match, r.stdout.splitlines()) if m]


def exported(build):
    """The names libtessera.so exports (its defined dynamic symbols); None when it is missing."""
    lib = os.path.join(build, "libtessera.so")
    if not os.path.exists(lib):
        return None
    r = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True)
    return {line.split()[-1] for line in r.stdout.splitlines() if line.strip()}


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
    if len(rows) < 10 or not any(k.startswith("apps/") for k in rows):
        print("test_layer_symbols: FAIL the table of layers (src/ and apps/ folders) was not found in tests/test_layers.c")
        return 1
    objs = objects(src, build)
    exports = exported(build)
    if not objs or exports is None:
        print("test_layer_symbols: skipped, no objects or no libtessera.so under " + build)
        return 77

    def entry(rel):
        """The table's entry of a source's folder: its own, else its nearest listed parent's."""
        folder = os.path.dirname(rel)
        while folder and folder not in rows:
            folder = os.path.dirname(folder)
        return folder or None

    defined = {sym: objs[o] for o, kind, sym in nm(list(objs), "--defined-only") if kind in "TDBRVWGS"}
    failures = 0
    private = collections.defaultdict(list)
    upward = []
    climbs = collections.defaultdict(list)
    nrefs = 0
    for o, _, sym in nm(list(objs), "-u"):
        if sym not in defined:
            continue  # a system library's
        user, owner = objs[o], defined[sym]
        if user.startswith("apps/") and owner.startswith("src/") and sym not in exports:
            private[sym].append(user)
        if user.startswith("src/") and owner.startswith("apps/"):
            upward.append("%s uses %s (%s)" % (user, sym, owner))
        a, b = entry(user), entry(owner)
        if a is None or b is None or a == b:
            continue
        nrefs += 1
        if rows[b] >= rows[a]:
            climbs[(a, b)].append("%s uses %s (%s)" % (user, sym, owner))

    for sym, users in sorted(private.items()):
        failures += 1
        print("test_layer_symbols: FAIL %s uses %s, which the core does not export (declare it with TS_API in "
              "include/, or keep the application off it)" % (", ".join(sorted(set(users))[:4]), sym))
    for u in sorted(upward):
        failures += 1
        print("test_layer_symbols: FAIL the core uses an application's symbol: " + u)
    for pair, uses in sorted(climbs.items()):
        if pair not in KNOWN:
            failures += 1
            print("test_layer_symbols: FAIL %s (row %d) uses %s (row %d), which climbs:" % (pair[0], rows[pair[0]],
                                                                                          pair[1], rows[pair[1]]))
            for u in sorted(uses)[:10]:
                print("    " + u)
    partial = left_out(src, objs, entry)
    for pair in sorted(KNOWN):
        if pair not in climbs and pair[0] in partial:
            print("test_layer_symbols: %s -> %s not checked: this build left out sources of %s" % (pair + (pair[0],)))
        elif pair not in climbs:
            failures += 1
            print("test_layer_symbols: FAIL %s -> %s no longer climbs: remove it from KNOWN" % pair)
    napps = sum(1 for r in objs.values() if r.startswith("apps/"))
    print("test_layer_symbols: %d core and %d application objects, %d core exports; %d references between "
          "folders, %d climbing pairs (%d known)" % (len(objs) - napps, napps, len(exports), nrefs, len(climbs),
                                                     len(KNOWN)))
    return 1 if failures else 0


def self_check():
    """The line parser on nm's two shapes (defined with an address, undefined without)."""
    a = LINE.match("x/src/core/file.c.o:0000000000000040 T ts_read_file")
    b = LINE.match("x/apps/data/a.c.o:                 U ts_program_run")
    assert a and a.groups() == ("x/src/core/file.c.o", "T", "ts_read_file"), a
    assert b and b.groups() == ("x/apps/data/a.c.o", "U", "ts_program_run"), b


if __name__ == "__main__":
    self_check()
    sys.exit(main())
