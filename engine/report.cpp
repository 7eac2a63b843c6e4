// JSON event lines and the readable summary of tpverify (no JSON library).
#include "engine/report.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <mutex>

namespace tpverify {
namespace {

std::mutex g_output_mutex;  // one line at a time, from any rank thread

std::string format_number(double value) {
    if (!std::isfinite(value)) return "null";
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
    if (ec != std::errc()) return "null";
    return std::string(buf, end);
}

/// A value as text for the human-readable lines: strings lose their quotes.
std::string plain(const std::string& json_value) {
    if (json_value.size() >= 2 && json_value.front() == '"')
        return json_value.substr(1, json_value.size() - 2);
    return json_value;
}

std::string fixed(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

}  // namespace

std::string json_quote(const std::string& s) {
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    for (unsigned char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);  // UTF-8 passes through untouched
                }
        }
    }
    out += '"';
    return out;
}

JsonLine& JsonLine::add(const std::string& key, const std::string& value) {
    m_fields.emplace_back(key, json_quote(value));
    return *this;
}
JsonLine& JsonLine::add(const std::string& key, const char* value) {
    return add(key, std::string(value));
}
JsonLine& JsonLine::add(const std::string& key, double value) {
    m_fields.emplace_back(key, format_number(value));
    return *this;
}
JsonLine& JsonLine::add(const std::string& key, std::int64_t value) {
    m_fields.emplace_back(key, std::to_string(value));
    return *this;
}
JsonLine& JsonLine::add(const std::string& key, bool value) {
    m_fields.emplace_back(key, value ? "true" : "false");
    return *this;
}
JsonLine& JsonLine::add_raw(const std::string& key, const std::string& json) {
    m_fields.emplace_back(key, json);
    return *this;
}

std::string JsonLine::str() const {
    std::string out = "{";
    for (std::size_t i = 0; i < m_fields.size(); ++i) {
        if (i) out += ',';
        out += json_quote(m_fields[i].first);
        out += ':';
        out += m_fields[i].second;
    }
    out += '}';
    return out;
}

const std::vector<std::pair<std::string, std::string>>& JsonLine::fields() const {
    return m_fields;
}

Reporter::Reporter(bool json) : m_json(json) {}

void Reporter::event(const std::string& name, JsonLine fields) {
    std::string line;
    if (m_json) {
        JsonLine all;
        all.add("event", name);
        for (const auto& [k, v] : fields.fields()) all.add_raw(k, v);
        line = all.str();
    } else {
        line = "tpverify " + name + ":";
        for (const auto& [k, v] : fields.fields()) line += " " + k + "=" + plain(v);
    }
    std::lock_guard<std::mutex> lock(g_output_mutex);
    std::fputs(line.c_str(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

void Reporter::error(const std::string& phase, const std::string& api, const std::string& what) {
    std::lock_guard<std::mutex> lock(g_output_mutex);
    std::fflush(stdout);
    std::fprintf(stderr, "tpverify: %s: %s failed: %s\n", phase.c_str(), api.c_str(), what.c_str());
    std::fflush(stderr);
}

JsonLine result_fields(const RunResult& r) {
    JsonLine f;
    f.add("tok_s", r.tok_s)
        .add("verify_us_p50", r.verify.p50_us)
        .add("verify_us_p10", r.verify.p10_us)
        .add("verify_us_p90", r.verify.p90_us)
        .add("verify_us_mean", r.verify.mean_us)
        .add("rsd", r.verify.rsd)
        .add("baseline_tok_s", r.baseline_tok_s)
        .add("baseline_us", r.baseline_pass_us)
        .add("init_s", r.init_s)
        .add("capture_s", r.capture_s)
        .add("collective_us", r.collective_us)
        .add("comm_pass_us", r.comm_pass_us)
        .add("samples", r.verify.samples);
    if (r.check_wrong >= 0)
        f.add("check_wrong", static_cast<std::int64_t>(r.check_wrong));
    else
        f.add_raw("check_wrong", "null");
    return f;
}

void Reporter::result(const RunResult& r, JsonLine extra) {
    if (m_json) {
        JsonLine f = result_fields(r);
        for (const auto& [k, v] : extra.fields()) f.add_raw(k, v);
        event("result", std::move(f));
        return;
    }
    std::string text;
    text += "verify pass   p50 " + fixed(r.verify.p50_us, 1) + " us  (p10 " + fixed(r.verify.p10_us, 1) +
            ", p90 " + fixed(r.verify.p90_us, 1) + ", " + std::to_string(r.verify.samples) +
            " samples, spread of median " + fixed(100 * r.verify.rsd, 2) + "%)\n";
    text += "tok/s         " + fixed(r.tok_s, 1) + " speculative   vs " + fixed(r.baseline_tok_s, 1) +
            " baseline decode (1-token pass " + fixed(r.baseline_pass_us, 1) + " us)\n";
    text += "collectives   " + fixed(r.collective_us, 2) + " us each (comm-only pass " +
            fixed(r.comm_pass_us, 1) + " us)\n";
    text += "setup         init " + fixed(r.init_s, 3) + " s, capture " + fixed(r.capture_s, 3) + " s\n";
    text += "check         " +
            (r.check_wrong < 0    ? std::string("not run (use --check)")
             : r.check_wrong == 0 ? std::string("all elements correct")
                                  : std::to_string(r.check_wrong) + " wrong elements") +
            "\n";
    for (const auto& [k, v] : extra.fields()) text += k + " = " + plain(v) + "\n";
    std::lock_guard<std::mutex> lock(g_output_mutex);
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
}

}  // namespace tpverify
