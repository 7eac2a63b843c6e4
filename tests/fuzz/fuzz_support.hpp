#pragma once
// Helpers shared by the fuzz targets: a check that crashes (so libFuzzer keeps the input and
// the corpus replay fails), and splitting of the fuzzer's bytes into records.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

/// Aborts with a message when `cond` is false: an invariant of the code under test broke.
#define FUZZ_CHECK(cond, what)                                                                    \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            std::fprintf(stderr, "%s:%d: invariant broken: %s (%s)\n", __FILE__, __LINE__, #cond, \
                         std::string(what).c_str());                                              \
            std::abort();                                                                         \
        }                                                                                         \
    } while (0)

namespace ncclsweep::fuzz {

/// The fuzzer's bytes as a string (any bytes, NUL included).
inline std::string as_text(const std::uint8_t* data, std::size_t size) {
    return std::string(reinterpret_cast<const char*>(data), size);
}

/// Splits `text` at every `separator`; keeps empty pieces (n separators give n+1 pieces).
inline std::vector<std::string> split(std::string_view text, char separator) {
    std::vector<std::string> pieces;
    std::size_t start = 0;
    for (;;) {
        const std::size_t end = text.find(separator, start);
        if (end == std::string_view::npos) {
            pieces.emplace_back(text.substr(start));
            return pieces;
        }
        pieces.emplace_back(text.substr(start, end - start));
        start = end + 1;
    }
}

/// FNV-1a of the bytes: a deterministic source of settings that every mutation can change.
inline std::uint64_t checksum(std::string_view text) {
    std::uint64_t hash = 1469598103934665603ull;
    for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
    return hash;
}

}  // namespace ncclsweep::fuzz
