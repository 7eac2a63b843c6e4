// Watcher timeouts (fake clock), exits, warnings, user metrics and detection timing.
#include <csignal>

#include "tests/core/watcher_test_support.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;

namespace {

Watcher timeouts_watcher(FakeClock& clock, Timeouts timeouts, SuccessRule success = SuccessRule::exit_zero) {
    WatcherOptions options;
    options.timeouts = timeouts;
    options.success = success;
    return Watcher(builtin_catalog(), options, clock.t0);
}

Timeouts only(double startup, double capture, double stall, double total) {
    return Timeouts{startup, capture, stall, total};
}

}  // namespace

TEST_CASE("startup timeout: no capture or ready progress") {
    FakeClock clock;
    auto watcher = timeouts_watcher(clock, only(10, 0, 0, 0));
    feed(watcher, clock, "[2025-06-01 10:00:10 TP0] Load weight begin. avail mem=93.71 GB", 1);
    CHECK(watcher.tick(clock.t0 + std::chrono::milliseconds(9900)).state == WatchState::initializing);
    auto verdict = watcher.tick(clock.t0 + std::chrono::seconds(10));
    CHECK(verdict.state == WatchState::timed_out);
    CHECK(verdict.end_now);
    CHECK(watcher.timeout_kind() == TimeoutKind::startup);
    CHECK(watcher.failure_class() == "timeout");
    CHECK(watcher.diagnosis().rule == "timeout_startup");
    CHECK(any_contains(watcher.diagnosis().before, "Load weight begin"));
    REQUIRE(watcher.seconds_to_detection());
    CHECK(*watcher.seconds_to_detection() == Approx(10));
}

TEST_CASE("startup timeout counts from the last progress, capture has its own timeout") {
    FakeClock clock;
    auto watcher = timeouts_watcher(clock, only(10, 0, 0, 0));
    feed(watcher, clock, "Capture cuda graph begin. This can take up to several minutes.", 5);
    CHECK(watcher.tick(clock.t0 + std::chrono::seconds(30)).state ==
          WatchState::capturing);                                             // no capture limit
    feed(watcher, clock, "Capture cuda graph end. Time elapsed: 30 s.", 26);  // at 31 s
    CHECK(watcher.tick(clock.t0 + std::chrono::seconds(40)).state == WatchState::initializing);
    CHECK(watcher.tick(clock.t0 + std::chrono::seconds(41)).state == WatchState::timed_out);
    CHECK(watcher.timeout_kind() == TimeoutKind::startup);
}

TEST_CASE("capture timeout: capture begun but not ended") {
    FakeClock clock;
    auto watcher = timeouts_watcher(clock, only(600, 30, 0, 0));
    feed(watcher, clock, R"({"event":"capture","phase":"begin"})", 1);
    CHECK(watcher.tick(clock.t0 + std::chrono::milliseconds(30900)).state == WatchState::capturing);
    auto verdict = watcher.tick(clock.t0 + std::chrono::seconds(31));
    CHECK(verdict.state == WatchState::timed_out);
    CHECK(watcher.timeout_kind() == TimeoutKind::capture);
    CHECK(watcher.diagnosis().detail.find("capture timeout") == 0);
}

TEST_CASE("stall timeout: no output while running") {
    FakeClock clock;
    auto watcher = timeouts_watcher(clock, only(0, 0, 5, 0));
    feed(watcher, clock, "The server is fired up and ready to roll!", 1);
    feed(watcher, clock, "still alive", 1);
    feed(watcher, clock, "still alive", 1);  // at 3 s
    CHECK(watcher.tick(clock.t0 + std::chrono::milliseconds(7900)).state == WatchState::ready);
    auto verdict = watcher.tick(clock.t0 + std::chrono::seconds(8));
    CHECK(verdict.state == WatchState::timed_out);
    CHECK(watcher.timeout_kind() == TimeoutKind::stall);
    CHECK(watcher.diagnosis().detail == "stall timeout: no output for 5 s (while ready)");
}

TEST_CASE("total timeout even while output keeps coming") {
    FakeClock clock;
    auto watcher = timeouts_watcher(clock, only(0, 0, 5, 60));
    for (int i = 0; i < 59; ++i) feed(watcher, clock, "tick", 1);
    CHECK(watcher.tick(clock.now).state == WatchState::initializing);
    clock.advance(1);
    CHECK(watcher.tick(clock.now).state == WatchState::timed_out);
    CHECK(watcher.timeout_kind() == TimeoutKind::total);
}

TEST_CASE("zero timeouts mean none, no timeouts after done or during a deliberate stop") {
    FakeClock clock;
    auto none = timeouts_watcher(clock, only(0, 0, 0, 0));
    CHECK(none.tick(clock.t0 + std::chrono::hours(100)).state == WatchState::initializing);

    auto done = timeouts_watcher(clock, only(1, 1, 1, 1));
    feed(done, clock, R"({"event":"result","tok_s":1})");
    CHECK(done.tick(clock.t0 + std::chrono::hours(1)).state == WatchState::done);

    auto stopping = timeouts_watcher(clock, only(1, 1, 1, 1));
    stopping.expect_shutdown(clock.t0);
    CHECK(stopping.tick(clock.t0 + std::chrono::hours(1)).state == WatchState::initializing);
}

TEST_CASE("non-zero exit without a matching rule keeps the last lines") {
    FakeClock clock;
    auto watcher = timeouts_watcher(clock, only(0, 0, 0, 0));
    for (int i = 0; i < 30; ++i) feed(watcher, clock, "output line " + std::to_string(i));
    auto verdict = watcher.on_exit(ExitInfo{3, 0}, clock.advance(0.1));
    CHECK(verdict.state == WatchState::failed);
    CHECK(verdict.settled);
    CHECK(watcher.failure_class() == "exit");
    CHECK(watcher.diagnosis().detail.find("status 3") != std::string::npos);
    REQUIRE(watcher.diagnosis().before.size() == 20);
    CHECK(watcher.diagnosis().before.front() == "output line 10");
    CHECK(watcher.diagnosis().before.back() == "output line 29");
}

TEST_CASE("exit by signal, without result, without metrics") {
    FakeClock clock;
    auto crashed = timeouts_watcher(clock, only(0, 0, 0, 0));
    crashed.on_exit(ExitInfo{0, SIGSEGV}, clock.advance(1));
    CHECK(crashed.failure_class() == "signal");
    CHECK(crashed.diagnosis().detail.find("SIGSEGV") != std::string::npos);

    auto engine = timeouts_watcher(clock, only(0, 0, 0, 0), SuccessRule::result_event);
    feed(engine, clock, R"({"event":"ready"})");
    engine.on_exit(ExitInfo{0, 0}, clock.advance(1));
    CHECK(engine.failure_class() == "no_result");

    auto command = timeouts_watcher(clock, only(0, 0, 0, 0), SuccessRule::any_metric);
    command.on_exit(ExitInfo{0, 0}, clock.advance(1));
    CHECK(command.failure_class() == "no_metrics");

    auto plain = timeouts_watcher(clock, only(0, 0, 0, 0));
    CHECK(plain.on_exit(ExitInfo{0, 0}, clock.advance(1)).state == WatchState::done);

    auto stopped = timeouts_watcher(clock, only(0, 0, 0, 0), SuccessRule::any_metric);
    feed(stopped, clock, "Output token throughput (tok/s): 54.8");
    CHECK(stopped.on_exit(ExitInfo{0, SIGTERM}, clock.advance(1), Ending::stopped).state == WatchState::done);
}

TEST_CASE("a fatal line after the result is a warning, and so is a failing exit") {
    FakeClock clock;
    auto watcher = timeouts_watcher(clock, only(0, 0, 0, 0), SuccessRule::result_event);
    feed(watcher, clock, R"({"event":"result","tok_s":54.8})");
    auto verdict = feed(watcher, clock, "Fatal Python error: Segmentation fault");
    CHECK(verdict.state == WatchState::done);
    CHECK_FALSE(verdict.end_now);
    watcher.on_exit(ExitInfo{0, SIGSEGV}, clock.advance(0.1));
    CHECK(watcher.state() == WatchState::done);
    CHECK(watcher.warnings().size() == 2);
}

TEST_CASE("warnings from 8 ranks are deduplicated but counted") {
    FakeClock clock;
    auto watcher = timeouts_watcher(clock, only(0, 0, 0, 0));
    for (int rank = 0; rank < 8; ++rank)
        feed(watcher, clock,
             "node1:100" + std::to_string(rank) + ":100" + std::to_string(rank) + " [" +
                 std::to_string(rank) + "] NCCL WARN NET/Socket : peer 10.0.0.2<41234> message truncated");
    CHECK(watcher.warnings().size() == 1);
    CHECK(watcher.warning_count() == 8);
    CHECK(watcher.warnings().front().rule == "nccl_warn");
    CHECK(watcher.state() == WatchState::initializing);
}

TEST_CASE("user rules: named groups become metrics, user fatal rules fail") {
    auto rules = parse_rules_yaml(R"(
- name: client_tok_s
  regex: 'client throughput: (?P<client_tok_s>[0-9.]+) tok/s, p50 (?P<client_p50_ms>[0-9.]+) ms'
  severity: progress
- name: custom_abort
  regex: 'ncclCommAbort called'
  class: nccl
)",
                                  "rules.yaml");
    REQUIRE(rules.ok());
    auto catalog = RuleCatalog::with_user_rules(*rules);
    REQUIRE(catalog.ok());
    FakeClock clock;
    Watcher watcher(*catalog, WatcherOptions{}, clock.t0);
    feed(watcher, clock, "client throughput: 54.8 tok/s, p50 18.2 ms");
    feed(watcher, clock, "client throughput: 55.1 tok/s, p50 18.0 ms");
    CHECK(watcher.state() == WatchState::measuring);
    CHECK(watcher.metrics().at("client_tok_s") == std::vector<double>{54.8, 55.1});
    CHECK(watcher.metrics().at("client_p50_ms") == std::vector<double>{18.2, 18.0});
    feed(watcher, clock, "rank 3: ncclCommAbort called");
    CHECK(watcher.failure_class() == "nccl");
    CHECK(watcher.diagnosis().rule == "custom_abort");
}

TEST_CASE("detection timing, bounded context and long lines") {
    FakeClock clock;
    auto watcher = timeouts_watcher(clock, only(0, 0, 0, 0));
    for (int i = 0; i < 25; ++i) feed(watcher, clock, "chatter " + std::to_string(i));
    OutputLine fatal;
    fatal.text = "Exception: Capture cuda graph failed: " + std::string(5000, 'x');
    fatal.when = clock.advance(1);
    auto verdict = watcher.feed(fatal, fatal.when + std::chrono::milliseconds(200));
    CHECK(verdict.end_now);
    REQUIRE(watcher.detection_latency());
    CHECK(*watcher.detection_latency() == Approx(0.2));
    CHECK(*watcher.seconds_to_detection() == Approx(1.025));
    const auto& diag = watcher.diagnosis();
    CHECK(diag.before.size() == 20);
    CHECK(diag.before.back() == "chatter 24");
    CHECK(diag.line.size() < 2100);
    CHECK(diag.line.find("more bytes]") != std::string::npos);
    CHECK_FALSE(watcher.verdict().settled);
    CHECK(watcher.tick(fatal.when + std::chrono::milliseconds(600)).settled);
}
