#include "io/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/common.h"

namespace {
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

struct Fd {
  int fd;
  ~Fd() { if (fd >= 0) ::close(fd); }
};
}  // namespace

std::string read_input_file(const std::string& path) {
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) throw UserError(path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (::fstat(f.fd, &st) != 0) throw UserError(path + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw UserError(path + ": " + kind_of(st.st_mode) + ", not a file");
  if ((unsigned long long)st.st_size > kMaxInputBytes)
    throw UserError(path + ": " + std::to_string((long long)st.st_size) + " bytes, more than an input may hold (" +
                    std::to_string(kMaxInputBytes) + ")");
  std::string out;
  out.reserve((size_t)st.st_size);
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw UserError(path + ": read failed: " + std::strerror(errno));
    }
    if (n == 0) break;
    out.append(buf, (size_t)n);
    if (out.size() > kMaxInputBytes)
      throw UserError(path + ": more than " + std::to_string(kMaxInputBytes) + " bytes, more than an input may hold");
  }
  return out;
}
