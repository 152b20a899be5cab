// cuda/cli/gpu_section.cpp — GpuSection (gpu_section.h): the handshake with the course's scheduler.
#include "cli/gpu_section.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <unistd.h>

#include "common/common.h"
#include "common/cuda_check.h"

namespace {

constexpr const char* kVar = "MLP_GATE_SECTION_FDS";

UserError malformed(const std::string& whole) {
  return UserError(std::string(kVar) + "=" + one_line(whole) + ": expected two descriptors W,R (numbers from 3)");
}

// A descriptor number of the variable: decimal digits, 3..65535 (0-2 are the standard streams).
int parse_fd(const std::string& text, const std::string& whole) {
  bool digits = !text.empty() && text.size() <= 5;
  for (char ch : text) digits = digits && ch >= '0' && ch <= '9';
  const long v = digits ? std::strtol(text.c_str(), nullptr, 10) : -1;
  if (v < 3 || v > 65535) throw malformed(whole);
  return (int)v;
}

// Writes all of `msg`; false when the scheduler is gone (EPIPE and the like).
bool write_all(int fd, const char* msg, size_t n) {
  while (n > 0) {
    const ssize_t k = ::write(fd, msg, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    msg += k;
    n -= (size_t)k;
  }
  return true;
}

}  // namespace

GpuSection GpuSection::from_env() {
  const char* v = std::getenv(kVar);
  if (v == nullptr || *v == '\0') return GpuSection(-1, -1);
  const std::string whole(v);
  const size_t comma = whole.find(',');
  if (comma == std::string::npos) throw malformed(whole);
  return GpuSection(parse_fd(whole.substr(0, comma), whole), parse_fd(whole.substr(comma + 1), whole));
}

GpuSection::~GpuSection() {
  if (inside_) write_all(write_fd_, "done\n", 5);  // no sync here: a destructor must not throw
}

void GpuSection::begin() {
  if (!active() || inside_) return;
  CUDA_CHECK(cudaDeviceSynchronize());
  inside_ = true;
  if (!write_all(write_fd_, "ready\n", 6)) return;   // no scheduler: nothing to wait for
  // The answer: "go\n"; end of file (the scheduler went away) lets the run go on as well.
  std::string got;
  char ch = 0;
  for (;;) {
    const ssize_t k = ::read(read_fd_, &ch, 1);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0 || ch == '\n') break;
    if (got.size() < 16) got.push_back(ch);
  }
  if (!got.empty() && got != "go")
    std::fprintf(stderr, "gpu section: the scheduler answered %s, not go; going on\n", one_line(got).c_str());
}

void GpuSection::end() {
  if (!inside_) return;
  CUDA_CHECK(cudaDeviceSynchronize());
  inside_ = false;
  write_all(write_fd_, "done\n", 5);
}
