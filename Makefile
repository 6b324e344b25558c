# Makefile — thin wrapper over CMake. Targets:
#   make            configure + build build/ (Release)
#   make test       build/ + ctest, then build-asan/ (TS_SANITIZE=ON) + ctest with leak checks
#   make bench      build, then run every bench/*.c program one after another
#   make demo       build, then train the MNIST example on data/mnist (scripts/install-deps.sh fetches it)
#   make install    install header, libraries and tessera.pc under PREFIX (default /usr/local)
#   make clean      remove build/ and build-asan/ (data/ is kept)
PREFIX ?= /usr/local
MAKEFLAGS += --no-print-directory
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
BUILD  ?= build
ASAN_BUILD ?= build-asan
CMAKE  ?= cmake
CTEST  ?= ctest
# LeakSanitizer works on these machines (checked with a deliberate leak), so leaks fail the tests.
ASAN_ENV = ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1

.PHONY: all build test test-release test-asan asan bench demo install clean

all: build

$(BUILD)/CMakeCache.txt:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

build: $(BUILD)/CMakeCache.txt
	$(CMAKE) --build $(BUILD) -j $(JOBS)

$(ASAN_BUILD)/CMakeCache.txt:
	$(CMAKE) -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Release -DTS_SANITIZE=ON

asan: $(ASAN_BUILD)/CMakeCache.txt
	$(CMAKE) --build $(ASAN_BUILD) -j $(JOBS)

test: test-release test-asan

test-release: build
	cd $(BUILD) && $(CTEST) --output-on-failure -j $(JOBS)

test-asan: asan
	cd $(ASAN_BUILD) && $(ASAN_ENV) $(CTEST) --output-on-failure -j $(JOBS)

bench: build
	$(CMAKE) --build $(BUILD) --target run_bench

demo: build
	./$(BUILD)/examples/mnist data/mnist

install: build
	$(CMAKE) --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
