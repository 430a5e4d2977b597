# kturn — the two commands in the README are `make run` and `make test`.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: deps configure build run test test-unit test-interop clean format

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# Starts kturnd on the embedded default config: TURN-UDP on 127.0.0.1:3478, ephemeral auth with a
# generated secret, loopback peers allowed. Prints an ICE server entry with a valid credential.
run: build
	$(BUILD_DIR)/kturnd

test: build
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) --timeout 600

test-unit: build
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) -L unit

test-interop: build
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -L interop

format:
	@git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)
