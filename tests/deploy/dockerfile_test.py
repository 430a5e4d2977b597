#!/usr/bin/python3
"""deploy/docker/*.Dockerfile and stage-runtime.sh, checked without Docker (none here).

  * one Dockerfile per image (kturnd, kturn-operator, kturn-auth), each a CMake target;
  * multi-stage: a Debian 12 build stage installing what scripts/install-deps.sh --build does
    and building the three binaries, then gcr.io/distroless/cc-debian12:nonroot with a
    numeric non-root USER and an exec-form ENTRYPOINT, nothing run in it;
  * the two base images are build arguments (BUILD_IMAGE, RUNTIME_IMAGE) whose defaults are
    those real images, so scripts/build-images.sh can pass local stand-ins;
  * the three build stages are the same up to their last step, which stages each image's own
    binary: a builder's layer cache compiles once for the three images, and they cannot drift
    apart;
  * nothing is fetched from the network but base images and Debian packages: no ADD of a URL,
    no curl or wget; no setcap (the chart grants low ports through the pod, see the comment in
    kturnd.Dockerfile); COPY reads only what .dockerignore lets into the context;
  * ports and image names agree with the chart, also the names scripts/build-images.sh gives
    the images, which passes each Dockerfile's base-image arguments;
  * stage-runtime.sh, run on a system binary, bundles exactly the shared libraries the
    distroless image lacks and fails on a library that does not resolve.

  /usr/bin/python3 tests/deploy/dockerfile_test.py [-v]
"""

import fnmatch
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
CHART = os.path.join(REPO, "deploy", "helm", "kturn")

DOCKER = os.path.join(REPO, "deploy", "docker")
STAGE_SCRIPT = os.path.join(DOCKER, "stage-runtime.sh")
IMAGES = {  # Dockerfile -> (CMake target, values.yaml key of its image)
    "kturnd.Dockerfile": ("kturnd", "dataplane"),
    "kturn-operator.Dockerfile": ("kturn-operator", "operator"),
    "kturn-auth.Dockerfile": ("kturn-auth", "auth"),
}
BUILD_IMAGE = "debian:12"
RUNTIME_IMAGE = "gcr.io/distroless/cc-debian12:nonroot"
# What distroless cc-debian12 holds (packages libc6, libgcc-s1, libstdc++6, libgomp1, libssl3),
# by soname prefix; everything else a binary loads must be bundled.
DISTROLESS_CC_LIBS = ("libc.so", "libm.so", "libdl.so", "libpthread.so", "librt.so",
                      "libresolv.so", "libutil.so", "libgcc_s.so", "libstdc++.so", "libgomp.so",
                      "libssl.so", "libcrypto.so", "ld-linux")

with open(os.path.join(CHART, "values.yaml"), encoding="utf-8") as f:
    VALUES = yaml.safe_load(f)
with open(os.path.join(CHART, "Chart.yaml"), encoding="utf-8") as f:
    APP_VERSION = yaml.safe_load(f)["appVersion"]


def read(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        return f.read()


def instructions(text):
    """[(KEYWORD, arguments)] of a Dockerfile: continuations joined, comments dropped."""
    out = []
    logical = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not logical and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):  # a comment inside a continued instruction
            continue
        if stripped.endswith("\\"):
            logical += stripped[:-1] + " "
            continue
        logical += stripped
        keyword, _, args = logical.partition(" ")
        out.append((keyword.upper(), " ".join(args.split())))
        logical = ""
    assert not logical, "a Dockerfile ends inside a continued line"
    return out


def global_args(parsed):
    """{name: default} of the ARGs before the first FROM (the only instruction allowed there)."""
    out = {}
    for keyword, args in parsed:
        if keyword == "FROM":
            break
        assert keyword == "ARG", f"{keyword} before the first FROM"
        name, _, default = args.partition("=")
        out[name] = default
    return out


def expand(text, variables):
    """text with ${NAME} and $NAME replaced as Docker does for a FROM line."""
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: variables[m.group(1) or m.group(2)], text)


def stages(parsed, resolve=True):
    """[[instructions of one stage, FROM first]], the FROM lines' build arguments replaced by
    their defaults unless resolve is False."""
    defaults = global_args(parsed)
    out = []
    for keyword, args in parsed[len(defaults):]:
        if keyword == "FROM":
            out.append([])
            if resolve:
                args = expand(args, defaults)
        assert out, "an instruction before the first FROM"
        out[-1].append((keyword, args))
    return out


def install_deps_packages(array):
    """The packages of one of scripts/install-deps.sh's arrays (build_packages, test_packages)."""
    text = read("scripts/install-deps.sh")
    block = re.search(rf"^{array}=\((.*?)\n\)", text, re.S | re.M).group(1)
    return {w for line in block.splitlines() for w in line.split("#")[0].split()}


def dockerignore_allows(path):
    """Whether .dockerignore lets path into the build context (last matching rule wins)."""
    allowed = True
    for line in read(".dockerignore").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line.lstrip("!").rstrip("/")
        if fnmatch.fnmatch(path, pattern) or path.startswith(pattern + "/"):
            allowed = negate
    return allowed


def cmake_targets():
    return set(re.findall(r"add_executable\(([\w-]+)", read("CMakeLists.txt")))


class DockerfileTest(unittest.TestCase):
    def each(self):
        for name, (target, values_key) in IMAGES.items():
            path = os.path.join("deploy", "docker", name)
            yield name, target, values_key, stages(instructions(read(path)))

    def test_one_per_image_and_nothing_else(self):
        present = {f for f in os.listdir(DOCKER) if f.endswith("Dockerfile")}
        self.assertEqual(present, set(IMAGES))
        self.assertLessEqual({t for t, _ in IMAGES.values()}, cmake_targets())

    def test_base_images_are_build_arguments(self):
        for name in IMAGES:
            parsed = instructions(read(os.path.join("deploy", "docker", name)))
            with self.subTest(dockerfile=name):
                self.assertEqual(global_args(parsed),
                                 {"BUILD_IMAGE": BUILD_IMAGE, "RUNTIME_IMAGE": RUNTIME_IMAGE})
                froms = [s[0] for s in stages(parsed, resolve=False)]
                self.assertEqual(froms[0], ("FROM", "${BUILD_IMAGE} AS build"))
                self.assertEqual(froms[-1], ("FROM", "${RUNTIME_IMAGE}"))

    def test_build_stage(self):
        packages = install_deps_packages("build_packages")
        for name, target, _, parsed in self.each():
            with self.subTest(dockerfile=name):
                self.assertGreaterEqual(len(parsed), 2, "multi-stage")
                build = parsed[0]
                self.assertEqual(build[0], ("FROM", f"{BUILD_IMAGE} AS build"))
                runs = " && ".join(args for k, args in build if k == "RUN")
                install = re.search(r"apt-get install ([^&]*)", runs)
                self.assertIsNotNone(install, "build dependencies come from apt")
                self.assertIn("--no-install-recommends", install.group(1))
                wanted = {w for w in install.group(1).split() if not w.startswith("-")}
                # The images build with what `make run` installs (install-deps.sh --build),
                # and that is all building needs.
                self.assertEqual(wanted, packages, "install-deps.sh --build's packages")
                self.assertIn("rm -rf /var/lib/apt/lists/*", runs)
                self.assertIn("cmake --build build --target " +
                              " ".join(t for t, _ in IMAGES.values()), runs)
                self.assertIn("-DKTURN_BUILD_TESTS=OFF", runs)
                self.assertIn("-DCMAKE_BUILD_TYPE=Release", runs)
                self.assertIn(f"stage-runtime.sh build/{target} /rootfs", runs)

    def test_build_stages_differ_only_in_the_binary_they_stage(self):
        shared, last = {}, {}
        for name, target, _, parsed in self.each():
            shared[name] = parsed[0][:-1]
            kind, args = parsed[0][-1]
            last[name] = (kind, re.sub(rf"\bbuild/{re.escape(target)}\b", "build/TARGET", args))
        for table in (shared, last):
            first = next(iter(table.values()))
            for name, value in table.items():
                with self.subTest(dockerfile=name):
                    self.assertEqual(value, first)

    def test_runtime_stage(self):
        for name, target, _, parsed in self.each():
            final = parsed[-1]
            with self.subTest(dockerfile=name):
                self.assertEqual(final[0], ("FROM", RUNTIME_IMAGE))
                users = [a for k, a in final if k == "USER"]
                self.assertEqual(len(users), 1, "the final stage names its USER")
                uid, _, gid = users[0].partition(":")
                self.assertTrue(uid.isdigit() and int(uid) != 0, "numeric non-root uid")
                self.assertTrue(not gid or gid.isdigit() and int(gid) != 0)
                entrypoint = [json.loads(a) for k, a in final if k == "ENTRYPOINT"]
                self.assertEqual(entrypoint, [[f"/usr/local/bin/{target}"]])
                self.assertEqual([k for k, _ in final if k == "RUN"], [],
                                 "distroless has no shell")
                for k, a in final:
                    if k == "COPY":
                        self.assertTrue(a.startswith("--from=build "), a)

    def test_nothing_fetched_but_packages(self):
        for name, _, _, parsed in self.each():
            for stage in parsed:
                for keyword, args in stage:
                    with self.subTest(dockerfile=name, instruction=f"{keyword} {args}"[:60]):
                        self.assertNotEqual(keyword, "ADD", "COPY, never ADD (no URLs, no "
                                                            "archives unpacked by magic)")
                        if keyword == "RUN":
                            self.assertIsNone(re.search(r"\b(curl|wget)\b", args))
                            self.assertNotIn("setcap", args)
                            self.assertNotIn("git clone", args)

    def test_copies_only_what_the_context_holds(self):
        for name, _, _, parsed in self.each():
            for keyword, args in parsed[0]:
                if keyword != "COPY":
                    continue
                sources = [a for a in args.split()[:-1] if not a.startswith("--")]
                for source in sources:
                    with self.subTest(dockerfile=name, source=source):
                        self.assertTrue(dockerignore_allows(source.rstrip("/")),
                                        f"{source} is excluded by .dockerignore")
                        self.assertTrue(os.path.exists(os.path.join(REPO, source)))
        self.assertFalse(dockerignore_allows("build"))
        self.assertFalse(dockerignore_allows("tests/golden"))

    def test_ports_agree_with_the_chart(self):
        exposed = {}
        for name, target, _, parsed in self.each():
            exposed[target] = {p for k, a in parsed[-1] if k == "EXPOSE" for p in a.split()}
        for port in ("cds", "metrics", "health"):
            self.assertIn(f"{VALUES['operator'][port]['port']}/tcp", exposed["kturn-operator"])
        self.assertIn(f"{VALUES['auth']['port']}/tcp", exposed["kturn-auth"])
        well_known = read("src/operator/well_known.h")
        for constant in ("kMetricsPort", "kHealthCheckPort"):
            port = re.search(rf'{constant} = (\d+);', well_known).group(1)
            self.assertIn(f"{port}/tcp", exposed["kturnd"])

    def test_build_commands_name_the_charts_images(self):
        for name, target, values_key, _ in self.each():
            repository = VALUES[values_key]["image"]["repository"]
            with self.subTest(dockerfile=name):
                self.assertIn(f"docker build -f deploy/docker/{name} -t "
                              f"{repository}:{APP_VERSION} .", read(f"deploy/docker/{name}"))


class BuildImagesScriptTest(unittest.TestCase):
    """scripts/build-images.sh, read (running it takes root, buildah and half an hour)."""

    SCRIPT = os.path.join("scripts", "build-images.sh")
    MEDIA_ECHO = os.path.join("tests", "e2e", "media-echo.Containerfile")
    JANUS = os.path.join("tests", "e2e", "janus.Containerfile")
    PAUSE = os.path.join("tests", "e2e", "pause.Containerfile")

    def setUp(self):
        self.text = read(self.SCRIPT)
        table = re.search(r"declare -A repository=\((.*?)\n\)", self.text, re.S).group(1)
        self.repository = dict(re.findall(r"\[([\w-]+)\]=(\S+)", table))

    def test_syntax(self):
        subprocess.run(["bash", "-n", os.path.join(REPO, self.SCRIPT)], check=True)

    def test_names_the_charts_images(self):
        for name, (target, values_key) in IMAGES.items():
            with self.subTest(dockerfile=name):
                self.assertEqual(self.repository.get(target),
                                 VALUES[values_key]["image"]["repository"])
        self.assertIn("Chart.yaml", self.text, "the default tag is the chart's appVersion")

    def test_passes_every_base_image_argument(self):
        for path in [os.path.join("deploy", "docker", n) for n in IMAGES] + [
                self.MEDIA_ECHO, self.JANUS, self.PAUSE]:
            for arg in global_args(instructions(read(path))):
                with self.subTest(file=path, arg=arg):
                    self.assertIn(f'--build-arg "{arg}=', self.text)

    def non_root_final_stage(self, path: str) -> list:
        """The last stage of the Containerfile at `path`, checked to be debian:12's (the build
        argument's default) run as one non-root user and group."""
        final = stages(instructions(read(path)))[-1]
        self.assertEqual(final[0], ("FROM", BUILD_IMAGE), "its default base is debian:12")
        users = [a for k, a in final if k == "USER"]
        self.assertEqual(len(users), 1)
        uid, _, gid = users[0].partition(":")
        self.assertTrue(uid.isdigit() and int(uid) != 0 and gid.isdigit() and int(gid) != 0)
        return final

    def test_media_echo_runs_as_non_root(self):
        self.assertIn("media-echo", self.repository)
        final = self.non_root_final_stage(self.MEDIA_ECHO)
        self.assertEqual([json.loads(a) for k, a in final if k == "ENTRYPOINT"],
                         [["/usr/bin/turnutils_peer"]])

    def test_janus_runs_as_non_root_on_the_config_it_writes(self):
        self.assertEqual(self.repository.get("janus"), "kturn-e2e/janus")
        final = self.non_root_final_stage(self.JANUS)
        (entrypoint,) = [json.loads(a) for k, a in final if k == "ENTRYPOINT"]
        self.assertEqual(entrypoint[0], "/usr/bin/janus")
        config = read(os.path.join("tests", "e2e", "janus-config.sh"))
        folder = re.search(r"^conf=(\S+)$", config, re.M).group(1)
        self.assertEqual(entrypoint[1:], ["-F", folder, "-C", f"{folder}/janus.jcfg"])
        subprocess.run(["sh", "-n", os.path.join(REPO, "tests", "e2e", "janus-config.sh")],
                       check=True)


@unittest.skipUnless(all(shutil.which(t) for t in ("sh", "ldd", "gcc", "strip", "install")),
                     "needs sh, ldd, gcc, strip and install")
class StageRuntimeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.multiarch = subprocess.run(["gcc", "-print-multiarch"], check=True, text=True,
                                        capture_output=True).stdout.strip()

    def stage(self, binary):
        rootfs = os.path.join(self.tmp, "rootfs")
        result = subprocess.run(["sh", STAGE_SCRIPT, binary, rootfs], text=True,
                                capture_output=True)
        return result, rootfs

    def test_syntax(self):
        subprocess.run(["sh", "-n", STAGE_SCRIPT], check=True)

    def test_bundles_exactly_what_distroless_lacks(self):
        binary = "/bin/ls"
        result, rootfs = self.stage(binary)
        self.assertEqual(result.returncode, 0, result.stderr)
        ldd = subprocess.run(["ldd", binary], check=True, text=True, capture_output=True).stdout
        loaded = {m.group(1) for m in re.finditer(r"^\s*(\S+) => /", ldd, re.M)}
        want = {s for s in loaded if not s.startswith(DISTROLESS_CC_LIBS)}
        self.assertTrue(loaded - want, "the sample binary loads libc at least")
        bundled = set(os.listdir(os.path.join(rootfs, "usr", "lib", self.multiarch)))
        self.assertEqual(bundled, want)
        staged = os.path.join(rootfs, "usr", "local", "bin", "ls")
        self.assertTrue(os.access(staged, os.X_OK))
        self.assertLessEqual(os.path.getsize(staged), os.path.getsize(binary))

    def test_an_unresolved_library_fails_the_build(self):
        ldd = subprocess.run(["ldd", "/bin/ls"], check=True, text=True, capture_output=True).stdout
        needed = re.search(r"^\s*(lib[a-z]+)\.so\.(\d+) => /", ldd, re.M)
        if needed is None:
            self.skipTest("/bin/ls loads no library to rename")
        with open("/bin/ls", "rb") as f:
            data = f.read()
        old = f"{needed.group(1)}.so.{needed.group(2)}".encode()
        # Same length, so the ELF's string table keeps its layout: libxxxxxxx.so.1.
        new = b"lib" + b"x" * (len(old) - len(b"lib.so.1")) + b".so.1"
        self.assertEqual(len(new), len(old))
        broken = os.path.join(self.tmp, "broken")
        with open(broken, "wb") as f:
            f.write(data.replace(old + b"\0", new + b"\0", 1))
        os.chmod(broken, 0o755)
        result, _ = self.stage(broken)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("unresolved shared libraries", result.stderr)


if __name__ == "__main__":
    unittest.main()
