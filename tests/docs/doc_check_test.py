#!/usr/bin/python3
"""Self-test of doc_check.py: it must fail where it should and only there.

fixtures/bad.md marks every line that must fail with `expect: TEXT` (in a shell or YAML
comment, or an HTML comment); the check must report exactly those lines, each with a message
containing TEXT, and exit 1. fixtures/good.md holds the forms it must accept (paths to the
binaries, prompts, continuations, redirections, pipes, wrappers, combined short flags, nested
subcommands, image names, links with anchors, reference links, a duplicate heading) and must
pass. The binaries are fixtures/fake_cli.py, which prints --help in CLI11's layout, so this
test needs no build.

  /usr/bin/python3 tests/docs/doc_check_test.py
"""

import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
FAKES = ("kturnd", "kturnctl", "kturn-operator")


class DocCheckTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="kturn-doc-check-")
        cls.args = ["--makefile", os.path.join(FIXTURES, "Makefile")]
        for name in FAKES:
            path = os.path.join(cls.tmp.name, name)
            with open(path, "w") as f:
                f.write(f'#!/bin/sh\nexec {sys.executable} {FIXTURES}/fake_cli.py {name} "$@"\n')
            os.chmod(path, 0o755)
            cls.args += [f"--{name}", path]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_check(self, fixture):
        done = subprocess.run(
            [sys.executable, os.path.join(HERE, "doc_check.py"), *self.args,
             os.path.join(FIXTURES, fixture)], capture_output=True, text=True, timeout=60)
        rel = os.path.relpath(os.path.join(FIXTURES, fixture), REPO)
        failures = {}
        for line in done.stdout.splitlines():
            m = re.match(rf"^{re.escape(rel)}:(\d+): (.*)$", line)
            if m:
                failures.setdefault(int(m.group(1)), []).append(m.group(2))
        return done, failures

    def test_good_passes(self):
        done, failures = self.run_check("good.md")
        self.assertEqual(failures, {}, done.stdout + done.stderr)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        # It did look: every kind of check ran on something.
        m = re.search(r"(\d+) command lines, (\d+) make targets, (\d+) relative links, "
                      r"(\d+) yaml blocks", done.stdout)
        self.assertIsNotNone(m, done.stdout)
        self.assertTrue(all(int(n) > 0 for n in m.groups()), done.stdout)

    def test_bad_fails_exactly_where_marked(self):
        done, failures = self.run_check("bad.md")
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        expected = {}
        with open(os.path.join(FIXTURES, "bad.md")) as f:
            for number, line in enumerate(f, start=1):
                m = re.search(r"expect: (.*?)\s*(-->)?\s*$", line)
                if m:
                    expected[number] = m.group(1)
        self.assertGreaterEqual(len(expected), 10)
        for number, text in expected.items():
            got = failures.get(number, [])
            self.assertTrue(any(text in g for g in got),
                            f"bad.md:{number}: want a failure containing {text!r}, got {got}\n"
                            + done.stdout)
        unexpected = {n: f for n, f in failures.items() if n not in expected}
        self.assertEqual(unexpected, {}, done.stdout)

    def test_a_missing_binary_is_a_note_not_a_failure(self):
        done = subprocess.run(
            [sys.executable, os.path.join(HERE, "doc_check.py"), "--makefile",
             os.path.join(FIXTURES, "Makefile"), os.path.join(FIXTURES, "good.md")],
            capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("not checked (no --kturnd)", done.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
