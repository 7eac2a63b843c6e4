// Log lines crafted against the watcher's regexes and parsers (issue 6, "hostile input"): 1 MB
// lines of near-matches of the built-in rules, deep nesting, 'a' x 10^6 + '!', and a deeply
// nested result event. Each must be judged correctly and leave the watcher working; stored
// text stays bounded. Time is measured by bench/bench_watcher_adversarial, never asserted here.
#include <string>

#include "tests/core/adversarial_lines.hpp"
#include "tests/core/watcher_test_support.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

constexpr std::size_t k_megabyte = 1024 * 1024;

Watcher adversarial_watcher(FakeClock& clock, SuccessRule success = SuccessRule::exit_zero) {
    WatcherOptions options;
    options.success = success;
    return Watcher(builtin_catalog(), options, clock.now);
}

/// Feeds `line`, then checks that nothing fired, that it was kept cut, and that the watcher still
/// diagnoses an ordinary fatal line afterwards.
void expect_harmless(const std::string& line) {
    FakeClock clock;
    auto watcher = adversarial_watcher(clock);
    auto verdict = feed(watcher, clock, line);
    CHECK(verdict.state == WatchState::initializing);
    CHECK_FALSE(verdict.end_now);
    CHECK(watcher.warnings().empty());
    CHECK(watcher.metrics().empty());
    REQUIRE(watcher.last_lines().size() == 1);
    CHECK(watcher.last_lines()[0] == line.substr(0, WatcherOptions{}.max_line_chars));

    verdict = feed(watcher, clock, "RuntimeError: CUDA error: an illegal memory access was encountered");
    CHECK(verdict.state == WatchState::failed);
    CHECK(verdict.end_now);
    CHECK(watcher.failure_class() == "cuda");
    CHECK(watcher.diagnosis().before.size() == 1);
    CHECK(watcher.diagnosis().before[0].size() == WatcherOptions{}.max_line_chars);
}

}  // namespace

TEST_CASE("a 1 MB line of near-matches of every built-in rule matches nothing", "[watcher][adversarial]") {
    const std::string line = near_matches(k_megabyte);
    REQUIRE(line.size() >= k_megabyte);
    std::vector<int> hits;
    builtin_catalog()->match(line, hits);
    CHECK(hits.empty());
    expect_harmless(line);
}

TEST_CASE("1 MB of nested parentheses and brackets matches nothing", "[watcher][adversarial]") {
    expect_harmless(nested_parentheses(k_megabyte));
}

TEST_CASE("'a' x 10^6 followed by '!' matches nothing", "[watcher][adversarial]") {
    expect_harmless(a_run(1000000));
}

TEST_CASE("a fatal pattern at the end of 1 MB of near-matches is found and stored cut",
          "[watcher][adversarial]") {
    FakeClock clock;
    auto watcher = adversarial_watcher(clock);
    const std::string line = fatal_at_end(k_megabyte);
    const auto verdict = feed(watcher, clock, line);
    CHECK(verdict.state == WatchState::failed);
    CHECK(verdict.end_now);
    CHECK(watcher.failure_class() == "oom");
    CHECK(watcher.diagnosis().rule == "oom_cuda");
    const auto& stored = watcher.diagnosis().line;
    CHECK(stored.size() < WatcherOptions{}.max_line_chars + 40);
    CHECK(stored.find("more bytes]") != std::string::npos);
}

TEST_CASE("1 MB of repeated NCCL WARN is one warning, stored cut", "[watcher][adversarial]") {
    FakeClock clock;
    auto watcher = adversarial_watcher(clock);
    const std::string line = repeat_to("NCCL WARN Cuda failure 'out of memor' ", k_megabyte);
    for (int i = 0; i < 3; ++i) feed(watcher, clock, line);
    CHECK(watcher.state() == WatchState::initializing);
    CHECK(watcher.warning_count() == 3);
    REQUIRE(watcher.warnings().size() == 1);
    CHECK(watcher.warnings()[0].line.size() < WatcherOptions{}.max_line_chars + 40);
}

TEST_CASE("a result event nested 10,000 deep (one 64 KiB line) still yields its metrics",
          "[watcher][adversarial]") {
    FakeClock clock;
    auto watcher = adversarial_watcher(clock, SuccessRule::result_event);
    const std::string line = nested_result_event(10000);
    REQUIRE(line.size() <= 64 * 1024);  // what LocalTarget/SshTarget pass on as one line
    const auto verdict = feed(watcher, clock, line);
    CHECK(verdict.state == WatchState::done);
    REQUIRE(watcher.metrics().count("tok_s") == 1);
    CHECK(watcher.metrics().at("tok_s") == std::vector<double>{54.5});
    for (const auto& [name, values] : watcher.metrics()) CHECK(name.size() <= 256);
}

TEST_CASE("a result event nested 200,000 deep (a 1 MB line) does not exhaust the stack",
          "[watcher][adversarial]") {
    FakeClock clock;
    auto watcher = adversarial_watcher(clock, SuccessRule::result_event);
    const auto verdict = feed(watcher, clock, nested_result_event(200000));
    CHECK(verdict.state == WatchState::done);
    REQUIRE(watcher.metrics().count("tok_s") == 1);
    for (const auto& [name, values] : watcher.metrics()) CHECK(name.size() <= 256);
    const auto exit = watcher.on_exit(ExitInfo{}, clock.advance(0.01));
    CHECK(exit.state == WatchState::done);
}

TEST_CASE("a capture event whose phase is not a string changes nothing and throws nothing",
          "[watcher][adversarial]") {
    // Found by fuzz_watcher: json.value("phase", "") threw type_error out of the watcher.
    FakeClock clock;
    auto watcher = adversarial_watcher(clock, SuccessRule::result_event);
    for (const char* line :
         {R"({"event":"capture","phase":true})", R"({"event":"capture","phase":["begin"]})",
          R"({"event":"capture","phase":null})", R"({"event":"capture","phase":{"x":1}})"})
        CHECK(feed(watcher, clock, line).state == WatchState::initializing);
    CHECK_FALSE(watcher.phase_times().capture_begin.has_value());
    CHECK(feed(watcher, clock, R"({"event":"capture","phase":"begin"})").state == WatchState::capturing);
}
