// Watcher time on log lines crafted against its rules (docs/reliability.md "Fuzzing and
// sanitizers"): for each kind of line (tests/core/adversarial_lines.hpp) and sizes 256 KB..4 MB,
// the CPU time of one Watcher::feed per line, in MB/s. Linear time means MB/s stays flat as the
// line grows (the "x2 ratio" column stays near 2.0: twice the bytes, twice the time).
// Usage: bench_watcher_adversarial [MAX_MEGABYTES] [REPEATS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "core/watch/rule_catalog.hpp"
#include "core/watch/watcher.hpp"
#include "tests/core/adversarial_lines.hpp"

using namespace ncclsweep;

namespace {

double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/// Best CPU time of `repeats` feeds of `text` into a fresh watcher.
double feed_seconds(const std::shared_ptr<const RuleCatalog>& catalog, const std::string& text, int repeats,
                    std::string& state) {
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
        WatcherOptions options;
        options.success = SuccessRule::result_event;
        const auto t0 = Watcher::Clock::now();
        Watcher watcher(catalog, options, t0);
        OutputLine line;
        line.text = text;
        line.when = t0;
        const double cpu0 = thread_cpu_seconds();
        watcher.feed(line);
        best = std::min(best, thread_cpu_seconds() - cpu0);
        state = std::string(to_string(watcher.state()));
    }
    return best;
}

struct Kind {
    const char* name;
    std::function<std::string(std::size_t)> make;
};

}  // namespace

int main(int argc, char** argv) {
    const std::size_t max_mb = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 4;
    const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
    auto catalog = RuleCatalog::with_user_rules({});
    if (!catalog) {
        std::fprintf(stderr, "%s\n", catalog.error().message.c_str());
        return 1;
    }
    const std::vector<Kind> kinds = {
        {"near-matches", [](std::size_t n) { return test::near_matches(n); }},
        {"nested ([ ])", [](std::size_t n) { return test::nested_parentheses(n); }},
        {"a...a!", [](std::size_t n) { return test::a_run(n); }},
        {"fatal at end", [](std::size_t n) { return test::fatal_at_end(n); }},
        {"NCCL WARN x n",
         [](std::size_t n) { return test::repeat_to("NCCL WARN Cuda failure 'out of memor' ", n); }},
        {"nested result", [](std::size_t n) { return test::nested_result_event(n / 6); }},
    };
    std::printf("%-14s %9s %10s %9s %9s  %s\n", "line", "bytes", "CPU ms", "MB/s", "x2 ratio", "verdict");
    for (const auto& kind : kinds) {
        double previous = 0;
        for (std::size_t kb = 256; kb <= max_mb * 1024; kb *= 2) {
            const std::string text = kind.make(kb * 1024);
            std::string state;
            const double seconds = feed_seconds(*catalog, text, repeats, state);
            std::printf("%-14s %9zu %10.2f %9.1f %9s  %s\n", kind.name, text.size(), seconds * 1e3,
                        static_cast<double>(text.size()) / seconds / 1e6,
                        previous > 0 ? std::to_string(seconds / previous).substr(0, 4).c_str() : "-",
                        state.c_str());
            previous = seconds;
        }
    }
    return 0;
}
