# run_tests.py — what ctest runs (test_python_package): the pytest suite of python/tests against
# the build's libtessera.so (TESSERA_LIB) and `tessera` command (TS_CLI), set by CMake. Exits 77
# (skipped) without numpy or pytest (Debian python3-numpy, python3-pytest), except under CI=true,
# where scripts/install-deps.sh has installed them and a skip would hide the suite: a failure.
import os
import sys

try:
    import numpy  # noqa: F401
    import pytest
except ImportError as e:
    print("test_python_package: %s (Debian: python3-numpy python3-pytest)" % e)
    sys.exit(1 if os.environ.get("CI") == "true" else 77)

sys.dont_write_bytecode = True  # nothing written into the source tree
here = os.path.dirname(os.path.abspath(__file__))
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", here] + sys.argv[1:]))
