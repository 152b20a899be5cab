// cuda/common/common.h — error handling shared by host code. Every failure is one line on stderr.
#pragma once
#include <stdexcept>
#include <string>

// A failure the user can act on (bad input, bad flag, missing file). main() prints
// "mlp_train: error: <what>" and exits 2 (cuda/common/exit_status.h); nothing half-written is left behind.
struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Write `bytes` to `path` through a temporary file and a rename, so that a failed run never
// leaves a half-written output file.
void write_file_atomic(const std::string& path, const std::string& bytes);

// Whole file into memory; a missing or unreadable file is a UserError naming it.
std::string read_file(const std::string& path);

// `what` on one line: control characters (a newline in a file name, say) written as \n, \xNN.
std::string one_line(const std::string& what);

// Prints "<prog>: <kind>: <what>" as one line on stderr.
void print_error(const char* prog, const char* kind, const std::string& what);
