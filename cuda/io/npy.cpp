#include "io/npy.h"

#include <cctype>
#include <cstring>

#include "common/common.h"
#include "io/input_file.h"

namespace {
// numpy's spelling: "(6000,)" for one dimension, "(20, 6000)" for two.
std::string shape_str(const std::vector<size_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// The header of a .npy file, parsed as the Python dict literal it is (numpy reads it with
// ast.literal_eval): exactly the keys 'descr' (a string), 'fortran_order' (True or False) and
// 'shape' (a tuple of non-negative integers), each once, in any order, with Python's spacing and
// an optional trailing comma. Stricter than Python where numpy never writes the form: no escape,
// prefix or concatenation in strings, no comment, no leading zero, no '_' in an integer.
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<size_t> shape;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path) : h_(text), path_(path) {}

  NpyHeader parse() {
    NpyHeader out;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    space();
    expect('{');
    for (;;) {
      space();
      if (peek() == '}') break;
      const std::string key = string_literal();
      space();
      expect(':');
      space();
      if (key == "descr") {
        once(seen_descr, key);
        out.descr = string_literal();
      } else if (key == "fortran_order") {
        once(seen_order, key);
        out.fortran_order = boolean();
      } else if (key == "shape") {
        once(seen_shape, key);
        out.shape = tuple();
      } else {
        fail("unknown key '" + key + "' (a .npy header holds descr, fortran_order and shape)");
      }
      space();
      if (peek() == ',') { ++i_; continue; }
      if (peek() != '}') fail("expected ',' or '}'");
    }
    ++i_;
    space();
    if (i_ != h_.size()) fail("text after the closing '}'");
    if (!seen_descr || !seen_order || !seen_shape)
      fail(std::string("missing key '") + (!seen_descr ? "descr" : !seen_order ? "fortran_order" : "shape") + "'");
    return out;
  }

 private:
  const std::string& h_;
  const std::string& path_;
  size_t i_ = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw UserError(path_ + ": malformed .npy header at byte " + std::to_string(i_) + ": " + what);
  }
  char peek() const { return i_ < h_.size() ? h_[i_] : '\0'; }
  void space() {
    while (i_ < h_.size() && (h_[i_] == ' ' || h_[i_] == '\t' || h_[i_] == '\n')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  void once(bool& seen, const std::string& key) {
    if (seen) fail("key '" + key + "' given twice");
    seen = true;
  }
  std::string string_literal() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    std::string s;
    for (++i_; peek() != q; ++i_) {
      const char c = peek();
      if (i_ >= h_.size() || c == '\n') fail("unterminated string");
      if (c == '\\') fail("an escape sequence in a string");
      if (c < 0x20 || c > 0x7e) fail("a character outside printable ASCII in a string");
      s += c;
    }
    ++i_;
    return s;
  }
  bool boolean() {
    size_t j = i_;
    while (j < h_.size() && (std::isalnum((unsigned char)h_[j]) || h_[j] == '_')) ++j;
    const std::string word = h_.substr(i_, j - i_);
    if (word != "True" && word != "False") fail("expected True or False");
    i_ = j;
    return word == "True";
  }
  size_t integer() {
    size_t j = i_;
    while (j < h_.size() && h_[j] >= '0' && h_[j] <= '9') ++j;
    if (j == i_) fail("expected a non-negative integer");
    if (h_[i_] == '0' && j - i_ > 1) fail("an integer with a leading zero");
    if (j - i_ > 15) fail("a dimension of more than 15 digits");
    if (j < h_.size() && (std::isalpha((unsigned char)h_[j]) || h_[j] == '_' || h_[j] == '.')) fail("not an integer");
    size_t v = (size_t)std::stoull(h_.substr(i_, j - i_));
    i_ = j;
    return v;
  }
  std::vector<size_t> tuple() {
    std::vector<size_t> dims;
    expect('(');
    space();
    if (peek() == ')') { ++i_; return dims; }
    bool comma = false;
    for (;;) {
      dims.push_back(integer());
      space();
      comma = peek() == ',';
      if (comma) { ++i_; space(); }
      if (peek() == ')') break;
      if (!comma) fail("expected ',' or ')' in the shape");
    }
    ++i_;
    if (dims.size() == 1 && !comma) fail("the shape (n) is an integer, not a tuple: write (n,)");
    return dims;
  }
};

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
  std::string b = read_input_file(path);
  if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0) throw UserError(path + ": not a .npy file");
  const int major = (uint8_t)b[6], minor = (uint8_t)b[7];
  if (major < 1 || major > 3 || minor != 0)
    throw UserError(path + ": .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                    " (want 1.0, 2.0 or 3.0)");
  size_t hlen, hoff;
  if (major == 1) { hlen = (uint8_t)b[8] | (size_t)(uint8_t)b[9] << 8; hoff = 10; }
  else if (b.size() >= 12) { hlen = (uint8_t)b[8] | (size_t)(uint8_t)b[9] << 8 | (size_t)(uint8_t)b[10] << 16 | (size_t)(uint8_t)b[11] << 24; hoff = 12; }
  else throw UserError(path + ": truncated .npy header");
  if (b.size() < hoff + hlen) throw UserError(path + ": truncated .npy header");
  const NpyHeader h = HeaderParser(b.substr(hoff, hlen), path).parse();
  if (h.descr != descr) throw UserError(path + ": dtype is not " + descr + " (descr '" + h.descr + "')");
  if (h.fortran_order) throw UserError(path + ": Fortran order is not supported");
  if (h.shape != shape) throw UserError(path + ": wrong shape " + shape_str(h.shape) + ", want " + shape_str(shape));
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
