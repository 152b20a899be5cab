// cuda/common/json.h — a small JSON writer for results/run.json (objects, arrays, numbers, strings).
#pragma once
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

class Json {
 public:
  static Json object() { return Json("{"); }
  static Json array() { return Json("["); }
  static std::string str(const std::string& s) {
    std::string o = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') { o += '\\'; o += c; }
      else if (c == '\n') o += "\\n";
      else if ((unsigned char)c < 0x20) { char b[8]; std::snprintf(b, sizeof b, "\\u%04x", c); o += b; }
      else o += c;
    }
    return o + "\"";
  }
  static std::string num(double v) {
    if (!std::isfinite(v)) return "null";  // JSON has no NaN/Inf
    char b[32];
    std::snprintf(b, sizeof b, "%.17g", v);
    return b;
  }
  static std::string num(long long v) { return std::to_string(v); }
  static std::string num(int v) { return std::to_string(v); }
  static std::string boolean(bool v) { return v ? "true" : "false"; }
  static std::string nums(const std::vector<double>& v) {
    Json a = array();
    for (double x : v) a.add(num(x));
    return a.done();
  }

  // Object member (raw JSON value) / array element.
  Json& set(const std::string& key, const std::string& raw) { sep(); body_ += str(key) + ": " + raw; return *this; }
  Json& add(const std::string& raw) { sep(); body_ += raw; return *this; }
  std::string done() const { return body_ + (body_[0] == '{' ? "}" : "]"); }

 private:
  explicit Json(const char* open) : body_(open) {}
  void sep() { if (body_.size() > 1) body_ += ", "; }
  std::string body_;
};
