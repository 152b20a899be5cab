#include "transformer/config.h"

#include <map>
#include <sstream>

#include "common/common.h"
#include "common/json.h"
#include "io/bounds.h"

namespace {

enum Kind { kInt, kReal, kStr };
struct Key {
  const char* name;
  Kind kind;
  double lo, hi;                     // int / real
  std::vector<std::string> choices;  // str
};

// spec/transformer.py's BOUNDS, in file order (tests/test_transformer_config.py compares them).
const std::vector<Key>& keys() {
  static const std::vector<Key> k = {
      {"image_size", kInt, 4, 64, {}},  {"patch", kInt, 1, 16, {}},       {"d_model", kInt, 8, 1024, {}},
      {"heads", kInt, 1, 32, {}},       {"mlp_dim", kInt, 1, 8192, {}},   {"layers", kInt, 1, 24, {}},
      {"classes", kInt, 2, 256, {}},    {"ln_eps", kReal, 1e-12, 1e-2, {}}, {"gelu", kStr, 0, 0, {"erf"}},
      {"pool", kStr, 0, 0, {"mean"}},   {"seed", kInt, 0, 9007199254740991.0, {}},
      {"epochs", kInt, 1, 100, {}},     {"batch", kInt, 1, 6000, {}},     {"optimizer", kStr, 0, 0, {"adamw"}},
      {"lr", kReal, 1e-6, 1.0, {}},     {"weight_decay", kReal, 0, 1.0, {}}, {"train_size", kInt, 32, 6000, {}},
      {"test_size", kInt, 1, 10000, {}},
  };
  return k;
}

const Key* find_key(const std::string& name) {
  for (const auto& k : keys())
    if (name == k.name) return &k;
  return nullptr;
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// A TOML basic string without escapes: "text" (a '#' inside quotes is not a comment).
bool unquote(const std::string& v, std::string& out) {
  if (v.size() < 2 || v.front() != '"' || v.back() != '"') return false;
  out = v.substr(1, v.size() - 2);
  return out.find('"') == std::string::npos && out.find('\\') == std::string::npos;
}

// The line without its comment: the first '#' outside a "string".
std::string strip_comment(const std::string& line) {
  bool in_str = false;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '"') in_str = !in_str;
    else if (line[i] == '#' && !in_str) return line.substr(0, i);
  }
  return line;
}

void set_value(VitConfig& c, const Key& k, const std::string& text, const std::string& where) {
  const std::string name = k.name;
  if (k.kind == kStr) {
    std::string s;
    if (!unquote(text, s)) throw UserError(where + ": " + text + " is not a string");
    bool ok = false;
    std::string list;
    for (const auto& ch : k.choices) {
      ok |= s == ch;
      list += (list.empty() ? "'" : ", '") + ch + "'";
    }
    if (!ok) throw UserError(where + ": '" + s + "' is not one of " + list);
    (name == "gelu" ? c.gelu : name == "pool" ? c.pool : c.optimizer) = s;
    return;
  }
  const Bound b{k.name, "", k.kind == kInt, k.lo, k.hi, "transformer.toml's bound"};
  if (k.kind == kReal) {
    double v = parse_real(b, text, where);
    (name == "ln_eps" ? c.ln_eps : name == "lr" ? c.lr : c.weight_decay) = v;
    return;
  }
  long long v = parse_integer(b, text, where);
  if (name == "seed") { c.seed = (uint64_t)v; return; }
  int* slot = name == "image_size" ? &c.image_size : name == "patch" ? &c.patch : name == "d_model" ? &c.d_model
            : name == "heads" ? &c.heads : name == "mlp_dim" ? &c.mlp_dim : name == "layers" ? &c.layers
            : name == "classes" ? &c.classes : name == "epochs" ? &c.epochs : name == "batch" ? &c.batch
            : name == "train_size" ? &c.train_size : &c.test_size;
  *slot = (int)v;
}

}  // namespace

const std::vector<std::string> kModelKeys = {"image_size", "patch", "d_model", "heads", "mlp_dim",
                                             "layers", "classes", "ln_eps", "gelu", "pool"};

VitConfig read_vit_config(const std::string& path) {
  std::istringstream in(read_file(path));
  std::map<std::string, int> seen;  // key -> line
  std::map<std::string, bool> bad;  // keys already named by an error
  std::vector<std::string> errors;
  VitConfig c;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string at = path + ":" + std::to_string(lineno);
    line = trim(strip_comment(line));
    if (line.empty()) continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) { errors.push_back(at + ": expected key = value"); continue; }
    const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    const Key* k = find_key(key);
    if (!k) { errors.push_back(at + ": unknown key " + key); bad[key] = true; continue; }
    auto prev = seen.find(key);
    if (prev != seen.end()) {
      errors.push_back(at + ": duplicate key " + key + " (first on line " + std::to_string(prev->second) + ")");
      bad[key] = true;
      continue;
    }
    seen[key] = lineno;
    try {
      set_value(c, *k, value, at + ": " + key);
    } catch (const UserError& e) {
      errors.push_back(e.what());
      bad[key] = true;
    }
  }
  for (const auto& k : keys())
    if (!seen.count(k.name)) { errors.push_back(path + ": missing key " + k.name); bad[k.name] = true; }
  if (errors.empty()) {
    if (c.image_size % c.patch)
      errors.push_back(path + ": patch: image_size " + std::to_string(c.image_size) + " is not a multiple of patch " +
                       std::to_string(c.patch));
    if (c.d_model % c.heads)
      errors.push_back(path + ": heads: d_model " + std::to_string(c.d_model) + " is not a multiple of heads " +
                       std::to_string(c.heads));
    if (c.batch > c.train_size)
      errors.push_back(path + ": batch: batch " + std::to_string(c.batch) + " is larger than train_size " +
                       std::to_string(c.train_size));
  }
  if (!errors.empty()) {
    std::string all;
    for (const auto& e : errors) all += (all.empty() ? "" : "\n") + e;
    throw UserError(all);
  }
  return c;
}

std::string vit_limits_json() {
  Json o = Json::object();
  for (const auto& k : keys()) {
    Json b = Json::object();
    b.set("kind", Json::str(k.kind == kInt ? "int" : k.kind == kReal ? "real" : "str"));
    if (k.kind == kStr) {
      Json a = Json::array();
      for (const auto& ch : k.choices) a.add(Json::str(ch));
      b.set("choices", a.done());
    } else {
      b.set("lo", k.kind == kInt ? Json::num((long long)k.lo) : Json::num(k.lo));
      b.set("hi", k.kind == kInt ? Json::num((long long)k.hi) : Json::num(k.hi));
    }
    o.set(k.name, b.done());
  }
  return o.done();
}

std::string vit_value_text(const VitConfig& c, const std::string& key) {
  const Key* k = find_key(key);
  if (!k) throw UserError("unknown transformer key " + key);
  if (key == "gelu") return c.gelu;
  if (key == "pool") return c.pool;
  if (key == "optimizer") return c.optimizer;
  if (key == "ln_eps") return Json::num(c.ln_eps);
  if (key == "lr") return Json::num(c.lr);
  if (key == "weight_decay") return Json::num(c.weight_decay);
  if (key == "seed") return std::to_string(c.seed);
  const int v = key == "image_size" ? c.image_size : key == "patch" ? c.patch : key == "d_model" ? c.d_model
              : key == "heads" ? c.heads : key == "mlp_dim" ? c.mlp_dim : key == "layers" ? c.layers
              : key == "classes" ? c.classes : key == "epochs" ? c.epochs : key == "batch" ? c.batch
              : key == "train_size" ? c.train_size : c.test_size;
  return std::to_string(v);
}

std::string vit_config_json(const VitConfig& c) {
  Json o = Json::object();
  for (const auto& k : keys()) {
    const std::string v = vit_value_text(c, k.name);
    o.set(k.name, k.kind == kStr ? Json::str(v) : v);
  }
  return o.done();
}
