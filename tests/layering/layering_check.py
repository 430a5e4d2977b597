#!/usr/bin/python3
"""The layering of src/: each folder is a library (kturn_library(<folder> DEPS ...) in the top
CMakeLists.txt, the one place the direction is declared), and a file in a folder may include
only headers of its own folder, of the libraries its library depends on (directly or through
them), and the public include/kturn/. src/bin/ holds the programs and may include anything.

Fails, naming the file, the line and the folder, on an include that goes against that, and on a
cycle among the declared dependencies. With --graph, prints the folders' include graph as it is
(edges with the number of includes), for docs/architecture.md and the issue notes.

  layering_check.py [--root DIR] [--graph]
"""

import argparse
import os
import re
import sys
from collections import defaultdict
from typing import Dict, List, Set, Tuple

LIBRARY = re.compile(r"kturn_library\(\s*(\w+)([^)]*)\)", re.S)
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)
PROGRAMS = "bin"  # src/bin/: the *_main.cc files, above every library


def declared(cmake_text: str) -> Dict[str, Set[str]]:
    """{folder: the kturn libraries it names in DEPS} from kturn_library() calls."""
    out: Dict[str, Set[str]] = {}
    for name, rest in LIBRARY.findall(cmake_text):
        deps = set(re.findall(r"\bkturn_(\w+)", rest))
        out[name] = deps
    return out


def closure(graph: Dict[str, Set[str]]) -> Dict[str, Set[str]]:
    out = {}
    for start in graph:
        seen: Set[str] = set()
        stack = list(graph[start])
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            stack.extend(graph.get(n, ()))
        out[start] = seen
    return out


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Every folder that reaches itself, with one path back."""
    found = []
    for start in sorted(graph):
        stack: List[Tuple[str, List[str]]] = [(d, [start, d]) for d in sorted(graph[start])]
        seen: Set[str] = set()
        while stack:
            node, path = stack.pop()
            if node == start:
                found.append(path)
                break
            if node in seen:
                continue
            seen.add(node)
            stack.extend((d, path + [d]) for d in sorted(graph.get(node, ())))
    return found


def includes(src: str, folders: Set[str]):
    """(file, line, including folder, included folder) for every "folder/..." include of a
    library folder in src/ (system, generated and public headers are not a folder's)."""
    for folder in sorted(os.listdir(src)):
        base = os.path.join(src, folder)
        if not os.path.isdir(base):
            continue
        for dirpath, _, files in os.walk(base):
            for name in sorted(files):
                if not name.endswith((".h", ".cc")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                for m in INCLUDE.finditer(text):
                    target = m.group(1).split("/", 1)[0]
                    if "/" in m.group(1) and target in folders:
                        line = text.count("\n", 0, m.start()) + 1
                        yield os.path.relpath(path, os.path.dirname(src)), line, folder, target


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    p.add_argument("--graph", action="store_true", help="print the include graph")
    args = p.parse_args()
    root = os.path.abspath(args.root)
    with open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8") as f:
        graph = declared(f.read())
    src = os.path.join(root, "src")
    folders = {d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d))}
    problems = []
    for folder in sorted(folders - set(graph) - {PROGRAMS}):
        problems.append(f"src/{folder}/ is no library: add kturn_library({folder} DEPS ...) "
                        f"to CMakeLists.txt")
    for path in cycles(graph):
        problems.append("the declared dependencies go round: " + " -> ".join(path))
    allowed = closure(graph)
    edges: Dict[Tuple[str, str], int] = defaultdict(int)
    for path, line, folder, target in includes(src, folders):
        if folder != target:
            edges[(folder, target)] += 1
        if folder in (target, PROGRAMS) or folder not in graph:
            continue
        if target not in allowed[folder]:
            problems.append(f"{path}:{line}: {folder}/ includes {target}/, which kturn_{folder} "
                            f"does not depend on (DEPS: "
                            f"{', '.join(sorted(graph[folder])) or 'none'})")
    if args.graph:
        for folder in sorted(folders):
            out = sorted((t, n) for (f, t), n in edges.items() if f == folder)
            print(f"{folder} -> " + (", ".join(f"{t} ({n})" for t, n in out) or "-"))
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"layering: {len(folders)} folders, {sum(edges.values())} includes across folders, "
          f"{len(problems)} problems", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
