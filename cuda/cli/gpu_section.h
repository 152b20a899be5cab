// cuda/cli/gpu_section.h — GpuSection: the part of a run that needs the GPU to itself, agreed with the
// course's scheduler (harness/gate/schedule.py GpuLock, harness/gate/child.py run_child) over two
// pipes whose descriptors the supervisor passes in MLP_GATE_SECTION_FDS="W,R".
//
//   begin: every launch of ours finished (cudaDeviceSynchronize), "ready\n" written to W, then block
//          until the scheduler answers "go\n" on R (it holds the GPU alone from then on);
//   end:   cudaDeviceSynchronize, "done\n" written to W (the GPU is shared again).
//
// Without the variable (a run by hand, `invoke gate` on one file, the unstaged gate) both are no-ops:
// nothing else shares the GPU then. The process's start (exec, reading and checking the data, the
// CUDA context) runs before begin, beside other submissions' stages; the timed epochs and the free
// memory readings run inside. A scheduler that goes away (R at end of file) lets the run go on.
#pragma once

class GpuSection {
 public:
  // Reads MLP_GATE_SECTION_FDS; a malformed value is a UserError (exit 2) naming it. Returned as a
  // prvalue (C++17: no copy or move), so the object that owns the descriptors is never duplicated.
  static GpuSection from_env();
  GpuSection(const GpuSection&) = delete;
  GpuSection& operator=(const GpuSection&) = delete;
  ~GpuSection();  // end() if begun and not ended (an exception on the way out)

  void begin();
  void end();
  bool active() const { return write_fd_ >= 0; }

 private:
  GpuSection(int write_fd, int read_fd) : write_fd_(write_fd), read_fd_(read_fd) {}
  int write_fd_ = -1;  // to the scheduler: "ready", "done"
  int read_fd_ = -1;   // from the scheduler: "go"
  bool inside_ = false;
};
