// `ncclsweep run`'s policy as a library call (core/sweep/run_policy.hpp), driven with a fake
// host, target and database: what is checked in which order, what preflight is asked, what the
// sweep loop is given, what is written, and how the run ends.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "core/sweep/run_policy.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/fake_run_host.hpp"
#include "tests/support/quiet_observer.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;
using test::FakeHost;
using test::FakeRecord;

namespace {

/// A two-point command sweep on the local machine (NCCL_PROTO LL, Simple) reporting tok_s.
std::string prepare_spec_yaml(const std::string& extra = "") {
    // baseline: none: these tests are about the run's policy, not NCCL's defaults point.
    return "sweep: unit-run\ntarget: local\nbaseline: none\nworkload:\n  command: [/bin/true]\n"
           "  metrics:\n    tok_s: 'tok_s=([0-9.]+)'\naxes:\n  NCCL_PROTO: [LL, Simple]\n" +
           extra;
}

RunFlags flags_for(const std::filesystem::path& spec) {
    RunFlags flags;
    flags.spec_path = spec.string();
    return flags;
}

/// Everything a ProgressPrinter writes, kept in a temporary file.
struct PrinterOutput {
    std::FILE* file = std::tmpfile();
    ~PrinterOutput() { std::fclose(file); }
    std::string text() const {
        std::fflush(file);
        std::rewind(file);
        std::string out;
        char buffer[4096];
        for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) out.append(buffer, n);
        return out;
    }
};

/// An engine on the fake target: --describe says `tokens` is an int and tok_s is its metric,
/// --validate refuses tokens=3, and every --validate call is kept.
void answer_as_engine(test::FakeTarget& target, std::vector<std::vector<std::string>>& validated) {
    target.answer = [&validated](const std::vector<std::string>& argv) -> Result<std::string> {
        if (argv == std::vector<std::string>{"env"}) return std::string();  // nothing inherited
        if (argv.size() > 1 && argv[1] == "--describe")
            return std::string(
                R"({"engine":"tpverify","describe_version":1,"parameters":[{"name":"tokens","type":"int",)"
                R"("min":1,"max":64},{"name":"backend","type":"enum","values":["auto","sim","cuda"]}],)"
                R"("metrics":[{"name":"tok_s","unit":"tok/s","better":"higher"}],"auto_backend":"sim"})");
        validated.push_back(argv);
        std::string verdicts;
        for (std::size_t i = 2; i <= argv.size(); ++i) {
            if (i < argv.size() && argv[i] != "--") continue;
            // One verdict per run: the args between "--" separators.
            std::size_t start = i;
            while (start > 2 && argv[start - 1] != "--") --start;
            bool three = false;
            for (std::size_t a = start; a + 1 < i; ++a)
                if (argv[a] == "--tokens" && argv[a + 1] == "3") three = true;
            verdicts += three ? R"({"valid":false,"error":"3 tokens do not fit","parameters":["tokens"]})"
                              : R"({"valid":true})";
            verdicts += "\n";
        }
        return verdicts;
    };
}

}  // namespace

TEST_CASE(
    "run prepare: the plan is expanded once into the request, then host, engine and database in order") {
    test::TempDir dir;
    FakeHost host;
    FakeRecord record;
    RunFlags flags = flags_for(dir.write("s.yaml", prepare_spec_yaml()));
    flags.set = {"NCCL_PROTO=LL"};
    flags.tag = "nightly";
    flags.db = "my.db";

    auto run = prepare_run(flags, host, record);
    REQUIRE(run);
    REQUIRE(run->request.experiments.size() == 1);
    CHECK(run->request.experiments[0].id == 1);
    CHECK(run->request.experiments[0].argv == std::vector<std::string>{"/bin/true"});
    CHECK_FALSE(run->request.resume_id);
    CHECK(run->request.sweep.name == "unit-run");
    CHECK(run->request.sweep.tag == "nightly");
    CHECK(run->request.sweep.target == "fake");
    CHECK(run->request.sweep.metrics.size() == 1);
    CHECK(run->command_line == "ncclsweep run " + flags.spec_path + " --set NCCL_PROTO=LL --db my.db");
    CHECK(run->request.sweep.fingerprint.command_line == run->command_line);
    CHECK(run->header.experiments == 1);
    CHECK(run->header.target == "fake");
    // The host is asked once for the target and once for its preflight; the database is opened
    // last and nothing is written to it before the sweep runs.
    CHECK(host.calls == std::vector<std::string>{"open local", "preflight"});
    CHECK(record.calls == std::vector<std::string>{"open"});
    CHECK(record.store.writes.empty());
    CHECK(run->store == &record.store);
}

TEST_CASE("run prepare: busy GPUs and the GPU-release check only on one host that is not a scheduler") {
    test::TempDir dir;
    const auto spec = dir.write("s.yaml", prepare_spec_yaml());
    struct Case {
        int slots;
        bool batches;
        bool force;
        bool refuse_busy;
        bool release_check;
    };
    for (const Case& c : {Case{1, false, false, true, true}, Case{1, false, true, false, true},
                          Case{2, false, false, true, false}, Case{1, true, false, false, false},
                          Case{4, true, true, false, false}}) {
        INFO("slots " << c.slots << ", batches " << c.batches << ", --force " << c.force);
        FakeHost host;
        host.target->slot_count = c.slots;
        host.target->batches = c.batches;
        FakeRecord record;
        RunFlags flags = flags_for(spec);
        flags.force = c.force;
        auto run = prepare_run(flags, host, record);
        REQUIRE(run);
        REQUIRE(host.asked.size() == 1);
        CHECK(host.asked[0].refuse_busy_gpus == c.refuse_busy);
        CHECK(host.asked[0].release_check == c.release_check);
        CHECK(static_cast<bool>(run->options.before_experiment) == c.release_check);
    }
}

TEST_CASE("run prepare: bad input stops before the target is opened and the database is touched") {
    test::TempDir dir;
    const auto spec = dir.write("s.yaml", prepare_spec_yaml());
    const auto client_spec = dir.write("c.yaml",
                                       "sweep: c\ntarget: local\nworkload:\n  command: [/bin/true]\n"
                                       "  client: [/bin/true]\naxes:\n  NCCL_PROTO: [LL]\n");
    const auto nccl_error = dir.write("e.yaml", prepare_spec_yaml("  NCCL_ALGO: [Bogus]\n"));
    struct Case {
        std::string what;
        RunFlags flags;
        std::string says;
    };
    std::vector<Case> cases;
    cases.push_back({"a bad --metric", flags_for(spec), "--metric: "});
    cases.back().flags.metric = "tok_s:sideways";
    cases.push_back({"a bad --set", flags_for(spec), "--set"});
    cases.back().flags.set = {"no-equals-sign"};
    cases.push_back({"a bad --budget", flags_for(spec), "--budget"});
    cases.back().flags.budget = "soon";
    cases.push_back(
        {"a client on Slurm", flags_for(client_spec), "workload.client is not supported on a Slurm"});
    cases.back().flags.target = "slurm://gpu";
    cases.push_back({"an NCCL error in one point", flags_for(nccl_error), "e.yaml:"});
    cases.push_back({"a command that is not there", flags_for(spec), "/nonexistent/serve"});
    cases.back().flags.axis = {"NCCL_PROTO=LL"};
    cases.back().flags.spec_path = dir.write("m.yaml",
                                             "sweep: m\ntarget: local\nworkload:\n  command: "
                                             "[/nonexistent/serve]\naxes:\n  NCCL_PROTO: [LL]\n")
                                       .string();
    for (const Case& c : cases) {
        INFO(c.what);
        FakeHost host;
        FakeRecord record;
        auto run = prepare_run(c.flags, host, record);
        REQUIRE_FALSE(run);
        CHECK(run.error().kind == ErrorKind::bad_input);
        CHECK(run.error().message.find(c.says) != std::string::npos);
        CHECK(host.calls.empty());
        CHECK(record.calls.empty());
    }
}

TEST_CASE("run prepare: an unreachable host or a busy one is infrastructure and opens no database") {
    test::TempDir dir;
    const auto spec = dir.write("s.yaml", prepare_spec_yaml());
    FakeHost unreachable;
    unreachable.open_error = Error::infrastructure("ssh: connection refused");
    FakeRecord record;
    auto run = prepare_run(flags_for(spec), unreachable, record);
    REQUIRE_FALSE(run);
    CHECK(run.error().kind == ErrorKind::infrastructure);

    FakeHost busy;
    busy.preflight_error = Error::infrastructure("GPUs are busy");
    run = prepare_run(flags_for(spec), busy, record);
    REQUIRE_FALSE(run);
    CHECK(run.error().message == "GPUs are busy");
    CHECK(record.calls.empty());
}

TEST_CASE(
    "run prepare: the engine is asked once about each distinct command line, and refusals stop the run") {
    test::TempDir dir;
    // 2 NCCL_PROTO x 3 tokens + 3 defaults points: nine points, three engine command lines (env
    // axes add none).
    const auto spec = dir.write("s.yaml",
                                "sweep: e\nworkload:\n  engine: tpverify\n  args: {backend: sim}\naxes:\n"
                                "  NCCL_PROTO: [LL, Simple]\n  tokens: [1, 2, 4]\n");
    std::vector<std::vector<std::string>> validated;
    FakeHost host;
    answer_as_engine(*host.target, validated);
    FakeRecord record;
    RunFlags flags = flags_for(spec);
    flags.target = "ssh://me@gpu";  // not this machine: the engine path is not looked up here
    flags.engine = "/opt/tpverify";
    auto run = prepare_run(flags, host, record);
    INFO((run ? std::string() : run.error().message));
    REQUIRE(run);
    CHECK(run->request.experiments.size() == 9);  // and NCCL's defaults point for each tokens value
    REQUIRE(validated.size() == 1);
    CHECK(std::count(validated[0].begin(), validated[0].end(), "--") == 2);
    CHECK(run->request.sweep.backend == "sim");
    REQUIRE(run->request.sweep.metrics.size() == 1);
    CHECK(run->request.sweep.metrics[0].unit == "tok/s");
    CHECK(run->header.backend == "sim (simulated GPUs and NCCL)");

    // tokens=3 is refused by the engine, at the place the spec set it, before the database.
    const auto refused_spec = dir.write(
        "r.yaml", "sweep: r\nworkload:\n  engine: tpverify\naxes:\n  NCCL_PROTO: [LL]\n  tokens: [1, 3]\n");
    FakeHost refusing;
    answer_as_engine(*refusing.target, validated);
    FakeRecord untouched;
    RunFlags refused_flags = flags_for(refused_spec);
    refused_flags.target = "ssh://me@gpu";
    auto refused = prepare_run(refused_flags, refusing, untouched);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().kind == ErrorKind::bad_input);
    CHECK(refused.error().message.find("r.yaml:6") != std::string::npos);
    CHECK(refused.error().message.find("3 tokens do not fit") != std::string::npos);
    CHECK(untouched.calls.empty());
}

TEST_CASE("run prepare: what the target's commands inherit is recorded with the sweep, before the database") {
    test::TempDir dir;
    const auto spec = dir.write("s.yaml", prepare_spec_yaml());
    FakeHost host;
    host.target->answer = [](const std::vector<std::string>& argv) -> Result<std::string> {
        if (argv == std::vector<std::string>{"env"})
            return std::string("NCCL_PROTO=Simple\nNCCL_SOCKET_IFNAME=eth9\nHOME=/root\nCUDA_HOME=/cuda\n");
        return std::string();
    };
    FakeRecord record;
    auto run = prepare_run(flags_for(spec), host, record);
    INFO((run ? std::string() : run.error().message));
    REQUIRE(run);
    // NCCL_PROTO is swept (every experiment sets it): the sweep's value wins, it is not inherited.
    CHECK(run->request.sweep.inherited_env ==
          std::vector<Assignment>{{"CUDA_HOME", "/cuda"}, {"NCCL_SOCKET_IFNAME", "eth9"}});
    CHECK(std::filesystem::path(run->request.database).is_absolute());

    // A target that cannot say stops the run before the database is opened.
    FakeHost failing;
    failing.target->answer = [](const std::vector<std::string>&) -> Result<std::string> {
        return Error::infrastructure("ssh://gpu: connection reset");
    };
    FakeRecord untouched;
    auto refused = prepare_run(flags_for(spec), failing, untouched);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message.find("connection reset") != std::string::npos);
    CHECK(untouched.calls.empty());
}

TEST_CASE("run prepare: NCCL's tuning lines are asked for unless the spec sets NCCL_DEBUG itself") {
    test::TempDir dir;
    FakeHost host;
    FakeRecord record;
    auto plain = prepare_run(flags_for(dir.write("s.yaml", prepare_spec_yaml())), host, record);
    REQUIRE(plain);
    CHECK(plain->options.watcher.nccl_debug_requested);
    bool asks_debug = false;
    for (const auto& [name, value] : plain->options.extra_env) asks_debug |= name == "NCCL_DEBUG";
    CHECK(asks_debug);

    FakeHost host2;
    auto own = prepare_run(flags_for(dir.write("d.yaml", prepare_spec_yaml("  NCCL_DEBUG: [WARN]\n"))), host2,
                           record);
    REQUIRE(own);
    CHECK_FALSE(own->options.watcher.nccl_debug_requested);
    CHECK(own->options.extra_env.empty());
}

TEST_CASE("run prepare: --resume asks the database for the sweep and keeps its id") {
    test::TempDir dir;
    RunFlags flags = flags_for(dir.write("s.yaml", prepare_spec_yaml()));
    flags.resume = "auto";
    FakeHost host;
    FakeRecord record;
    record.resumable = 7;
    auto run = prepare_run(flags, host, record);
    REQUIRE(run);
    CHECK(run->request.resume_id == 7);
    CHECK(record.calls == std::vector<std::string>{"open", "resume auto unit-run"});

    FakeHost host2;
    FakeRecord none;
    auto refused = prepare_run(flags, host2, none);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().kind == ErrorKind::bad_input);
}

TEST_CASE("run prepare: a search plans up front and races on --metric with the sweep's direction") {
    test::TempDir dir;
    RunFlags flags = flags_for(dir.write(
        "s.yaml",
        prepare_spec_yaml("search: {prune: {after: 2}, race: {min_repeats: 2, max_repeats: 4}}\n")));
    flags.budget = "10 runs";
    FakeHost host;
    FakeRecord record;
    auto run = prepare_run(flags, host, record);
    REQUIRE(run);
    REQUIRE(run->options.search);
    CHECK(run->options.search->metric == "tok_s");
    CHECK(run->options.search->direction == stats::Direction::higher_is_better);
    CHECK_FALSE(run->search.empty());
    CHECK(run->command_line.find("--budget '10 runs'") != std::string::npos);

    flags.metric = "tok_s:lower";
    FakeHost host2;
    auto lower = prepare_run(flags, host2, record);
    REQUIRE(lower);
    CHECK(lower->options.search->direction == stats::Direction::lower_is_better);
}

TEST_CASE("run: the sweep runs on the opened target with the release check between experiments") {
    test::TempDir dir;
    FakeHost host;
    host.target->fallback = test::fake_ok("tok_s", 120);
    host.facts.gpus = "2 x Fake GPU";
    // The target goes to the run and ends with it: its log is read through a shared handle.
    const auto log = host.target->log;
    FakeRecord record;
    PrinterOutput human, machine;
    ProgressPrinter printer(ProgressStyle::plain, human.file, machine.file);
    std::atomic<bool> stop{false};
    auto report =
        run_sweep_command(flags_for(dir.write("s.yaml", prepare_spec_yaml())), host, record, printer, stop);
    REQUIRE(report);
    CHECK(report->outcome.summary.ran == 2);
    CHECK(report->outcome.summary.ok == 2);
    CHECK(report->database == "fake.db");
    CHECK(record.store.current().state == "done");
    CHECK(log->started.size() == 2);
    CHECK(host.release_checks == 2);
    CHECK(human.text().find("2 x Fake GPU") != std::string::npos);
    CHECK(conclude_run(*report, printer) == ExitStatus::done);
    const auto lines = closing_lines(*report);
    REQUIRE(lines.size() == 2);
    CHECK(lines[1] == "sweep 1: 2 ran (2 ok, 0 failed); results in fake.db");
}

TEST_CASE("run: a resumed sweep's summary has what finished before, and only the rest runs") {
    test::TempDir dir;
    RunFlags flags = flags_for(dir.write("s.yaml", prepare_spec_yaml()));
    // A first run: both points recorded, the second one failed.
    FakeHost first;
    int started = 0;
    first.target->respond = [&started](const Command&) {
        test::FakeRun run = test::fake_ok("tok_s", 100);
        if (++started > 1) run.exit = ExitInfo{1, 0};
        return run;
    };
    FakeRecord record;
    PrinterOutput out;
    ProgressPrinter printer(ProgressStyle::quiet, out.file, out.file);
    std::atomic<bool> stop{false};
    auto ran = run_sweep_command(flags, first, record, printer, stop);
    REQUIRE(ran);
    REQUIRE(ran->outcome.summary.failed == 1);
    // Pretend it was interrupted after the first point: the second is forgotten.
    record.store.current().finished.erase(2);
    record.store.current().state = "interrupted";

    flags.resume = "auto";
    record.resumable = 1;
    FakeHost second;
    second.target->fallback = test::fake_ok("tok_s", 90);
    const auto second_log = second.target->log;
    ProgressPrinter again(ProgressStyle::quiet, out.file, out.file);
    auto resumed = run_sweep_command(flags, second, record, again, stop);
    REQUIRE(resumed);
    CHECK(resumed->outcome.skipped_finished == 1);
    CHECK(resumed->outcome.summary.ran == 1);
    CHECK(second_log->started.size() == 1);
    REQUIRE(again.reports().size() == 2);
    std::vector<int> ids = {again.reports()[0].first.id, again.reports()[1].first.id};
    std::sort(ids.begin(), ids.end());
    CHECK(ids == std::vector<int>{1, 2});
    CHECK(closing_lines(*resumed)[1].find(", 1 already finished") != std::string::npos);
}

TEST_CASE("run: a sweep that fails says which sweep is recorded and the command that continues it") {
    test::TempDir dir;
    FakeHost host;
    host.target->prepare_error = Error::infrastructure("disk full on the host");
    FakeRecord record;
    PrinterOutput out;
    ProgressPrinter printer(ProgressStyle::quiet, out.file, out.file);
    std::atomic<bool> stop{false};
    RunFlags flags = flags_for(dir.write("s.yaml", prepare_spec_yaml()));
    auto report = run_sweep_command(flags, host, record, printer, stop);
    REQUIRE_FALSE(report);
    CHECK(report.error().kind == ErrorKind::infrastructure);
    CHECK(report.error().message.find("disk full on the host") == 0);
    CHECK(report.error().message.find("sweep 1 is recorded in fake.db; continue it with: ncclsweep run " +
                                      flags.spec_path + " --resume 1") != std::string::npos);
    CHECK(record.store.current().state == "failed");
}

TEST_CASE("run: how it ends is the exit status, and a spent budget says how to continue") {
    RunReport report;
    report.outcome.sweep_id = 4;
    report.command_line = "ncclsweep run s.yaml";
    report.database = "x.db";
    test::QuietObserver printer;
    report.outcome.summary.ran = 2;
    report.outcome.summary.failed = 2;
    CHECK(conclude_run(report, printer) == ExitStatus::negative);
    report.outcome.summary.interrupted = true;
    CHECK(conclude_run(report, printer) == ExitStatus::infrastructure);
    report.outcome.summary = SweepRunSummary{};
    report.outcome.summary.ran = 1;
    report.outcome.summary.ok = 1;
    report.outcome.summary.budget_spent = true;
    CHECK(conclude_run(report, printer) == ExitStatus::done);
    REQUIRE(printer.notices.size() == 1);
    CHECK(printer.notices[0].find(
              "continue it with: ncclsweep run s.yaml --resume 4 (with a larger --budget)") !=
          std::string::npos);
}

TEST_CASE("run: the command that starts a run again quotes only the words that need it") {
    RunFlags flags;
    flags.spec_path = "my specs/s.yaml";
    flags.axis = {"NCCL_ALGO=ring\\,tree;allreduce:tree"};
    flags.set = {"tokens=8"};
    flags.max_experiments = 5;
    flags.target = "ssh://me@gpu-host:2222";
    flags.budget = "2h";
    CHECK(run_command_line(flags) ==
          "ncclsweep run 'my specs/s.yaml' --axis 'NCCL_ALGO=ring\\,tree;allreduce:tree' --set tokens=8 "
          "--max-experiments 5 --target ssh://me@gpu-host:2222 --budget 2h");
}
