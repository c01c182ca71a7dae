# SPDX-License-Identifier: Apache-2.0
# A thin front for CMake. `make demo` and `make check` install missing Debian packages first.
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
RELEASE_BUILD ?= build-release
PACKAGE_BUILD ?= build-package
PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
MAKEFLAGS += --no-print-directory
# The settings of every ASan run: a leak fails it, an allocation that fails returns NULL.
ASAN_ENV = ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1
# Warnings are errors (TP_WERROR) where the project checks itself: make check, its parts, CI and
# make fuzz. A user's build (make, make demo, make install) only shows them, so that a newer
# compiler's new warning cannot stop an install.
WERROR ?= OFF
check check-fast check-release asan check-asan check-tsan check-package fuzz: WERROR = ON

.PHONY: all deps build check check-fast check-release asan check-asan check-tsan fuzz demo bench \
        install package check-package clean bench-compare

all: build

deps:
	@sh scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) -DTP_WERROR=$(WERROR) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# Every test with gcc; every test again with gcc optimised as a release is (CMake's Release:
# -O3, asserts off); every test again built by clang under AddressSanitizer and
# UndefinedBehaviorSanitizer, with each fuzz target run briefly; the concurrency tests under
# ThreadSanitizer; then the Debian packages, checked by lintian and unpacked into a fresh prefix.
check: check-fast check-release check-asan check-tsan check-package

check-fast: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# gcc's flow-based warnings (-Warray-bounds, -Wmaybe-uninitialized) and the bugs they point at
# show only when it inlines and optimises as hard as a release build does.
check-release: deps
	cmake -S . -B $(RELEASE_BUILD) -DCMAKE_BUILD_TYPE=Release -DTP_WERROR=$(WERROR) $(CMAKE_FLAGS)
	cmake --build $(RELEASE_BUILD) -j $(JOBS)
	ctest --test-dir $(RELEASE_BUILD) --output-on-failure -j $(JOBS)

# The clang build under ASan and UBSan, which also builds the libFuzzer targets (TP_FUZZ).
asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	      -DCMAKE_BUILD_TYPE=Debug -DTP_SANITIZE=address,undefined -DTP_FUZZ=ON \
	      -DTP_WERROR=$(WERROR) $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)

check-asan: asan
	$(ASAN_ENV) ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

check-tsan: deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	      -DCMAKE_BUILD_TYPE=Debug -DTP_SANITIZE=thread -DTP_WERROR=$(WERROR) $(CMAKE_FLAGS)
	cmake --build $(TSAN_BUILD) -j $(JOBS)
	TSAN_OPTIONS=halt_on_error=1 ctest --test-dir $(TSAN_BUILD) --output-on-failure -L concurrency

# Each fuzz target (tests/fuzz/) for FUZZ_SECONDS on the corpus kept in the tree. New inputs
# go to $(ASAN_BUILD)/fuzz/<target>/ and are kept between runs; a crash leaves its input
# beside them. To keep new inputs worth keeping in the tree:
#   $(ASAN_BUILD)/bin/fuzz_<target> -merge=1 tests/fuzz/corpus/<target> $(ASAN_BUILD)/fuzz/<target>
FUZZ_SECONDS ?= 300
FUZZ_FLAGS ?= -use_value_profile=1
FUZZ_TARGETS = $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))

fuzz: asan
	@mkdir -p $(ASAN_BUILD)/fuzz
	@for target in $(FUZZ_TARGETS); do \
	    log=$(ASAN_BUILD)/fuzz/$$target.log; \
	    echo "fuzz: $$target for $(FUZZ_SECONDS) s; new inputs in $(ASAN_BUILD)/fuzz/$$target"; \
	    if $(ASAN_ENV) sh tests/fuzz/run_fuzz.sh $(ASAN_BUILD)/bin/fuzz_$$target tests/fuzz \
	        $(ASAN_BUILD)/fuzz $(FUZZ_SECONDS) $(FUZZ_FLAGS) >$$log 2>&1; then \
	        grep -a -E 'DONE|^stat::(number_of_executed_units|average_exec_per_sec)' $$log; \
	    else \
	        tail -n 40 $$log; echo "fuzz: $$target failed; the whole run is in $$log"; exit 1; \
	    fi; \
	done

demo: build
	@sh scripts/demo.sh $(BUILD)

bench: build
	$(BUILD)/bin/bench_context
	$(BUILD)/bin/bench_eager
	$(BUILD)/bin/bench_dispatch
	$(BUILD)/bin/bench_conv2d
	$(BUILD)/bin/bench_memory
	$(BUILD)/bin/bench_graph
	$(BUILD)/bin/bench_distribute
	$(BUILD)/bin/bench_registration
	$(BUILD)/bin/bench_opencl

# tensorplug beside libtorch and the direct libraries, in an optimised build of its own (figures
# from a debug build would compare nothing); needs libtorch-dev.
bench-compare: deps
	cmake -S . -B $(RELEASE_BUILD) -DCMAKE_BUILD_TYPE=Release -DTP_WERROR=$(WERROR) $(CMAKE_FLAGS)
	cmake --build $(RELEASE_BUILD) -j $(JOBS) --target bench_compare
	$(RELEASE_BUILD)/bin/bench_compare

# The Debian packages libtensorplug1, libtensorplug-dev, tensorplug-tools, tensorplug-apu,
# tensorplug-opencl and tensorplug-mpi, with their -dbgsym packages, in build-package/: a build
# of their own, for /usr, so that the library and plug-ins go to Debian's multiarch folder
# (/usr/lib/x86_64-linux-gnu), as GNUInstallDirs chooses for that prefix.
# Compiled with Debian's hardening flags, as dpkg-buildflags gives them to every package.
DEB_BUILDFLAGS = DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get
package: deps
	cmake -S . -B $(PACKAGE_BUILD) -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	      -DCMAKE_C_FLAGS="$$($(DEB_BUILDFLAGS) CFLAGS) $$($(DEB_BUILDFLAGS) CPPFLAGS)" \
	      -DCMAKE_EXE_LINKER_FLAGS="$$($(DEB_BUILDFLAGS) LDFLAGS)" \
	      -DCMAKE_SHARED_LINKER_FLAGS="$$($(DEB_BUILDFLAGS) LDFLAGS)" \
	      -DCMAKE_MODULE_LINKER_FLAGS="$$($(DEB_BUILDFLAGS) LDFLAGS)" \
	      -DBUILD_TESTING=OFF -DTP_WERROR=$(WERROR) $(CMAKE_FLAGS)
	cmake --build $(PACKAGE_BUILD) -j $(JOBS)
	rm -f $(PACKAGE_BUILD)/*.deb $(PACKAGE_BUILD)/*.ddeb
	cd $(PACKAGE_BUILD) && cpack -G DEB

check-package: package
	bash tests/install/test_lintian.sh $(PACKAGE_BUILD)
	bash tests/install/test_package.sh $(PACKAGE_BUILD)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(RELEASE_BUILD) $(PACKAGE_BUILD)
