#include "io/npy.h"

#include <cstring>

#include "common/common.h"

namespace {
// numpy's spelling: "(6000,)" for one dimension, "(20, 6000)" for two.
std::string shape_str(const std::vector<size_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// The shape tuple of a .npy header, whatever its spacing.
std::vector<size_t> parse_shape(const std::string& h, const std::string& path) {
  size_t a = h.find("'shape': (");
  size_t b = a == std::string::npos ? a : h.find(')', a);
  if (b == std::string::npos) throw UserError(path + ": .npy header has no shape");
  std::vector<size_t> shape;
  std::string body = h.substr(a + 10, b - a - 10), tok;
  for (size_t i = 0; i <= body.size(); ++i) {
    if (i == body.size() || body[i] == ',') {
      if (tok.size() > 15) throw UserError(path + ": bad .npy shape (" + body + "): dimension too large");
      if (!tok.empty()) shape.push_back((size_t)std::stoull(tok));
      tok.clear();
    } else if (body[i] != ' ') {
      if (body[i] < '0' || body[i] > '9') throw UserError(path + ": bad .npy shape (" + body + ")");
      tok += body[i];
    }
  }
  return shape;
}

std::string npy_bytes(const char* descr, const void* data, size_t nbytes, const std::vector<size_t>& shape) {
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape_str(shape) + ", }";
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += (char)(dict.size() & 0xff);
  out += (char)(dict.size() >> 8);
  out += dict;
  out.append(static_cast<const char*>(data), nbytes);
  return out;
}

template <class T>
std::vector<T> read_npy(const std::string& path, const char* descr, const std::vector<size_t>& shape) {
  std::string b = read_file(path);
  if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0) throw UserError(path + ": not a .npy file");
  size_t hlen, hoff;
  if (b[6] == 1) { hlen = (uint8_t)b[8] | (size_t)(uint8_t)b[9] << 8; hoff = 10; }
  else if (b.size() >= 12) { hlen = (uint8_t)b[8] | (size_t)(uint8_t)b[9] << 8 | (size_t)(uint8_t)b[10] << 16 | (size_t)(uint8_t)b[11] << 24; hoff = 12; }
  else throw UserError(path + ": truncated .npy header");
  if (b.size() < hoff + hlen) throw UserError(path + ": truncated .npy header");
  std::string h = b.substr(hoff, hlen);
  if (h.find(std::string("'descr': '") + descr + "'") == std::string::npos)
    throw UserError(path + ": dtype is not " + descr + " (header " + h.substr(0, h.find('}') + 1) + ")");
  if (h.find("'fortran_order': False") == std::string::npos) throw UserError(path + ": Fortran order is not supported");
  if (parse_shape(h, path) != shape)
    throw UserError(path + ": wrong shape " + shape_str(parse_shape(h, path)) + ", want " + shape_str(shape));
  size_t count = 1;
  for (size_t d : shape) count *= d;
  if (b.size() - hoff - hlen != count * sizeof(T))
    throw UserError(path + ": data length " + std::to_string(b.size() - hoff - hlen) + " bytes, want " + std::to_string(count * sizeof(T)));
  std::vector<T> v(count);
  std::memcpy(v.data(), b.data() + hoff + hlen, count * sizeof(T));
  return v;
}
}  // namespace

void write_npy_f32(const std::string& path, const std::vector<float>& v, const std::vector<size_t>& shape) {
  write_file_atomic(path, npy_bytes("<f4", v.data(), v.size() * sizeof(float), shape));
}
void write_npy_f64(const std::string& path, const std::vector<double>& v, const std::vector<size_t>& shape) {
  write_file_atomic(path, npy_bytes("<f8", v.data(), v.size() * sizeof(double), shape));
}
void write_npy_i32(const std::string& path, const std::vector<int32_t>& v, const std::vector<size_t>& shape) {
  write_file_atomic(path, npy_bytes("<i4", v.data(), v.size() * sizeof(int32_t), shape));
}
std::vector<float> read_npy_f32(const std::string& path, const std::vector<size_t>& shape) {
  return read_npy<float>(path, "<f4", shape);
}
std::vector<int32_t> read_npy_i32(const std::string& path, const std::vector<size_t>& shape) {
  return read_npy<int32_t>(path, "<i4", shape);
}
std::vector<double> read_npy_f64(const std::string& path, const std::vector<size_t>& shape) {
  return read_npy<double>(path, "<f8", shape);
}
