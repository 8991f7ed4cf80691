"""`pip install .` works: builds the wheel from the source tree through
scikit-build-core (pyproject.toml), installs it into a fresh virtual
environment, and from outside the source tree imports `solder`, compiles a
bundled model for the reference backend, runs it on NumPy input and checks
a bad input raises SolderError. Exit code 77 (skip) without
scikit-build-core or venv; run by ctest as `python_wheel`.
"""
import importlib.util
import os
import subprocess
import sys
import tempfile

SOURCE = os.environ.get("SOLDER_SOURCE_DIR",
                        os.path.join(os.path.dirname(__file__), "..", ".."))

SMOKE = r"""
import numpy as np, solder, sys
assert "site-packages" in solder.__file__, solder.__file__
m = solder.compile(sys.argv[1], shapes={"N": 2}, backend="reference")
out = m.create_context().run([np.ones((2, 4), np.float32)])
assert [o.shape for o in out] == [(2, 3)], out
try:
    m.create_context().run([np.ones((3, 4), np.float32)])
    sys.exit("a wrong shape was accepted")
except solder.SolderError as e:
    assert "expected f32[2,4]" in str(e), e
print("wheel ok:", solder.__file__)
"""


def main():
    if importlib.util.find_spec("scikit_build_core") is None:
        print("SKIP: scikit-build-core is not installed (tools/install-deps.sh"
              " installs it)")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        wheels = os.path.join(tmp, "wheels")
        # No build isolation: the build uses the installed scikit-build-core
        # (CI has it from install-deps) instead of downloading one.
        r = subprocess.run([sys.executable, "-m", "pip", "wheel", SOURCE,
                            "--no-build-isolation", "--no-deps", "-w", wheels,
                            "-q"], capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stdout[-3000:], r.stderr[-3000:])
            return 1
        built = [w for w in os.listdir(wheels) if w.startswith("solder-")]
        print("built", built)
        if len(built) != 1 or "abi3" not in built[0]:
            return 1
        venv = os.path.join(tmp, "venv")
        try:
            subprocess.run([sys.executable, "-m", "venv",
                            "--system-site-packages", venv], check=True)
        except subprocess.CalledProcessError:
            print("SKIP: python3 -m venv is not available")
            return 77
        py = os.path.join(venv, "bin", "python")
        subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps",
                        os.path.join(wheels, built[0])], check=True)
        model = os.path.join(os.path.abspath(SOURCE), "tests", "data",
                             "tiny_mlp.onnx")
        # Not the build tree's module (ctest puts it on PYTHONPATH).
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        r = subprocess.run([py, "-c", SMOKE, model], cwd=tmp, env=env,
                           capture_output=True, text=True)
        print(r.stdout, r.stderr)
        return r.returncode


if __name__ == "__main__":
    sys.exit(main())
