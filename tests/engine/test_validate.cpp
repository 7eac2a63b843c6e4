// tpverify --validate: a run's own checks without the run, for ncclsweep's plan and run.
#include <string>
#include <vector>

#include "engine/run/validate.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace tpverify;

TEST_CASE("validate: tp 3 for kimi-k2.5 is refused naming tp and the heads") {
    const Verdict v = validate_args({"--model", "kimi-k2.5", "--tp", "3"});
    CHECK_FALSE(v.valid);
    CHECK(v.error.find("the attention heads (64) does not split evenly over 3 ranks") != std::string::npos);
    REQUIRE_FALSE(v.parameters.empty());
    CHECK(v.parameters.front() == "tp");
    CHECK(validate_args({"--model", "kimi-k2.5", "--tp", "8"}).valid);
    CHECK(validate_args({}).valid);
}

TEST_CASE("validate: flags that exclude each other and unknown flags are refused") {
    // The sim's machine (--topology, --noise, --calibration) is ignored on CUDA, not refused: a
    // study written for the sim plans unchanged with backend=cuda. A fault is refused.
    CHECK(validate_args({"--backend", "cuda", "--topology", "nvlink", "--noise", "0.01"}).valid);
    const Verdict sim_only = validate_args({"--backend", "cuda", "--inject", "hang"});
    CHECK_FALSE(sim_only.valid);
    REQUIRE_FALSE(sim_only.parameters.empty());
    CHECK(sim_only.parameters.front() == "inject");  // then backend, as the message names them
    CHECK(validate_args({"--backend", "cuda", "--inject", "stale"}).valid);  // both backends have it
    const Verdict unknown = validate_args({"--topolgy", "nvlink"});
    CHECK_FALSE(unknown.valid);
    CHECK(unknown.error == "unknown flag --topolgy");
    CHECK(unknown.parameters.empty());
    const Verdict rank = validate_args({"--rank", "2", "--nranks", "2"});
    CHECK_FALSE(rank.valid);
    CHECK(rank.parameters == std::vector<std::string>{"rank", "nranks"});
}

TEST_CASE("validate: one JSON line per argument list") {
    const std::string out = validate_json({{"--tp", "3"}, {"--tp", "8"}});
    const auto first_end = out.find('\n');
    REQUIRE(first_end != std::string::npos);
    CHECK(out.substr(0, first_end).rfind("{\"valid\":false,\"error\":\"--tp 3: ", 0) == 0);
    CHECK(out.find("\"parameters\":[\"tp\",\"heads\"]}") != std::string::npos);
    CHECK(out.substr(first_end + 1) == "{\"valid\":true}\n");
}

TEST_CASE("validate: the binary judges lists split at a lone double dash and exits 0") {
    const auto r = ncclsweep::test::run_command({ncclsweep::test::binary_path("engine/tpverify").string(),
                                                 "--validate", "--tp", "3", "--", "--tp", "8"});
    CHECK(r.exit_code == 0);
    CHECK(r.out.rfind("{\"valid\":false,", 0) == 0);
    CHECK(r.out.find("\n{\"valid\":true}\n") != std::string::npos);
}
