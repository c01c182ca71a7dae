# A thin front for CMake. `make demo` and `make check` install missing Debian packages first.
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
MAKEFLAGS += --no-print-directory

.PHONY: all deps build check check-fast check-asan check-tsan demo bench install package clean

all: build

deps:
	@sh scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# Every test with gcc; every test again built by clang under AddressSanitizer and
# UndefinedBehaviorSanitizer; the concurrency tests under ThreadSanitizer.
check: check-fast check-asan check-tsan

check-fast: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

check-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
	      -DTP_SANITIZE=address,undefined $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

check-tsan: deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
	      -DTP_SANITIZE=thread $(CMAKE_FLAGS)
	cmake --build $(TSAN_BUILD) -j $(JOBS)
	TSAN_OPTIONS=halt_on_error=1 ctest --test-dir $(TSAN_BUILD) --output-on-failure -L concurrency

demo: build
	@sh scripts/demo.sh $(BUILD)

bench: build
	$(BUILD)/bin/bench_context
	$(BUILD)/bin/bench_eager
	$(BUILD)/bin/bench_memory
	$(BUILD)/bin/bench_graph
	$(BUILD)/bin/bench_distribute

# The Debian packages tensorplug, tensorplug-dev and tensorplug-apu, in build/.
package: build
	cd $(BUILD) && cpack -G DEB

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
