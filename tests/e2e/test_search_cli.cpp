// Issue 15's done-when through the real binaries: a 24-point x 8-repeat sweep of a command
// workload in which every Tree run dies in graph capture (with the line the simulated
// tpverify prints for it) and Ring/LL/4 is best by a clear margin. The search prunes Tree
// after 2 runs, races the rest, spends at most 60 workload runs (the full product: 12 x 8 + 12
// = 108 starts) and `results best` names Ring/LL/4. Also: plan, --budget errors, resume.
#include <map>
#include <string>

#include "core/text.hpp"
#include "tests/e2e/e2e_support.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

/// The workload: one line per run in RUNLOG; Tree fails in capture; Ring/LL/4 ~150 tok/s, the
/// others 102..117; the repeat index varies the decimals so samples differ.
std::string workload_script(const std::filesystem::path& runlog) {
    return "echo \"$NCCL_ALGO/$NCCL_PROTO/$NCCL_MIN_NCHANNELS\" >> '" + runlog.string() +
           "'\n"
           "if [ \"$NCCL_ALGO\" = Tree ]; then\n"
           "  echo 'tpverify: capture: cudaStreamEndCapture failed: operation failed due to a previous error "
           "during "
           "capture (cudaErrorStreamCaptureInvalidated)' >&2\n"
           "  exit 1\n"
           "fi\n"
           "case \"$NCCL_PROTO\" in LL) p=0;; LL128) p=1;; *) p=2;; esac\n"
           "base=$((100 + NCCL_MIN_NCHANNELS * 2 + p))\n"
           "[ \"$NCCL_PROTO/$NCCL_MIN_NCHANNELS\" = LL/4 ] && base=150\n"
           "echo \"tok_s=$base.$((NCCLSWEEP_REPEAT % 7))\"\n";
}

std::string search_spec(const std::filesystem::path& script, const std::string& search) {
    return "sweep: e2e-search\n"
           "target: local\n"
           "workload:\n"
           "  command: [sh, " +
           script.string() +
           "]\n"
           "  metrics: {tok_s: 'tok_s=([0-9.]+)'}\n"
           "axes:\n"
           "  NCCL_ALGO: [Ring, Tree]\n"
           "  NCCL_PROTO: [LL, LL128, Simple]\n"
           "  NCCL_MIN_NCHANNELS: [1, 2, 4, 8]\n"
           "repeats: 8\n"
           "timeouts: {stall: 10, total: 30}\n" +
           search;
}

const char* k_search =
    "search:\n  prune: {after: 2}\n  race: {min_repeats: 2, max_repeats: 8, confidence: 0.95}\n";

std::map<std::string, int> count_lines(const std::string& text) {
    std::map<std::string, int> counts;
    std::size_t start = 0;
    while (start < text.size()) {
        auto end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        ++counts[text.substr(start, end - start)];
        start = end + 1;
    }
    return counts;
}

int total_runs(const std::map<std::string, int>& runs, const std::string& prefix = "") {
    int n = 0;
    for (const auto& [line, count] : runs) n += line.rfind(prefix, 0) == 0 ? count : 0;
    return n;
}

}  // namespace

TEST_CASE("search: Tree is pruned and Ring/LL/4 is found within 60 workload runs") {
    TempDir dir;
    auto runlog = dir.path() / "runs.txt";
    auto script = dir.write("serve.sh", workload_script(runlog));
    auto spec = dir.write("s.yaml", search_spec(script, std::string(k_search) + "  budget: 60 runs\n" +
                                                            "baseline: none\n"));  // the race's own counts
    const std::string db = (dir.path() / "r.db").string();

    auto plan = run_ncclsweep({"plan", spec.string()});
    INFO(plan.err);
    REQUIRE(plan.exit_code == 0);
    CHECK(plan.out.find(
              "search: prune a value after 2 failures of one class; race 2..8 repeats at 95% confidence; "
              "budget 60 runs; worst case 192 runs (24 x 8 repeats)") != std::string::npos);

    auto r = run_ncclsweep({"run", spec.string(), "--db", db});
    INFO(r.err);
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    const auto runs = count_lines(read_file(runlog));
    CHECK(total_runs(runs, "Tree/") <= 3);
    CHECK(total_runs(runs) <= 60);
    CHECK(
        r.err.find("note: search: budget 60 runs: covers the first round and 12 more runs for the leaders") !=
        std::string::npos);
    CHECK(r.out.find("pruned") != std::string::npos);
    CHECK(r.out.find("NCCL_ALGO=Tree failed 2 times with graph_capture") != std::string::npos);

    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == 24);
    int pruned = 0, dropped = 0, ok = 0;
    for (const auto& e : experiments) {
        const auto& params = e.experiment.params;
        const bool tree = params.at(0).second == "Tree";
        switch (e.outcome.status) {
            case results::ExperimentStatus::pruned:
                ++pruned;
                CHECK(tree);
                CHECK(e.outcome.diagnosis.find(
                          "NCCL_ALGO=Tree failed 2 times with graph_capture (experiments ") == 0);
                break;
            case results::ExperimentStatus::dropped:
                ++dropped;
                CHECK(e.outcome.diagnosis.find("behind experiment 3 ") == 0);
                break;
            case results::ExperimentStatus::ok:
                ++ok;
                break;
            default:
                CHECK(tree);  // the Tree points that ran: failed in graph capture
        }
    }
    CHECK(pruned >= 9);
    CHECK(dropped >= 1);

    auto best = run_ncclsweep({"results", "best", "latest", "--db", db, "--metric", "tok_s"});
    INFO(best.err);
    REQUIRE(best.exit_code == 0);
    CHECK(best.out.find("NCCL_ALGO=Ring NCCL_PROTO=LL NCCL_MIN_NCHANNELS=4") != std::string::npos);

    // Pruned and dropped show as such: results show, JSON counts, the report.
    auto show = run_ncclsweep({"results", "show", "latest", "--db", db});
    REQUIRE(show.exit_code == 0);
    CHECK(show.out.find("pruned") != std::string::npos);
    CHECK(show.out.find("dropped") != std::string::npos);
    auto json = run_ncclsweep({"results", "show", "latest", "--db", db, "--json"});
    REQUIRE(json.exit_code == 0);
    CHECK(json.out.find("\"pruned\": " + std::to_string(pruned)) != std::string::npos);
    auto report = run_ncclsweep({"report", "latest", "--db", db, "-o", (dir.path() / "r.html").string()});
    REQUIRE(report.exit_code == 0);
    CHECK(read_file(dir.path() / "r.html").find("Left out by the search") != std::string::npos);
}

TEST_CASE("search: a spent --budget ends the sweep with an answer and --resume continues it") {
    TempDir dir;
    auto runlog = dir.path() / "runs.txt";
    auto script = dir.write("serve.sh", workload_script(runlog));
    auto spec = dir.write("s.yaml", search_spec(script, k_search));
    const std::string db = (dir.path() / "r.db").string();

    auto first = run_ncclsweep({"run", spec.string(), "--db", db, "--budget", "20 runs"});
    INFO(first.err);
    REQUIRE(first.exit_code == 0);
    CHECK(first.out.find("search: budget of 20 runs spent") != std::string::npos);
    const int before = total_runs(count_lines(read_file(runlog)));
    CHECK(before <= 20);
    // The continuation is printed as a command that works as printed: run it through sh.
    const std::string marker = "continue it with twice that: ";
    const auto at = first.err.find(marker);
    REQUIRE(at != std::string::npos);
    const std::string command =
        first.err.substr(at + marker.size(), first.err.find('\n', at) - at - marker.size());
    CHECK(command.find("--budget '40 runs'") != std::string::npos);
    CHECK(command.size() > 10);
    CHECK(command.substr(command.size() - 10) == "--resume 1");
    auto second = run_command(
        {"sh", "-c", "PATH=" + ncclsweep::shell_quote(binary_path("cli").string()) + ":$PATH; " + command});
    INFO(second.err);
    REQUIRE(second.exit_code == 0);
    auto third = run_ncclsweep({"run", spec.string(), "--db", db, "--resume", "1", "--budget", "200 runs"});
    INFO(third.err);
    REQUIRE(third.exit_code == 0);
    const auto runs = count_lines(read_file(runlog));
    CHECK(total_runs(runs, "Tree/") <= 3);
    CHECK(total_runs(runs) <= 60);  // nothing ran twice
    auto best = run_ncclsweep({"results", "best", "1", "--db", db, "--metric", "tok_s"});
    REQUIRE(best.exit_code == 0);
    CHECK(best.out.find("NCCL_ALGO=Ring NCCL_PROTO=LL NCCL_MIN_NCHANNELS=4") != std::string::npos);
}

TEST_CASE("search: a bad budget is bad input and nothing runs") {
    TempDir dir;
    auto runlog = dir.path() / "runs.txt";
    auto script = dir.write("serve.sh", workload_script(runlog));
    auto spec = dir.write("s.yaml", search_spec(script, k_search));
    auto r =
        run_ncclsweep({"run", spec.string(), "--db", (dir.path() / "r.db").string(), "--budget", "lots"});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(
              "--budget must be a duration such as 2h, 90m or 600s, or a number of workload runs such as "
              "'60 runs', not 'lots'") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(runlog));
    auto bad =
        dir.write("bad.yaml", search_spec(script, "search:\n  race: {min_repeats: 4, max_repeats: 2}\n"));
    auto p = run_ncclsweep({"plan", bad.string()});
    CHECK(p.exit_code == 2);
    CHECK(p.err.find("search.race.max_repeats (2) is below min_repeats (4)") != std::string::npos);
}
