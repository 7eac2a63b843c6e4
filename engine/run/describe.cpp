#include "engine/run/describe.hpp"

#include <cstdio>

#include "engine/model/model.hpp"
#include "engine/run/backend.hpp"

namespace tpverify {
namespace {

ParameterSchema integer(const char* name, double lo, double hi, const char* help) {
    return {name, "int", {}, lo, hi, help};
}
ParameterSchema number(const char* name, double lo, double hi, const char* help) {
    return {name, "number", {}, lo, hi, help};
}
ParameterSchema boolean(const char* name, const char* help) {
    return {name, "bool", {"on", "off", "true", "false", "yes", "no", "1", "0"}, 0, 0, help};
}
ParameterSchema choice(const char* name, std::vector<std::string> values, const char* help) {
    return {name, "enum", std::move(values), 0, 0, help};
}

/// JSON string literal (names and help texts here are ASCII).
std::string quoted(const std::string& text) {
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

std::string number_text(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

}  // namespace

const std::vector<ParameterSchema>& parameter_schema() {
    // Ranges and values as engine/options.cpp parses them (tests/engine/test_describe.cpp checks
    // every entry against parse_options, and every flag of --help against this list).
    static const std::vector<ParameterSchema> k_parameters = {
        choice("model", preset_names(), "model preset"),
        integer("layers", 1, 10000000, "override the preset's layer count"),
        integer("hidden", 1, 10000000, "override the hidden size"),
        integer("heads", 1, 10000000, "override the attention head count"),
        integer("experts", 1, 10000000, "override the routed expert count"),
        integer("active-experts", 1, 10000000, "override the active experts per token"),
        integer("moe-intermediate", 1, 10000000, "override the MoE intermediate size"),
        integer("dense-intermediate", 1, 10000000, "override the dense MLP intermediate size"),
        integer("vocab", 1, 10000000, "override the vocabulary size"),
        integer("dense-layers", 0, 100000, "override the number of dense layers"),
        integer("tp", 1, 1024, "tensor-parallel ranks"),
        integer("tokens", 1, 1 << 20, "tokens per verify pass"),
        integer("rank", 0, 1023, "this process's rank (with nranks)"),
        integer("nranks", 1, 1024, "one process per rank: the number of ranks"),
        choice("process-model", {"processes", "threads"},
               "one process per rank (default) or one thread per GPU"),
        integer("context", 0, 1 << 20, "tokens in the KV cache the attention reads"),
        integer("draft-steps", 0, 64, "EAGLE-3 draft steps timed per cycle (0 = --draft-us)"),
        choice("expert-format", {"bf16", "int4"},
               "routed experts in bf16 or INT4 (group 32, W4A16; kimi-k2.5's default is int4)"),
        choice("server", {"sglang", "none"},
               "server preset: SGLang's NCCL environment, graph capture and no collective at one rank, or "
               "bare NCCL"),
        boolean("graph", "capture the pass in a CUDA graph"),
        boolean("fusion", "fused all-reduce + residual + RMSNorm"),
        boolean("check", "check the results against a reference"),
        boolean("no-warmup-before-capture", "capture without warming every collective first"),
        choice("capture-mode", {"thread-local", "global", "relaxed"},
               "CUDA graph capture mode (default: the server's; sglang global)"),
        integer("warmup", 0, 1000000, "warm-up passes"),
        integer("iters", 1, 10000000, "measured passes"),
        number("target-rsd", 1e-9, 1.0, "stop once the relative spread is below this fraction"),
        number("max-seconds", 1e-6, 1e7, "measure for at most this long"),
        number("accept-len", 1e-6, 1e6, "accepted draft tokens per pass"),
        number("draft-us", 0, 1e9, "draft model time per pass, microseconds"),
        number("timeout", 0, 1e7, "give up after this many seconds"),
        choice("backend", {"auto", "cuda", "sim"}, "cuda, sim, or auto (cuda when a GPU is there)"),
        choice("topology", {"pcie-gen4", "pcie-gen5", "nvlink"}, "GPU interconnect the sim models"),
        {"topology-file", "text", {}, 0, 0, "FILE: nvidia-smi topo -m output of the machine the sim models"},
        integer("seed", 0, 4294967295.0, "seed of the router (both backends) and of the sim's noise"),
        number("noise", 0, 1, "relative noise of the sim"),
        {"calibration", "text", {}, 0, 0, "FILE or builtin:NAME: measured collective times for the sim"},
        {"inject",
         "text",
         {},
         0,
         0,
         "KIND[@PHASE][:SECONDS]: inject a fault (see --help; stale on both backends)"},
    };
    return k_parameters;
}

const std::vector<MetricSchema>& metric_schema() {
    static const std::vector<MetricSchema> k_metrics = {
        {"tok_s", "tok/s", "higher"},
        {"verify_us_p50", "us", "lower"},
        {"verify_us_p10", "us", "lower"},
        {"verify_us_p90", "us", "lower"},
        {"verify_us_mean", "us", "lower"},
        {"rsd", "fraction", "lower"},
        {"baseline_tok_s", "tok/s", "higher"},
        {"baseline_us", "us", "lower"},
        {"init_s", "s", "lower"},
        {"capture_s", "s", "lower"},
        {"collective_us", "us", "lower"},
        {"comm_pass_us", "us", "lower"},
        {"samples", "passes", "higher"},
        {"check_wrong", "values", "lower"},
    };
    return k_metrics;
}

std::string describe_json(const std::string& auto_backend) {
    std::string out =
        "{\"engine\":\"tpverify\",\"describe_version\":1,\"auto_backend\":" + quoted(auto_backend) +
        ",\"parameters\":[";
    bool first = true;
    for (const auto& p : parameter_schema()) {
        out += first ? "" : ",";
        first = false;
        out += "{\"name\":" + quoted(p.name) + ",\"type\":" + quoted(p.type);
        if (p.type == "enum" || p.type == "bool") {
            out += ",\"values\":[";
            for (std::size_t i = 0; i < p.values.size(); ++i) out += (i ? "," : "") + quoted(p.values[i]);
            out += "]";
        }
        if (p.type == "int" || p.type == "number")
            out += ",\"min\":" + number_text(p.min) + ",\"max\":" + number_text(p.max);
        out += ",\"help\":" + quoted(p.help) + "}";
    }
    out += "],\"metrics\":[";
    first = true;
    for (const auto& m : metric_schema()) {
        out += first ? "" : ",";
        first = false;
        out += "{\"name\":" + quoted(m.name) + ",\"unit\":" + quoted(m.unit) +
               ",\"better\":" + quoted(m.better) + "}";
    }
    out += "],\"assumptions\":[";
    first = true;
    for (const SimAssumption& a : sim_assumptions()) {
        out += first ? "" : ",";
        first = false;
        out += "{\"name\":" + quoted(a.name) + ",\"value\":" + quoted(a.value) +
               ",\"source\":" + quoted(a.source) + "}";
    }
    return out + "]}\n";
}

std::string describe_text() {
    std::string out =
        "tpverify's sim: what its collective prices rest on (tpverify --describe --json also lists the\n"
        "parameters and metrics). Each assumption, the figure the sim uses, and its source:\n";
    for (const SimAssumption& a : sim_assumptions())
        out += "\n  " + a.name + "\n    " + a.value + "\n    source: " + a.source + "\n";
    return out;
}

}  // namespace tpverify
