#include "io/recipe.h"

#include <cstdio>
#include <map>
#include <sstream>

#include "common/common.h"
#include "common/json.h"
#include "io/bounds.h"
#include "io/input_file.h"

namespace {
std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

bool bare_key(const std::string& k) {
  if (k.empty()) return false;
  for (char c : k)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  return true;
}

// The value of `key` in r, as a double (every integer bound is exact as a double).
double value_of(const Recipe& r, const std::string& key) {
  if (key == "input_dim") return r.input_dim;
  if (key == "hidden_dim") return r.hidden_dim;
  if (key == "output_dim") return r.output_dim;
  if (key == "batch") return r.batch;
  if (key == "lr") return r.lr;
  if (key == "momentum") return r.momentum;
  if (key == "epochs") return r.epochs;
  if (key == "seed") return (double)r.seed;
  if (key == "train_size") return r.train_size;
  if (key == "test_size") return r.test_size;
  throw UserError("unknown recipe key " + key);
}
}  // namespace

void set_recipe_value(Recipe& r, const std::string& key, const std::string& text, const std::string& where) {
  const Bound& b = bound(key);
  if (!b.integer) {
    double v = parse_real(b, text, where);
    if (key == "lr") r.lr = v;
    else r.momentum = v;
    return;
  }
  long long v = parse_integer(b, text, where);
  if (key == "input_dim") r.input_dim = (int)v;
  else if (key == "hidden_dim") r.hidden_dim = (int)v;
  else if (key == "output_dim") r.output_dim = (int)v;
  else if (key == "batch") r.batch = (int)v;
  else if (key == "epochs") r.epochs = (int)v;
  else if (key == "seed") r.seed = (uint64_t)v;
  else if (key == "train_size") r.train_size = (int)v;
  else if (key == "test_size") r.test_size = (int)v;
  else throw UserError("unknown recipe key " + key);
}

namespace {
// The recipe grammar's characters: printable ASCII and tab; CR only as the first half of a CRLF.
void check_characters(const std::string& text, const std::string& path) {
  int lineno = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = (unsigned char)text[i];
    if (c == '\n') { ++lineno; continue; }
    if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;
    if (c != '\t' && (c < 0x20 || c > 0x7e)) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", c);
      throw UserError(path + ":" + std::to_string(lineno) + ": byte " + hex +
                      " (a recipe holds printable ASCII, tabs and line ends only)");
    }
  }
}
}  // namespace

Recipe read_recipe(const std::string& path) {
  const std::string text = read_input_file(path);
  check_characters(text, path);
  std::istringstream in(text);
  std::map<std::string, int> seen;  // key -> line
  std::string line;
  int lineno = 0;
  Recipe r;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string at = path + ":" + std::to_string(lineno);
    size_t hash = line.find('#');
    if (hash != std::string::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) throw UserError(at + ": expected key = value");
    const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (!bare_key(key)) throw UserError(at + ": expected key = value (key '" + key + "' is not a bare key)");
    bool known = false;
    for (const auto& b : bounds()) known |= key == b.key;
    if (!known) throw UserError(at + ": unknown key " + key);
    auto prev = seen.find(key);
    if (prev != seen.end())
      throw UserError(at + ": duplicate key " + key + " (first on line " + std::to_string(prev->second) + ")");
    seen[key] = lineno;
    set_recipe_value(r, key, value, at + ": " + key);
  }
  for (const auto& b : bounds())
    if (!seen.count(b.key)) throw UserError(path + ": missing key " + b.key);
  return r;
}

void validate_recipe(const Recipe& r, const std::string& source) {
  const std::string at = source.empty() ? "" : source + ": ";
  for (const auto& b : bounds()) {
    double v = value_of(r, b.key);
    if (!(v >= b.lo && v <= b.hi))
      throw UserError(at + b.key + " = " + Json::num(v) + " is out of range (see --help)");
  }
  if (r.batch > r.train_size)
    throw UserError(at + "batch " + std::to_string(r.batch) + " is larger than train_size " + std::to_string(r.train_size));
  if ((long long)r.batch * r.hidden_dim > kMaxBatchTimesHidden)
    throw UserError(at + "batch * hidden_dim = " + std::to_string((long long)r.batch * r.hidden_dim) + " exceeds " +
                    std::to_string(kMaxBatchTimesHidden) + " (2^27 floats per activation buffer)");
}

std::string recipe_values_json(const Recipe& r) {
  return Json::object()
      .set("input_dim", Json::num(r.input_dim)).set("hidden_dim", Json::num(r.hidden_dim))
      .set("output_dim", Json::num(r.output_dim)).set("batch", Json::num(r.batch)).set("lr", Json::num(r.lr))
      .set("momentum", Json::num(r.momentum)).set("epochs", Json::num(r.epochs))
      .set("seed", Json::num((long long)r.seed)).set("train_size", Json::num(r.train_size))
      .set("test_size", Json::num(r.test_size))
      .done();
}
