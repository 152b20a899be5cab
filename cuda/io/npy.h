// cuda/io/npy.h — .npy (format 1.0, little-endian, C order) for the init weights, the data order
// and the final parameters, so numpy, PyTorch and outside checks start from identical state.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

// Atomic writes (temp file + rename).
void write_npy_f32(const std::string& path, const std::vector<float>& v, const std::vector<size_t>& shape);
void write_npy_f64(const std::string& path, const std::vector<double>& v, const std::vector<size_t>& shape);
void write_npy_i32(const std::string& path, const std::vector<int32_t>& v, const std::vector<size_t>& shape);

// Reads a regular file (io/input_file.h) of format 1.0, 2.0 or 3.0, parses its header as the
// Python dict literal it is (exactly descr, fortran_order and shape, each once; npy.cpp says which
// spellings) and checks dtype ('<f4' / '<i4' / '<f8'), C order, the exact shape and the data
// length; any mismatch is a UserError naming the file and what was found.
std::vector<float> read_npy_f32(const std::string& path, const std::vector<size_t>& shape);
std::vector<int32_t> read_npy_i32(const std::string& path, const std::vector<size_t>& shape);
std::vector<double> read_npy_f64(const std::string& path, const std::vector<size_t>& shape);
