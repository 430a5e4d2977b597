#!/usr/bin/python3
"""Every header of src/ and include/ compiles on its own: a translation unit of just
`#include "<header>"` passes `c++ -fsyntax-only` with the project's include paths. A header that
leans on what its includer happened to include first fails here, naming the header and the first
errors.

  header_check.py --compiler c++ -- <flags: -I..., -D..., -std=c++20>
"""

import argparse
import concurrent.futures
import os
import subprocess
import sys


def check(compiler, flags, root, header):
    name = os.path.relpath(header, root)
    included = name.split("/", 1)[1]  # relative to src/ or include/
    r = subprocess.run([compiler, "-x", "c++", "-fsyntax-only", *flags, "-"],
                       input=f'#include "{included}"\n', capture_output=True, text=True,
                       timeout=300)
    return name, r.returncode, r.stderr


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    p.add_argument("--compiler", default="c++")
    p.add_argument("flags", nargs="*")
    args = p.parse_args()
    root = os.path.abspath(args.root)
    headers = sorted(os.path.join(d, f) for top in ("src", "include")
                     for d, _, files in os.walk(os.path.join(root, top))
                     for f in files if f.endswith(".h"))
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for name, rc, err in pool.map(lambda h: check(args.compiler, args.flags, root, h),
                                      headers):
            if rc != 0:
                failed += 1
                print(f"{name} does not compile on its own:\n" +
                      "\n".join(err.splitlines()[:8]), file=sys.stderr)
    print(f"headers: {len(headers)} checked, {failed} not self-contained")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
