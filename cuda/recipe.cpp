#include "recipe.h"

#include <cerrno>
#include <cstdlib>
#include <map>
#include <sstream>

#include "common.h"

namespace {
std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}
}  // namespace

Recipe read_recipe(const std::string& path) {
  std::istringstream in(read_file(path));
  std::map<std::string, std::string> kv;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    size_t hash = line.find('#');
    if (hash != std::string::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) throw UserError(path + ":" + std::to_string(lineno) + ": expected key = value");
    kv[trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
  }
  Recipe r;
  auto take_int = [&](const char* key, long long lo, long long hi) -> long long {
    auto it = kv.find(key);
    if (it == kv.end()) throw UserError(path + ": missing key " + key);
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(it->second.c_str(), &end, 10);
    if (errno || *end || v < lo || v > hi) throw UserError(path + ": " + key + " = " + it->second + " is not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    kv.erase(it);
    return v;
  };
  auto take_real = [&](const char* key) -> double {
    auto it = kv.find(key);
    if (it == kv.end()) throw UserError(path + ": missing key " + key);
    char* end = nullptr;
    double v = std::strtod(it->second.c_str(), &end);
    if (*end || it->second.empty()) throw UserError(path + ": " + key + " = " + it->second + " is not a number");
    kv.erase(it);
    return v;
  };
  r.input_dim = (int)take_int("input_dim", 1, 1 << 20);
  r.hidden_dim = (int)take_int("hidden_dim", 1, 1 << 20);
  r.output_dim = (int)take_int("output_dim", 1, 1 << 20);
  r.batch = (int)take_int("batch", -(1LL << 30), 1LL << 30);
  r.lr = take_real("lr");
  r.momentum = take_real("momentum");
  r.epochs = (int)take_int("epochs", -(1LL << 30), 1LL << 30);
  r.seed = (uint64_t)take_int("seed", 0, (1LL << 62));
  r.train_size = (int)take_int("train_size", 1, 1 << 24);
  r.test_size = (int)take_int("test_size", 1, 1 << 24);
  if (!kv.empty()) throw UserError(path + ": unknown key " + kv.begin()->first);
  return r;
}

void validate_recipe(const Recipe& r) {
  if (r.batch <= 0) throw UserError("batch must be a positive integer, got " + std::to_string(r.batch));
  if (!(r.lr > 0)) throw UserError("learning rate must be positive, got " + std::to_string(r.lr));
  if (!(r.momentum >= 0 && r.momentum < 1)) throw UserError("momentum must be in [0, 1), got " + std::to_string(r.momentum));
  if (r.epochs <= 0) throw UserError("epochs must be a positive integer, got " + std::to_string(r.epochs));
}
