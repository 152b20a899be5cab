#include "io/bounds.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "common/common.h"
#include "common/json.h"

namespace {

// Why each interval is what it is. The upper bounds keep one run's memory and time sane on any
// machine: the largest run they allow holds at most ~0.3 GB of orders (1000 epochs x 60000 rows),
// 2^27 floats per activation buffer (0.5 GB; 1 GB in the float64 reference) and 0.3 GB of
// parameters (4096 x 16384), never the machine's memory.
const std::vector<Bound> kBounds = {
    {"input_dim", "", true, 1, 4096, "pixels per image (the data's 784 must match); 4096 = 64x64 images"},
    {"hidden_dim", "--hidden", true, 1, 16384, "hidden units; the sweeps reach 8192"},
    {"output_dim", "", true, 1, 256, "classes; IDX labels are bytes"},
    {"batch", "--batch", true, 1, 65536, "rows per step; also <= train_size and batch*hidden <= 2^27"},
    {"lr", "--lr", false, 1e-6, 10, "SGD learning rate; outside it float32 training stalls or diverges at once"},
    {"momentum", "--momentum", false, 0, 0.999, "momentum; 1 would never decay the velocity"},
    {"epochs", "--epochs", true, 1, 1000, "epochs; each epoch's order is held in memory"},
    {"seed", "--seed", true, 0, 9007199254740991.0, "seed; run.json writes it as a JSON number, exact to 2^53-1"},
    {"train_size", "--train-size", true, 32, 60000,
     "training images (the full split has 60000); case 6 overfits the first 32"},
    {"test_size", "", true, 1, 10000, "test images; must equal the data's test split (10000)"},
};

std::string fmt_bound(const Bound& b, double v) {
  char buf[40];
  if (b.integer) std::snprintf(buf, sizeof buf, "%lld", (long long)v);
  else std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string interval(const Bound& b) { return "[" + fmt_bound(b, b.lo) + ", " + fmt_bound(b, b.hi) + "]"; }

// Length of the TOML decimal integer [+-]?(0|[1-9][0-9]*) at the start of t, 0 when there is none.
size_t integer_prefix(const std::string& t) {
  size_t i = (!t.empty() && (t[0] == '+' || t[0] == '-')) ? 1 : 0;
  if (i >= t.size() || t[i] < '0' || t[i] > '9') return 0;
  if (t[i] == '0') return i + 1;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
  return i;
}

bool is_integer_text(const std::string& t) { size_t n = integer_prefix(t); return n && n == t.size(); }

bool is_real_text(const std::string& t) {
  size_t i = integer_prefix(t);
  if (!i) return false;
  auto digits = [&](size_t& k) {
    size_t start = k;
    while (k < t.size() && t[k] >= '0' && t[k] <= '9') ++k;
    return k > start;
  };
  if (i < t.size() && t[i] == '.') {
    ++i;
    if (!digits(i)) return false;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digits(i)) return false;
  }
  return i == t.size();
}

// The value as the message shows it: quoted, control characters escaped, at most 40 characters.
std::string shown(const std::string& t) {
  std::string s = Json::str(t.size() > 40 ? t.substr(0, 40) + "..." : t);
  return "'" + s.substr(1, s.size() - 2) + "'";
}

}  // namespace

const std::vector<Bound>& bounds() { return kBounds; }

const Bound& bound(const std::string& key) {
  for (const auto& b : kBounds)
    if (key == b.key) return b;
  throw UserError("unknown recipe key " + key);
}

long long parse_integer_in(const std::string& text, long long lo, long long hi, const std::string& where) {
  if (text.empty()) throw UserError(where + ": empty value, want an integer in [" + std::to_string(lo) + ", " +
                                    std::to_string(hi) + "]");
  if (!is_integer_text(text)) throw UserError(where + ": " + shown(text) + " is not an integer");
  errno = 0;
  long long v = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE || v < lo || v > hi)
    throw UserError(where + ": " + text + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

long long parse_integer(const Bound& b, const std::string& text, const std::string& where) {
  if (!b.integer) throw UserError(std::string(b.key) + " is not an integer key");
  try {
    return parse_integer_in(text, (long long)b.lo, (long long)b.hi, where);
  } catch (const UserError& e) {
    // The same message, with the reason for the bound when it was the bound that failed.
    std::string m = e.what();
    if (m.find("out of range") != std::string::npos) m += " (" + std::string(b.why) + ")";
    throw UserError(m);
  }
}

double parse_real(const Bound& b, const std::string& text, const std::string& where) {
  if (text.empty()) throw UserError(where + ": empty value, want a number in " + interval(b));
  if (!is_real_text(text)) throw UserError(where + ": " + shown(text) + " is not a number (want e.g. 0.1 or 1e-3)");
  errno = 0;
  double v = std::strtod(text.c_str(), nullptr);
  if (!std::isfinite(v) || v < b.lo || v > b.hi)
    throw UserError(where + ": " + text + " is out of range " + interval(b) + " (" + b.why + ")");
  return v;
}

std::string limits_json() {
  Json o = Json::object();
  for (const auto& b : kBounds)
    o.set(b.key, Json::array().add(b.integer ? Json::num((long long)b.lo) : Json::num(b.lo))
                     .add(b.integer ? Json::num((long long)b.hi) : Json::num(b.hi)).done());
  o.set("batch_times_hidden", Json::array().add(Json::num(1)).add(Json::num(kMaxBatchTimesHidden)).done());
  return o.done();
}

std::string limits_help() {
  std::string out;
  for (const auto& b : kBounds) {
    char line[256];
    std::string flag = *b.flag ? std::string(b.flag) + (b.integer ? " N" : " X") : "(recipe only)";
    std::snprintf(line, sizeof line, "  %-16s %-10s in %-20s %s\n", flag.c_str(), b.key, interval(b).c_str(), b.why);
    out += line;
  }
  out += "  and batch <= train_size, batch * hidden_dim <= " + std::to_string(kMaxBatchTimesHidden) + " (2^27)\n";
  return out;
}
