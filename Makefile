# Makefile — builds build/mlp_train (the gate and benchmark), build/libmlp.so (the submission
# and our paths, for the Python binding) and build/mlp_host (host-only tools for CPU tests).
#
#   make ARCH=sm_90                          our submission (cuda/submission_ref.cu)
#   make ARCH=sm_90 SUBMISSION=path/to.cu    a learner's submission instead
#   make BUILD=build/sm_75 ARCH=sm_75        another tree, another architecture
#   make ACCUM=float                         float32 accumulation in the stepwise GEMMs (default double)
#
# `invoke build` wraps this and prints the exact nvcc command lines.
ARCH       ?= sm_90
BUILD      ?= build
SUBMISSION ?= cuda/submission_ref.cu
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
CXXFLAGS   := -O2 -std=c++17 -fopenmp -fPIC $(WARN) -Icuda -isystem $(CUDA_INC)
NVCCFLAGS  := -O3 -std=c++17 $(GENCODE) -lineinfo -Werror all-warnings \
              -Xcompiler -fopenmp,-fPIC,-Wall,-Wextra,-Werror -Icuda -DMLP_ACCUM=$(ACCUM)
EXTERNAL   := $(if $(filter cuda/submission_ref.cu,$(SUBMISSION)),0,1)
SUBMISSION_DEFS := -DMLP_SUBMISSION_SOURCE='"$(SUBMISSION)"' -DMLP_EXTERNAL_SUBMISSION=$(EXTERNAL)

HOST_SRC   := common sha256 dataset npy bounds recipe options inputs run_stats hints cpu_reference shipped_reference epoch_check path_fit
# Host code of mlp_train that calls the CUDA runtime (no kernels): compiled by $(CXX), linked into
# mlp_train only.
TRAIN_SRC  := device train_loop run_json path_checks mode_gate mode_stage mode_quick mode_perf_only mode_profile
TRAIN_OBJ  := $(TRAIN_SRC:%=$(BUILD)/host/%.o)
HOST_OBJ   := $(HOST_SRC:%=$(BUILD)/host/%.o)
DEV_OBJ    := $(BUILD)/paths.o $(BUILD)/persistent.o $(BUILD)/stationary_path.o $(BUILD)/gate.o
HEADERS    := $(wildcard cuda/*.h cuda/*.cuh)

.PHONY: all clean
all: $(BUILD)/mlp_train $(BUILD)/libmlp.so $(BUILD)/mlp_host $(BUILD)/mlp_fit

# A stamp that changes only when ARCH, SUBMISSION or ACCUM changes, so switching either rebuilds
# what depends on it and nothing else.
$(BUILD)/config.stamp: FORCE
	@mkdir -p $(BUILD)
	@echo "ARCH=$(ARCH) SUBMISSION=$(SUBMISSION) ACCUM=$(ACCUM)" | cmp -s - $@ || echo "ARCH=$(ARCH) SUBMISSION=$(SUBMISSION) ACCUM=$(ACCUM)" > $@
FORCE:

$(BUILD)/host/%.o: cuda/%.cpp $(HEADERS)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

$(BUILD)/%.o: cuda/%.cu $(HEADERS) $(BUILD)/config.stamp
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(BUILD)/mlp_train.o: cuda/mlp_train.cu $(HEADERS) $(BUILD)/config.stamp
	$(NVCC) $(NVCCFLAGS) $(SUBMISSION_DEFS) -c $< -o $@

$(BUILD)/submission.o: $(SUBMISSION) $(HEADERS) $(BUILD)/config.stamp
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(BUILD)/mlp_train: $(BUILD)/mlp_train.o $(BUILD)/submission.o $(DEV_OBJ) $(TRAIN_OBJ) $(HOST_OBJ)
	$(NVCC) $(GENCODE) -Xcompiler -fopenmp $^ -o $@

$(BUILD)/libmlp.so: $(BUILD)/binding.o $(BUILD)/submission.o $(BUILD)/paths.o $(BUILD)/persistent.o $(BUILD)/stationary_path.o $(HOST_OBJ)
	$(NVCC) $(GENCODE) -shared -Xcompiler -fopenmp $^ -o $@

$(BUILD)/mlp_host: cuda/host_tool.cpp $(HOST_OBJ) $(HEADERS)
	$(CXX) $(CXXFLAGS) $< $(HOST_OBJ) -o $@

# Which configuration each path gets on a device given by its limits, without a GPU (CPU tests,
# harness/arch_resources.py's path table): host code only, no kernel instantiated.
$(BUILD)/mlp_fit: cuda/fit_tool.cu $(BUILD)/host/path_fit.o $(BUILD)/host/common.o $(HEADERS) $(BUILD)/config.stamp
	$(NVCC) $(NVCCFLAGS) $< $(BUILD)/host/path_fit.o $(BUILD)/host/common.o -o $@

clean:
	rm -rf $(BUILD)

# The host-only parts (data loader, float64 reference, argument parsing) under AddressSanitizer
# and UBSan, for the CPU test suite (tests/test_sanitize_host.py). Not part of `all`.
ASAN_CXXFLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
                 -std=c++17 -fopenmp $(WARN) -Icuda -isystem $(CUDA_INC)
ASAN_OBJ   := $(HOST_SRC:%=$(BUILD)/asan/%.o)

.PHONY: asan
asan: $(BUILD)/asan/mlp_host

$(BUILD)/asan/%.o: cuda/%.cpp $(HEADERS)
	@mkdir -p $(dir $@)
	$(CXX) $(ASAN_CXXFLAGS) -c $< -o $@

$(BUILD)/asan/mlp_host: cuda/host_tool.cpp $(ASAN_OBJ) $(HEADERS)
	$(CXX) $(ASAN_CXXFLAGS) $< $(ASAN_OBJ) -o $@

# dev/persistent_phases.cu, the persistent kernels' phase breakdown (a dev experiment; not part of
# `all`, `invoke gpu.phases` builds and runs it): build/persistent_phases --data data --out results
PHASES_OBJ := $(BUILD)/paths.o $(BUILD)/persistent.o $(BUILD)/stationary_path.o $(BUILD)/submission.o $(HOST_OBJ)
$(BUILD)/persistent_phases: dev/persistent_phases.cu $(PHASES_OBJ) $(HEADERS) $(BUILD)/config.stamp
	$(NVCC) $(NVCCFLAGS) $< $(PHASES_OBJ) -o $@

# The nvcc command line every CUDA object is compiled with (recorded in results/run.json).
.PHONY: print-nvcc
print-nvcc:
	@echo $(NVCC) $(NVCCFLAGS)
