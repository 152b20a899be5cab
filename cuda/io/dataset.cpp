#include "io/dataset.h"

#include <fstream>
#include <sstream>

#include "common/common.h"
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

void verify_sha256sums(const std::string& dir) {
  std::string listing = read_file(dir + "/SHA256SUMS");
  std::istringstream in(listing);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream ls(line);
    std::string want, file;
    ls >> want >> file;
    if (want.size() != 64 || file.empty()) throw UserError(dir + "/SHA256SUMS: malformed line: " + line);
    if (file[0] == '*') file = file.substr(1);
    std::string path = dir + "/" + file;
    std::string got = sha256_hex(read_file(path));
    if (got != want) throw UserError(path + ": SHA-256 mismatch: expected " + want + ", got " + got);
    ++n;
  }
  if (n == 0) throw UserError(dir + "/SHA256SUMS: lists no files");
}

namespace {
void load_pair(const std::string& dir, const std::string& stem, std::vector<float>& x, std::vector<int>& y,
               int& n, int& dim) {
  std::string ip = dir + "/" + stem + "-images-idx3-ubyte", lp = dir + "/" + stem + "-labels-idx1-ubyte";
  IdxArray img = parse_idx(read_file(ip), ip), lab = parse_idx(read_file(lp), lp);
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

Dataset load_dataset(const std::string& dir, bool verify) {
  if (verify) verify_sha256sums(dir);
  Dataset d;
  int dim2 = 0;
  // data/ ships the 6,000-image subset (train6000-*); data/full/ (invoke data --full) holds the
  // official 60,000-image split under its official name (train-*).
  std::ifstream subset(dir + "/train6000-images-idx3-ubyte");
  load_pair(dir, subset ? "train6000" : "train", d.train_x, d.train_y, d.n_train, d.dim);
  load_pair(dir, "t10k", d.test_x, d.test_y, d.n_test, dim2);
  return d;
}
