#!/usr/bin/python3
"""Checks the user docs (README.md, docs/*.md) against the code they describe.

  (a) flags: every command line in a fenced code block (and every inline code span that starts
      with a command) that runs kturnd, kturnctl, kturn-auth or kturn-operator, also as a path
      (build/kturnd, $BUILD_DIR/kturnd, ./kturnd ...), uses only flags that binary's --help
      lists. Subcommands are followed generically: `kturnctl render -f X` is checked against
      `kturnctl render --help`, at any depth, for whatever subcommands the binary's help lists;
  (b) make: every `make <target>` names a target of the Makefile;
  (c) links: every relative Markdown link resolves to a file or directory of the repository,
      and a `#anchor` to a heading of the target (GitHub's slug rules);
  (d) YAML: every ```yaml block parses.

Each failure is printed as FILE:LINE: what is wrong; the exit status is 1 if there is any, else
0. A binary that is not given is not checked (a note says so): ctest passes each one that is
built (tests/docs/CMakeLists.txt).

  /usr/bin/python3 tests/docs/doc_check.py --kturnd build/kturnd --kturnctl build/kturnctl \\
      --kturn-auth build/kturn-auth --kturn-operator build/kturn-operator [FILE.md ...]

Only the standard library and python3-yaml.
"""

import argparse
import dataclasses
import glob
import os
import re
import subprocess
import sys
import unicodedata
import urllib.parse
from typing import Dict, Iterator, List, Optional, Set, Tuple

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BINARIES = ("kturnd", "kturnctl", "kturn-auth", "kturn-operator")

# Fenced blocks in these languages hold no shell commands.
NOT_SHELL = {"yaml", "yml", "json", "jsonc", "cpp", "c", "c++", "h", "go", "python", "py",
             "promql", "html", "javascript", "js", "dockerfile", "ini", "toml", "diff"}
# Words that run the command after them (skipped when looking for the command's name).
WRAPPERS = {"sudo", "env", "exec", "nohup", "time", "nice", "command", "then", "do", "else",
            "!"}


@dataclasses.dataclass
class Failure:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


# ---------------------------------------------------------------------------------------------
# Markdown structure


@dataclasses.dataclass
class Block:
    """A fenced code block: its info-string language and its lines with their line numbers."""
    lang: str
    start: int  # line number of the opening fence
    lines: List[Tuple[int, str]]


@dataclasses.dataclass
class Document:
    path: str       # as given
    rel: str        # relative to the repository, for messages
    blocks: List[Block]
    prose: List[Tuple[int, str]]  # lines outside fenced blocks

    def headings(self) -> List[str]:
        out = []
        for _, text in self.prose:
            m = re.match(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", text)
            if m:
                out.append(m.group(2))
        return out


FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*([^`\s]*)")


def parse_markdown(path: str) -> Document:
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks: List[Block] = []
    prose: List[Tuple[int, str]] = []
    current: Optional[Block] = None
    fence = ""
    for number, text in enumerate(lines, start=1):
        if current is None:
            m = FENCE.match(text)
            if m:
                fence = m.group(2)
                current = Block(lang=m.group(3).lower(), start=number, lines=[])
            else:
                prose.append((number, text))
            continue
        stripped = text.strip()
        if stripped.startswith(fence) and set(stripped) == {fence[0]}:
            blocks.append(current)
            current = None
            continue
        current.lines.append((number, text))
    if current is not None:
        blocks.append(current)  # unterminated: still checked
    return Document(path=path, rel=os.path.relpath(path, REPO), blocks=blocks, prose=prose)


INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.S)


def prose_text(doc: Document) -> Tuple[str, List[int]]:
    """The prose as one text and, per character, its line number."""
    text_parts, line_of = [], []
    for number, line in doc.prose:
        text_parts.append(line + "\n")
        line_of.extend([number] * (len(line) + 1))
    return "".join(text_parts), line_of


def inline_code_spans(doc: Document) -> Iterator[Tuple[int, str]]:
    text, line_of = prose_text(doc)
    for m in INLINE_CODE.finditer(text):
        yield line_of[m.start()], " ".join(m.group(2).split())


# ---------------------------------------------------------------------------------------------
# Shell command lines


class Sep(str):
    """A command separator token (; | || && & ( ))."""


def tokenize(line: str) -> List[str]:
    """Shell words of one logical line, with separators as Sep tokens; comments dropped.

    Quotes and backslashes as in sh; `#` starts a comment only at the start of a word. `&`
    right after `<`/`>` or before `>` belongs to a redirection (2>&1, &>file), not a separator.
    """
    tokens: List[str] = []
    cur: List[str] = []
    started = False
    quote = ""
    i = 0

    def flush() -> None:
        nonlocal cur, started
        if started:
            tokens.append("".join(cur))
        cur, started = [], False

    while i < len(line):
        c = line[i]
        if quote:
            if c == quote:
                quote = ""
            elif c == "\\" and quote == '"' and i + 1 < len(line):
                i += 1
                cur.append(line[i])
            else:
                cur.append(c)
        elif c in "'\"":
            quote, started = c, True
        elif c == "\\" and i + 1 < len(line):
            i += 1
            cur.append(line[i])
            started = True
        elif c.isspace():
            flush()
        elif c == "#" and not started:
            break
        elif c in ";|&()":
            if c == "&" and ((cur and cur[-1] in "<>") or line[i + 1:i + 2] == ">"):
                cur.append(c)
                started = True
            else:
                flush()
                op = c
                if c in "|&" and line[i + 1:i + 2] == c:
                    op = c * 2
                    i += 1
                tokens.append(Sep(op))
        else:
            cur.append(c)
            started = True
        i += 1
    flush()
    return tokens


def logical_lines(block: Block) -> Iterator[Tuple[int, str]]:
    """Lines of a shell block with backslash continuations joined and `$ ` prompts removed."""
    pending, first = "", 0
    for number, text in block.lines:
        if not pending:
            first = number
            text = re.sub(r"^\s*\$\s+", "", text)
        if text.rstrip().endswith("\\"):
            pending += text.rstrip()[:-1] + " "
            continue
        yield first, pending + text
        pending = ""
    if pending:
        yield first, pending


def commands(tokens: List[str]) -> Iterator[List[str]]:
    """The simple commands of a token list, split at separators."""
    cmd: List[str] = []
    for t in tokens:
        if isinstance(t, Sep):
            if cmd:
                yield cmd
            cmd = []
        else:
            cmd.append(t)
    if cmd:
        yield cmd


ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
REDIRECT_ALONE = re.compile(r"^\d*(>>|>\||>|<<<|<<|<|&>>|&>)$")
REDIRECT_ATTACHED = re.compile(r"^\d*(>>|>|<|&>>|&>)\S")


def command_name(cmd: List[str]) -> Tuple[Optional[str], List[str]]:
    """(the command's name, its arguments) after assignments and wrappers (sudo, env, ...)."""
    i = 0
    while i < len(cmd):
        word = cmd[i]
        if ASSIGNMENT.match(word) or word in WRAPPERS:
            i += 1
        elif word == "timeout":  # timeout [-s SIG] DURATION COMMAND
            i += 1
            while i < len(cmd) and cmd[i].startswith("-"):
                i += 2 if cmd[i] in ("-s", "-k", "--signal", "--kill-after") else 1
            i += 1
        else:
            return word, strip_redirections(cmd[i + 1:])
    return None, []


def strip_redirections(args: List[str]) -> List[str]:
    out: List[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif REDIRECT_ALONE.match(a):
            skip = True
        elif REDIRECT_ATTACHED.match(a) and not a.startswith("<"):
            pass
        else:
            out.append(a)
    return out


def binary_of(word: str) -> Optional[str]:
    """kturnd, build/kturnd, $BUILD_DIR/kturnd, ./kturnd ... → "kturnd"."""
    base = word.rsplit("/", 1)[-1]
    return base if base in BINARIES else None


# ---------------------------------------------------------------------------------------------
# --help of the binaries (CLI11's format)


@dataclasses.dataclass
class Help:
    options: Dict[str, bool]  # "-c", "--config" → takes a value
    subcommands: List[str]
    positionals: bool


def parse_help(text: str) -> Help:
    options: Dict[str, bool] = {}
    subcommands: List[str] = []
    positionals = False
    section = ""
    for line in text.splitlines():
        header = re.match(r"^(\w[\w ]*):\s*$", line)
        if header:
            section = header.group(1)
            continue
        if section == "Subcommands":
            m = re.match(r"^ {2}(\S+)(\s{2,}|$)", line)
            if m:
                subcommands.append(m.group(1))
            continue
        if section == "Positionals" and re.match(r"^ {2}\S", line):
            positionals = True
            continue
        m = re.match(r"^ {2}(-\S+)(.*)$", line)
        if not m:
            continue
        names = [n for n in m.group(1).split(",") if n.startswith("-")]
        # The value's type follows the names (TEXT, UINT, INT:NONNEGATIVE, TEXT:{a,b}=a, ...);
        # a flag has none, and its description starts in the next column.
        takes_value = bool(re.match(r"^ ?[A-Z][A-Z0-9_]*(?![a-z])", m.group(2)))
        for n in names:
            options[n] = takes_value
    return Help(options=options, subcommands=subcommands, positionals=positionals)


class HelpCache:
    def __init__(self, paths: Dict[str, str]):
        self.paths = paths
        self.cache: Dict[Tuple[str, ...], Help] = {}
        self.errors: Dict[Tuple[str, ...], str] = {}

    def get(self, binary: str, subcommands: Tuple[str, ...]) -> Optional[Help]:
        key = (binary,) + subcommands
        if key in self.cache:
            return self.cache[key]
        if key in self.errors:
            return None
        argv = [self.paths[binary], *subcommands, "--help"]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as e:
            self.errors[key] = f"cannot run {' '.join(argv)}: {e}"
            return None
        if done.returncode != 0 or "Options:" not in done.stdout:
            self.errors[key] = (f"{' '.join(argv)} exited {done.returncode}: "
                                f"{(done.stderr or done.stdout).strip()[:200]}")
            return None
        self.cache[key] = parse_help(done.stdout)
        return self.cache[key]


# Words that stand for something in prose usage lines: <name>, [options], ..., SUBCOMMAND.
PLACEHOLDER = re.compile(r"^(<[^>]*>|\[[^\]]*\]|\.\.\.|[A-Z][A-Z_]+)$")


def check_arguments(binary: str, args: List[str], helps: HelpCache) -> List[str]:
    """What is wrong with one invocation's arguments ([] if nothing)."""
    chain: Tuple[str, ...] = ()
    help_ = helps.get(binary, chain)
    if help_ is None:
        return [helps.errors[(binary,)]]
    problems: List[str] = []
    if args and args[0].endswith(":"):
        return []  # `kturnctl config: media/gw: deleted`: a message the tool prints, not a call
    if any(a.startswith("[") or a.endswith("]") for a in args):
        # A usage line: `[-o table|json]`, `[-c ORIGIN [-i NS/NAME]]`: the brackets only say
        # what is optional; the flags and their values inside are checked as written.
        args = [a.lstrip("[").rstrip("]") for a in args]
        args = [a for a in args if a]
    name = binary
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            break
        if re.match(r"^\[-[^\]]*\]$", a):
            a = a[1:-1]  # [--flag]: an optional flag in a usage line
        elif PLACEHOLDER.match(a):
            if help_.subcommands:
                break  # `kturnctl <subcommand> ...`: which one is not known, nor its flags
            continue
        if a.startswith("--"):
            flag = a.split("=", 1)[0]
            if flag not in help_.options:
                problems.append(f"{name}: unknown flag {flag} (not in `{name} --help`)")
            elif help_.options[flag] and "=" not in a:
                i += 1
            continue
        if a.startswith("-") and len(a) > 1 and not re.match(r"^-\d", a):
            short = a[:2]
            if a in help_.options:
                if help_.options[a]:
                    i += 1
            elif short in help_.options and help_.options[short]:
                pass  # -cVALUE
            elif all(f"-{c}" in help_.options for c in a[1:]):
                if help_.options[f"-{a[-1]}"]:
                    i += 1  # -wc VALUE: flags, the last one taking the value
            else:
                problems.append(f"{name}: unknown flag {a} (not in `{name} --help`)")
            continue
        # A positional word: a subcommand when the help lists some and none was taken yet.
        if help_.subcommands:
            if a not in help_.subcommands:
                problems.append(f"{name}: unknown subcommand {a!r} "
                                f"(`{name} --help` lists {', '.join(help_.subcommands)})")
                break
            chain = chain + (a,)
            sub = helps.get(binary, chain)
            if sub is None:
                problems.append(helps.errors[(binary,) + chain])
                break
            help_, name = sub, f"{binary} {' '.join(chain)}"
            continue
        if not help_.positionals:
            problems.append(f"{name}: unexpected argument {a!r} (`{name} --help` lists no "
                            f"positional arguments)")
    return problems


# ---------------------------------------------------------------------------------------------
# The Makefile


def make_targets(makefile: str) -> Set[str]:
    targets: Set[str] = set()
    with open(makefile, encoding="utf-8") as f:
        for line in f:
            if line.startswith(("\t", "#")) or re.match(r"^[^:#=]*[:?+!]?=", line):
                continue
            m = re.match(r"^([^:#=\t][^:#=]*?)\s*::?(?!=)", line)
            if m:
                for t in m.group(1).split():
                    if "%" not in t and "$" not in t:
                        targets.add(t)
    return targets


MAKE_VALUE_OPTIONS = {"-C", "-f", "-j", "-l", "-o", "-W", "-I", "--directory", "--file",
                      "--jobs", "--load-average"}


def make_goals(args: List[str]) -> Tuple[List[str], Optional[str]]:
    """(goals, -C directory) of a make invocation."""
    goals: List[str] = []
    directory: Optional[str] = None
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a in MAKE_VALUE_OPTIONS:
            if a in ("-C", "--directory") and i < len(args):
                directory = args[i]
            i += 1
        elif a.startswith("-") or ASSIGNMENT.match(a):
            continue
        else:
            goals.append(a)
    return goals, directory


# ---------------------------------------------------------------------------------------------
# Links and anchors


def github_slug(heading: str) -> str:
    """The id GitHub gives a heading: rendered text, lower case, punctuation removed (letters,
    digits, marks, `_`, `-` and spaces kept), spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)   # links and images → their text
    text = re.sub(r"<[^>]+>", "", text)                          # inline HTML
    text = text.replace("`", "").replace("*", "")
    out = []
    for c in text.lower():
        if c.isalnum() or c in " -_" or unicodedata.category(c).startswith("M"):
            out.append("-" if c == " " else c)
    return "".join(out)


def anchors(doc: Document) -> Set[str]:
    seen: Dict[str, int] = {}
    out: Set[str] = set()
    for h in doc.headings():
        slug = github_slug(h)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    # Explicit HTML anchors (<a name="x"> / id="x") count too.
    for _, line in doc.prose:
        for m in re.finditer(r"<a\s+(?:name|id)=\"([^\"]+)\"", line):
            out.add(m.group(1))
    return out


LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.M)


def links(doc: Document) -> Iterator[Tuple[int, str]]:
    text, line_of = prose_text(doc)
    # Code spans are not links: blank them, keeping offsets.
    text = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), text)
    for m in LINK.finditer(text):
        yield line_of[m.start()], m.group(1)
    for m in REF_DEF.finditer(text):
        yield line_of[m.start()], m.group(1)


# ---------------------------------------------------------------------------------------------
# The checks


class Checker:
    def __init__(self, binaries: Dict[str, str], makefile: str, verbose: bool = False):
        self.verbose = verbose
        self.helps = HelpCache(binaries)
        self.binaries = binaries
        self.targets = make_targets(makefile)
        self.makefile = makefile
        self.failures: List[Failure] = []
        self.counts = {"commands": 0, "make": 0, "links": 0, "yaml": 0}
        self.unchecked: Dict[str, int] = {}
        self.docs: Dict[str, Document] = {}

    def document(self, path: str) -> Document:
        path = os.path.abspath(path)
        if path not in self.docs:
            self.docs[path] = parse_markdown(path)
        return self.docs[path]

    def fail(self, doc: Document, line: int, message: str) -> None:
        self.failures.append(Failure(doc.rel, line, message))

    def check(self, path: str) -> None:
        doc = self.document(path)
        for block in doc.blocks:
            if block.lang in ("yaml", "yml"):
                self.check_yaml(doc, block)
            elif block.lang not in NOT_SHELL:
                for number, line in logical_lines(block):
                    self.check_command_line(doc, number, line, fenced=True)
        for number, span in inline_code_spans(doc):
            self.check_command_line(doc, number, span, fenced=False)
        for number, target in links(doc):
            self.check_link(doc, number, target)

    def check_command_line(self, doc: Document, number: int, line: str, fenced: bool) -> None:
        for cmd in commands(tokenize(line)):
            name, args = command_name(cmd)
            if name is None:
                continue
            # An inline span is a command only if it starts with one: `kturnd -c x`, not
            # `-c/--config` or prose that mentions kturnd among other words.
            if not fenced and cmd[0] != name:
                continue
            binary = binary_of(name)
            if binary is not None:
                if binary not in self.binaries:
                    self.unchecked[binary] = self.unchecked.get(binary, 0) + 1
                    continue
                if not args:
                    continue  # the bare name (prose, an image name): nothing to check
                self.counts["commands"] += 1
                if self.verbose:
                    print(f"{doc.rel}:{number}: {' '.join([name] + args)}")
                for problem in check_arguments(binary, args, self.helps):
                    self.fail(doc, number, problem)
            elif name == "make":
                self.check_make(doc, number, args)
            if not fenced:
                return  # one command per inline span

    def check_make(self, doc: Document, number: int, args: List[str]) -> None:
        goals, directory = make_goals(args)
        targets, makefile = self.targets, self.makefile
        if directory is not None:
            makefile = os.path.join(REPO, directory, "Makefile")
            if not os.path.exists(makefile):
                self.fail(doc, number, f"make -C {directory}: no {os.path.relpath(makefile, REPO)}")
                return
            targets = make_targets(makefile)
        for goal in goals:
            self.counts["make"] += 1
            if self.verbose:
                print(f"{doc.rel}:{number}: make {goal}")
            if goal not in targets:
                self.fail(doc, number, f"make {goal}: no such target in "
                                       f"{os.path.relpath(makefile, REPO)}")

    def check_link(self, doc: Document, number: int, target: str) -> None:
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
            return  # http:, https:, mailto: ... are not checked here
        self.counts["links"] += 1
        path_part, _, anchor = target.partition("#")
        path_part = urllib.parse.unquote(path_part)
        if path_part:
            base = REPO if path_part.startswith("/") else os.path.dirname(os.path.abspath(doc.path))
            resolved = os.path.normpath(os.path.join(base, path_part.lstrip("/")))
            if not os.path.exists(resolved):
                self.fail(doc, number, f"link {target}: {os.path.relpath(resolved, REPO)} "
                                       "does not exist")
                return
        else:
            resolved = os.path.abspath(doc.path)
        if anchor and resolved.endswith(".md") and os.path.isfile(resolved):
            have = anchors(self.document(resolved))
            if urllib.parse.unquote(anchor) not in have:
                self.fail(doc, number, f"link {target}: no heading with anchor #{anchor} in "
                                       f"{os.path.relpath(resolved, REPO)}")

    def check_yaml(self, doc: Document, block: Block) -> None:
        self.counts["yaml"] += 1
        text = "\n".join(line for _, line in block.lines)
        try:
            list(yaml.safe_load_all(text))
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            line = block.start + 1 + (mark.line if mark is not None else 0)
            what = getattr(e, "problem", None) or str(e).splitlines()[0]
            self.fail(doc, line, f"yaml block (from line {block.start}) does not parse: {what}")


def default_files() -> List[str]:
    return [os.path.join(REPO, "README.md")] + sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for b in BINARIES:
        parser.add_argument(f"--{b}", metavar="PATH", help=f"the {b} binary whose --help to use")
    parser.add_argument("--makefile", default=os.path.join(REPO, "Makefile"))
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print every command line and make target checked")
    parser.add_argument("files", nargs="*", help="Markdown files (default: README.md, docs/*.md)")
    args = parser.parse_args(argv)
    binaries = {b: getattr(args, b.replace("-", "_")) for b in BINARIES
                if getattr(args, b.replace("-", "_"))}
    checker = Checker(binaries, args.makefile, args.verbose)
    files = args.files or default_files()
    for f in files:
        checker.check(f)
    for failure in checker.failures:
        print(failure)
    c = checker.counts
    print(f"doc_check: {len(files)} files; {c['commands']} command lines, {c['make']} make "
          f"targets, {c['links']} relative links, {c['yaml']} yaml blocks checked; "
          f"{len(checker.failures)} failures")
    for binary, n in sorted(checker.unchecked.items()):
        print(f"doc_check: note: {n} {binary} command lines not checked (no --{binary})")
    return 1 if checker.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
