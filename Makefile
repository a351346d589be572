# The two commands of the README: `make demo` and `make test`. Each installs what it needs first.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: setup configure build build-cli test format format-check test-rotation test-slow test-slurm demo sanitize tsan fuzz fuzz-ci fuzz-build clean

setup:
	@bash scripts/setup.sh

# Configure's progress lines go to $(BUILD)/configure.log, shown in full when configure fails; its
# errors and warnings (stderr) always show. A missing or broken libtorch stops here unless
# CMAKE_FLAGS=-DDNNCAST_WITH_TORCH=OFF asks for a build without it.
configure: setup
	@mkdir -p $(BUILD)
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >$(BUILD)/configure.log || \
	  { cat $(BUILD)/configure.log; echo "make build: configure failed (its output above, $(BUILD)/configure.log)" >&2; exit 1; }

# Everything: the CLI, the tests and the benchmarks (what `make test` needs).
build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The CLI alone (the libraries it links and nothing else): what `make demo` needs.
build-cli: configure
	@cmake --build $(BUILD) -j $(JOBS) --target dnncast

# Tests whose expectations depend on the ISA oneDNN dispatches to (src/hardware/isa.h): `make test`
# runs them a second time with oneDNN and ATen capped at AVX2, so that an AVX-512 host checks the
# rules of both ISAs against real runs. On a host without AVX-512 the cap changes nothing: skipped.
ISA_TESTS ?= ^(Isa|ConvImpl|CpuConv|SimulatorVsProfiler|MemoryCli|DecoderMemoryVsProfiler)\.

# The C++ sources as .clang-format lays them out (120 columns): the size limits of scripts/check-source.py
# (150 lines a command file or a function) count formatted lines, so they cannot be met by packing lines.
# clang-format 14 (Debian 12's; another version lays some lines out differently). `make format` rewrites them.
CLANG_FORMAT ?= clang-format-14
FORMAT_SOURCES = $(shell git ls-files --cached --others --exclude-standard 'src/*.cpp' 'src/*.h' 'tests/*.cpp' 'tests/*.h' 'python/*.cpp' 'bench/*.cpp' \
  'bench/*.h' 'fuzz/*.cpp' 'fuzz/*.h' 2>/dev/null || find src tests python bench fuzz -name '*.cpp' -o -name '*.h')

format-check: setup
	@$(CLANG_FORMAT) --dry-run --Werror $(FORMAT_SOURCES) || \
	  { echo "make format-check: the files above are not as .clang-format lays them out (make format rewrites them)" >&2; exit 1; }
	@echo "make format-check: $(words $(FORMAT_SOURCES)) files as .clang-format lays them out"

format: setup
	@$(CLANG_FORMAT) -i $(FORMAT_SOURCES)

# Under CI=true (the environment reaches every test binary) a skipped test fails unless it is on
# tests/skip_allowlist.txt (tests/test_main.cpp).
test: build format-check
	@cd $(BUILD) && ctest -LE slow --output-on-failure -j $(JOBS)
	@if grep -qw avx512f /proc/cpuinfo; then \
	  echo "make test: the ISA tests again under ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2"; \
	  cd $(BUILD) && ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 ctest -R '$(ISA_TESTS)' -LE slow --output-on-failure -j $(JOBS); \
	else echo "make test: no AVX-512 on this host; the ISA tests ran under its own AVX2 dispatch above"; fi
	@$(ROTATION)

# The slow cross-checks in rotation (tests/rotation.h): `make test` runs one seeded slice of each
# (label "rotation", one test at a time after the main run), seeded by the commit so that every commit
# checks a different part; `DNNCAST_ROTATION_SEED=S make test-rotation` replays the slices of seed S.
# Outside a git checkout the seed is the constant 0. `make test-slow` runs every case.
ROTATION_SEED ?= $(or $(DNNCAST_ROTATION_SEED),$(shell git rev-parse HEAD 2>/dev/null),0)
ROTATION = echo "make test: rotation seed $(ROTATION_SEED): one slice of each slow cross-check (replay with DNNCAST_ROTATION_SEED=$(ROTATION_SEED) make test-rotation)"; \
	cd $(BUILD) && DNNCAST_ROTATION_SEED=$(ROTATION_SEED) ctest -L rotation --output-on-failure

test-rotation: build
	@$(ROTATION)

test-slow: build
	@cd $(BUILD) && env -u DNNCAST_ROTATION_SEED ctest -L slow --output-on-failure

# The Slurm test alone (label "slurm", also part of `make test`): a campaign as a job array on a
# one-node cluster it starts (docs/SCALE-OUT.md).
test-slurm: build
	@cd $(BUILD) && ctest -L slurm --output-on-failure

demo: build-cli
	@scripts/demo.sh $(BUILD)

# ASan + UBSan build of everything, and the same test suite under it.
sanitize: setup
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDNNCAST_SANITIZE=ON -DDNNCAST_BUILD_BENCH=OFF >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ctest -LE slow --output-on-failure -j $(JOBS)

# ThreadSanitizer build of the forecast library, the server and their tests (no libtorch: the executor is not
# part of what serves), and serve's tests under it: forecasts run side by side on serve's workers with no lock
# around them (ServeApi.ConcurrentRequestsAnswerAsOneAtATime); a data race fails the run. Part of .ci/run.
# -O1 -g1 (line tables: enough for TSan's stacks) and NDEBUG as RelWithDebInfo has it: the build took 297 s where
# RelWithDebInfo's -O2 -g took 536 s (2 cores of an Intel Xeon, family 6 model 167, session 42).
TSAN_FLAGS ?= -O1 -g1 -DNDEBUG
tsan: setup
	@mkdir -p build-tsan
	@cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=$(TSAN_FLAGS)" "-DCMAKE_C_FLAGS=$(TSAN_FLAGS)" \
	  -DDNNCAST_TSAN=ON -DDNNCAST_WITH_TORCH=OFF \
	  -DDNNCAST_BUILD_BENCH=OFF -DDNNCAST_BUILD_PYTHON=OFF $(CMAKE_FLAGS) >build-tsan/configure.log 2>&1 || \
	  { cat build-tsan/configure.log; echo "make tsan: configure failed" >&2; exit 1; }
	@cmake --build build-tsan -j $(JOBS) --target test_serve
	@cd build-tsan && TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/tests/tsan.supp" ./tests/test_serve

# libFuzzer targets of fuzz/ (docs/FUZZING.md), built with clang, ASan and UBSan into build-fuzz/ from
# only the libraries they read with (no libtorch). `make fuzz` runs each FUZZ_SECONDS; `make fuzz-ci`
# each FUZZ_CI_SECONDS, two at a time (the CI step). A finding stops with exit code 1 and its input in
# build-fuzz/artifacts/.
FUZZ_SECONDS ?= 600
FUZZ_CI_SECONDS ?= 30
FUZZ_TARGETS ?= graph_json plan csv_import predictor_manifest onnx schedule_files serve_request model_options
fuzz-build: setup
	@mkdir -p build-fuzz
	@cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14 \
	  -DDNNCAST_FUZZ=ON -DDNNCAST_WITH_TORCH=OFF -DDNNCAST_BUILD_TESTS=OFF -DDNNCAST_BUILD_BENCH=OFF $(CMAKE_FLAGS) \
	  >build-fuzz/configure.log 2>&1 || \
	  { cat build-fuzz/configure.log; echo "make fuzz: configure failed (build-fuzz/configure.log)" >&2; exit 1; }
	@cmake --build build-fuzz -j $(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))

fuzz: fuzz-build
	@bash scripts/fuzz.sh build-fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-ci: fuzz-build
	@FUZZ_JOBS=2 bash scripts/fuzz.sh build-fuzz $(FUZZ_CI_SECONDS) $(FUZZ_TARGETS)

clean:
	@rm -rf $(BUILD) build-asan build-fuzz
