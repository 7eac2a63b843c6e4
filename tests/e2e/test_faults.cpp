// Reliability, end to end on the local target: the workload crashes in every phase, hangs in
// every phase, and floods its output — each through the real ncclsweep + tpverify binaries.
#include <map>
#include <set>

#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

const std::vector<std::string> k_phases{"init", "warmup", "capture", "replay"};

std::string inject_of(const results::StoredExperiment& e) {
    for (const auto& [name, value] : e.experiment.params)
        if (name == "inject") return value;
    return "";
}

}  // namespace

TEST_CASE("faults: a crash of each kind in each phase is recorded with its class and a diagnosis") {
    TempDir dir;
    // kind -> the failure class the watcher must record, and a word the diagnosis must keep.
    const std::map<std::string, std::pair<std::string, std::string>> kinds{
        {"nccl-error", {"nccl", "unhandled cuda error"}},
        {"cuda-oom", {"oom", "out of memory"}},
        {"segv", {"signal", "SIGSEGV"}},
        {"exit", {"exit", "status 1"}},
        {"capture-fail", {"graph_capture", "operation not permitted when stream is capturing"}},
    };
    std::string values;
    for (const auto& [kind, expected] : kinds)
        for (const auto& phase : k_phases) values += "\"" + kind + "@" + phase + "\", ";
    values.resize(values.size() - 2);
    auto spec =
        dir.write("s.yaml", sim_spec("faults-phases", "  graph: [\"on\"]\n  inject: [" + values + "]\n", 1,
                                     "  stall: 20\n  total: 60\n"));
    std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep({"run", spec.string(), "--db", db, "--kill-grace", "0.5"});
    INFO(r.err);
    // Failed experiments are results, recorded below; a sweep in which none succeeded exits 1.
    REQUIRE(r.exit_code == 1);
    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == kinds.size() * k_phases.size());
    for (const auto& e : experiments) {
        const std::string inject = inject_of(e);
        const std::string kind = inject.substr(0, inject.find('@'));
        INFO(inject << ": class " << e.outcome.failure_class << "\n" << e.outcome.diagnosis);
        CHECK(e.outcome.status == results::ExperimentStatus::failed);
        CHECK(e.attempts == 1);
        CHECK(e.outcome.samples.empty());  // a crashed run has no result to record
        const std::string phase = inject.substr(inject.find('@') + 1);
        // An NCCL error while the graph is being captured is a capture failure (as with bare Tree).
        const std::string expected_class =
            kind == "nccl-error" && phase == "capture" ? "graph_capture" : kinds.at(kind).first;
        CHECK(e.outcome.failure_class == expected_class);
        CHECK(e.outcome.diagnosis.find(kinds.at(kind).second) != std::string::npos);
        // Errors that name their API also name the phase they happened in.
        if (kind != "segv" && kind != "exit")
            CHECK(e.outcome.diagnosis.find("failed in " + phase) != std::string::npos);
    }
}

TEST_CASE("faults: a hang in each phase ends by the stall timeout and is recorded as timed out") {
    TempDir dir;
    std::string values;
    for (const auto& phase : k_phases)
        values += std::string(values.empty() ? "" : ", ") + "\"hang@" + phase + "\"";
    // tpverify's own watchdog is off (timeout 0): only ncclsweep's stall timeout can end these.
    auto spec =
        dir.write("s.yaml", sim_spec("faults-hang",
                                     "  graph: [\"on\"]\n  timeout: [\"0\"]\n  inject: [" + values + "]\n", 1,
                                     "  stall: 1.5\n  total: 60\n"));
    std::string db = (dir.path() / "r.db").string();
    auto r = run_ncclsweep({"run", spec.string(), "--db", db, "--kill-grace", "0.5"});
    INFO(r.err);
    REQUIRE(r.exit_code == 1);  // every experiment hangs: recorded as timed out, nothing succeeded
    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == k_phases.size());
    for (const auto& e : experiments) {
        INFO(inject_of(e) << ": " << e.outcome.diagnosis);
        CHECK(e.outcome.status == results::ExperimentStatus::timed_out);
        CHECK(e.outcome.failure_class == "timeout");
        // Four stalls of 1.5 s, not four eternal hangs ended by the total timeout.
        CHECK(e.outcome.diagnosis.find("stall timeout") != std::string::npos);
        REQUIRE(e.outcome.detected_after_s.has_value());
        CHECK(*e.outcome.detected_after_s >= 1.0);
    }
}

TEST_CASE("faults: 100 MB of log and 10 MB lines without a newline complete with bounded memory") {
    TempDir dir;
    // "lines": 100 MB of ordinary log lines; "long": five 10 MB lines, the metric, then 10 MB
    // with no newline at all before the end of the output.
    auto script = dir.write(
        "flood.sh",
        "case $1 in\n"
        "lines) yes 'step 1234: all good, just a moderately long progress line of the workload ....' "
        "| head -c 104857600; echo ;;\n"
        "long) for i in 1 2 3 4 5; do head -c 10485760 /dev/zero | tr '\\0' x; echo; done ;;\n"
        "quiet) ;;\n"
        "esac\n"
        "echo 'tok/s: 42.5'\n"
        "[ \"$1\" = long ] && head -c 10485760 /dev/zero | tr '\\0' y\n"
        "exit 0\n");
    auto spec_of = [&](const std::string& name, const std::string& shapes) {
        return dir.write(name,
                         "sweep: flood\n"
                         "target: local\n"
                         "workload:\n"
                         "  command: [/bin/sh, " +
                             script.string() +
                             ", \"{shape}\"]\n"
                             "  metrics:\n"
                             "    tok_s: 'tok/s: ([0-9.]+)'\n"
                             "axes:\n"
                             "  shape: [" +
                             shapes +
                             "]\n"
                             "timeouts:\n"
                             "  stall: 60\n"
                             "  total: 300\n");
    };
    // The same sweep whose workload prints one line: ncclsweep's own footprint (binary, SQLite,
    // and under ASan its shadow memory, ~190 MB), which the flood must not grow much beyond.
    auto baseline = finish(spawn_ncclsweep(dir.path(), {"run", spec_of("quiet.yaml", "quiet").string(),
                                                        "--db", (dir.path() / "quiet.db").string()}));
    REQUIRE(baseline.exit_code == 0);
    REQUIRE(baseline.peak_rss_kb > 0);
    auto spec = spec_of("s.yaml", "lines, long");
    std::string db = (dir.path() / "r.db").string();
    auto run = spawn_ncclsweep(dir.path(), {"run", spec.string(), "--db", db});
    REQUIRE(run.pid > 0);
    auto done = finish(run);
    INFO(done.err);
    REQUIRE(done.exit_code == 0);
    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == 2);
    for (const auto& e : experiments) {
        INFO(e.experiment.canonical << ": " << e.outcome.diagnosis);
        CHECK(e.outcome.status == results::ExperimentStatus::ok);
        REQUIRE(e.outcome.samples.size() == 1);
        CHECK(e.outcome.samples[0].metric == "tok_s");
        CHECK(e.outcome.samples[0].value == 42.5);
    }
    // The tool read 150 MB of output; its peak resident memory must not grow with it: at most
    // 64 MB above the one-line run's (keeping the output, or one 10 MB line per copy, would not fit).
    INFO("ncclsweep peak RSS " << done.peak_rss_kb << " kB; with one line of output " << baseline.peak_rss_kb
                               << " kB");
    REQUIRE(done.peak_rss_kb > 0);
    CHECK(done.peak_rss_kb < baseline.peak_rss_kb + 64 * 1024);
    // The database holds no flood either (no copy of the 10 MB lines).
    CHECK(std::filesystem::file_size(db) < 4 * 1024 * 1024);
}
