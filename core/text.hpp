#pragma once
// Small text helpers shared across core/.
#include <cstddef>
#include <string>
#include <string_view>

namespace ncclsweep {

/// Levenshtein distance between `a` and `b` (for "did you mean" suggestions).
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);

/// Length (1-4) of the valid UTF-8 sequence at text[i], or 0 when the bytes there are not
/// valid UTF-8 (bad lead or continuation bytes, a cut sequence, an overlong form, a surrogate,
/// past U+10FFFF). `code`, when given, receives the code point.
[[nodiscard]] std::size_t utf8_sequence(std::string_view text, std::size_t i, char32_t* code = nullptr);

/// The first byte offset of `text` that is not valid UTF-8, or npos.
[[nodiscard]] std::size_t invalid_utf8_at(std::string_view text);

/// The longest prefix of `text` of at most `max_bytes` bytes that does not cut a UTF-8
/// sequence in two.
[[nodiscard]] std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes);

/// The first line of `text` that is not blank, as one line for a table or a progress line:
/// control characters become spaces, trailing spaces go, and a line longer than `max_bytes`
/// is cut at a UTF-8 boundary with "..." (the result is then at most max_bytes + 3 bytes).
[[nodiscard]] std::string first_line(std::string_view text, std::size_t max_bytes);

}  // namespace ncclsweep
