#include "common/common.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>
#include <unistd.h>

void write_file_atomic(const std::string& path, const std::string& bytes) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw UserError(path + ": cannot write: " + std::strerror(errno));
  size_t n = std::fwrite(bytes.data(), 1, bytes.size(), f);
  bool ok = (n == bytes.size()) && std::fflush(f) == 0;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw UserError(path + ": write failed: " + std::strerror(errno));
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open: " + std::strerror(errno));
  // In chunks, appending to a string: out of memory is std::bad_alloc (an internal error, exit
  // 4), never a silently short read that a loader would then report as a damaged file.
  std::string out;
  std::vector<char> buf(1 << 20);
  errno = 0;
  while (in) {
    in.read(buf.data(), (std::streamsize)buf.size());
    out.append(buf.data(), (size_t)in.gcount());
  }
  if (in.bad() || !in.eof())
    throw UserError(path + ": read failed" + (errno ? std::string(": ") + std::strerror(errno) : std::string()));
  return out;
}

std::string one_line(const std::string& what) {
  std::string o;
  for (char c : what) {
    if (c == '\n') o += "\\n";
    else if (c == '\r') o += "\\r";
    else if (c == '\t') o += "\\t";
    else if ((unsigned char)c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", (unsigned char)c);
      o += b;
    } else o += c;
  }
  return o;
}

void print_error(const char* prog, const char* kind, const std::string& what) {
  std::fprintf(stderr, "%s: %s: %s\n", prog, kind, one_line(what).c_str());
}
