// End-to-end: `ncclsweep results list|show|best` and `diff` flags through the real binary, on a
// sweep recorded by `ncclsweep run` with the simulated engine.
#include <nlohmann/json.hpp>

#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

/// Records one sweep tagged `tag`: fusion off/on x (no fault, capture failure), 6 repeats (enough
/// for a 95% interval), so 2 experiments are ok and 2 fail.
std::string recorded_sweep(TempDir& dir, const std::string& tag = "study") {
    auto spec = dir.write("s.yaml", sim_spec("e2e-results",
                                             "  fusion: [\"off\", \"on\"]\n"
                                             "  inject: [\"false\"]\n",
                                             6));
    std::string db = (dir.path() / "r.db").string();
    auto r = test::run_ncclsweep({"run", spec.string(), "--db", db, "--tag", tag, "--axis",
                                  "inject=false,capture-fail", "--set", "noise=0.02"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return db;
}

}  // namespace

TEST_CASE("results cli: list, show and best read a recorded sweep in table and json form") {
    TempDir dir;
    const std::string db = recorded_sweep(dir);

    auto list = test::run_ncclsweep({"results", "list", "--db", db});
    INFO(list.err);
    REQUIRE(list.exit_code == 0);
    CHECK(list.out.find("e2e-results") != std::string::npos);
    CHECK(list.out.find("study") != std::string::npos);
    auto list_json =
        nlohmann::json::parse(test::run_ncclsweep({"results", "list", "--db", db, "--json"}).out);
    CHECK(list_json["schema"] == "ncclsweep.sweeps/1");
    REQUIRE(list_json["sweeps"].size() == 1);
    CHECK(list_json["sweeps"][0]["counts"]["ok"] == 2);
    CHECK(list_json["sweeps"][0]["counts"]["failed"] == 2);
    auto other_tag = test::run_ncclsweep({"results", "list", "--db", db, "--tag", "nightly"});
    CHECK(other_tag.exit_code == 0);
    CHECK(other_tag.out.find("no sweep tagged 'nightly'") != std::string::npos);

    auto show = test::run_ncclsweep({"results", "show", "latest:study", "--db", db, "--sort", "tok_s"});
    INFO(show.err);
    REQUIRE(show.exit_code == 0);
    CHECK(show.out.find("95% CI") != std::string::npos);
    CHECK(show.out.find("failed (graph_capture)") != std::string::npos);
    auto show_json =
        nlohmann::json::parse(test::run_ncclsweep({"results", "show", "--db", db, "--json"}).out);
    REQUIRE(show_json["experiments"].size() == 4);
    for (const auto& e : show_json["experiments"]) {
        if (e["status"] != "ok") {
            CHECK(e["failure_class"] == "graph_capture");
            CHECK_FALSE(e["diagnosis"].is_null());
            continue;
        }
        CHECK(e["metrics"]["tok_s"]["n"] == 6);
        CHECK(e["metrics"]["tok_s"]["ci95"].is_object());
    }

    auto best = test::run_ncclsweep({"results", "best", "--db", db, "--json"});
    INFO(best.err);
    REQUIRE(best.exit_code == 0);
    auto best_json = nlohmann::json::parse(best.out);
    // The fused kernel is a what-if (a server change, not a setting): beside the recommendation,
    // never it (docs/results.md, "What-if points").
    CHECK(best_json["best"]["params"]["fusion"] == "off");
    CHECK(best_json["candidates"] == 1);
    CHECK(best_json["what_if"]["params"]["fusion"] == "on");
    CHECK(best_json["best"]["collective_times"] == "modelled");
    auto best_text = test::run_ncclsweep({"results", "best", "1", "--db", db, "--metric", "verify_us_p50"});
    REQUIRE(best_text.exit_code == 0);
    CHECK(best_text.out.find("by verify_us_p50 (lower is better)") != std::string::npos);
}

TEST_CASE(
    "results cli: bad references, metrics and flags exit 2 and say what to do; a missing database exits 3") {
    TempDir dir;
    const std::string db = recorded_sweep(dir);
    auto missing_sweep = test::run_ncclsweep({"results", "show", "9", "--db", db});
    CHECK(missing_sweep.exit_code == 2);
    CHECK(missing_sweep.err.find("no sweep 9") != std::string::npos);
    CHECK(missing_sweep.err.find("ncclsweep results list") != std::string::npos);
    auto bad_metric = test::run_ncclsweep({"results", "best", "--db", db, "--metric", "ttft_ms"});
    CHECK(bad_metric.exit_code == 2);
    CHECK(bad_metric.err.find("recorded: ") != std::string::npos);
    auto bad_threshold = test::run_ncclsweep({"diff", "1", "1", "--db", db, "--threshold", "3"});
    CHECK(bad_threshold.exit_code == 2);
    CHECK(bad_threshold.err.find("3%") != std::string::npos);
    auto bad_format = test::run_ncclsweep({"diff", "1", "1", "--db", db, "--format", "html"});
    CHECK(bad_format.exit_code == 2);
    CHECK(bad_format.err.find("table, markdown or json") != std::string::npos);
    auto no_args = test::run_ncclsweep({"diff", "1"});
    CHECK(no_args.exit_code == 2);
    auto no_db = test::run_ncclsweep({"results", "list", "--db", (dir.path() / "absent.db").string()});
    CHECK(no_db.exit_code == 3);
    CHECK(no_db.err.find("absent.db") != std::string::npos);
    // NCCLSWEEP_DB is honoured when --db is absent.
    auto from_env = test::run_ncclsweep({"results", "list", "--json"}, {"NCCLSWEEP_DB=" + db});
    CHECK(from_env.exit_code == 0);
    CHECK(from_env.out.find("e2e-results") != std::string::npos);
}

TEST_CASE("results cli: a sweep diffed with itself shows no change and passes the gate") {
    TempDir dir;
    const std::string db = recorded_sweep(dir);
    auto r = test::run_ncclsweep({"diff", "latest", "latest", "--db", db, "--fail-on-regression", "--metric",
                                  "tok_s", "--metric", "verify_us_p50", "--threshold", "5%"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("verify_us_p50 [\xC2\xB5s] (lower is better)") != std::string::npos);
    CHECK(r.out.find("summary: 0 regressed, 0 improved, 4 unchanged (~)") != std::string::npos);
    CHECK(r.out.find("|delta| > 5%") != std::string::npos);
}

TEST_CASE("results cli: on a terminal show's table fits its width, piped it is whole") {
    TempDir dir;
    const std::string db = recorded_sweep(dir);
    // A real pseudo-terminal: script(1) runs the command on one; its size is 0x0, so ncclsweep
    // takes $COLUMNS as a terminal program does. The paths travel as environment variables.
    auto on_terminal = run_command({"script", "-qec", "\"$NS\" results show --db \"$DB\"", "/dev/null"}, {},
                                   {"NS=" + binary_path("cli/ncclsweep").string(), "DB=" + db, "COLUMNS=150",
                                    "NO_COLOR=1", "NCCLSWEEP_DB="});
    INFO(on_terminal.out << on_terminal.err);
    REQUIRE(on_terminal.exit_code == 0);
    auto piped = test::run_ncclsweep({"results", "show", "--db", db});
    REQUIRE(piped.exit_code == 0);
    // Piped: the failures' diagnosis is whole (it runs past 150 columns).
    CHECK(piped.out.find("capture") != std::string::npos);
    bool long_line = false;
    std::size_t rows = 0;
    std::string text = on_terminal.out;
    for (std::size_t start = 0, nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
        std::string line = text.substr(start, nl - start);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        std::size_t width = 0;
        for (char c : line) width += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
        if (line.find("failed (graph_capture)") != std::string::npos ||
            line.find("  ok  ") != std::string::npos ||
            line.find("  ok, ") != std::string::npos) {  // "ok, modelled": what the times rest on
            ++rows;
            INFO(line);
            CHECK(width <= 150);
            CHECK(line.find("...") != std::string::npos);  // the diagnosis / effective NCCL was cut, visibly
        }
    }
    CHECK(rows == 4);
    for (std::size_t start = 0, nl; (nl = piped.out.find('\n', start)) != std::string::npos; start = nl + 1)
        long_line = long_line || nl - start > 150;
    CHECK(long_line);
}
