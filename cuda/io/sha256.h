// cuda/io/sha256.h — SHA-256 (FIPS 180-4), so the binary verifies data/SHA256SUMS with no library.
#pragma once
#include <string>

// Lower-case hex digest of `data`.
std::string sha256_hex(const std::string& data);
