# Two entry points: `make bench` and `make test`. Each installs what is
# missing (scripts/setup.sh), configures, builds, then benches or tests.
BUILD   ?= build
JOBS    ?= $(shell nproc)
CMAKE_FLAGS ?=
DTBENCH := $(BUILD)/dtbench

.PHONY: all setup configure build bench test clean format

all: build

setup:
	@bash scripts/setup.sh

configure: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The main benchmark on a default that finishes in a few minutes on 2 cores.
bench: build
	$(DTBENCH) ddp --model resnet18 --image-size 32 --batch-size 16 --world-sizes 1,2 \
	  --iters 20 --warmup 3 --json $(BUILD)/bench-ddp.json
	$(DTBENCH) comm --nproc 2 --collective allreduce -b 1K -e 64M -f 4 -n 10 -w 3 \
	  --json $(BUILD)/bench-comm.json

test: build
	@cd $(BUILD) && ctest --output-on-failure --timeout 600 -j 2

format:
	@clang-format -i $$(git ls-files 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h')

clean:
	rm -rf $(BUILD)
