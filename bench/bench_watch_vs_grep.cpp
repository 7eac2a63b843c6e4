// `ncclsweep watch --log` against `LC_ALL=C grep -E -c` with the same patterns on the same log
// (docs/benchmarks-watcher.md): the CPU time (user + system, from wait4's rusage) of each
// command as a child process, run in turn, best and median of N rounds.
//
// The log is the NCCL_DEBUG=INFO-heavy log of bench_watcher (bench/nccl_info_log.hpp), written
// to a file, or a log of your own (--log). The patterns are the watcher's built-in rules turned
// into POSIX extended regexes (named and non-capturing groups become plain groups); before
// timing, the program checks that `grep -E -i -c` counts exactly the lines the watcher's catalog
// matches, so both sides look for the same thing.
//
// Usage: bench_watch_vs_grep [MEGABYTES] [REPEATS] [--log FILE] [--ncclsweep PATH]
//                            [--echo-to PATH] [--utf8]
//   --echo-to  where watch's echo (its stderr) goes; default /dev/null
//   --utf8     also time grep under C.UTF-8 (slow: for reference only)
//   --keep     keep the generated log and patterns (their folder is printed)
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "bench/nccl_info_log.hpp"
#include "core/watch/rule_catalog.hpp"

using namespace ncclsweep;
namespace fs = std::filesystem;

namespace {

struct Options {
    std::size_t megabytes = 200;
    int repeats = 5;
    std::string log;
    std::string ncclsweep;
    std::string echo_to = "/dev/null";
    bool utf8 = false;
    bool keep = false;
};

/// One child: its command, its environment additions, where its stdout and stderr go.
struct Job {
    std::string name;
    std::vector<std::string> argv;
    std::vector<std::string> env;  ///< NAME=value, added to ours
    std::string out_path = "/dev/null";
    std::string err_path = "/dev/null";
};

struct Outcome {
    int status = -1;
    double cpu = 0;   ///< user + system seconds
    double user = 0;  ///< of which user
    double wall = 0;  ///< seconds
};

/// Runs `job` to its end; its CPU time comes from wait4's rusage of that child alone.
Outcome run(const Job& job) {
    std::vector<char*> argv;
    for (const auto& a : job.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = ::fork();
    if (pid == 0) {
        for (const auto& e : job.env) ::putenv(const_cast<char*>(e.c_str()));
        const int out = ::open(job.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int err = ::open(job.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (out < 0 || err < 0) _exit(126);
        ::dup2(out, 1);
        ::dup2(err, 2);
        ::execvp(argv[0], argv.data());
        _exit(127);
    }
    Outcome outcome;
    int status = 0;
    rusage usage{};
    if (pid < 0 || ::wait4(pid, &status, 0, &usage) != pid) return outcome;
    outcome.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    outcome.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
    outcome.user = seconds(usage.ru_utime);
    outcome.cpu = outcome.user + seconds(usage.ru_stime);
    return outcome;
}

/// An RE2 pattern as a POSIX extended regex for GNU grep: `(?P<name>` and `(?:` become `(`,
/// `\w` inside brackets becomes `[:alnum:]_` (GNU grep knows \w, \s, \S and \b outside them).
std::string to_ere(std::string_view pattern) {
    std::string out;
    bool in_bracket = false;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        const std::string_view rest = pattern.substr(i);
        if (!in_bracket && rest.starts_with("(?P<")) {
            i = pattern.find('>', i);
            out += '(';
        } else if (!in_bracket && rest.starts_with("(?:")) {
            i += 2;
            out += '(';
        } else if (rest.starts_with("\\")) {
            if (in_bracket && rest.starts_with("\\w"))
                out += "[:alnum:]_";
            else
                out += rest.substr(0, 2);
            ++i;
        } else {
            if (rest.front() == '[') in_bracket = true;
            if (rest.front() == ']' && in_bracket) in_bracket = false;
            out += rest.front();
        }
    }
    return out;
}

/// Lines of `path` the catalog matches (any rule), read the way the watcher cuts lines.
std::size_t catalog_count(const RuleCatalog& catalog, const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::size_t count = 0;
    std::vector<int> hits;
    for (std::string line; std::getline(in, line);) {
        catalog.match(line, hits);
        if (!hits.empty()) ++count;
    }
    return count;
}

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

Options parse(int argc, char** argv) {
    Options options;
    std::vector<std::string> positional;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "bench_watch_vs_grep: %s needs a value\n", arg.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (arg == "--log")
            options.log = value();
        else if (arg == "--ncclsweep")
            options.ncclsweep = value();
        else if (arg == "--echo-to")
            options.echo_to = value();
        else if (arg == "--utf8")
            options.utf8 = true;
        else if (arg == "--keep")
            options.keep = true;
        else
            positional.push_back(arg);
    }
    if (!positional.empty()) options.megabytes = std::strtoul(positional[0].c_str(), nullptr, 10);
    if (positional.size() > 1) options.repeats = std::max(1, std::atoi(positional[1].c_str()));
    if (options.ncclsweep.empty())
        options.ncclsweep = (fs::read_symlink("/proc/self/exe").parent_path() / "../cli/ncclsweep").string();
    return options;
}

}  // namespace

int main(int argc, char** argv) {
    const Options options = parse(argc, argv);
    auto catalog = RuleCatalog::with_user_rules({});
    if (!catalog) {
        std::fprintf(stderr, "%s\n", catalog.error().message.c_str());
        return 1;
    }
    char dir_template[] = "/tmp/bench_watch_vs_grep.XXXXXX";
    const fs::path dir = ::mkdtemp(dir_template);
    std::string log = options.log;
    if (log.empty()) {
        std::size_t lines = 0;
        log = (dir / "nccl_info.log").string();
        std::ofstream(log, std::ios::binary) << bench::make_log(options.megabytes * 1000 * 1000, lines);
    }
    const std::string patterns = (dir / "patterns.txt").string();
    {
        std::ofstream out(patterns);
        for (const auto& rule : (*catalog)->rules()) out << to_ere(rule.pattern) << '\n';
    }
    const std::string grep_err = (dir / "grep.err").string();
    const std::string grep_out = (dir / "grep.out").string();

    // Same question on both sides: grep -i counts exactly the lines the catalog matches.
    const std::size_t expected = catalog_count(**catalog, log);
    Job check{"check", {"grep", "-E", "-i", "-c", "-f", patterns, log}, {"LC_ALL=C"}, grep_out, grep_err};
    const Outcome checked = run(check);
    const std::string counted = read_all(grep_out);
    const std::string warnings = read_all(grep_err);
    std::printf("log: %s, %ju bytes; %zu rules as %s; lines matched: catalog %zu, grep -E -i -c %s",
                log.c_str(), static_cast<std::uintmax_t>(fs::file_size(log)), (*catalog)->size(),
                patterns.c_str(), expected, counted.c_str());
    if (checked.status > 1 || !warnings.empty() || std::strtoull(counted.c_str(), nullptr, 10) != expected) {
        std::fprintf(stderr, "bench_watch_vs_grep: grep does not look for what the watcher looks for: %s\n",
                     warnings.c_str());
        return 1;
    }

    std::vector<Job> jobs = {
        {"watch --log (echo on)",
         {options.ncclsweep, "watch", "--log", log},
         {},
         "/dev/null",
         options.echo_to},
        {"watch --log --no-echo", {options.ncclsweep, "watch", "--log", log, "--no-echo"}, {}},
        // grep's count goes to a file: with stdout on /dev/null GNU grep stops at the first match.
        {"LC_ALL=C grep -E -c", {"grep", "-E", "-c", "-f", patterns, log}, {"LC_ALL=C"}, grep_out},
        {"LC_ALL=C grep -E -i -c", {"grep", "-E", "-i", "-c", "-f", patterns, log}, {"LC_ALL=C"}, grep_out},
    };
    if (options.utf8)
        jobs.push_back({"LC_ALL=C.UTF-8 grep -E -c",
                        {"grep", "-E", "-c", "-f", patterns, log},
                        {"LC_ALL=C.UTF-8"},
                        grep_out});
    std::vector<std::vector<Outcome>> outcomes(jobs.size());
    for (int round = 0; round < options.repeats; ++round)
        for (std::size_t j = 0; j < jobs.size(); ++j) {
            outcomes[j].push_back(run(jobs[j]));
            if (outcomes[j].back().status != 0) {
                std::fprintf(stderr, "bench_watch_vs_grep: '%s' exited with %d\n", jobs[j].name.c_str(),
                             outcomes[j].back().status);
                return 1;
            }
        }

    std::printf("%-28s %10s %10s %10s %10s %9s\n", "command", "CPU best", "(user)", "CPU median", "wall best",
                "MB/s CPU");
    std::vector<double> best(jobs.size());
    const double megabytes = static_cast<double>(fs::file_size(log)) / 1e6;
    for (std::size_t j = 0; j < jobs.size(); ++j) {
        auto& runs = outcomes[j];
        std::sort(runs.begin(), runs.end(), [](const Outcome& a, const Outcome& b) { return a.cpu < b.cpu; });
        double wall = runs.front().wall;
        for (const auto& r : runs) wall = std::min(wall, r.wall);
        best[j] = runs.front().cpu;
        std::printf("%-28s %9.3fs %9.3fs %9.3fs %9.3fs %9.0f\n", jobs[j].name.c_str(), best[j],
                    runs.front().user, runs[runs.size() / 2].cpu, wall, megabytes / best[j]);
    }
    const double grep_best = std::min(best[2], best[3]);
    std::printf("watch (echo on) / fastest LC_ALL=C grep: %.2fx CPU (best of %d) -> %s\n",
                best[0] / grep_best, options.repeats,
                best[0] <= grep_best ? "no more CPU than grep" : "MORE CPU than grep");
    if (options.keep)
        std::printf("kept: %s\n", dir.c_str());
    else
        fs::remove_all(dir);
    return 0;
}
