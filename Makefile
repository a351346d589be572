# The two commands of the README: `make demo` and `make test`. Each installs what it needs first.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: setup build test test-slow demo sanitize clean

setup:
	@bash scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@cd $(BUILD) && ctest -LE slow --output-on-failure -j $(JOBS)

test-slow: build
	@cd $(BUILD) && ctest -L slow --output-on-failure

demo: build
	@$(BUILD)/dnncast predict resnet50 --batch 32 --input 3x224x224

# ASan + UBSan build of everything, and the same test suite under it.
sanitize: setup
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDNNCAST_SANITIZE=ON -DDNNCAST_BUILD_BENCH=OFF >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ctest -LE slow --output-on-failure -j $(JOBS)

clean:
	@rm -rf $(BUILD) build-asan
