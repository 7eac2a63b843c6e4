#pragma once
// Small text helpers shared across core/.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ncclsweep {

/// Levenshtein distance between `a` and `b` (for "did you mean" suggestions).
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `word` by edit distance, ignoring case, when it is close enough to
/// be a typo (at most max(2, |word| / 3) edits); nullopt otherwise. The one "did you mean"
/// matcher of the project: spec keys, engine flags, subcommands and command-line flags.
[[nodiscard]] std::optional<std::string> closest_match(std::string_view word,
                                                       const std::vector<std::string>& candidates);

/// "1 experiment", "3 experiments": `n` and `noun`, with an "s" unless n is 1.
[[nodiscard]] std::string count_of(std::size_t n, std::string_view noun);

/// Length (1-4) of the valid UTF-8 sequence at text[i], or 0 when the bytes there are not
/// valid UTF-8 (bad lead or continuation bytes, a cut sequence, an overlong form, a surrogate,
/// past U+10FFFF). `code`, when given, receives the code point.
[[nodiscard]] std::size_t utf8_sequence(std::string_view text, std::size_t i, char32_t* code = nullptr);

/// The first byte offset of `text` that is not valid UTF-8, or npos.
[[nodiscard]] std::size_t invalid_utf8_at(std::string_view text);

/// The longest prefix of `text` of at most `max_bytes` bytes that does not cut a UTF-8
/// sequence in two.
[[nodiscard]] std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes);

/// `line` cut to `columns` display columns (one per code point) (UTF-8 aware, "..." marks the cut); as is
/// when it fits or `columns` is 0.
[[nodiscard]] std::string fit_width(const std::string& line, int columns);

/// The first line of `text` that is not blank, as one line for a table or a progress line:
/// control characters become spaces, trailing spaces go, and a line longer than `max_bytes`
/// is cut at a UTF-8 boundary with "..." (the result is then at most max_bytes + 3 bytes).
[[nodiscard]] std::string first_line(std::string_view text, std::size_t max_bytes);

/// POSIX-shell single-quoting of one word: 'it'\''s'. The one quoting of a value pasted into
/// a shell line (render's env file, the remote wrapper, the commands `run` prints).
[[nodiscard]] std::string shell_quote(const std::string& word);

/// `text` with ASCII letters in upper case (NCCL compares its keywords that way).
[[nodiscard]] std::string ascii_upper(std::string_view text);

}  // namespace ncclsweep
