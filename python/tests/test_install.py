# test_install.py — `pip install --no-build-isolation --no-deps ./python` works with no network:
# a copy of python/ (so nothing is written into the source tree) is installed into a temporary
# directory and imported from there, finding the library through TESSERA_LIB. Skipped without
# pip or setuptools (Debian python3-pip, python3-setuptools).
import os
import shutil
import subprocess
import sys

import pytest

import tessera
from conftest import REPO


def test_pip_install_offline(tmp_path):
    for mod in ("pip", "setuptools"):
        if subprocess.run([sys.executable, "-c", "import " + mod], capture_output=True).returncode:
            pytest.skip("no %s (Debian python3-%s)" % (mod, mod))
    src = tmp_path / "src"
    shutil.copytree(os.path.join(REPO, "python"), src, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-compile", "--target",
                        str(tmp_path / "site"), str(src)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    env = dict(env, PYTHONPATH=str(tmp_path / "site"), TESSERA_LIB=tessera.library_path)
    r = subprocess.run([sys.executable, "-c", "import tessera; print(tessera.__file__, tessera.version())"],
                       capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert str(tmp_path / "site") in r.stdout and tessera.version() in r.stdout
