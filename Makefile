# Makefile — builds the four programs of cuda/ (cuda/README.md says what each folder holds):
#   build/mlp_train   the gate and benchmark          (cuda/cli/mlp_train.cu)
#   build/libmlp.so   the entry points for Python      (cuda/tools/libmlp.cu)
#   build/mlp_host    host-only tools for CPU tests    (cuda/tools/mlp_host.cpp)
#   build/mlp_fit     each path's fit, without a GPU   (cuda/tools/mlp_fit.cu)
#   build/vit_forward the transformer extension        (cuda/transformer/vit_forward.cu, issue 31)
#   build/gemm_check  the tiled GEMMs against float64   (cuda/tools/gemm_check.cu)
#   build/gemm_bench  our GEMMs timed at shapes         (cuda/tools/gemm_bench.cu, issue 38)
#
#   make ARCH=sm_90                          our submission (cuda/contract/submission_ref.cu)
#   make ARCH=sm_90 SUBMISSION=path/to.cu    a learner's submission instead
#   make BUILD=build/sm_75 ARCH=sm_75        another tree, another architecture
#   make ACCUM=float                         float32 accumulation in the stepwise GEMMs (default double)
#
# `invoke build` wraps this and prints the exact nvcc command lines. Objects go to
# $(BUILD)/obj/<folder>/<name>.o beside a .d file of the headers each one read (-MMD), so an edit to a
# header rebuilds what includes it and nothing else.
ARCH       ?= sm_90
BUILD      ?= build
SUBMISSION ?= cuda/contract/submission_ref.cu
ACCUM      ?= double
ifeq ($(filter $(ACCUM),float double),)
$(error ACCUM=$(ACCUM): expected float or double)
endif
NVCC       ?= nvcc
CXX        ?= g++

CC_NUM     := $(patsubst sm_%,%,$(ARCH))
GENCODE    := -gencode=arch=compute_$(CC_NUM),code=[sm_$(CC_NUM),compute_$(CC_NUM)]
WARN       := -Wall -Wextra -Werror
CUDA_HOME  ?= $(or $(CUDA_PATH),/usr/local/cuda)
CUDA_INC   ?= $(CUDA_HOME)/include
# -Icuda: our includes name their folder ("gate/hints.h"); -Icuda/contract: a learner's file
# includes only "submission.h".
INCLUDES   := -Icuda -Icuda/contract
CXXFLAGS   := -O2 -std=c++17 -fopenmp -fPIC $(WARN) $(INCLUDES) -isystem $(CUDA_INC)
NVCCFLAGS  := -O3 -std=c++17 $(GENCODE) -lineinfo -Werror all-warnings \
              -Xcompiler -fopenmp,-fPIC,-Wall,-Wextra,-Werror $(INCLUDES) -DMLP_ACCUM=$(ACCUM)
EXTERNAL   := $(if $(filter cuda/contract/submission_ref.cu,$(SUBMISSION)),0,1)
SUBMISSION_DEFS := -DMLP_SUBMISSION_SOURCE='"$(SUBMISSION)"' -DMLP_EXTERNAL_SUBMISSION=$(EXTERNAL)
OBJ        := $(BUILD)/obj

# The groups follow the folders. Host-only C++ (no CUDA runtime call; every program links it):
# common/, io/, gate/'s .cpp files and paths/path_fit.cpp.
HOST_SRC   := $(wildcard cuda/common/*.cpp cuda/io/*.cpp cuda/gate/*.cpp) cuda/paths/path_fit.cpp
# C++ that calls the CUDA runtime (no kernels): paths/ (training and timing a path, the device's
# setup) and cli/ (mlp_train's modes); linked into mlp_train.
TRAIN_SRC  := $(filter-out cuda/paths/path_fit.cpp,$(wildcard cuda/paths/*.cpp)) $(wildcard cuda/cli/*.cpp)
# CUDA code: each path's host side with its kernels (paths/*.cu, kernels/ are their headers).
PATHS_SRC  := $(wildcard cuda/paths/*.cu)
# The gate's cases, which call the linked submission (gate/*.cu).
GATE_SRC   := $(wildcard cuda/gate/*.cu)

# The GEMM engine (cuda/kernels/gemm/, issue 38): its Hopper kernels use sm_90a's wgmma, TMA and
# setmaxnreg, so for ARCH=sm_90 its objects are sm_90a code (cc 9.0 devices only, the only ones an
# sm_90 build serves at full rate) with MLP_GEMM_SM90A set; for another ARCH they compile without the
# kernels' bodies and the engine refuses every problem (sm90_engine.h).
GEMM_SRC   := $(wildcard cuda/kernels/gemm/*.cu)
SM90A      := -gencode=arch=compute_90a,code=sm_90a -DMLP_GEMM_SM90A=1
GEMM_GENCODE := $(if $(filter sm_90,$(ARCH)),$(SM90A),$(GENCODE))

obj_of      = $(patsubst cuda/%,$(OBJ)/%.o,$(basename $(1)))
HOST_OBJ   := $(call obj_of,$(HOST_SRC))
TRAIN_OBJ  := $(call obj_of,$(TRAIN_SRC))
PATHS_OBJ  := $(call obj_of,$(PATHS_SRC))
GATE_OBJ   := $(call obj_of,$(GATE_SRC))
SUB_OBJ    := $(OBJ)/submission.o
GEMM_OBJ   := $(call obj_of,$(GEMM_SRC))

.PHONY: all clean
all: $(BUILD)/mlp_train $(BUILD)/libmlp.so $(BUILD)/mlp_host $(BUILD)/mlp_fit $(BUILD)/vit_forward $(BUILD)/gemm_check $(BUILD)/gemm_bench

# A stamp that changes only when ARCH, SUBMISSION or ACCUM changes, so switching either rebuilds
# what depends on it and nothing else.
$(BUILD)/config.stamp: FORCE
	@mkdir -p $(BUILD)
	@echo "ARCH=$(ARCH) SUBMISSION=$(SUBMISSION) ACCUM=$(ACCUM)" | cmp -s - $@ || echo "ARCH=$(ARCH) SUBMISSION=$(SUBMISSION) ACCUM=$(ACCUM)" > $@
FORCE:

$(OBJ)/%.o: cuda/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -MMD -MP -c $< -o $@

$(OBJ)/%.o: cuda/%.cu $(BUILD)/config.stamp
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@

$(GEMM_OBJ): $(OBJ)/%.o: cuda/%.cu $(BUILD)/config.stamp
	@mkdir -p $(dir $@)
	$(NVCC) $(filter-out $(GENCODE),$(NVCCFLAGS)) $(GEMM_GENCODE) -MMD -MP -c $< -o $@

# Which submission is linked: the one object besides the submission's own that differs between two
# submissions' builds (a course's builds share the rest, mlp_train.o included).
$(OBJ)/cli/submission_info.o: cuda/cli/submission_info.cpp $(BUILD)/config.stamp
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(SUBMISSION_DEFS) -MMD -MP -c $< -o $@

# Its header list is kept per submission (SUB_DEP), so that one which names a file since removed
# is never read once another submission is built.
SUB_DEP    := $(OBJ)/submission-$(subst /,-,$(subst .,_,$(SUBMISSION))).d
$(SUB_OBJ): $(SUBMISSION) $(BUILD)/config.stamp
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -MF $(SUB_DEP) -c $< -o $@

# The runtime calls gate/call_watch.cu counts while a submission's entry point runs (case 13): the
# linker sends every reference to them through its __wrap_ functions.
WATCHED    := cudaMalloc cudaMallocManaged cudaMallocHost cudaHostAlloc cudaMallocPitch cudaMallocAsync cudaFree \
              cudaFreeHost cudaDeviceSynchronize cudaStreamSynchronize cudaEventSynchronize cudaStreamQuery \
              cudaEventQuery cudaMemcpy cudaMemset cudaMemcpyToSymbol cudaMemcpyFromSymbol cudaStreamCreate \
              cudaStreamCreateWithFlags cudaStreamCreateWithPriority
WRAP_FLAGS := $(foreach f,$(WATCHED),-Xlinker --wrap=$(f))

$(BUILD)/mlp_train: $(OBJ)/cli/mlp_train.o $(SUB_OBJ) $(PATHS_OBJ) $(GEMM_OBJ) $(GATE_OBJ) $(TRAIN_OBJ) $(HOST_OBJ)
	$(NVCC) $(GENCODE) -Xcompiler -fopenmp $(WRAP_FLAGS) $^ -o $@

$(BUILD)/libmlp.so: $(OBJ)/tools/libmlp.o $(SUB_OBJ) $(PATHS_OBJ) $(GEMM_OBJ) $(HOST_OBJ)
	$(NVCC) $(GENCODE) -shared -Xcompiler -fopenmp $^ -o $@

# The tiled path's GEMMs at forced tile shapes and splits against float64 (tests/test_gpu_tiled.py).
$(BUILD)/gemm_check: $(OBJ)/tools/gemm_check.o $(SUB_OBJ) $(PATHS_OBJ) $(GEMM_OBJ) $(HOST_OBJ)
	$(NVCC) $(GENCODE) -Xcompiler -fopenmp $^ -o $@

# The same GEMMs timed at given shapes on the plans the path runs, with a float64 spot-check
# (harness/studies/gemm_bench.py runs it beside cuBLAS; issue 38).
$(BUILD)/gemm_bench: $(OBJ)/tools/gemm_bench.o $(GEMM_OBJ) $(SUB_OBJ) $(PATHS_OBJ) $(HOST_OBJ)
	$(NVCC) $(GENCODE) -Xcompiler -fopenmp $^ -o $@

$(BUILD)/mlp_host: $(OBJ)/tools/mlp_host.o $(HOST_OBJ)
	$(CXX) $(CXXFLAGS) $^ -o $@

# Which configuration each path gets on a device given by its limits, without a GPU (CPU tests,
# harness/studies/arch_resources.py's path table): host code only, no kernel instantiated.
$(BUILD)/mlp_fit: $(OBJ)/tools/mlp_fit.o $(OBJ)/paths/path_fit.o $(OBJ)/common/common.o
	$(NVCC) $(GENCODE) $^ -o $@

# The vision transformer's forward pass (cuda/transformer/, issue 31): its own kernels, float64
# reference and CLI, with the data loader, .npy, SHA-256 and the strict number parsers of io/.
VIT_SRC    := $(wildcard cuda/transformer/*.cpp cuda/transformer/*.cu)
VIT_OBJ    := $(call obj_of,$(VIT_SRC)) $(GEMM_OBJ) $(OBJ)/common/common.o $(OBJ)/common/json_read.o $(OBJ)/io/dataset.o $(OBJ)/io/npy.o \
              $(OBJ)/io/sha256.o $(OBJ)/io/bounds.o $(OBJ)/io/input_file.o
$(BUILD)/vit_forward: $(VIT_OBJ)
	$(NVCC) $(GENCODE) -Xcompiler -fopenmp $^ -o $@

# The same sources on the CPU (cuda/transformer/emu/: the CUDA runtime and the kernels' built-ins as
# host code, each block's threads as std::threads): build/vit_forward_emu, for the CPU tests of the
# kernels' indexing and the checks (tests/test_transformer_emulated.py). Not part of `all`.
# VIT_EMU_INCLUDES: a folder searched before cuda/ for the transformer's headers (the tests point it at
# deliberately broken copies, which the checks must fail); empty by default.
VIT_EMU_INCLUDES ?=
EMU_CXXFLAGS := -O2 -std=c++20 -fopenmp -pthread -DVIT_EMULATE $(WARN) -Wno-unknown-pragmas \
                -Icuda/transformer/emu $(VIT_EMU_INCLUDES) -Icuda
EMU_SRC    := $(VIT_SRC) cuda/common/common.cpp cuda/common/json_read.cpp cuda/io/dataset.cpp cuda/io/npy.cpp cuda/io/sha256.cpp cuda/io/bounds.cpp \
              cuda/io/input_file.cpp
EMU_OBJ    := $(patsubst cuda/%,$(BUILD)/emu/%.o,$(basename $(EMU_SRC)))
$(BUILD)/emu/%.o: cuda/%.cu
	@mkdir -p $(dir $@)
	$(CXX) $(EMU_CXXFLAGS) -MMD -MP -x c++ -c $< -o $@
$(BUILD)/emu/%.o: cuda/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(EMU_CXXFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/vit_forward_emu: $(EMU_OBJ)
	$(CXX) $(EMU_CXXFLAGS) $^ -o $@

# The tiled path's kernels through the same CPU emulation, against float64 (tests/emu/tiled_emu.cpp,
# tests/test_tiled_emulated.py). Not part of `all`. -Wno-sign-compare: the kernels compare
# threadIdx (unsigned) with int bounds, which nvcc's device compiler does not warn about.
# TILED_EMU_INCLUDES: a folder searched before cuda/ for the kernels' headers (the test points it at
# deliberately broken copies, which the check must fail); empty by default.
TILED_EMU_INCLUDES ?=
TILED_EMU_DEPS := tests/emu/tiled_emu.cpp tests/emu/kernel_builtins.h cuda/kernels/tiled.cuh cuda/kernels/tiled_mma.cuh cuda/common/mma.cuh cuda/kernels/tiled_plan.h cuda/common/precision.h cuda/transformer/emu/cuda_runtime.h cuda/transformer/emu/cuda_bf16.h
$(BUILD)/tiled_emu: $(TILED_EMU_DEPS)
	@mkdir -p $(BUILD)
	$(CXX) -O2 -std=c++20 -pthread -DVIT_EMULATE $(WARN) -Wno-unknown-pragmas -Wno-sign-compare \
	  $(TILED_EMU_INCLUDES) -Icuda/transformer/emu -Icuda tests/emu/tiled_emu.cpp -o $@

# persistent2's two big products (phase C's W1 tile and update, the next step's partials) at FP32,
# TF32 and BF16 through the same emulation (tests/emu/persistent_emu.cpp,
# tests/test_persistent_emulated.py); tests/emu/stub/ stands in for cooperative_groups.h. Not part of
# `all`. PERSISTENT_EMU_INCLUDES: as TILED_EMU_INCLUDES, for the test's broken copies.
PERSISTENT_EMU_INCLUDES ?=
PERSISTENT_EMU_DEPS := tests/emu/persistent_emu.cpp tests/emu/kernel_builtins.h tests/emu/stub/cooperative_groups.h cuda/kernels/persistent.cuh cuda/kernels/persistent_sizes.h cuda/common/precision.h cuda/contract/model.h cuda/transformer/emu/cuda_runtime.h
$(BUILD)/persistent_emu: $(PERSISTENT_EMU_DEPS)
	@mkdir -p $(BUILD)
	$(CXX) -O2 -std=c++20 -pthread -DVIT_EMULATE $(WARN) -Wno-unknown-pragmas -Wno-sign-compare \
	  $(PERSISTENT_EMU_INCLUDES) -Itests/emu/stub -Icuda/transformer/emu -Icuda tests/emu/persistent_emu.cpp -o $@

clean:
	rm -rf $(BUILD)

# The host-only parts (data loader, float64 reference, argument parsing) under AddressSanitizer
# and UBSan, for the CPU test suite (tests/test_sanitize_host.py). Not part of `all`.
ASAN_CXXFLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
                 -std=c++17 -fopenmp $(WARN) $(INCLUDES) -isystem $(CUDA_INC)
ASAN_OBJ   := $(patsubst cuda/%,$(BUILD)/asan/%.o,$(basename $(HOST_SRC) cuda/tools/mlp_host.cpp))

.PHONY: asan
asan: $(BUILD)/asan/mlp_host

$(BUILD)/asan/%.o: cuda/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(ASAN_CXXFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/asan/mlp_host: $(ASAN_OBJ)
	$(CXX) $(ASAN_CXXFLAGS) $^ -o $@

# dev/persistent_phases.cu, the persistent kernels' phase breakdown (a dev experiment; not part of
# `all`, `invoke gpu.phases` builds and runs it): build/persistent_phases --data data --out results
PHASES_OBJ := $(PATHS_OBJ) $(SUB_OBJ) $(HOST_OBJ)
$(BUILD)/persistent_phases: dev/persistent_phases.cu $(PHASES_OBJ) $(BUILD)/config.stamp
	$(NVCC) $(NVCCFLAGS) -MMD -MP -MF $(OBJ)/dev-persistent_phases.d $< $(PHASES_OBJ) -o $@

# dev/stationary/stationary_epoch.cu, the stationary kernel's dev harness (its variants, phase probes
# and the bitwise check of the shipped kernel; not part of `all`, harness/gpu_session.py's
# stationary-check stage builds and runs it): build/stationary_epoch --check-shipped --data data
$(BUILD)/stationary_epoch: dev/stationary/stationary_epoch.cu $(BUILD)/config.stamp
	@mkdir -p $(OBJ)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -MF $(OBJ)/dev-stationary_epoch.d $< -o $@

# The nvcc command line every CUDA object is compiled with (recorded in results/run.json).
.PHONY: print-nvcc
print-nvcc:
	@echo $(NVCC) $(NVCCFLAGS)

-include $(shell find $(OBJ) $(BUILD)/asan $(BUILD)/emu -name '*.d' ! -name 'submission-*.d' 2>/dev/null) $(SUB_DEP)
