// cuda/io/bounds.h — the one table of input bounds: every recipe key, the flag that overrides it,
// its type and closed interval, and why. Every flag value and recipe value is parsed by the
// strict parsers below against this table; `mlp_train --help` prints it and `mlp_host limits`
// prints it as JSON (the Python side checks that it agrees).
#pragma once
#include <string>
#include <vector>

struct Bound {
  const char* key;   // the recipe key (and run.json's recipe field)
  const char* flag;  // the mlp_train flag that overrides it ("" when none)
  bool integer;      // integer or real
  double lo, hi;     // closed interval; every integer bound is below 2^53, so exact as a double
  const char* why;   // the reason for the interval, one line
};

// The table, in recipe order.
const std::vector<Bound>& bounds();
// The bound of a recipe key; a key not in the table is a UserError naming it.
const Bound& bound(const std::string& key);

// Relations between keys, checked by validate_recipe (cuda/io/recipe.h) and listed in --help and
// `mlp_host limits`: batch <= train_size, and batch * hidden_dim <= kMaxBatchTimesHidden.
constexpr long long kMaxBatchTimesHidden = 1LL << 27;

// Strict parsers. Integers: [+-]?(0|[1-9][0-9]*) (TOML's decimal integers without underscores).
// Reals: the same, then an optional fraction .[0-9]+ and exponent [eE][+-]?[0-9]+ (TOML's
// floats); inf and nan are not numbers here. Anything else (empty, spaces, trailing junk, a
// value outside the bound, an overflow) is one UserError "<where>: ...", naming the value and
// the interval.
long long parse_integer(const Bound& b, const std::string& text, const std::string& where);
double parse_real(const Bound& b, const std::string& text, const std::string& where);
// An integer with no recipe key behind it (e.g. mlp_host grad --batch): the same grammar.
long long parse_integer_in(const std::string& text, long long lo, long long hi, const std::string& where);

// {"input_dim": [1, 4096], ..., "batch_times_hidden": [1, 134217728]} on one line.
std::string limits_json();
// The table as --help lines ("  --epochs N        epochs in [1, 1000]: ...").
std::string limits_help();
