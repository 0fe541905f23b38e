# The two commands: `make run` and `make test`. Everything else is a helper for them.
BUILD ?= build
BUILD_TYPE ?= RelWithDebInfo
SAMPLE ?= samples/residual_cnn.onnx

.PHONY: all deps configure build test test-forced-blas run clean

all: build

deps:
	@./scripts/install-deps.sh

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DCMAKE_CXX_COMPILER_LAUNCHER=ccache

configure: $(BUILD)/build.ninja

build: deps configure
	cmake --build $(BUILD)

test: build
	cd $(BUILD) && QT_QPA_PLATFORM=offscreen SEXTANT_CHECK_SNAPSHOTS=1 ctest --output-on-failure -j2

# The suite once more as a machine whose environment forces OpenBLAS's kernels sees it (some AMD
# EPYC set-ups set both variables): Haswell kernels where the CPU has AVX2 and FMA, SSE3 Prescott
# ones elsewhere. No test may change its expectations for it. CI runs it after `make test`.
FORCED_CORE := $(shell grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && echo Haswell || echo Prescott)
test-forced-blas: build
	cd $(BUILD) && OPENBLAS_CORETYPE=$(FORCED_CORE) OPENBLAS_L2_SIZE=512 QT_QPA_PLATFORM=offscreen \
	  SEXTANT_CHECK_SNAPSHOTS=1 ctest --output-on-failure -j2 -E '^(fuzz|sanitize)\.'

run: build
	$(BUILD)/app/sextant $(SAMPLE)

clean:
	rm -rf $(BUILD)
