#!/usr/bin/python3
"""layering_check.py fails where it should: on a small tree of its own, an include of a folder
the library does not depend on (directly or through its DEPS) is named with its file and line,
a cycle among the declared DEPS is named, a folder without a library is named, and the same
tree without those passes."""

import os
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layering_check.py")


def tree(root, cmake, files):
    with open(os.path.join(root, "CMakeLists.txt"), "w") as f:
        f.write(cmake)
    for path, text in files.items():
        os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as f:
            f.write(text)


def run(root):
    r = subprocess.run([sys.executable, CHECK, "--root", root], capture_output=True, text=True)
    return r.returncode, r.stderr


def expect(cond, what):
    if not cond:
        print(f"FAIL: {what}")
        sys.exit(1)


LIBS = ("kturn_library(common DEPS fmt::fmt)\nkturn_library(stun DEPS kturn_common)\n"
        "kturn_library(turn DEPS kturn_stun)\nkturn_library(net DEPS kturn_common)\n")
GOOD = {
    "src/common/log.h": "#pragma once\n",
    "src/stun/message.h": '#include "common/log.h"\n',
    "src/turn/server.cc": '#include "turn/server.h"\n#include "stun/message.h"\n'
                          '#include "common/log.h"\n#include <vector>\n#include "kturn/result.h"\n',
    "src/turn/server.h": "#pragma once\n",
    "src/net/socket.h": '#include "common/log.h"\n',
    "src/bin/main.cc": '#include "turn/server.h"\n#include "net/socket.h"\n',
}

with tempfile.TemporaryDirectory() as root:
    tree(root, LIBS, GOOD)
    rc, err = run(root)
    expect(rc == 0, f"a tree that keeps its layering fails: {err}")

with tempfile.TemporaryDirectory() as root:
    tree(root, LIBS, dict(GOOD, **{"src/turn/server.cc": '#include "stun/message.h"\n\n'
                                                         '#include "net/socket.h"\n'}))
    rc, err = run(root)
    expect(rc == 1, "turn/ including net/ passed")
    expect("src/turn/server.cc:3: turn/ includes net/, which kturn_turn does not depend on" in err,
           f"the wrong include is not named with its file and line: {err}")

with tempfile.TemporaryDirectory() as root:
    tree(root, LIBS.replace("kturn_library(stun DEPS kturn_common)",
                            "kturn_library(stun DEPS kturn_common kturn_turn)"), GOOD)
    rc, err = run(root)
    expect(rc == 1 and "go round: stun -> turn -> stun" in err, f"the cycle is not named: {err}")

with tempfile.TemporaryDirectory() as root:
    tree(root, LIBS, dict(GOOD, **{"src/extra/x.h": "#pragma once\n"}))
    rc, err = run(root)
    expect(rc == 1 and "src/extra/ is no library" in err, f"a stray folder passed: {err}")

print("layering_check: a wrong include, a cycle and a stray folder fail; a good tree passes")
