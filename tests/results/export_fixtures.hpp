#pragma once
// A stored sweep for the export and report tests: ok points with 6 and 3 repeats, failures of
// every status, and hostile text (quotes, <script>, &, newlines, control bytes, invalid UTF-8,
// unicode) in parameters, environment and diagnosis. Built through the real Store API with a
// fixed clock so golden files stay stable.
#include <string>
#include <vector>

#include "results/export/exports.hpp"
#include "results/store/store.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

namespace ncclsweep::test {

/// The hostile label value used by the fixture.
inline const std::string k_hostile_label =
    "q\"uote' <script>alert(1)</script> & | pipe\nnew line \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x8e\x89";

struct ExportPoint {
    std::string algo, proto, tokens, label;
    results::ExperimentStatus status;
    std::string failure_class, diagnosis;
    std::vector<double> tok_s;
};

inline Experiment export_experiment(int id, const ExportPoint& p) {
    Experiment e;
    e.id = id;
    e.params = {{"NCCL_ALGO", p.algo}, {"NCCL_PROTO", p.proto}, {"tokens", p.tokens}, {"label", p.label}};
    e.canonical =
        "NCCL_ALGO=" + p.algo + ";NCCL_PROTO=" + p.proto + ";label=" + p.label + ";tokens=" + p.tokens;
    e.key = "key-" + p.algo + "-" + p.proto + "-" + p.tokens + "-" + std::to_string(p.label.size());
    e.env = {{"NCCL_DEBUG", "WARN"},
             {"NCCL_ALGO", p.algo},
             {"NCCL_PROTO", p.proto},
             {"NCCL_P2P_LEVEL", "SYS"},
             {"NS_LABEL", p.label}};
    e.workload = {{"model", "llama-70b"}, {"tp", "8"}, {"tokens", p.tokens}, {"label", p.label}};
    e.argv = {"/opt/bin/tpverify", "--json", "--tokens", p.tokens};
    return e;
}

/// The points of the fixture sweep (experiment id = index + 1).
inline std::vector<ExportPoint> export_points() {
    using S = results::ExperimentStatus;
    return {
        {"Ring", "LL", "8", "plain", S::ok, "", "", {1000, 1010, 990, 1005, 995, 1002}},
        {"allreduce:tree", "LL", "8", "plain", S::ok, "", "", {1100, 1090, 1120}},
        {"Tree",
         "LL",
         "8",
         "plain",
         S::failed,
         "graph_capture",
         "graph_capture: capture invalidated <b>&amp;</b>\nline (nccl_invalid_usage): NCCL WARN \x1b[31mNo "
         "algorithm\x07 "
         "\xff\xfe ]]> \"x\"\n> trigger",
         {}},
        {"Ring", "LL", "16", k_hostile_label, S::ok, "", "", {1500, 1490, 1510, 1505, 1495, 1502, 1500}},
        {"Tree", "LL", "16", "plain", S::timed_out, "hang", "hang: no output for 3 s (stall timeout)\n", {}},
        {"allreduce:tree", "LL", "16", "plain", S::infra_error, "connection", "ssh connection lost\n", {}},
        {"Ring", "Simple", "16", "plain", S::skipped, "", "", {}},
        {"Ring", "LL128", "16", "plain", S::pending, "", "", {}},
    };
}

/// Creates the fixture sweep in `db` and returns it loaded back.
inline results::exports::SweepData make_export_sweep(const std::string& db,
                                                     const std::string& name = "export \"fixture\" <&>") {
    results::StoreOptions options;
    options.clock = [] { return std::chrono::system_clock::time_point(std::chrono::seconds(1764430387)); };
    auto store = results::Store::open(db, options);
    REQUIRE(store);
    results::SweepRecord record;
    record.name = name;
    record.tag = "nightly";
    record.spec_path = "spec.yaml";
    record.spec_text = "sweep: fixture\n";
    record.target = "local";
    record.tool_version = "test";
    record.repeats = 6;
    record.uuid = "00112233445566778899aabbccddeeff";
    record.inherited_env = {{"NCCL_SOCKET_IFNAME", "eth0"}};
    auto points = export_points();
    std::vector<Experiment> experiments;
    for (std::size_t i = 0; i < points.size(); ++i)
        experiments.push_back(export_experiment(static_cast<int>(i + 1), points[i]));
    auto sweep = store->create_sweep(record, experiments);
    REQUIRE(sweep);
    for (std::size_t i = 0; i < points.size(); ++i) {
        const auto& p = points[i];
        int id = static_cast<int>(i + 1);
        if (p.status == results::ExperimentStatus::pending) continue;
        REQUIRE(store->begin_experiment(*sweep, id, 1));
        results::ExperimentOutcome o;
        o.status = p.status;
        o.failure_class = p.failure_class;
        o.diagnosis = p.diagnosis;
        o.timings.total_s = 1.5 * id;
        for (std::size_t r = 0; r < p.tok_s.size(); ++r) {
            o.samples.push_back({static_cast<int>(r), "tok_s", p.tok_s[r]});
            o.samples.push_back({static_cast<int>(r), "verify_us_p50", 1e6 / p.tok_s[r]});
        }
        REQUIRE(store->record_experiment(*sweep, id, o));
    }
    REQUIRE(store->finish_sweep(*sweep, results::SweepState::done));
    auto loaded = store->load_sweep(std::to_string(*sweep));
    REQUIRE(loaded);
    return std::move(*loaded);
}

}  // namespace ncclsweep::test
