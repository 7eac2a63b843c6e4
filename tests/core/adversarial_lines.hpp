#pragma once
// Log lines crafted against the watcher's rules (docs/reliability.md "Fuzzing and sanitizers"):
// shared by tests/core/test_watcher_adversarial.cpp (behaviour) and
// bench/bench_watcher_adversarial.cpp (time per MB, which must grow linearly with the size).
#include <cstddef>
#include <string>
#include <vector>

namespace ncclsweep::test {

/// Repeats `unit` until the text is at least `bytes` long.
inline std::string repeat_to(const std::string& unit, std::size_t bytes) {
    std::string out;
    out.reserve(bytes + unit.size());
    while (out.size() < bytes) out += unit;
    return out;
}

/// One fragment per built-in rule family, each one character short of matching
/// ("CUDA error" without the colon, "Traceback (most recent call last)" without it, ...).
inline const std::vector<std::string>& near_match_units() {
    static const std::vector<std::string> units = {
        "CUDA error ",
        "Traceback (most recent call last) ",
        "NCCL WAR ",
        "Capture cuda graph begi ",
        "CUDA out of memor ",
        "out of memoryX ",
        "an illegal memory access was encountere ",
        "Watchdog caught collective operation timeou ",
        "nccl invalid usag ",
        "Bytes -> Alg ",
        "NCCL_ALGO set by environment t ",
        "tpverify: capture: failed ",
        "Output token throughput (tok/s): x ",
        "{\"event\" \"result\" ",
        "Error in sitecustomize; set PYTHONVERBOSE for tracebac ",
    };
    return units;
}

/// Near-matches of every built-in family, interleaved, at least `bytes` long. Matches no rule.
inline std::string near_matches(std::size_t bytes) {
    std::string unit;
    for (const auto& part : near_match_units()) unit += part;
    return repeat_to(unit, bytes);
}

/// `depth` nested parentheses and brackets: "(([[ ... ]]))". Matches no rule.
inline std::string nested_parentheses(std::size_t bytes) {
    const std::size_t depth = bytes / 4;
    return std::string(depth, '(') + std::string(depth, '[') + std::string(depth, ']') +
           std::string(depth, ')');
}

/// The classic backtracking killer: 'a' x n followed by '!'. Matches no rule.
inline std::string a_run(std::size_t bytes) {
    return std::string(bytes, 'a') + "!";
}

/// A tpverify result event whose "detail" field nests `depth` objects: {"event":"result",
/// "tok_s":54.5,"detail":{"a":{"a":...1...}}}. Valid JSON of about 6 x depth bytes.
inline std::string nested_result_event(std::size_t depth) {
    std::string out = R"({"event":"result","tok_s":54.5,"detail":)";
    out.reserve(out.size() + depth * 6 + 2);
    for (std::size_t i = 0; i < depth; ++i) out += R"({"a":)";
    out += "1";
    out += std::string(depth, '}');
    out += "}";
    return out;
}

/// Many near-misses of a fatal line, then the real thing at the very end.
inline std::string fatal_at_end(std::size_t bytes) {
    return near_matches(bytes) + "CUDA out of memory";
}

}  // namespace ncclsweep::test
