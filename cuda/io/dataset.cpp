#include "io/dataset.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <sstream>

#include "common/common.h"
#include "io/input_file.h"
#include "io/sha256.h"

namespace {
uint32_t be32(const std::string& b, size_t off) {
  return (uint32_t)(uint8_t)b[off] << 24 | (uint32_t)(uint8_t)b[off + 1] << 16 |
         (uint32_t)(uint8_t)b[off + 2] << 8 | (uint32_t)(uint8_t)b[off + 3];
}
}  // namespace

IdxArray parse_idx(const std::string& bytes, const std::string& name) {
  if (bytes.size() < 8) throw UserError(name + ": truncated IDX header (" + std::to_string(bytes.size()) + " bytes)");
  uint32_t magic = be32(bytes, 0);
  // 0x08 = unsigned byte elements; the low byte is the number of dimensions (1 labels, 3 images).
  if (magic != 0x00000801u && magic != 0x00000803u) {
    std::ostringstream ss;
    ss << name << ": bad IDX magic 0x" << std::hex << magic << " (want 0x801 labels or 0x803 images)";
    throw UserError(ss.str());
  }
  int ndim = (int)(magic & 0xff);
  size_t header = 4 + 4 * (size_t)ndim;
  if (bytes.size() < header) throw UserError(name + ": truncated IDX header");
  IdxArray a;
  uint64_t count = 1;
  for (int d = 0; d < ndim; ++d) {
    uint32_t v = be32(bytes, 4 + 4 * (size_t)d);
    if (v == 0 || v > (1u << 24)) throw UserError(name + ": bad IDX dimension " + std::to_string(v));
    a.dims.push_back((int)v);
    count *= v;
  }
  if (ndim == 3 && (a.dims[1] != 28 || a.dims[2] != 28))
    throw UserError(name + ": images are " + std::to_string(a.dims[1]) + "x" + std::to_string(a.dims[2]) + ", want 28x28");
  if (bytes.size() - header != count)
    throw UserError(name + ": size mismatch: header promises " + std::to_string(count) + " bytes of data, file has " +
                    std::to_string(bytes.size() - header) + (bytes.size() - header < count ? " (truncated)" : " (trailing bytes)"));
  a.data.assign(bytes.begin() + (long)header, bytes.end());
  return a;
}

namespace {
// The file names DIR/SHA256SUMS lists, each checked against its file; `listed` gets them.
void check_listed_hashes(const std::string& dir, std::set<std::string>& listed) {
  const std::string sums = dir + "/SHA256SUMS";
  std::istringstream in(read_input_file(sums));
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string at = sums + ":" + std::to_string(lineno);
    // "<64 hex>  name" (text mode) or "<64 hex> *name" (binary mode), as sha256sum writes them.
    if (line.size() < 67 || line[64] != ' ' || (line[65] != ' ' && line[65] != '*'))
      throw UserError(at + ": malformed line (want '<64 hex>  <file name>')");
    std::string want = line.substr(0, 64);
    const std::string file = line.substr(66);
    for (char& c : want) {
      if (c >= 'A' && c <= 'F') c = (char)(c - 'A' + 'a');
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) throw UserError(at + ": malformed line (want '<64 hex>  <file name>')");
    }
    // A name inside DIR: no folder part, never '.' or '..' (a listing never reaches outside).
    if (file == "." || file == ".." || file.find('/') != std::string::npos || file.find('\0') != std::string::npos)
      throw UserError(at + ": file name '" + file + "' is not a file of " + dir);
    if (!listed.insert(file).second) throw UserError(at + ": " + file + " listed twice");
    const std::string path = dir + "/" + file;
    const std::string got = sha256_hex(read_input_file(path));
    if (got != want) throw UserError(path + ": SHA-256 mismatch: expected " + want + ", got " + got);
  }
  if (listed.empty()) throw UserError(sums + ": lists no files");
}
}  // namespace

namespace {
// Every file of `files` must be among `listed`; `why` ends the message.
void check_covered(const std::string& dir, const std::vector<std::string>& files, const std::set<std::string>& listed,
                   const std::string& why) {
  for (const std::string& file : files)
    if (!listed.count(file)) throw UserError(dir + "/" + file + ": not listed in " + dir + "/SHA256SUMS (" + why + ")");
}
}  // namespace

void verify_sha256sums(const std::string& dir, const std::vector<std::string>& read) {
  std::set<std::string> listed;
  check_listed_hashes(dir, listed);
  check_covered(dir, read, listed, "it is read, so its hash must be checked");
}

void verify_sha256sums(const std::string& dir) {
  std::vector<std::string> files;
  DIR* d = ::opendir(dir.c_str());
  if (!d) throw UserError(dir + ": cannot open folder: " + std::strerror(errno));
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "SHA256SUMS" || name.empty() || name[0] == '.') continue;
    struct stat st;
    if (::stat((dir + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
    files.push_back(name);
  }
  ::closedir(d);
  std::sort(files.begin(), files.end());
  std::set<std::string> listed;
  check_listed_hashes(dir, listed);
  check_covered(dir, files, listed, "the folder is checked whole: every file in it must be listed");
}

namespace {
void load_pair(const std::string& dir, const std::string& stem, std::vector<float>& x, std::vector<int>& y,
               int& n, int& dim) {
  std::string ip = dir + "/" + stem + "-images-idx3-ubyte", lp = dir + "/" + stem + "-labels-idx1-ubyte";
  IdxArray img = parse_idx(read_input_file(ip), ip), lab = parse_idx(read_input_file(lp), lp);
  if (img.dims.size() != 3) throw UserError(ip + ": not an image file (want 3 dimensions)");
  if (lab.dims.size() != 1) throw UserError(lp + ": not a label file (want 1 dimension)");
  if (img.dims[0] != lab.dims[0])
    throw UserError(lp + ": " + std::to_string(lab.dims[0]) + " labels for " + std::to_string(img.dims[0]) + " images in " + ip);
  n = img.dims[0];
  dim = img.dims[1] * img.dims[2];
  x.resize(img.data.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = (float)img.data[i] / 255.0f;
  y.resize((size_t)n);
  for (int i = 0; i < n; ++i) {
    if (lab.data[(size_t)i] > 9) throw UserError(lp + ": label " + std::to_string(lab.data[(size_t)i]) + " out of range 0..9");
    y[(size_t)i] = lab.data[(size_t)i];
  }
}
}  // namespace

std::string train_stem(const std::string& dir) {
  // data/ ships the 6,000-image subset (train6000-*); data/full/ (invoke data --full) holds the
  // official 60,000-image split under its official name (train-*).
  struct stat st;
  return ::stat((dir + "/train6000-images-idx3-ubyte").c_str(), &st) == 0 ? "train6000" : "train";
}

std::vector<std::string> dataset_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const std::string& stem : {train_stem(dir), std::string("t10k")})
    for (const char* kind : {"-images-idx3-ubyte", "-labels-idx1-ubyte"}) files.push_back(stem + kind);
  return files;
}

Dataset load_dataset(const std::string& dir, bool verify) {
  if (verify) verify_sha256sums(dir, dataset_files(dir));
  Dataset d;
  int dim2 = 0;
  load_pair(dir, train_stem(dir), d.train_x, d.train_y, d.n_train, d.dim);
  load_pair(dir, "t10k", d.test_x, d.test_y, d.n_test, dim2);
  return d;
}
