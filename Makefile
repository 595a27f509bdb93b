# Two entry points: `make bench` and `make test`. Each installs what is
# missing (scripts/setup.sh), configures, builds, then benches or tests.
# TORCH=debian (default): Debian's LibTorch 1.13, CPU only, in build/.
# TORCH=wheel: LibTorch 2.11 from the PyTorch wheel with CUDA + NCCL, in
# build-wheel/ (scripts/torch_wheel.sh finds python3's CUDA torch or
# installs the pinned wheel into .deps/).
TORCH   ?= debian
ifeq ($(TORCH),wheel)
BUILD   ?= build-wheel
else ifeq ($(TORCH),debian)
BUILD   ?= build
else
$(error TORCH=$(TORCH): use TORCH=debian or TORCH=wheel)
endif
JOBS    ?= $(shell nproc)
CMAKE_FLAGS ?=
DTBENCH := $(BUILD)/dtbench

.PHONY: all setup setup-test configure build bench test fuzz clean format

all: build

# Extra packages only the tests need (headless Chromium renders the report;
# iproute2 makes the network namespaces of the multi-node test; Slurm's
# daemons and munge run the Slurm test).
TEST_PACKAGES := chromium iproute2 slurmd slurmctld slurm-client munge

setup:
	@bash scripts/setup.sh $(SETUP_EXTRA)

setup-test: SETUP_EXTRA = $(TEST_PACKAGES)
setup-test: setup

configure: setup
	@prefix=""; if [ "$(TORCH)" = wheel ]; then prefix=$$(bash scripts/torch_wheel.sh) || exit 1; fi; \
	  cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DDTBENCH_TORCH_PREFIX="$$prefix" \
	    $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The main benchmark on a default that finishes in a few minutes on 2 cores:
# data-parallel ResNet-50 training on 64x64 images, batch 16 per rank, the
# "no ddp" baseline then 1 and 2 ranks (gloo, c10d::Reducer), then a quick
# allreduce sweep of both CPU backends. Reports land in $(BUILD)/bench-*.json.
bench: build
	$(DTBENCH) ddp --model resnet50 --image-size 64 --batch-size 16 --iters 20 --warmup 5 \
	  --world-sizes 1,2 --backend gloo --json $(BUILD)/bench-ddp.json
	$(DTBENCH) comm --nproc 2 --backend gloo -b 1K -e 16M -f 4 -n 10 -w 3 \
	  --json $(BUILD)/bench-comm-gloo.json
	$(DTBENCH) comm --nproc 2 --backend mpi -b 1K -e 16M -f 4 -n 10 -w 3 \
	  --json $(BUILD)/bench-comm-mpi.json

# Every test (docs/TESTING.md). CTEST_ARGS narrows it, e.g. CTEST_ARGS='-L unit'.
# Ends with the list of skipped tests and fails on a skip that is not in
# tests/expected_skips.txt with its reason (SKIPS_OK=1 lists them and passes:
# e.g. without root, where the Slurm and namespace tests skip).
# (labels: unit, engine, cli, system, gpu, timing; "once" marks the checks that cannot
# depend on the LibTorch version, which CI runs in the Debian flavour only).
CTEST_ARGS ?=
test: SETUP_EXTRA = $(TEST_PACKAGES)
test: build
ifeq ($(TORCH),wheel)
	@bash scripts/peers_wheel.sh || echo "make: torch's Python packages are not installed; the torchrun test will skip"
endif
	@cd $(BUILD) && ctest --output-on-failure --timeout 600 -j 2 --output-junit junit.xml --test-output-size-passed 16000000 $(CTEST_ARGS)
	@python3 scripts/skips.py $(BUILD)/junit.xml tests/expected_skips.txt --flavour $(TORCH) $(if $(SKIPS_OK),--allow)

# libFuzzer on the report readers for FUZZ_SECONDS (clang from Debian);
# a crash input lands in $(BUILD)/fuzz/crashes (see tests/fuzz/run_fuzz.sh).
FUZZ_SECONDS ?= 300
fuzz: SETUP_EXTRA = clang libclang-rt-14-dev
fuzz: setup
	bash tests/fuzz/run_fuzz.sh $(BUILD) $(FUZZ_SECONDS)

format:
	@clang-format -i $$(git ls-files 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h')

clean:
	rm -rf $(BUILD)
