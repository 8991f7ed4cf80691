#!/usr/bin/env python3
"""Runs `solder test-onnx` over ONNX backend-test suites and checks a pass rate.

The pass rate is passed / (passed + failed): skipped tests (unsupported ops
or dtypes, refused legacy features) do not count. All of solder's output is
shown, so failures are listed in the CTest log.

usage: run_suites.py SOLDER SHARED_DIR --min-pass-rate PCT SUITE...
Exit codes: 0 rate reached, 1 below it (or solder failed to run), 77 (the
CTest SKIP_RETURN_CODE) when SHARED_DIR/onnx-tests is absent.
"""

import argparse
import os
import re
import subprocess
import sys

SKIP = 77


def main():
    p = argparse.ArgumentParser()
    p.add_argument("solder")
    p.add_argument("shared")
    p.add_argument("--min-pass-rate", type=float, required=True)
    p.add_argument("--backend", default="reference")
    p.add_argument("--jobs", default="2")
    p.add_argument("suites", nargs="+")
    args = p.parse_args()

    root = os.path.join(args.shared, "onnx-tests")
    dirs = [os.path.join(root, s) for s in args.suites]
    missing = [d for d in dirs if not os.path.isdir(d)]
    if missing:
        print("SKIP: ONNX test suites not found: " + ", ".join(missing))
        return SKIP
    r = subprocess.run([args.solder, "test-onnx", "--backend", args.backend,
                        "--jobs", args.jobs, "--verbose"] + dirs,
                       capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    m = re.search(r"^(\d+) passed, (\d+) failed, (\d+) skipped$", r.stdout,
                  re.M)
    if r.returncode not in (0, 1) or not m:
        print(f"error: solder test-onnx exited with {r.returncode}")
        return 1
    passed, failed = int(m.group(1)), int(m.group(2))
    ran = passed + failed
    rate = 100.0 * passed / ran if ran else 100.0
    ok = rate >= args.min_pass_rate
    print(f"{'/'.join(args.suites)}: pass rate {rate:.1f}% ({passed}/{ran}), "
          f"required {args.min_pass_rate:g}%: {'ok' if ok else 'TOO LOW'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
