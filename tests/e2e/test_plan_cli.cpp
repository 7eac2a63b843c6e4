// `ncclsweep plan` through the real binary: exit statuses, located errors, overrides, JSON
// that carries hostile values exactly, and the default engine path.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using ncclsweep::test::binary_path;
using ncclsweep::test::run_command;
using ncclsweep::test::source_path;
using ncclsweep::test::TempDir;

namespace {

ncclsweep::test::CommandResult plan(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {binary_path("cli/ncclsweep").string(), "plan"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv);
}

}  // namespace

TEST_CASE("plan prints the quickstart table and exits 0") {
    auto result = plan({source_path("experiments/quickstart.yaml").string()});
    INFO(result.err);
    CHECK(result.exit_code == 0);
    CHECK(result.out.rfind("sweep quickstart: 10 experiments x 6 repeats = 60 runs; target local", 0) == 0);
    CHECK(result.out.find(" 8  allreduce:tree  Simple      on") != std::string::npos);
    // NCCL's defaults point, one per fusion value (the planner adds it: docs/spec.md "baseline").
    CHECK(result.out.find("10  (default)       (default)   on") != std::string::npos);
}

TEST_CASE("plan of a bad spec exits 2 with a located message and prints nothing") {
    TempDir dir;
    auto spec = dir.write("bad.yaml", "sweep: s\nworkload: {engine: tpverify}\naxis:\n  NCCL_PROTO: [LL]\n");
    auto result = plan({spec.string()});
    CHECK(result.exit_code == 2);
    CHECK(result.out.empty());
    CHECK(result.err.find(spec.string() +
                          ":3:1: unknown key 'axis' in the top level of the spec; did you mean "
                          "'axes'?") != std::string::npos);

    auto nccl = dir.write("nccl.yaml", "workload: {engine: tpverify}\naxes:\n  NCCL_NTHREADS: [64, 100]\n");
    auto bad_value = plan({nccl.string()});
    CHECK(bad_value.exit_code == 2);
    CHECK(bad_value.out.empty());
    CHECK(bad_value.err.find(nccl.string() + ":3:23: ") != std::string::npos);

    auto missing = plan({(dir.path() / "missing.yaml").string()});
    CHECK(missing.exit_code == 2);
    CHECK(missing.err.find("cannot open the spec file") != std::string::npos);
}

TEST_CASE("plan --format json carries hostile values exactly") {
    TempDir dir;
    const std::string hostile =
        "it's \"q\" $(touch " + (dir.path() / "pwned").string() + ") `id`\nnext ünï 😀 \\";
    std::string yaml_value =
        nlohmann::json(hostile).dump();  // a JSON string is a valid YAML double-quoted scalar
    auto spec = dir.write(
        "h.yaml", "sweep: hostile\nworkload:\n  command: [\"/bin/echo\", \"{label}\"]\nenv:\n  X_HOSTILE: " +
                      yaml_value + "\naxes:\n  label: [" + yaml_value + ", plain]\n");
    auto result = plan({spec.string(), "--format", "json"});
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    auto json = nlohmann::json::parse(result.out);
    CHECK(json["sweep"] == "hostile");
    REQUIRE(json["experiments"].size() == 2);
    const auto& first = json["experiments"][0];
    CHECK(first["id"] == 1);
    CHECK(first["env"]["X_HOSTILE"] == hostile);
    CHECK(first["params"]["label"] == hostile);
    CHECK(first["argv"] == nlohmann::json::array({"/bin/echo", hostile}));
    CHECK(first["key"].get<std::string>().size() == 16);
    CHECK(json["warnings"].is_array());
    CHECK_FALSE(std::filesystem::exists(dir.path() / "pwned"));
}

TEST_CASE("plan --axis and --set go through the same validation") {
    std::string quickstart = source_path("experiments/quickstart.yaml").string();
    auto result = plan({quickstart, "--axis", "NCCL_PROTO=LL", "--set", "fusion=on", "--format", "json"});
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    auto json = nlohmann::json::parse(result.out);
    REQUIRE(json["experiments"].size() == 3);  // and NCCL's defaults point
    CHECK(json["experiments"][1]["params"] ==
          nlohmann::json::parse(R"({"NCCL_ALGO":"allreduce:tree","NCCL_PROTO":"LL","fusion":"on"})"));
    CHECK(json["experiments"][2]["params"] == nlohmann::json::parse(R"({"fusion":"on"})"));

    auto bad = plan({quickstart, "--axis", "NCCL_NTHREADS=64,100"});
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("--axis: ") != std::string::npos);
    auto mixed = plan({quickstart, "--set", "Tokens=8"});
    CHECK(mixed.exit_code == 2);
    CHECK(mixed.err.find("'Tokens' mixes upper and lower case") != std::string::npos);
}

TEST_CASE("plan refuses oversized sweeps unless --max-experiments allows them") {
    std::string quickstart = source_path("experiments/quickstart.yaml").string();
    auto refused = plan({quickstart, "--max-experiments", "4"});
    CHECK(refused.exit_code == 2);
    CHECK(refused.err.find("more than the limit of 4; narrow the axes, or pass --max-experiments 10") !=
          std::string::npos);
    CHECK(plan({quickstart, "--max-experiments", "10"}).exit_code == 0);
}

TEST_CASE("plan uses the tpverify next to ncclsweep unless --engine says otherwise") {
    std::string quickstart = source_path("experiments/quickstart.yaml").string();
    auto json = nlohmann::json::parse(plan({quickstart, "--format", "json"}).out);
    std::string engine = json["experiments"][0]["argv"][0];
    if (std::filesystem::exists(binary_path("engine/tpverify")))
        CHECK(std::filesystem::equivalent(engine, binary_path("engine/tpverify")));
    auto custom = nlohmann::json::parse(plan({quickstart, "--format", "json", "--engine", "/opt/tv"}).out);
    CHECK(custom["experiments"][0]["argv"][0] == "/opt/tv");
}

TEST_CASE("plan --help teaches the spec and shows examples") {
    auto result = plan({"--help"});
    CHECK(result.exit_code == 0);
    CHECK(result.out.find("UPPER_CASE axes are environment variables") != std::string::npos);
    CHECK(result.out.find("Examples:") != std::string::npos);
    CHECK(result.out.find("--max-experiments") != std::string::npos);
}
