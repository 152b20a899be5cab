// cuda/transformer/weights.h — the weights folder (docs/formats.md "Transformer weights"): params.npy
// (float32, flat, weight_layout's order) and manifest.json (format, config, the tensors' names,
// shapes, offsets and SHA-256, and each file's SHA-256), written by harness/transformer/weights.py.
#pragma once
#include <string>
#include <vector>

#include "transformer/config.h"
#include "transformer/model.h"

struct LoadedWeights {
  std::vector<float> params;  // file layout (PyTorch shapes), n_params(s) floats
  std::string source;         // "DIR (trained: ...)" or "random seed N"
  std::string params_sha256;  // of params.npy, as verified
};

// Reads DIR/manifest.json and checks, before anything is used: its format and version; every file it
// lists against its SHA-256 (a changed byte: one UserError naming the file, both hashes and the first
// tensor whose own hash differs); its model config against `c`'s (each differing key named); its
// tensor table against weight_layout(s) (name, shape, offset, count). Then loads params.npy.
LoadedWeights load_weights(const std::string& dir, const VitConfig& c, const VitShape& s);

// The tensors' SHA-256 (of each one's little-endian float32 bytes), in layout order.
std::vector<std::string> tensor_hashes(const VitShape& s, const std::vector<float>& params);
