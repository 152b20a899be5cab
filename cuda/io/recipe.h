// cuda/io/recipe.h — the training recipe, read from recipe.toml (the one place it is written).
#pragma once
#include <cstdint>
#include <string>

struct Recipe {
  int input_dim = 0, hidden_dim = 0, output_dim = 0;
  int batch = 0, epochs = 0, train_size = 0, test_size = 0;
  double lr = 0, momentum = 0;
  uint64_t seed = 0;
};

// Reads flat `key = value  # comment` lines (recipe.toml keeps to that subset of TOML on
// purpose). Every key of the bounds table (cuda/io/bounds.h) must appear exactly once; a missing,
// duplicate or unknown key, a line that is not `key = value`, or a value that is not a number of
// the key's type inside its bound is a UserError naming the file, the line and the key.
Recipe read_recipe(const std::string& path);

// Sets one recipe value from text, parsed strictly against the key's bound (`where` starts the
// message: "recipe.toml:9: epochs" or "--epochs").
void set_recipe_value(Recipe& r, const std::string& key, const std::string& text, const std::string& where);

// The relations between keys (batch <= train_size, batch * hidden_dim <= 2^27) and every bound
// again (values set in code); a UserError "<source>: ..." naming the keys (`source`: where the
// values came from, e.g. "recipe.toml with --batch").
void validate_recipe(const Recipe& r, const std::string& source);

// The recipe's ten values as one JSON object (`mlp_host recipe`).
std::string recipe_values_json(const Recipe& r);
