// Every export of one point deploys the same variables (results/query/settings: judged once):
// env file, sitecustomize.py, tuner profile, NCCL example-plugin lines and `results best --json`;
// and a point that did not run to a result is not exported unless --force, which the file says.
// The sweep is in memory: a seed-study slice whose effective NCCL lines are the simulated
// engine's (tpverify --backend sim --tp 8 --tokens 4 with NCCL_DEBUG_SUBSYS=TUNING), written here.
#include <nlohmann/json.hpp>

#include <cctype>
#include <filesystem>
#include <fstream>

#include "results/print/printers.hpp"
#include "tests/results/export_fixtures.hpp"

using namespace ncclsweep;
using namespace ncclsweep::results;
using ncclsweep::results::exports::export_sweep;
using ncclsweep::results::exports::ExportRequest;
using ncclsweep::results::exports::SweepData;
using ExportFormat = ncclsweep::results::exports::Format;
using ncclsweep::test::run_command;
using ncclsweep::test::TempDir;

namespace {

StoredExperiment seed_point(int id, std::vector<Assignment> params, std::vector<double> tok_s,
                            std::string effective, ExperimentStatus status = ExperimentStatus::ok) {
    StoredExperiment s;
    s.experiment.id = id;
    s.experiment.key = "k" + std::to_string(id);
    s.experiment.params = params;
    s.experiment.env = {{"NCCL_P2P_LEVEL", "SYS"}};
    s.experiment.workload = {{"backend", "sim"}, {"tp", "8"}, {"tokens", "4"}};
    for (const auto& [name, value] : params)
        (std::isupper(static_cast<unsigned char>(name[0])) ? s.experiment.env : s.experiment.workload)
            .emplace_back(name, value);
    s.experiment.argv = {"/opt/bin/tpverify", "--json"};
    s.outcome.status = status;
    s.outcome.effective_nccl = std::move(effective);
    for (std::size_t r = 0; r < tok_s.size(); ++r)
        s.outcome.samples.push_back({static_cast<int>(r), "tok_s", tok_s[r]});
    if (status != ExperimentStatus::ok) {
        s.outcome.failure_class = "nccl";
        s.outcome.diagnosis = "nccl while initializing: ncclAllGather failed: invalid usage";
    }
    return s;
}

/// Experiment 1 is the winner: 1 channel (NCCL runs the all-gather on 2 at its defaults), LL
/// (NCCL's own choice), a 16 MiB buffer that changes nothing (experiment 2 differs only there).
SweepData seed_slice() {
    const std::string one = "AllGather 163840B: RING/LL ch0..0; AllReduce 57344B: RING/LL ch0..0";
    const std::string two = "AllGather 163840B: RING/LL ch0..1; AllReduce 57344B: RING/LL ch0..0";
    SweepData sweep;
    sweep.info.id = 4;
    sweep.info.record.name = "seed-slice";
    sweep.info.record.backend = "sim";
    sweep.experiments = {
        seed_point(1,
                   {{"NCCL_PROTO", "LL"},
                    {"NCCL_MIN_NCHANNELS", "1"},
                    {"NCCL_MAX_NCHANNELS", "1"},
                    {"NCCL_BUFFSIZE", "16777216"},
                    {"fusion", "on"}},
                   {160, 161, 160, 161, 160, 161}, one),
        seed_point(2,
                   {{"NCCL_PROTO", "LL"},
                    {"NCCL_MIN_NCHANNELS", "1"},
                    {"NCCL_MAX_NCHANNELS", "1"},
                    {"NCCL_BUFFSIZE", "131072"},
                    {"fusion", "on"}},
                   {160, 160, 161, 161, 160, 160}, one),
        seed_point(3,
                   {{"NCCL_PROTO", "LL"},
                    {"NCCL_MIN_NCHANNELS", "2"},
                    {"NCCL_MAX_NCHANNELS", "2"},
                    {"NCCL_BUFFSIZE", "16777216"},
                    {"fusion", "on"}},
                   {150, 150, 151, 151, 150, 150}, two),
        seed_point(4, {{"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", "LL"}}, {}, "", ExperimentStatus::failed),
        seed_point(5, {{"fusion", "on"}}, {150, 151, 150, 150, 151, 150}, two),
    };
    return sweep;
}

std::string export_of(const SweepData& sweep, ExportFormat format, int id, bool force = false) {
    ExportRequest request;
    request.format = format;
    request.experiment = id;
    request.force = force;
    auto text = export_sweep(sweep, request);
    INFO((text ? std::string() : text.error().message));
    REQUIRE(text);
    return *text;
}

nlohmann::json run_json(const std::vector<std::string>& argv) {
    auto run = run_command(argv);
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    return nlohmann::json::parse(run.out);
}

}  // namespace

TEST_CASE("exports of one point agree on every variable") {
    const SweepData sweep = seed_slice();
    TempDir dir;
    const std::vector<std::string> names{"NCCL_P2P_LEVEL", "NCCL_PROTO", "NCCL_MIN_NCHANNELS",
                                         "NCCL_MAX_NCHANNELS", "NCCL_BUFFSIZE"};
    // The env file, loaded by sh.
    auto env_file = dir.write("point.env", export_of(sweep, ExportFormat::env, 1));
    std::string script = "set -a; . " + env_file.string() +
                         "; set +a; python3 -c 'import os, json, sys; "
                         "print(json.dumps({n: os.environ.get(n) for n in sys.argv[1:]}))'";
    for (const auto& n : names) script += " " + n;
    const auto from_env = run_json({"env", "-i", "PATH=/usr/bin:/bin", "sh", "-c", script});
    // The sitecustomize.py, run by python3.
    auto site = dir.path() / "site";
    std::filesystem::create_directories(site);
    {
        std::ofstream out(site / "sitecustomize.py");
        out << export_of(sweep, ExportFormat::sitecustomize, 1);
    }
    std::vector<std::string> argv{"env",
                                  "-i",
                                  "PATH=/usr/bin:/bin",
                                  "PYTHONPATH=" + site.string(),
                                  "python3",
                                  "-c",
                                  "import os, json, sys; print(json.dumps({n: os.environ.get(n) for n in "
                                  "sys.argv[1:]}))"};
    argv.insert(argv.end(), names.begin(), names.end());
    const auto from_site = run_json(argv);
    const nlohmann::json deployed = {{"NCCL_P2P_LEVEL", "SYS"},
                                     {"NCCL_PROTO", nullptr},
                                     {"NCCL_MIN_NCHANNELS", nullptr},
                                     {"NCCL_MAX_NCHANNELS", "1"},
                                     {"NCCL_BUFFSIZE", nullptr}};
    CHECK(from_env == deployed);
    CHECK(from_site == deployed);
    // The tuner profile and the example plugin's lines pin the one collective the change
    // touched (the all-gather) to the point's measured choice: ring/LL on 1 channel.
    const std::string profile = export_of(sweep, ExportFormat::tuner_profile, 1);
    CHECK(profile.find("\nallgather 1310720 1310720 8 1 ring ll 1\n") != std::string::npos);
    CHECK(profile.find("\nallreduce ") == std::string::npos);
    // A variable no rule can carry is named, not dropped in silence (or taken for a channel one).
    CHECK(profile.find("# not part of a profile (deploy them with --format env): NCCL_P2P_LEVEL=SYS\n") !=
          std::string::npos);
    const std::string tuner = export_of(sweep, ExportFormat::nccl_tuner, 1);
    CHECK(tuner.find("\nallgather,163840,1310720,ring,ll,1,1,8,-1,-1\n") != std::string::npos);
    CHECK(tuner.find("\nallreduce,") == std::string::npos);
    // Each file names what it left out, and why, in the same words.
    for (const auto& text : {export_of(sweep, ExportFormat::env, 1), profile, tuner}) {
        CHECK(text.find("# left to NCCL (its own choice at its defaults, experiment 5): NCCL_PROTO=LL "
                        "NCCL_MIN_NCHANNELS=1\n") != std::string::npos);
        CHECK(
            text.find("# left out as inert (same effective NCCL choice and no significant difference without "
                      "them): NCCL_BUFFSIZE=16777216\n") != std::string::npos);
        CHECK(text.find("SIMULATED") != std::string::npos);
    }
    // `results best --json` carries the same deployment (experiment 1 is best: it is clearly
    // ahead of NCCL's defaults, experiment 5, and of experiment 3).
    const SweepTable table =
        build_sweep_table(sweep.info, std::span<const StoredExperiment>(sweep.experiments));
    auto best = best_experiment(table, *parse_metric_choice("tok_s"));
    REQUIRE(best);
    std::string text;
    results::Output out(text);
    auto printer = results::make_printer(results::Format::json, out);
    printer->print_best(*best);
    const auto json = nlohmann::json::parse(text);
    CHECK(json["deploy"]["env"] == nlohmann::json{{"NCCL_MAX_NCHANNELS", "1"}});
    CHECK(json["deploy"]["inert"] == nlohmann::json{"NCCL_BUFFSIZE"});
    CHECK(json["deploy"]["left_to_nccl"] == nlohmann::json{"NCCL_PROTO", "NCCL_MIN_NCHANNELS"});
}

TEST_CASE("export of a failed point is refused unless --force, and the file then says it failed") {
    const SweepData sweep = seed_slice();
    ExportRequest request;
    request.format = ExportFormat::env;
    request.experiment = 4;
    auto refused = export_sweep(sweep, request);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().kind == ErrorKind::bad_input);
    CHECK(refused.error().message.find("experiment 4 of sweep 4 is failed (nccl): nccl while initializing") ==
          0);
    CHECK(refused.error().message.find("pass --force") != std::string::npos);
    for (ExportFormat format : {ExportFormat::env, ExportFormat::sitecustomize}) {
        const std::string forced = export_of(sweep, format, 4, true);
        CHECK(forced.find(
                  "# FAILED: experiment 4 is failed (nccl): nccl while initializing: ncclAllGather failed: "
                  "invalid usage; exported with --force\n") != std::string::npos);
    }
}
