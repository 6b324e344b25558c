# Makefile — thin wrapper over CMake. Targets:
#   make            configure + build build/ (Release)
#   make test       test-core first, then build/ + ctest, then build-asan/ (TS_SANITIZE=ON) + ctest
#                   with leak checks (every test but the examples and the slow BERT-Base runs: full
#                   training runs on real data, whose kernels the unit tests cover, 10x slower
#                   under ASan and run one at a time), then test-fuzz
#   make test-core  the core alone: configure build-core/ with every optional feature OFF
#                   (CORE_OPTIONS: no ONNX, MPI, applications, images, audio, serve, OpenCL or
#                   Python; oneDNN, cJSON and OpenMP only), build it and run its ctest (label
#                   unit, -j2): that the core builds and passes its own tests without them (about
#                   a minute on 2 cores from a clean build-core/: 58-69 s measured, ctest 10 s of it)
#   make test-fuzz  fuzz/run.sh: build the libFuzzer targets in build-fuzz/ (clang) and run each for
#                   FUZZ_SECONDS (default 10); skipped when clang is not installed (fuzz/README.md)
#   make bench      build, then run every bench/*.c program one after another
#   make demo       build, then scripts/demo.sh: WordPiece vocabulary, pretrain a small BERT on Brown +
#                   WordNet, fine-tune it on SpamAssassin, classify a few mails (data from install-deps.sh)
#   make mnist      build, then train the MNIST example on data/mnist (scripts/install-deps.sh fetches it)
#   make mnist-cnn  build, then train the MNIST CNN example (examples/mnist_cnn.c, 12 epochs, >= 98.5%)
#   make speech     build, then scripts/speech.sh: spoken digits made with espeak-ng and flite, a head
#                   trained on openWakeWord's frozen embedding beside a CNN from scratch, scored on
#                   held-out voices; tessera kws on phrases and tessera vad (models from install-deps.sh)
#   make install    install header, libraries and tessera.pc under PREFIX (default /usr/local)
#   make clean      remove build/, build-asan/, build-core/ and build-fuzz/ (data/ is kept)
# libgomp's default lets idle threads spin; when the 2 cores are shared with other work that cost
# MNIST 305 s instead of 19 s (measured), and it is faster even on quiet cores (9.7 s vs 20.4 s).
# libgomp reads this when it loads, so it is set for every program make starts.
export OMP_WAIT_POLICY ?= passive
PREFIX ?= /usr/local
MAKEFLAGS += --no-print-directory
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
BUILD  ?= build
ASAN_BUILD ?= build-asan
CORE_BUILD ?= build-core
# Every optional feature off (CMakeLists.txt, "optional features"): the core alone.
CORE_OPTIONS = -DTS_WITH_ONNX=OFF -DTS_WITH_MPI=OFF -DTS_WITH_APPS=OFF -DTS_WITH_IMAGES=OFF -DTS_WITH_AUDIO=OFF \
               -DTS_WITH_SERVE=OFF -DTS_WITH_OPENCL=OFF -DTS_WITH_PYTHON=OFF
FUZZ_SECONDS ?= 10
CMAKE  ?= cmake
CTEST  ?= ctest
# LeakSanitizer works on these machines (checked with a deliberate leak), so leaks fail the tests.
ASAN_ENV = ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1

.PHONY: all build test test-core test-release test-asan test-fuzz asan bench demo mnist mnist-cnn speech install clean

all: build

$(BUILD)/CMakeCache.txt:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

build: $(BUILD)/CMakeCache.txt
	$(CMAKE) --build $(BUILD) -j $(JOBS)

$(ASAN_BUILD)/CMakeCache.txt:
	$(CMAKE) -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Release -DTS_SANITIZE=ON

asan: $(ASAN_BUILD)/CMakeCache.txt
	$(CMAKE) --build $(ASAN_BUILD) -j $(JOBS)

test: test-core test-release test-asan test-fuzz

# Configured every time, so that the options hold even in a build-core/ configured before.
test-core:
	$(CMAKE) -S . -B $(CORE_BUILD) -DCMAKE_BUILD_TYPE=Release $(CORE_OPTIONS)
	$(CMAKE) --build $(CORE_BUILD) -j $(JOBS)
	cd $(CORE_BUILD) && $(CTEST) --output-on-failure -j 2 -L unit

test-release: build
	cd $(BUILD) && $(CTEST) --output-on-failure -j $(JOBS)

test-asan: asan
	cd $(ASAN_BUILD) && $(ASAN_ENV) $(CTEST) --output-on-failure -j $(JOBS) -LE "example|slow"

# libFuzzer targets (fuzz/fuzz_*.c) in build-fuzz/, FUZZ_SECONDS each; prints a skip without clang.
test-fuzz:
	JOBS=$(JOBS) bash fuzz/run.sh $(FUZZ_SECONDS)

bench: build
	$(CMAKE) --build $(BUILD) --target run_bench

speech: build
	bash scripts/speech.sh $(BUILD)

demo: $(BUILD)/CMakeCache.txt
	BUILD=$(BUILD) bash scripts/demo.sh

mnist: build
	./$(BUILD)/examples/mnist data/mnist

mnist-cnn: build
	./$(BUILD)/examples/mnist_cnn data/mnist

install: build
	$(CMAKE) --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(CORE_BUILD) build-fuzz
