#include "common/json_read.h"

#include <cstdlib>
#include <cstring>

#include "common/common.h"

namespace {

class Parser {
 public:
  Parser(const std::string& t, const std::string& where) : t_(t), where_(where) {}

  JsonValue document() {
    JsonValue v = value(0);
    space();
    if (i_ != t_.size()) fail("trailing text after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw UserError(where_ + ": malformed JSON at byte " + std::to_string(i_) + ": " + what);
  }
  void space() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    space();
    if (i_ < t_.size() && t_[i_] == c) { ++i_; return true; }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool literal(const char* word) {
    size_t n = std::strlen(word);
    if (t_.compare(i_, n, word) == 0) { i_ += n; return true; }
    return false;
  }

  JsonValue value(int depth) {
    if (depth > 64) fail("nested deeper than 64");
    space();
    if (i_ >= t_.size()) fail("unexpected end of text");
    JsonValue v;
    const char c = t_[i_];
    if (c == '{') {
      ++i_;
      v.kind = JsonValue::kObject;
      if (eat('}')) return v;
      do {
        space();
        if (i_ >= t_.size() || t_[i_] != '"') fail("expected a member name");
        std::string key = string();
        expect(':');
        v.members.emplace_back(key, value(depth + 1));
      } while (eat(','));
      expect('}');
    } else if (c == '[') {
      ++i_;
      v.kind = JsonValue::kArray;
      if (eat(']')) return v;
      do v.items.push_back(value(depth + 1));
      while (eat(','));
      expect(']');
    } else if (c == '"') {
      v.kind = JsonValue::kString;
      v.text = string();
    } else if (literal("true")) {
      v.kind = JsonValue::kBool;
      v.boolean = true;
    } else if (literal("false")) {
      v.kind = JsonValue::kBool;
    } else if (literal("null")) {
      v.kind = JsonValue::kNull;
    } else {
      v.kind = JsonValue::kNumber;
      v.text = number();
      v.number = std::strtod(v.text.c_str(), nullptr);
    }
    return v;
  }

  std::string number() {
    const size_t a = i_;
    auto digits = [&] {
      size_t b = i_;
      while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') ++i_;
      return i_ > b;
    };
    if (i_ < t_.size() && t_[i_] == '-') ++i_;
    if (i_ < t_.size() && t_[i_] == '0') ++i_;
    else if (!digits()) fail("expected a value");
    if (i_ < t_.size() && t_[i_] == '.') {
      ++i_;
      if (!digits()) fail("expected digits after '.'");
    }
    if (i_ < t_.size() && (t_[i_] == 'e' || t_[i_] == 'E')) {
      ++i_;
      if (i_ < t_.size() && (t_[i_] == '+' || t_[i_] == '-')) ++i_;
      if (!digits()) fail("expected exponent digits");
    }
    return t_.substr(a, i_ - a);
  }

  void utf8(unsigned cp, std::string& out) {
    if (cp < 0x80) out += (char)cp;
    else if (cp < 0x800) { out += (char)(0xC0 | cp >> 6); out += (char)(0x80 | (cp & 0x3F)); }
    else if (cp < 0x10000) {
      out += (char)(0xE0 | cp >> 12); out += (char)(0x80 | (cp >> 6 & 0x3F)); out += (char)(0x80 | (cp & 0x3F));
    } else {
      out += (char)(0xF0 | cp >> 18); out += (char)(0x80 | (cp >> 12 & 0x3F));
      out += (char)(0x80 | (cp >> 6 & 0x3F)); out += (char)(0x80 | (cp & 0x3F));
    }
  }
  unsigned hex4() {
    if (i_ + 4 > t_.size()) fail("truncated \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = t_[i_++];
      v = v * 16 + (h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10 : (fail("bad \\u escape"), 0));
    }
    return v;
  }
  std::string string() {
    ++i_;  // the opening quote
    std::string out;
    while (true) {
      if (i_ >= t_.size()) fail("unterminated string");
      const char c = t_[i_++];
      if (c == '"') return out;
      if ((unsigned char)c < 0x20) fail("control character in a string");
      if (c != '\\') { out += c; continue; }
      if (i_ >= t_.size()) fail("unterminated string");
      const char e = t_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && t_.compare(i_, 2, "\\u") == 0) {
            i_ += 2;
            unsigned lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail("bad surrogate pair");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          utf8(cp, out);
          break;
        }
        default: fail(std::string("bad escape \\") + e);
      }
    }
  }

  const std::string& t_;
  const std::string& where_;
  size_t i_ = 0;
};

const char* kind_name(JsonValue::Kind k) {
  switch (k) {
    case JsonValue::kNull: return "null";
    case JsonValue::kBool: return "a boolean";
    case JsonValue::kNumber: return "a number";
    case JsonValue::kString: return "a string";
    case JsonValue::kArray: return "an array";
    default: return "an object";
  }
}

}  // namespace

const JsonValue* JsonValue::get(const std::string& key) const {
  if (kind != kObject) return nullptr;
  for (const auto& m : members)
    if (m.first == key) return &m.second;
  return nullptr;
}

JsonValue parse_json(const std::string& text, const std::string& where) { return Parser(text, where).document(); }

const JsonValue& member(const JsonValue& obj, const std::string& key, JsonValue::Kind kind, const std::string& where) {
  const JsonValue* v = obj.get(key);
  if (!v) throw UserError(where + ": no \"" + key + "\"");
  if (v->kind != kind) throw UserError(where + ": \"" + key + "\" is not " + kind_name(kind));
  return *v;
}

std::string member_string(const JsonValue& obj, const std::string& key, const std::string& where) {
  return member(obj, key, JsonValue::kString, where).text;
}

double member_number(const JsonValue& obj, const std::string& key, const std::string& where) {
  return member(obj, key, JsonValue::kNumber, where).number;
}
