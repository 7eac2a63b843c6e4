// End-to-end: the README's tour, read from README.md and run line by line, verbatim, in a fresh
// folder with a fresh database (the binaries of this build first on PATH). A newcomer runs
// exactly these commands in this order; each must do what its comment says.
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>

#include "core/text.hpp"
#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

/// The commands of the README's "## A tour" block, comments dropped, in order.
std::vector<std::string> tour_commands() {
    const std::string readme = read_file(source_path("README.md"));
    const auto section = readme.find("## A tour");
    REQUIRE(section != std::string::npos);
    const auto open = readme.find("```sh\n", section);
    REQUIRE(open != std::string::npos);
    const auto close = readme.find("```", open + 6);
    std::istringstream block(readme.substr(open + 6, close - open - 6));
    std::vector<std::string> commands;
    for (std::string line; std::getline(block, line);) {
        const auto comment = line.find(" #");
        if (comment != std::string::npos) line.erase(comment);
        while (!line.empty() && line.back() == ' ') line.pop_back();
        if (!line.empty()) commands.push_back(line);
    }
    return commands;
}

/// Runs `command` with sh in `dir`, this build's ncclsweep and tpverify first on PATH.
CommandResult run_in(const std::filesystem::path& dir, const std::string& command) {
    const std::string path = binary_path("cli").string() + ":" + binary_path("engine").string() + ":" +
                             (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
    return run_command({"sh", "-c", "cd " + ncclsweep::shell_quote(dir.string()) + " && " + command}, {},
                       {"PATH=" + path, "NO_COLOR=1", "NCCLSWEEP_DB="});
}

}  // namespace

TEST_CASE("readme tour: every command runs in order on a fresh database and the diff gives real verdicts") {
    TempDir dir;
    std::filesystem::copy(source_path("experiments"), dir.path() / "experiments",
                          std::filesystem::copy_options::recursive);
    // The calibrate line reads a folder of nccl-tests logs, one per setting; these fixtures are such
    // logs (all_gather_graph.log measures the same setting as all_gather_default.log, so it stays out).
    std::filesystem::create_directory(dir.path() / "nccl-tests-logs");
    for (const char* log : {"all_gather_default.log", "all_gather_proto_LL.log", "all_reduce_debug.log"})
        std::filesystem::copy_file(source_path(std::string("tests/fixtures/nccl-tests/") + log),
                                   dir.path() / "nccl-tests-logs" / log);

    const auto commands = tour_commands();
    REQUIRE(commands.size() >= 8);
    int ran = 0;
    for (const auto& command : commands) {
        // The one line that needs a real inference server: its `...` stands for the server's flags.
        if (command.find("sglang") != std::string::npos) continue;
        INFO(command);
        auto r = run_in(dir.path(), command);
        INFO(r.out);
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
        ++ran;
        if (command.find("results show") != std::string::npos) {
            // repeats: 6 gives every median its 95% interval.
            CHECK(r.out.find("n<") == std::string::npos);
            CHECK(std::regex_search(r.out, std::regex(R"(\[\d+(\.\d+)?, \d+(\.\d+)?\])")));
            // NCCL_DEBUG=INFO + TUNING: the effective configuration is filled, e.g. "RING/LL".
            CHECK(std::regex_search(r.out, std::regex(R"((RING|TREE)/(LL|SIMPLE|Simple))")));
        }
        if (command.find("ncclsweep diff") != std::string::npos) {
            CHECK(r.out.find("  too few samples") == std::string::npos);  // no such verdict cell
            CHECK(r.out.find("note: ") == std::string::npos);             // nor the note that explains one
            CHECK(r.out.find("0 with too few samples") != std::string::npos);
            CHECK(r.out.find("summary: ") != std::string::npos);
        }
        if (command.find("ncclsweep run experiments/quickstart.yaml") != std::string::npos)
            CHECK(r.out.find("times faster than #") != std::string::npos);
    }
    CHECK(ran == static_cast<int>(commands.size()) - 1);
    CHECK(std::filesystem::exists(dir.path() / "sitecustomize.py"));
    CHECK(std::filesystem::exists(dir.path() / "report.html"));
    CHECK(std::filesystem::exists(dir.path() / "cal.txt"));
}
