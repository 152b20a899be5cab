// cuda/recipe.h — the training recipe, read from recipe.toml (the one place it is written).
#pragma once
#include <cstdint>
#include <string>

struct Recipe {
  int input_dim = 0, hidden_dim = 0, output_dim = 0;
  int batch = 0, epochs = 0, train_size = 0, test_size = 0;
  double lr = 0, momentum = 0;
  uint64_t seed = 0;
};

// Reads flat `key = value  # comment` lines; an unknown key, a missing key or a bad value is a
// UserError naming the file and line. (recipe.toml keeps to that subset of TOML on purpose.)
Recipe read_recipe(const std::string& path);

// Throws UserError for values that cannot train (batch 0, negative lr, 0 epochs, ...).
void validate_recipe(const Recipe& r);
