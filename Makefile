# kturn — the two commands in the README are `make run` and `make test`.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: deps configure build run test test-tools manifests test-unit test-interop test-e2e test-cluster test-global test-differential clean format config-reference

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DKTURN_BUILD_TESTS=ON -DKTURN_BUILD_BENCH=ON $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# Starts kturnd on the embedded default config: TURN-UDP on 127.0.0.1:3478, ephemeral auth with a
# generated secret, loopback peers allowed. Prints an ICE server entry with a valid credential.
# Installs only what building kturnd needs (`install-deps.sh --build`: no test, browser, container
# or plotting packages) and builds kturnd and what it links only; `make test` installs and builds
# the rest. If another process holds 127.0.0.1:3478, kturnd says which and exits.
run:
	@bash scripts/install-deps.sh --build
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DKTURN_BUILD_TESTS=OFF -DKTURN_BUILD_BENCH=OFF $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target kturnd
	$(BUILD_DIR)/kturnd

# The test tools (scripts/build-test-tools.sh): etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, kubelet, kube-proxy, CoreDNS, Helm, and STUNner's stunnerd and turncat, built from their pinned Go modules into a
# cache outside the repository (about 12 minutes the first time, seconds after), linked into the
# build directory for ctest.
test-tools:
	@bash scripts/build-test-tools.sh --link $(BUILD_DIR)/test-tools

# Regenerates the chart's Gateway API CRD subcharts from the pinned release in the tool cache,
# and deploy/manifests/kturn.yaml from the Helm chart with the real Helm.
manifests: test-tools
	@KTURN_TEST_TOOLS=$(BUILD_DIR)/test-tools bash scripts/update-gateway-api-crds.sh
	@HELM=$(BUILD_DIR)/test-tools/bin/helm bash scripts/update-manifests.sh

test: build test-tools
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) --timeout 600

test-unit: build test-tools
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) -L unit

test-interop: build
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -L interop

# The renderer differential with more generated inputs than make test's 8 (SEEDS=N, from seed
# FIRST_SEED=9, so that the seeds make test runs are not run again): STUNner's operator and
# kturn-operator on the same inputs (tests/interop/operator_differential_test.py).
SEEDS ?= 100
FIRST_SEED ?= 9
test-differential: build test-tools
	@cmake -S . -B $(BUILD_DIR) -DKTURN_DIFFERENTIAL_SEEDS=$(SEEDS) \
	  -DKTURN_DIFFERENTIAL_FIRST_SEED=$(FIRST_SEED) >/dev/null
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -R '^interop_operator_differential$$' \
	  --timeout 3600; rc=$$?; cmake -S . -B $(BUILD_DIR) -DKTURN_DIFFERENTIAL_SEEDS=8 \
	  -DKTURN_DIFFERENTIAL_FIRST_SEED=1 >/dev/null; exit $$rc

# Source document 000's example on a real single-node Kubernetes on this machine (tests/e2e/):
# kturn's images built from its Dockerfiles, the chart installed, calls from the host through the
# Gateway's node port to a media pod, then day 2. Root; about 2.5 minutes once the tools and
# images are cached, 11 when the images compile again.
test-e2e: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target kturn-bench
	@bash tests/e2e/run.sh $(BUILD_DIR)

# kturn on a multi-node cluster behind a BGP router (tests/e2e/run-cluster.sh, root):
# docs/kubernetes.md#many-nodes. NODES=3 unless set.
NODES ?= 3
test-cluster: configure
	@bash tests/e2e/run-cluster.sh $(BUILD_DIR) $(NODES)

# kturn in two regions behind one Anycast address and GeoDNS (tests/e2e/run-global.sh, root):
# docs/operations.md#many-regions.
test-global: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target kturn-auth
	@bash tests/e2e/run-global.sh $(BUILD_DIR)

format:
	@git ls-files '*.cc' '*.h' | xargs clang-format -i

# Rewrites docs/config-reference.md from the config schema (src/config/schema.cc), after a field,
# default or range changed; config_test fails until the committed file matches.
config-reference: configure
	@cmake --build $(BUILD_DIR) --target config-reference

clean:
	rm -rf $(BUILD_DIR)

# Fuzzing and sanitizer builds (tests/fuzz/CMakeLists.txt). Each uses its own build directory.
# `make fuzz` builds the libFuzzer targets with clang, ASan and UBSan, coverage-instrumenting the
# kturn libraries too, then fuzzes each target for FUZZ_SECONDS in turn and merges new coverage
# into tests/fuzz/corpus/. Crashes land in tests/fuzz/crashes/.
FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?= stun_message_fuzz channel_data_fuzz turn_server_fuzz config_fuzz \
	stream_framing_fuzz dtls_listener_fuzz cds_message_fuzz k8s_manifest_fuzz
SANITIZER_ENV = ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

.PHONY: fuzz fuzz-build test-asan test-tsan

fuzz-build: deps
	@cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DKTURN_SANITIZE=address,undefined \
	  -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link \
	  $(CMAKE_FLAGS) >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target $(FUZZ_TARGETS)

fuzz: fuzz-build
	@FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run_fuzzers.sh build-fuzz $(FUZZ_TARGETS)

# The whole suite (unit, fuzz replay, interop against an instrumented kturnd) under sanitizers.
# Everything builds at -O0 with line tables (-g1: file and line in every report) except the data
# path (src/common to src/daemon, KTURN_DATA_PATH_FLAGS), at -O1 so that kturnd keeps up in the
# flood and fault tests; the benchmarks are left out, no test runs them.
SANITIZER_CMAKE = -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1" \
	-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O0 -g1" -DKTURN_DATA_PATH_FLAGS=-O1 -DKTURN_BUILD_BENCH=OFF

test-asan: deps
	@cmake -S . -B build-asan -G Ninja $(SANITIZER_CMAKE) \
	  -DKTURN_SANITIZE=address,undefined $(CMAKE_FLAGS) >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@bash scripts/build-test-tools.sh --link build-asan/test-tools
	@$(SANITIZER_ENV) ctest --test-dir build-asan --output-on-failure -j $(JOBS) --timeout 600

test-tsan: deps
	@cmake -S . -B build-tsan -G Ninja $(SANITIZER_CMAKE) \
	  -DKTURN_SANITIZE=thread $(CMAKE_FLAGS) >/dev/null
	@cmake --build build-tsan -j $(JOBS)
	@bash scripts/build-test-tools.sh --link build-tsan/test-tools
	@$(SANITIZER_ENV) ctest --test-dir build-tsan --output-on-failure -j $(JOBS) --timeout 600

# Benchmarks (bench/README.md). `make bench` builds kturnd, the load generator and the forwarder,
# then runs bench/compare: kturnd vs coturn vs udp-forwarder on loopback (about 20 minutes;
# BENCH_ARGS=--quick for a 2-minute smoke run). `make bench-micro` runs the Google Benchmark
# micro-benchmarks of the codec and the TURN core.
.PHONY: bench bench-micro bench-operator
BENCH_ARGS ?=

bench: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target kturnd kturn-bench udp-forwarder
	@BUILD_DIR=$(BUILD_DIR) /usr/bin/python3 bench/compare $(BENCH_ARGS)

bench-micro: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target kturn-micro
	@$(BUILD_DIR)/bench/kturn-micro

# The operator's renderer at scale: 1,000 Gateways / 10,000 endpoints rendered, then one endpoint
# change re-rendered, validated, published and received by a CDS watcher (prints the numbers).
bench-operator: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target kturn-render-bench
	@$(BUILD_DIR)/bench/kturn-render-bench $(BENCH_ARGS)

# Soak (tests/soak/soak.py), not part of `make test`: a Release kturnd and kturn-bench in their own
# build directory, then 3 cycles of 10,000 allocations (create, refresh, traffic on 200, release
# most, abandon the rest) and the wait for kturnd to expire them, sampling RSS, descriptors and
# allocations every second. About 12 minutes, because kturnd grants at least the RFC's 600 s
# lifetime; SOAK_ARGS=--quick releases everything and skips the wait (about 2 minutes).
.PHONY: soak
SOAK_BUILD_DIR ?= build-soak
SOAK_ARGS ?=

soak: deps
	@cmake -S . -B $(SOAK_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DKTURN_BUILD_BENCH=ON \
	  -DKTURN_BUILD_FUZZ=OFF $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(SOAK_BUILD_DIR) -j $(JOBS) --target kturnd kturn-bench
	@/usr/bin/python3 tests/soak/soak.py --kturnd $(SOAK_BUILD_DIR)/kturnd \
	  --bench $(SOAK_BUILD_DIR)/bench/kturn-bench $(SOAK_ARGS)
