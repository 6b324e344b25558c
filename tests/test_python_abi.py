# test_python_abi.py — the Python package's copies of the C API checked against the C compiler:
# every ctypes structure defined in python/tessera (found by importing its modules and walking
# their attributes) against abi_layout.json, which tools/gen_abi_layout.c writes at build time
# from include/: the struct named after the class (CompileOpts: ts_compile_opts), its size, and
# each field's offset and size, by name, both ways (a field missing on either side fails); and
# every TS_* constant of python/tessera/_abi.py against its C value, both ways. Each mismatch is
# one line naming the struct and field (or the constant) and both values; exit 1 if any.
# Usage: python3 test_python_abi.py <build>/abi_layout.json, with TESSERA_LIB naming the build's
# libtessera.so (the package loads it on import). numpy is not needed: without it the modules
# that import numpy are read instead of imported, and must define no structure.
import ast
import ctypes as C
import importlib
import json
import os
import re
import sys
import types

PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python", "tessera")
failures = []


def fail(msg):
    failures.append(msg)
    print("test_python_abi: FAIL " + msg)


def c_name(cls):
    """The C struct a class mirrors: ts_ and its name in snake case (OcrLine: ts_ocr_line)."""
    return "ts_" + re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()


def structs_in_source(path):
    """The classes of a module's source whose bases name a ctypes Structure or Union."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    return [n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)
            and any(getattr(base, "attr", getattr(base, "id", None)) in ("Structure", "Union") for base in n.bases)]


def load_modules():
    """Every module of the package, imported; without numpy, those that need it are read only."""
    sys.path.insert(0, os.path.dirname(PKG))
    try:
        import numpy  # noqa: F401
        have_numpy = True
        importlib.import_module("tessera")
    except ImportError as e:
        if getattr(e, "name", None) != "numpy":
            raise
        have_numpy = False
        pkg = types.ModuleType("tessera")  # the package without its __init__ (which imports numpy)
        pkg.__path__ = [PKG]
        sys.modules["tessera"] = pkg
    modules = []
    for f in sorted(os.listdir(PKG)):
        if not f.endswith(".py"):
            continue
        name = "tessera" if f == "__init__.py" else "tessera." + f[:-3]
        if name != "tessera" or have_numpy:
            try:
                modules.append(importlib.import_module(name))
                continue
            except ImportError as e:
                if have_numpy or getattr(e, "name", None) != "numpy":
                    raise
        for cls in structs_in_source(os.path.join(PKG, f)):
            fail("%s.%s: a structure in a module that needs numpy, not checked without it (move it to _lib.py)"
                 % (name, cls))
        print("test_python_abi: %s needs numpy: read, not imported" % name)
    return modules


def check_structs(modules, layout):
    found = {}
    for mod in modules:
        for obj in vars(mod).values():
            if isinstance(obj, type) and issubclass(obj, (C.Structure, C.Union)) and obj.__module__ == mod.__name__:
                found[obj.__module__ + "." + obj.__name__] = obj
    nfields = 0
    mirrored = set()
    for where, cls in sorted(found.items()):
        name = c_name(cls)
        entry = layout.get(name)
        if entry is None:
            fail("%s: no C struct %s in abi_layout.json (name the class after its C struct and list that in "
                 "tools/gen_abi_layout.c)" % (where, name))
            continue
        mirrored.add(name)
        if C.sizeof(cls) != entry["size"]:
            fail("%s (%s): size %d in Python, %d in C" % (where, name, C.sizeof(cls), entry["size"]))
        cfields = {f["name"]: f for f in entry["fields"]}
        pynames = [f[0] for f in cls._fields_]
        for fname in pynames:
            nfields += 1
            d, cf = getattr(cls, fname), cfields.get(fname)
            if cf is None:
                fail("%s.%s: no field %s in C (offset %d, size %d in Python)" % (name, fname, fname, d.offset, d.size))
                continue
            if d.offset != cf["offset"]:
                fail("%s.%s: offset %d in Python, %d in C" % (name, fname, d.offset, cf["offset"]))
            if d.size != cf["size"]:
                fail("%s.%s: size %d in Python, %d in C" % (name, fname, d.size, cf["size"]))
        for fname, cf in cfields.items():
            if fname not in pynames:
                fail("%s.%s: missing in Python (%s; offset %d, size %d in C)" % (name, fname, where, cf["offset"],
                                                                                 cf["size"]))
    for name in sorted(set(layout) - mirrored):
        fail("%s: in abi_layout.json but no structure of python/tessera mirrors it" % name)
    return len(found), nfields


def check_constants(layout):
    abi = importlib.import_module("tessera._abi")
    py = {k: v for k, v in vars(abi).items() if k.startswith("TS_")}
    for k, v in sorted(py.items()):
        if k not in layout:
            fail("_abi.%s: not in abi_layout.json (list it in tools/gen_abi_layout.c)" % k)
        elif v != layout[k]:
            fail("_abi.%s: %r in Python, %d in C" % (k, v, layout[k]))
    for k in sorted(set(layout) - set(py)):
        fail("%s: in abi_layout.json but not in python/tessera/_abi.py" % k)
    return len(py)


def main():
    if len(sys.argv) != 2:
        print("usage: test_python_abi.py <build>/abi_layout.json")
        return 2
    with open(sys.argv[1]) as f:
        layout = json.load(f)
    nstructs, nfields = check_structs(load_modules(), layout["structs"])
    nconst = check_constants(layout["constants"])
    print("test_python_abi: %d structures (%d fields) and %d constants checked, %d mismatches"
          % (nstructs, nfields, nconst, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
