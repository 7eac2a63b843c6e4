// One-point exports, proven by use: the sitecustomize under python3, the env file under sh,
// and the tuner lines through a reader that applies the example plugin's documented rules.
#include <nlohmann/json.hpp>

#include "tests/results/export_fixtures.hpp"

using namespace ncclsweep;
using namespace ncclsweep::results::exports;
using ncclsweep::results::StoredExperiment;
using ncclsweep::test::run_command;
using ncclsweep::test::TempDir;

namespace {

const std::string k_dump_env =
    "import os, sys, json\n"
    "print(json.dumps({n: os.environ.get(n) for n in sys.argv[1:]}))\n";

/// Reads a tuner config the way NVIDIA's example plugin (plugins/tuner/example) does: fgets
/// with a 256-byte buffer, lines starting with '#' or empty skipped, 8-10 comma fields, known
/// lower-case names (the plugin silently maps unknown ones to ring/simple, so we refuse them).
const std::string k_tuner_reader = R"PY(
import json, sys
data = open(sys.argv[1], 'rb').read()
configs = []
for raw in data.split(b'\n'):
    assert len(raw) + 1 < 256, 'line longer than the plugin buffer: %r' % raw
    if raw == b'' or raw.startswith(b'#'):
        continue
    fields = [f.strip(b' \t').decode('ascii') for f in raw.split(b',')]
    assert 8 <= len(fields) <= 10, raw
    assert fields[0] in ('broadcast', 'reduce', 'allgather', 'reducescatter', 'allreduce'), fields[0]
    assert fields[3] in ('tree', 'ring', 'collnet_direct', 'collnet_chain', 'nvls', 'nvls_tree', 'pat'), fields[3]
    assert fields[4] in ('ll', 'll128', 'simple'), fields[4]
    nums = [int(f) for f in fields[1:3] + fields[5:]]
    assert 0 <= nums[0] <= nums[1], raw
    configs.append({'coll': fields[0], 'min': nums[0], 'max': nums[1], 'algo': fields[3], 'proto': fields[4],
                    'channels': nums[2], 'nodes': nums[3], 'ranks': nums[4]})
print(json.dumps(configs))
)PY";

nlohmann::json read_tuner(const std::string& text) {
    TempDir dir;
    auto file = dir.write("nccl_tuner.conf", text);
    auto run = run_command({"python3", "-c", k_tuner_reader, file.string()});
    INFO(text);
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    return nlohmann::json::parse(run.out);
}

/// An in-memory sweep of tpverify points with the given envs (tokens 4 and 32, tp 8, llama-70b).
SweepData tuner_sweep(const std::vector<std::vector<Assignment>>& envs,
                      std::vector<Assignment> workload = {{"model", "llama-70b"}, {"tp", "8"}}) {
    SweepData sweep;
    sweep.info.id = 3;
    sweep.info.record.name = "tuner\nsweep # x";
    int id = 0;
    for (const auto& env : envs) {
        for (const char* tokens : {"4", "32"}) {
            StoredExperiment e;
            e.experiment.id = ++id;
            e.experiment.key = "k" + std::to_string(id);
            e.experiment.env = env;
            e.experiment.params = env;
            e.experiment.params.emplace_back("tokens", tokens);
            e.experiment.workload = workload;
            e.experiment.workload.emplace_back("tokens", tokens);
            e.experiment.argv = {"/usr/local/bin/tpverify", "--json"};
            e.outcome.status = results::ExperimentStatus::ok;
            e.outcome.samples = {{0, "tok_s", 100.0 + id}};
            sweep.experiments.push_back(std::move(e));
        }
    }
    return sweep;
}

}  // namespace

TEST_CASE("exported sitecustomize sets the best point's environment in python3") {
    TempDir dir;
    auto sweep = test::make_export_sweep((dir.path() / "x.db").string());
    ExportRequest request;
    request.format = results::exports::Format::sitecustomize;
    request.best = true;
    auto text = export_sweep(sweep, request);
    REQUIRE(text);
    CHECK(text->find("# experiment: 4") != std::string::npos);
    dir.write("site/sitecustomize.py", *text);
    auto run = run_command({"python3", "-c", k_dump_env, "NCCL_ALGO", "NCCL_PROTO", "NS_LABEL"}, {},
                           {"PYTHONPATH=" + (dir.path() / "site").string()});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    CHECK(run.err.empty());
    auto env = nlohmann::json::parse(run.out);
    CHECK(env["NCCL_ALGO"] == "Ring");
    CHECK(env["NCCL_PROTO"] == "LL");
    CHECK(env["NS_LABEL"] == test::k_hostile_label);
}

TEST_CASE(
    "exported sitecustomize: its values win, the one it shadows still runs, and evidence names what was "
    "inherited") {
    TempDir dir;
    auto sweep = test::make_export_sweep((dir.path() / "x.db").string());
    ExportRequest request;
    request.format = results::exports::Format::sitecustomize;
    request.best = true;
    auto text = export_sweep(sweep, request);
    REQUIRE(text);
    // The workload ran with NCCL_SOCKET_IFNAME inherited: the deployable file says so.
    CHECK(text->find(
              "# inherited: the workload also ran with these from its environment, not set by the spec") !=
          std::string::npos);
    CHECK(text->find("NCCL_SOCKET_IFNAME=eth0") != std::string::npos);
    // Installed in a folder of its own before the distribution's (docs/export.md): it sets its
    // values over inherited ones, then runs the sitecustomize it shadows, and leaves no file.
    dir.write("site/sitecustomize.py", *text);
    dir.write("dist/sitecustomize.py",
              "import os\nos.environ['DIST_SITE_SAW'] = os.environ.get('NCCL_PROTO', 'unset')\n");
    auto run =
        run_command({"python3", "-c", k_dump_env, "NCCL_PROTO", "DIST_SITE_SAW"}, {},
                    {"PYTHONPATH=" + (dir.path() / "site").string() + ":" + (dir.path() / "dist").string(),
                     "NCCL_PROTO=Simple"});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    auto env = nlohmann::json::parse(run.out);
    CHECK(env["NCCL_PROTO"] == "LL");
    CHECK(env["DIST_SITE_SAW"] == "LL");
    for (const auto& entry : std::filesystem::directory_iterator(dir.path() / "site"))
        CHECK(entry.path().filename().string().rfind("delivered", 0) != 0);  // no evidence file
}

TEST_CASE("exported env file loads in sh with exact values") {
    TempDir dir;
    auto sweep = test::make_export_sweep((dir.path() / "x.db").string());
    ExportRequest request;
    request.format = results::exports::Format::env;
    request.experiment = 4;
    auto text = export_sweep(sweep, request);
    REQUIRE(text);
    auto file = dir.write("best.env", *text);
    for (const char* shell : {"sh", "bash"}) {
        INFO(shell);
        auto run = run_command({std::string(shell), "-c",
                                "set -a; . \"$1\"; set +a; exec python3 -c \"$2\" NCCL_ALGO NS_LABEL", "sh",
                                file.string(), k_dump_env});
        INFO(run.err);
        REQUIRE(run.exit_code == 0);
        auto env = nlohmann::json::parse(run.out);
        CHECK(env["NCCL_ALGO"] == "Ring");
        CHECK(env["NS_LABEL"] == test::k_hostile_label);
    }
}

TEST_CASE(
    "nccl-tuner: best point's algo/proto over the sweep's message sizes, parseable by the plugin rules") {
    TempDir dir;
    auto sweep = test::make_export_sweep((dir.path() / "x.db").string());
    ExportRequest request;
    request.format = results::exports::Format::nccl_tuner;
    request.best = true;
    auto text = export_sweep(sweep, request);
    REQUIRE(text);
    auto configs = read_tuner(*text);
    REQUIRE(configs.size() == 2);
    // all-reduce: tokens 8..16 x hidden 8192 (llama-70b) x 2 bytes
    CHECK(configs[0]["coll"] == "allreduce");
    CHECK(configs[0]["min"] == 8 * 8192 * 2);
    CHECK(configs[0]["max"] == 16 * 8192 * 2);
    CHECK(configs[0]["algo"] == "ring");
    CHECK(configs[0]["proto"] == "ll");
    CHECK(configs[0]["channels"] == -1);
    CHECK(configs[0]["nodes"] == 1);
    CHECK(configs[0]["ranks"] == 8);
    // logits all-gather: tokens x vocab/tp x 2 per rank (8 tokens) .. whole buffer (16 tokens)
    CHECK(configs[1]["coll"] == "allgather");
    CHECK(configs[1]["min"] == 8 * (128256 / 8) * 2);
    CHECK(configs[1]["max"] == 16 * (128256 / 8) * 2 * 8);
    // The hostile sweep name and label stay inside single comment lines.
    CHECK(text->find("<script>alert(1)</script>") != std::string::npos);
    CHECK(text->find("\\x0anew line") != std::string::npos);
    CHECK(text->find("keep in the environment: NCCL_DEBUG=WARN NCCL_P2P_LEVEL=SYS") != std::string::npos);
}

TEST_CASE("nccl-tuner translates per-collective NCCL_ALGO and names, and channel pins") {
    auto sweep = tuner_sweep({{{"NCCL_ALGO", "allreduce:tree"}, {"NCCL_PROTO", "LL"}},
                              {{"NCCL_ALGO", "NVLSTree"},
                               {"NCCL_PROTO", "allreduce:simple"},
                               {"NCCL_MIN_CTAS", "4"},
                               {"NCCL_MAX_NCHANNELS", "4"}}});
    auto tree = to_nccl_tuner(sweep, sweep.experiments[0]);
    REQUIRE(tree);
    auto configs = read_tuner(*tree);
    REQUIRE(configs.size() == 1);  // all-gather has only PROTO forced: no line, a comment says so
    CHECK(configs[0]["algo"] == "tree");
    CHECK(configs[0]["proto"] == "ll");
    CHECK(configs[0]["min"] == 4 * 8192 * 2);
    CHECK(configs[0]["max"] == 32 * 8192 * 2);
    CHECK(tree->find("# allgather: NCCL_PROTO is set but not NCCL_ALGO") != std::string::npos);
    // The sweep name's newline cannot start a line the plugin would parse.
    CHECK(tree->find("\n sweep") == std::string::npos);
    CHECK(tree->find("tuner\\x0asweep") != std::string::npos);

    auto nvls = to_nccl_tuner(sweep, sweep.experiments[2]);
    REQUIRE(nvls);
    auto nvls_configs = read_tuner(*nvls);
    REQUIRE(nvls_configs.size() == 1);
    CHECK(nvls_configs[0]["algo"] == "nvls_tree");
    CHECK(nvls_configs[0]["proto"] == "simple");
    CHECK(nvls_configs[0]["channels"] == 4);
}

TEST_CASE("nccl-tuner refuses what the plugin cannot express, saying why") {
    auto check_error = [](std::vector<Assignment> env, const std::string& needle,
                          std::vector<Assignment> workload = {{"model", "llama-70b"}, {"tp", "8"}}) {
        auto sweep = tuner_sweep({env}, workload);
        auto out = to_nccl_tuner(sweep, sweep.experiments[0]);
        INFO(needle);
        REQUIRE_FALSE(out);
        CHECK(out.error().kind == ErrorKind::bad_input);
        CHECK(out.error().message.find(needle) != std::string::npos);
        CHECK(out.error().message.find("experiment 1") != std::string::npos);
    };
    check_error({{"NCCL_ALGO", "ring,tree"}, {"NCCL_PROTO", "LL"}},
                "several choices for allreduce (tree,ring)");
    check_error({{"NCCL_ALGO", "^ring"}, {"NCCL_PROTO", "LL"}}, "several choices");
    check_error({{"NCCL_ALGO", "Ring"}}, "sets NCCL_ALGO but not NCCL_PROTO");
    check_error({{"NCCL_PROTO", "LL"}}, "sets NCCL_PROTO but not NCCL_ALGO");
    check_error({{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "LL"}, {"NCCL_MAX_CTAS", "8"}},
                "NCCL_MAX_CTAS=8 bounds");
    check_error({{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "LL"}, {"NCCL_MIN_CTAS", "2"}, {"NCCL_MAX_CTAS", "8"}},
                "exact count");
    check_error({{"NCCL_ALGO", "Bogus"}, {"NCCL_PROTO", "LL"}}, "NCCL_ALGO=Bogus");
    check_error({{"NCCL_DEBUG", "WARN"}}, "nothing for a tuner line to force");
    check_error({{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "LL"}}, "no 'hidden' parameter",
                {{"model", "mystery-1t"}, {"tp", "8"}});
    // A command workload (not tpverify) must say its sizes.
    auto sweep = tuner_sweep({{{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "LL"}}}, {{"tp", "8"}});
    sweep.experiments[0].experiment.argv = {"/bin/server"};
    sweep.experiments[0].experiment.workload = {{"tp", "8"}};
    auto out = to_nccl_tuner(sweep, sweep.experiments[0]);
    REQUIRE_FALSE(out);
    CHECK(out.error().message.find("no parameter 'tokens'") != std::string::npos);
}

TEST_CASE("message sizes follow presets, overrides and tpverify defaults") {
    StoredExperiment e;
    e.experiment.argv = {"tpverify"};
    auto defaults = message_sizes(e);
    REQUIRE(defaults);
    CHECK(defaults->allreduce_bytes == 4u * 7168 * 2);  // kimi-k2.5, 4 tokens
    CHECK(defaults->ranks == 1);
    e.experiment.workload = {{"model", "deepseek-v3"}, {"tokens", "64"}, {"tp", "8"}, {"hidden", "1024"}};
    auto custom = message_sizes(e);
    REQUIRE(custom);
    CHECK(custom->allreduce_bytes == 64u * 1024 * 2);
    CHECK(custom->allgather_min == 64u * (129280 / 8) * 2);
    e.experiment.workload = {{"tokens", "x"}};
    auto bad = message_sizes(e);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message.find("tokens=x is not a positive integer") != std::string::npos);
}
