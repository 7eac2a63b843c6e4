#pragma once
// Output of tpverify: JSON events (one object per line on stdout) with --json, else a
// readable summary. Errors go to stderr in the words of the failing API.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tpverify {

/// Builds one JSON object line without any JSON library.
class JsonLine {
public:
    JsonLine& add(const std::string& key, const std::string& value);
    JsonLine& add(const std::string& key, const char* value);
    JsonLine& add(const std::string& key, double value);
    JsonLine& add(const std::string& key, std::int64_t value);
    JsonLine& add(const std::string& key, int value) { return add(key, static_cast<std::int64_t>(value)); }
    JsonLine& add(const std::string& key, bool value);
    JsonLine& add_raw(const std::string& key, const std::string& json);  ///< value already JSON
    [[nodiscard]] std::string str() const;                               ///< "{...}" (no newline)
    /// The fields so far: key and already-encoded JSON value, in insertion order.
    [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& fields() const;

private:
    std::vector<std::pair<std::string, std::string>> m_fields;
};

/// JSON string escaping (quotes included).
std::string json_quote(const std::string& s);

/// Statistics of the measured passes.
struct PassStats {
    double p10_us = 0, p50_us = 0, p90_us = 0, mean_us = 0;
    int samples = 0;
    double rsd = 0;  ///< relative spread of the median
};

/// Final figures of a run (the `result` event).
struct RunResult {
    PassStats verify;
    double baseline_pass_us = 0;  ///< 1-token pass
    double tok_s = 0;             ///< speculative: accept_len / (verify + draft)
    double baseline_tok_s = 0;    ///< 1 / baseline pass
    double init_s = 0, capture_s = 0;
    double collective_us = 0;    ///< mean time per collective (comm-only pass)
    double comm_pass_us = 0;     ///< whole comm-only pass
    long long check_wrong = -1;  ///< --check: wrong elements (-1: not checked)
};

/// The standard fields of the `result` event (tok_s, verify_us_p50, ..., check_wrong: null
/// when not checked), in contract order.
JsonLine result_fields(const RunResult& r);

/// Where events go. One instance per process; thread-safe (one line at a time).
class Reporter {
public:
    explicit Reporter(bool json);
    /// Emits {"event":"<name>", ...fields} with --json; text lines otherwise.
    void event(const std::string& name, JsonLine fields);
    /// Reports a failure on stderr: "tpverify: <phase>: <api> failed: <error string>".
    void error(const std::string& phase, const std::string& api, const std::string& what);
    /// Prints the final result (event or readable summary).
    void result(const RunResult& r, JsonLine extra);
    [[nodiscard]] bool json() const { return m_json; }

private:
    bool m_json;
};

}  // namespace tpverify
