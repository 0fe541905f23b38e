# The two commands: `make run` and `make test`. Everything else is a helper for them.
BUILD ?= build
BUILD_TYPE ?= RelWithDebInfo
SAMPLE ?= samples/residual_cnn.onnx

.PHONY: all deps configure build test run clean

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

run: build
	$(BUILD)/app/sextant $(SAMPLE)

clean:
	rm -rf $(BUILD)
