// The conventions every subcommand shares, through the real binary: "error:" on every error,
// "did you mean" for unknown commands, flags and values, -q, --json, and exit statuses that
// every --help lists.
#include <nlohmann/json.hpp>

#include <sstream>

#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

/// Lines of `text` that start with `prefix`.
int lines_starting(const std::string& text, const std::string& prefix) {
    std::istringstream in(text);
    int count = 0;
    for (std::string line; std::getline(in, line);)
        if (line.rfind(prefix, 0) == 0) ++count;
    return count;
}

}  // namespace

TEST_CASE("cli: an unknown command exits 2 with did you mean") {
    auto r = run_ncclsweep({"plna", "x.yaml"});
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("error: unknown command 'plna', did you mean 'plan'?", 0) == 0);
    auto far = run_ncclsweep({"frobnicate"});
    CHECK(far.exit_code == 2);
    CHECK(far.err.rfind("error: unknown command 'frobnicate' (`ncclsweep --help` lists the commands)", 0) ==
          0);
    auto none = run_ncclsweep({});
    CHECK(none.exit_code == 2);
    CHECK(none.err.rfind("error: a command is required: plan, run, watch", 0) == 0);
}

TEST_CASE("cli: an unknown flag exits 2 with did you mean and a bad value names the choices") {
    TempDir dir;
    auto spec = dir.write("s.yaml", sim_spec("cli-flags", "  NCCL_PROTO: [LL]\n"));
    auto flag = run_ncclsweep({"run", spec.string(), "--tagg", "x"});
    CHECK(flag.exit_code == 2);
    CHECK(flag.err.rfind("error: unknown flag '--tagg' for `ncclsweep run`, did you mean '--tag'?", 0) == 0);
    auto value = run_ncclsweep({"plan", spec.string(), "--format", "tabel"});
    CHECK(value.exit_code == 2);
    CHECK(value.err.rfind("error: ", 0) == 0);
    CHECK(value.err.find("'tabel' is not one of table, json; did you mean 'table'?") != std::string::npos);
    auto missing = run_ncclsweep({"run"});
    CHECK(missing.exit_code == 2);
    CHECK(missing.err.rfind("error: spec is required (`ncclsweep run --help` shows its flags)", 0) == 0);
}

TEST_CASE("cli: every --help lists the exit statuses and watch shows no stray default") {
    for (const char* command : {"plan", "run", "watch", "results", "diff", "export", "report", "calibrate"}) {
        INFO(command);
        auto r = run_ncclsweep({command, "--help"});
        CHECK(r.exit_code == 0);
        CHECK(r.out.find("Exit status") != std::string::npos);
    }
    auto top = run_ncclsweep({"--help"});
    CHECK(top.out.find("Exit status (every command): 0 done, 1 a negative verdict") != std::string::npos);
    auto watch = run_ncclsweep({"watch", "--help"});
    CHECK(watch.out.find("--no-echo") != std::string::npos);
    CHECK(watch.out.find("{false}") == std::string::npos);
}

TEST_CASE("cli: -q runs a sweep without progress lines and still prints the summary") {
    TempDir dir;
    auto spec = dir.write("s.yaml", sim_spec("cli-quiet", "  NCCL_PROTO: [LL, Simple]\n"));
    const std::string db = (dir.path() / "q.db").string();
    auto loud = run_ncclsweep({"run", spec.string(), "--db", db});
    REQUIRE(loud.exit_code == 0);
    CHECK(lines_starting(loud.err, "[") == 2);  // one plain line per experiment, with the elapsed time
    CHECK(lines_starting(loud.err, "# ncclsweep ") == 1);
    auto quiet = run_ncclsweep({"-q", "run", spec.string(), "--db", db});
    REQUIRE(quiet.exit_code == 0);
    CHECK(quiet.err.empty());
    CHECK(quiet.out.find("recommended (tok_s, higher is better): experiment") != std::string::npos);
}

TEST_CASE("cli: plan and export take --json") {
    TempDir dir;
    auto spec = dir.write("s.yaml", sim_spec("cli-json", "  NCCL_PROTO: [LL, Simple]\n"));
    auto plan = run_ncclsweep({"plan", spec.string(), "--json"});
    REQUIRE(plan.exit_code == 0);
    auto planned = nlohmann::json::parse(plan.out);
    CHECK(planned["count"] == 2);
    const std::string db = (dir.path() / "j.db").string();
    REQUIRE(run_ncclsweep({"run", spec.string(), "--db", db}).exit_code == 0);
    auto exported = run_ncclsweep({"export", "latest", "--json", "--db", db});
    REQUIRE(exported.exit_code == 0);
    CHECK(nlohmann::json::parse(exported.out).contains("experiments"));
    auto clash = run_ncclsweep({"export", "latest", "--json", "--format", "csv", "--db", db});
    CHECK(clash.exit_code == 2);
    CHECK(clash.err.rfind("error: --json and --format csv disagree", 0) == 0);
}

TEST_CASE("cli: watch says not both for a log and a command and exits 2 for a missing command") {
    TempDir dir;
    auto log = dir.write("server.log", "hello\n");
    auto both = run_ncclsweep({"watch", "--log", log.string(), "--", "true"});
    CHECK(both.exit_code == 2);
    CHECK(both.err.find("not both") != std::string::npos);
    auto missing = run_ncclsweep({"watch", "--", "/nonexistent/server"});
    CHECK(missing.exit_code == 2);
    CHECK(missing.err.rfind("error: ", 0) == 0);
    CHECK(missing.err.find("/nonexistent/server") != std::string::npos);
}

TEST_CASE("cli: a bad --target is reported at the flag not at the spec") {
    TempDir dir;
    auto spec = dir.write("s.yaml", sim_spec("cli-target", "  NCCL_PROTO: [LL]\n"));
    auto r = run_ncclsweep(
        {"run", spec.string(), "--target", "ftp://host", "--db", (dir.path() / "t.db").string()});
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("error: --target: ", 0) == 0);
    CHECK(r.err.find("s.yaml:") == std::string::npos);
}

TEST_CASE("run: the summary has units and a filled ± column and ends in hyperfine's comparison") {
    TempDir dir;
    auto spec = dir.write("s.yaml", sim_spec("cli-summary", "  NCCL_PROTO: [LL, Simple]\n", 2));
    auto r = run_ncclsweep({"run", spec.string(), "--db", (dir.path() / "s.db").string()});
    REQUIRE(r.exit_code == 0);
    INFO(r.out);
    CHECK(r.out.find("tok_s [tok/s]") != std::string::npos);
    // 2 repeats: no 95% interval, so ± is the range, marked and explained.
    CHECK(r.out.find("%\xC2\xB9") != std::string::npos);
    CHECK(r.out.find("\xC2\xB9 fewer than 6 samples") != std::string::npos);
    CHECK(r.out.find("\nSummary (tok_s, median)\n") != std::string::npos);
    CHECK(r.out.find(" times faster than #") != std::string::npos);
}
