// cuda/io/dataset.h — IDX loading with SHA-256 verification against data/SHA256SUMS.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

// One IDX array: unsigned bytes with its dimensions (e.g. {6000, 28, 28} or {6000}).
struct IdxArray {
  std::vector<int> dims;
  std::vector<uint8_t> data;
};

// Parses IDX bytes (magic 0x00000801 labels or 0x00000803 images). Any malformed header,
// wrong magic, zero/oversized dimension or length mismatch throws a UserError naming `name`.
IdxArray parse_idx(const std::string& bytes, const std::string& name);

// Checks DIR/SHA256SUMS: every line '<64 hex>  <name>' (a name inside DIR, listed once), every
// listed file's hash, and that every file of `read` (names inside DIR: the files the caller
// goes on to read) is listed. A malformed line, a missing or special file (io/input_file.h), a
// mismatch or a read file that is not listed is a UserError naming the file.
void verify_sha256sums(const std::string& dir, const std::vector<std::string>& read);
// The same for a folder checked whole (data/reference, the shipped reference): every file
// directly in DIR but SHA256SUMS and hidden ones must be listed, so whatever its loader reads is.
void verify_sha256sums(const std::string& dir);

// The four IDX files load_dataset reads from DIR: train6000-* (or, where absent, the full
// split's train-*) and t10k-*, images then labels.
std::vector<std::string> dataset_files(const std::string& dir);

// The shipped data as the trainer uses it: pixels scaled to [0, 1], labels as int32.
struct Dataset {
  int dim = 0;                  // 784
  int n_train = 0, n_test = 0;  // 6000, 10000
  std::vector<float> train_x, test_x;  // [n × dim] row-major
  std::vector<int> train_y, test_y;    // [n], each in 0..9
};

// Loads DIR/train6000-*-ubyte (or, where absent, the full split's DIR/train-*-ubyte) and
// DIR/t10k-*-ubyte (verify: check SHA256SUMS first).
Dataset load_dataset(const std::string& dir, bool verify = true);
