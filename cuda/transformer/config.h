// cuda/transformer/config.h — the vision transformer's config, read from transformer.toml (the one
// place it is written; spec/transformer.py is the Python reader, tests/test_transformer_config.py
// checks that the two agree on the bounds, the values and which keys a bad file names).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

struct VitConfig {
  // the model
  int image_size = 0, patch = 0, d_model = 0, heads = 0, mlp_dim = 0, layers = 0, classes = 0;
  double ln_eps = 0;
  std::string gelu, pool;
  // the PyTorch training that made the weights (recorded, checked against a manifest's)
  uint64_t seed = 0;
  int epochs = 0, batch = 0, train_size = 0, test_size = 0;
  std::string optimizer;
  double lr = 0, weight_decay = 0;
};

// A config file with bad keys: what() is one line per bad key ("FILE:LINE: KEY ..." or
// "FILE: missing key KEY"), in file order; thrown as a UserError by read_vit_config.
// Reads flat `key = value  # comment` lines (integers, floats, "strings"). Every key of the
// table must appear exactly once, each value of its kind inside its bound, and the relations hold
// (image_size % patch == 0, d_model % heads == 0, batch <= train_size).
VitConfig read_vit_config(const std::string& path);

// The table as one JSON object {"key": {"kind": "int", "lo": 4, "hi": 64} | {"kind": "str",
// "choices": [...]}, ...} (`vit_forward limits`).
std::string vit_limits_json();
// The config's values as one JSON object, in file order (`vit_forward config`; a manifest's
// "config" holds the model keys of the same object).
std::string vit_config_json(const VitConfig& c);
// One key's value as text: a number as JSON writes it ("%.17g"), a string as it is; an unknown
// key is a UserError. kModelKeys: the keys that shape the model (a weights manifest records them).
std::string vit_value_text(const VitConfig& c, const std::string& key);
extern const std::vector<std::string> kModelKeys;
