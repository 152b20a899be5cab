// cuda/io/input_file.h — the one reader of the binary's input files (recipe, IDX data, SHA256SUMS,
// .npy), so that no input can block or exhaust memory.
#pragma once
#include <cstddef>
#include <string>

// The most bytes an input file may hold: the largest the binary reads is the full split's
// 47 MB of training images.
constexpr size_t kMaxInputBytes = size_t(1) << 30;

// The whole of `path`, which must be a regular file (a symlink to one will do) of at most
// kMaxInputBytes. A missing file, a folder, a FIFO, a device (/dev/zero) or a socket is a
// UserError naming the file and what it is; the file is opened non-blocking and checked before
// anything is read, so a FIFO without a writer never blocks.
std::string read_input_file(const std::string& path);
