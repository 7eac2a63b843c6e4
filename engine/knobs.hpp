#pragma once
// The engine's TPVERIFY_* environment switches (docs/engine-cuda.md lists them: kernel choices
// kept for comparing on the GPU, and the defaults' knobs). One reading rule for all of them: an
// unset or empty variable means the default. Callers read each once into a static, so that a
// pass never sees one change.
#include <initializer_list>
#include <string>
#include <utility>

namespace tpverify {

/// Whether `name` is set to exactly `value`.
[[nodiscard]] bool env_is(const char* name, const char* value);
/// `name`'s value, or `fallback` when unset or empty.
[[nodiscard]] std::string env_or(const char* name, const std::string& fallback = "");
/// `name` as a decimal integer (leading digits, as atoi), or `fallback` when unset or empty; never
/// below `min`.
[[nodiscard]] int env_int(const char* name, int fallback, int min = 0);
/// A number per GEMM shape, read from `text` (a switch's env_or(), kept once): one decimal integer applies to
/// every shape; a comma list of `NxK=V` items gives V to the shape n x k (the first item naming it) and
/// `fallback` to the others; empty, `fallback`. Items that do not read as NxK=V are skipped. Never below
/// `min`.
[[nodiscard]] int shape_int(const std::string& text, int n, int k, int fallback, int min = 0);
/// A word per GEMM shape, read from `text` as shape_int() reads numbers: a value without '=' applies to
/// every shape; a comma list of `NxK=V` items gives V to the shape n x k (the first item naming it with a
/// value) and `fallback` to the others; empty, `fallback`.
[[nodiscard]] std::string shape_text(const std::string& text, int n, int k, const std::string& fallback);
/// Reads a comma list of names (`text`, a switch's env_or(), kept once) against `names`: bit i of
/// the result is set when names[i] is in the list. The first item that is none of them, if any,
/// goes to `unknown` (empty items are skipped).
[[nodiscard]] unsigned name_set(const std::string& text, std::initializer_list<const char*> names,
                                std::string& unknown);
/// The value paired with `name`'s value among `choices`, or `fallback` when unset, empty or none.
template <typename E>
[[nodiscard]] E env_enum(const char* name, std::initializer_list<std::pair<const char*, E>> choices,
                         E fallback) {
    const std::string v = env_or(name);
    if (v.empty()) return fallback;
    for (const auto& [text, value] : choices)
        if (v == text) return value;
    return fallback;
}

}  // namespace tpverify
