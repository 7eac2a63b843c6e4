// SlurmTarget and its task processes against a scripted Slurm (FakeSlurm answers sbatch,
// squeue, sacct, scontrol and scancel the way the real ones do, see tests/fixtures/slurm/), with
// real files in a temporary work directory: one sbatch per batch, one squeue per poll round,
// how each way a task can end reaches the sweep loop, and what a resume re-attaches to.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include "remote/local_target.hpp"
#include "remote/slurm_target.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ncclsweep;
using namespace ncclsweep::remote;
using ncclsweep::test::read_file;
using ncclsweep::test::TempDir;

namespace {

/// A Slurm in memory: tasks are live (with a state) or ended (with a final state).
struct FakeSlurm final : SlurmCommands {
    std::vector<std::vector<std::string>> calls;
    std::map<std::string, std::string> live;     ///< task -> PENDING / RUNNING
    std::map<std::string, std::string> finals;   ///< task -> "STATE ExitCode"
    std::map<std::string, std::string> reasons;  ///< task -> squeue's reason while live ("None" if unset)
    std::string nodes = "node[1-4]";             ///< sinfo's node list of the partition
    int next_job = 100;

    int count(const std::string& program) const {
        int n = 0;
        for (const auto& call : calls) n += call.front() == program ? 1 : 0;
        return n;
    }
    Result<Output> run(const std::vector<std::string>& argv) override {
        calls.push_back(argv);
        const std::string& program = argv.front();
        Output output;
        if (program == "sbatch") {
            int last = 0;
            for (const auto& word : argv)
                if (word.rfind("--array=0-", 0) == 0) last = std::stoi(word.substr(10));
            const std::string job = std::to_string(next_job++);
            for (int i = 0; i <= last; ++i) live[job + "_" + std::to_string(i)] = "PENDING";
            output.out = job + "\n";
        } else if (program == "squeue") {
            for (const auto& [task, state] : live)
                output.out +=
                    task + "|" + state + "|" + (reasons.count(task) ? reasons.at(task) : "None") + "\n";
        } else if (program == "sinfo") {
            output.out = nodes + "\n";
        } else if (program == "sacct") {
            output.exit_code = 1;
            output.err = "Slurm accounting storage is disabled\n";
        } else if (program == "scontrol") {
            const std::string job = argv.back();
            for (const auto& [task, final] : finals) {
                if (task.substr(0, task.find('_')) != job) continue;
                auto space = final.find(' ');
                output.out += fmt::format(
                    "JobId=9{} ArrayJobId={} ArrayTaskId={} JobState={} Reason={} ExitCode={} "
                    "NodeList=node3\n",
                    task.substr(task.find('_') + 1), job, task.substr(task.find('_') + 1),
                    final.substr(0, space), reasons.count(task) ? reasons.at(task) : "None",
                    final.substr(space + 1));
            }
        } else if (program == "scancel") {
            for (std::size_t i = 1; i < argv.size(); ++i) {
                for (auto it = live.begin(); it != live.end();) {
                    if (it->first == argv[i] || it->first.substr(0, it->first.find('_')) == argv[i]) {
                        finals[it->first] = "CANCELLED 0:15";
                        it = live.erase(it);
                    } else {
                        ++it;
                    }
                }
            }
        }
        return output;
    }
    /// Ends a live task with a final state, as Slurm would.
    void end(const std::string& task, const std::string& final) {
        live.erase(task);
        finals[task] = final;
    }
};

struct Fixture {
    TempDir dir;
    /// The target's time: its waits move it, so poll intervals, graces and pending_timeout pass
    /// exactly and at once, however loaded the machine is.
    test::ManualClock clock;
    FakeSlurm* slurm = nullptr;
    std::unique_ptr<SlurmTarget> target;
    std::string workdir;

    std::vector<std::string> warnings;  ///< what the target told people

    explicit Fixture(std::optional<int> array_limit = 2, double poll_seconds = 0.1,
                     const std::function<void(SlurmOptions&)>& adjust = {}) {
        LocalOptions login_options;
        login_options.workdir_root = dir.path().string();
        auto fake = std::make_unique<FakeSlurm>();
        slurm = fake.get();
        SlurmOptions options;
        options.partition = "debug";
        options.spec.array_limit = array_limit;
        options.spec.time = "00:01:00";
        options.spec.poll_seconds = poll_seconds;
        options.status_grace = std::chrono::milliseconds(50);
        options.shared_check_grace = std::chrono::milliseconds(100);
        options.workdir_root = dir.path().string();
        options.warn = [this](const std::string& message) { warnings.push_back(message); };
        options.clock = &clock;
        if (adjust) adjust(options);
        target = std::make_unique<SlurmTarget>(std::make_unique<LocalTarget>(login_options), std::move(fake),
                                               options);
        workdir = *target->prepare_workdir("sweep-1");
    }
    std::vector<BatchItem> items(int n) const {
        std::vector<BatchItem> out;
        for (int i = 0; i < n; ++i) {
            BatchItem item;
            item.key = fmt::format("exp-{}/rep-0", i + 1);
            item.command.argv = {"/bin/echo", "it's $(x)"};
            item.command.env = {{"NCCL_PROTO", "Simple; rm -rf /"}};
            item.command.batch_key = item.key;
            out.push_back(item);
        }
        return out;
    }
    void write(const std::string& task, const std::string& suffix, const std::string& text) const {
        std::ofstream(workdir + "/slurm/" + task + suffix) << text;
    }
};

/// Polls `process` until it ends (at most 5,000 polls of 20 ms: 100 s on the target's clock);
/// returns the lines read and the final state.
std::pair<std::vector<OutputLine>, PollState> drain(Process& process) {
    std::vector<OutputLine> lines;
    OutputLine line;
    for (int polls = 0; polls < 5000; ++polls) {
        PollState state = process.poll(std::chrono::milliseconds(20), line);
        if (state == PollState::line) {
            lines.push_back(line);
            continue;
        }
        if (state != PollState::timeout) return {lines, state};
    }
    return {lines, PollState::timeout};
}

}  // namespace

TEST_CASE("slurm target: every command of a batch goes out in one sbatch --array with the throttle") {
    Fixture f;
    auto tasks = f.target->submit(f.items(6));
    REQUIRE(tasks);
    CHECK(*tasks == std::vector<std::string>{"100_0", "100_1", "100_2", "100_3", "100_4", "100_5"});
    REQUIRE(f.slurm->count("sbatch") == 1);
    const auto& sbatch = f.slurm->calls.front();
    CHECK(std::find(sbatch.begin(), sbatch.end(), "--array=0-5%2") != sbatch.end());
    CHECK(std::find(sbatch.begin(), sbatch.end(), "--partition=debug") != sbatch.end());
    CHECK(std::find(sbatch.begin(), sbatch.end(), "--time=00:01:00") != sbatch.end());
    CHECK(std::find(sbatch.begin(), sbatch.end(), "--no-requeue") != sbatch.end());
    CHECK(f.target->slots() == 2);
    // The task script: every value single-quoted data, the status written after the command.
    const std::string script = read_file(sbatch.back().substr(0, sbatch.back().rfind('/')) + "/task-0.sh");
    CHECK(script.find("'NCCL_PROTO=Simple; rm -rf /'") != std::string::npos);
    CHECK(script.find("'it'\\''s $(x)'") != std::string::npos);
    CHECK(script.find(".status") != std::string::npos);
}

TEST_CASE("slurm target: a bad variable name is refused before anything is submitted") {
    Fixture f;
    auto items = f.items(1);
    items[0].command.env = {{"BAD NAME", "x"}};
    auto tasks = f.target->submit(items);
    REQUIRE(!tasks);
    CHECK(tasks.error().kind == ErrorKind::bad_input);
    CHECK(f.slurm->count("sbatch") == 0);
}

TEST_CASE("slurm target: sbatch refusing the array is an infrastructure error naming the partition") {
    struct Refusing final : SlurmCommands {
        Result<Output> run(const std::vector<std::string>&) override {
            return Output{1, "", "sbatch: error: invalid partition specified: nope\n"};
        }
    };
    TempDir dir;
    LocalOptions login_options;
    login_options.workdir_root = dir.path().string();
    SlurmOptions options;
    options.partition = "nope";
    SlurmTarget target(std::make_unique<LocalTarget>(login_options), std::make_unique<Refusing>(), options);
    REQUIRE(target.prepare_workdir("sweep-1"));
    BatchItem item;
    item.key = "k";
    item.command.argv = {"/bin/true"};
    auto tasks = target.submit({item});
    REQUIRE(!tasks);
    CHECK(tasks.error().kind == ErrorKind::infrastructure);
    CHECK(tasks.error().message.find("invalid partition specified: nope") != std::string::npos);
}

TEST_CASE("slurm target: a work directory with '%' reaches sbatch's --output as literal text") {
    // sbatch expands %j, %x, ... in --output / --error; an unescaped "runs%x" would send every
    // task's output to a directory named after the job, where files_of never looks.
    TempDir dir;
    LocalOptions login_options;
    login_options.workdir_root = (dir.path() / "runs%x 100%").string();
    auto fake = std::make_unique<FakeSlurm>();
    FakeSlurm* slurm = fake.get();
    SlurmOptions options;
    options.partition = "debug";
    SlurmTarget target(std::make_unique<LocalTarget>(login_options), std::move(fake), options);
    auto workdir = target.prepare_workdir("sweep-1");
    REQUIRE(workdir);
    BatchItem item;
    item.key = "k";
    item.command.argv = {"/bin/true"};
    REQUIRE(target.submit({item}));
    std::string escaped;
    for (char c : *workdir) escaped += c == '%' ? std::string("%%") : std::string(1, c);
    const auto& sbatch = slurm->calls.front();
    CHECK(std::find(sbatch.begin(), sbatch.end(), "--output=" + escaped + "/slurm/%A_%a.out") !=
          sbatch.end());
    CHECK(std::find(sbatch.begin(), sbatch.end(), "--error=" + escaped + "/slurm/%A_%a.err") != sbatch.end());
    CHECK(target.files_of("100_0").out == *workdir + "/slurm/100_0.out");

    // A backslash turns every replacement off: refused before anything is submitted.
    login_options.workdir_root = (dir.path() / "back\\slash").string();
    SlurmTarget refused(std::make_unique<LocalTarget>(login_options), std::make_unique<FakeSlurm>(), options);
    auto bad = refused.prepare_workdir("sweep-1");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().kind == ErrorKind::bad_input);
    CHECK(bad.error().message.find("backslash") != std::string::npos);
    CHECK(bad.error().message.find("target.workdir") != std::string::npos);
}

TEST_CASE("slurm target: one squeue per poll round however many tasks are followed") {
    Fixture f(std::nullopt, 30);
    auto items = f.items(6);
    REQUIRE(f.target->submit(items));
    for (auto& [task, state] : f.slurm->live) {
        state = "RUNNING";
        f.write(task, ".out", "");
    }
    std::vector<std::unique_ptr<Process>> processes;
    for (const auto& item : items) {
        auto process = f.target->start(item.command);
        REQUIRE(process);
        processes.push_back(std::move(*process));
    }
    OutputLine line;
    for (int round = 0; round < 5; ++round)
        for (auto& process : processes)
            CHECK(process->poll(std::chrono::milliseconds(10), line) == PollState::timeout);
    CHECK(f.slurm->count("squeue") <= 1);
    CHECK(f.target->counters().squeue_calls <= 1);
}

TEST_CASE("slurm task: its output lines then its status file end it with that exit status") {
    Fixture f;
    auto items = f.items(1);
    REQUIRE(f.target->submit(items));
    f.slurm->live["100_0"] = "RUNNING";
    f.write("100_0", ".out", "tok_s=12\n");
    f.write("100_0", ".err", "warning: x\n");
    auto process = f.target->start(items[0].command);
    REQUIRE(process);
    CHECK((*process)->scheduler_task() == "100_0");
    f.write("100_0", ".status", "3\n");
    f.slurm->end("100_0", "FAILED 3:0");
    auto [lines, state] = drain(**process);
    REQUIRE(state == PollState::exited);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0].text == "warning: x");
    CHECK(lines[0].stream == Stream::err);
    CHECK(lines[1].text == "tok_s=12");
    CHECK((*process)->exit_info()->exit_code == 3);
    CHECK(!(*process)->scheduler_end());
}

TEST_CASE("slurm task: a status of 128+N is read as signal N") {
    Fixture f;
    auto items = f.items(1);
    REQUIRE(f.target->submit(items));
    f.write("100_0", ".out", "");
    f.write("100_0", ".status", "139\n");
    f.slurm->end("100_0", "FAILED 139:0");
    auto process = f.target->start(items[0].command);
    REQUIRE(process);
    auto [lines, state] = drain(**process);
    REQUIRE(state == PollState::exited);
    CHECK((*process)->exit_info()->signal == 11);
}

TEST_CASE("slurm task: killed at its time limit it exits with the scheduler's end") {
    Fixture f;
    auto items = f.items(1);
    REQUIRE(f.target->submit(items));
    f.write("100_0", ".out", "loading\n");
    auto process = f.target->start(items[0].command);
    REQUIRE(process);
    f.slurm->end("100_0", "TIMEOUT 0:15");
    auto [lines, state] = drain(**process);
    REQUIRE(state == PollState::exited);
    CHECK(lines.size() == 1);
    REQUIRE((*process)->scheduler_end());
    CHECK((*process)->scheduler_end()->state == "TIMEOUT");
    CHECK((*process)->scheduler_end()->message.find("target.slurm.time 00:01:00") != std::string::npos);
    CHECK(f.slurm->count("sacct") == 1);  // no accounting: asked once, then scontrol
    CHECK(f.slurm->count("scontrol") >= 1);
}

TEST_CASE("slurm task: NODE_FAIL and PREEMPTED are lost like a dropped connection") {
    for (const std::string state : {"NODE_FAIL 0:0", "PREEMPTED 0:0", "BOOT_FAIL 0:0"}) {
        Fixture f;
        auto items = f.items(1);
        REQUIRE(f.target->submit(items));
        f.slurm->live["100_0"] = "RUNNING";
        auto process = f.target->start(items[0].command);
        REQUIRE(process);
        f.slurm->end("100_0", state);
        auto [lines, end] = drain(**process);
        CHECK(end == PollState::lost);
        CHECK((*process)->lost_reason().find(state.substr(0, state.find(' '))) != std::string::npos);
    }
}

TEST_CASE("slurm task: a cancel by someone else is lost but our own kill is an exit") {
    Fixture f;
    auto items = f.items(2);
    REQUIRE(f.target->submit(items));
    f.slurm->live["100_0"] = "RUNNING";
    f.slurm->live["100_1"] = "RUNNING";
    auto theirs = f.target->start(items[0].command);
    auto ours = f.target->start(items[1].command);
    REQUIRE(theirs);
    REQUIRE(ours);
    f.slurm->end("100_0", "CANCELLED 0:15");
    CHECK(drain(**theirs).second == PollState::lost);
    CHECK((*theirs)->lost_reason().find("not by this ncclsweep") != std::string::npos);
    (*ours)->kill(std::chrono::milliseconds(0));
    CHECK(f.slurm->calls.back() == std::vector<std::string>{"scancel", "100_1"});
    CHECK(drain(**ours).second == PollState::exited);
    CHECK((*ours)->exit_info()->signal == 15);
}

TEST_CASE("slurm target: a retried command gets a task of its own") {
    Fixture f;
    auto items = f.items(1);
    REQUIRE(f.target->submit(items));
    f.write("100_0", ".out", "");
    REQUIRE(f.target->start(items[0].command));
    f.write("101_0", ".out", "");
    auto again = f.target->start(items[0].command);
    REQUIRE(again);
    CHECK((*again)->scheduler_task() == "101_0");
    CHECK(f.slurm->count("sbatch") == 2);
}

TEST_CASE("slurm target: a resume follows tasks that finished or still run and submits only the rest") {
    Fixture f;
    auto items = f.items(3);
    items[0].previous_task = "50_0";  // finished while ncclsweep was down: it left a status
    items[1].previous_task = "50_1";  // still running
    items[2].previous_task = "50_2";  // never ran (cancelled with the array)
    f.write("50_0", ".status", "0\n");
    f.slurm->live["50_1"] = "RUNNING";
    f.slurm->finals["50_2"] = "CANCELLED 0:15";
    auto tasks = f.target->submit(items);
    REQUIRE(tasks);
    CHECK(*tasks == std::vector<std::string>{"50_0", "50_1", "100_0"});
    CHECK(f.slurm->count("sbatch") == 1);
    CHECK(f.slurm->calls.back().back().find("array.sh") != std::string::npos);
}

TEST_CASE("slurm target: cancel_all cancels every array of the run") {
    Fixture f;
    REQUIRE(f.target->submit(f.items(3)));
    f.target->cancel_all();
    CHECK(f.slurm->calls.back() == std::vector<std::string>{"scancel", "100"});
    CHECK(f.slurm->live.empty());
}

TEST_CASE("slurm task: a status written as Slurm's node failure killed the command is still lost") {
    // The task's shell may outlive the SIGTERM Slurm sends its command and write 143: Slurm's
    // NODE_FAIL, not the signal, says what happened.
    Fixture f;
    auto items = f.items(1);
    REQUIRE(f.target->submit(items));
    f.slurm->live["100_0"] = "RUNNING";
    f.write("100_0", ".out", "");
    auto process = f.target->start(items[0].command);
    REQUIRE(process);
    f.write("100_0", ".status", "143\n");
    f.slurm->end("100_0", "NODE_FAIL 0:15");
    auto [lines, end] = drain(**process);
    CHECK(end == PollState::lost);
    CHECK((*process)->lost_reason().find("NODE_FAIL") != std::string::npos);
}

TEST_CASE(
    "slurm task: Slurm says it completed yet nothing it wrote is here - the work directory is not shared") {
    // The brief's case (COMPLETED, exit 0, no status) and the one a real node gives when the
    // directory does not exist there (recorded: FAILED, Reason=JobLaunchFailure, ExitCode=0:53).
    for (const std::string final : {"COMPLETED 0:0", "FAILED 0:53"}) {
        INFO(final);
        Fixture f;
        auto items = f.items(2);
        REQUIRE(f.target->submit(items));
        f.slurm->live["100_0"] = "RUNNING";
        auto process = f.target->start(items[0].command);
        REQUIRE(process);
        f.slurm->reasons["100_0"] = final.rfind("FAILED", 0) == 0 ? "JobLaunchFailure" : "None";
        f.slurm->end("100_0", final);
        auto [lines, end] = drain(**process);
        REQUIRE(end == PollState::lost);
        const std::string reason = (*process)->lost_reason();
        CHECK(reason.find("Slurm says task 100_0 ended (" + final.substr(0, final.find(' '))) !=
              std::string::npos);
        CHECK(reason.find("on node node3") != std::string::npos);
        CHECK(reason.find(f.workdir + "/slurm/100_0.out") != std::string::npos);
        CHECK(reason.find("The work directory " + f.workdir + " is not on a filesystem that node shares") !=
              std::string::npos);
        CHECK(reason.find("--resume") != std::string::npos);
        // The target halts: the sweep loop stops instead of retrying, and nothing more is submitted.
        auto halt = f.target->halt_reason();
        REQUIRE(halt);
        CHECK(halt->kind == ErrorKind::infrastructure);
        CHECK(halt->message == reason);
        auto retry = f.target->start(items[0].command);
        REQUIRE_FALSE(retry);
        CHECK(retry.error().message == reason);
        auto next = f.target->start(items[1].command);
        REQUIRE_FALSE(next);
        CHECK(f.slurm->count("sbatch") == 1);
    }
}

TEST_CASE(
    "slurm task: output here but no status is Slurm's exit, and files that come late are not a verdict") {
    {
        Fixture f;
        auto items = f.items(1);
        REQUIRE(f.target->submit(items));
        f.write("100_0", ".out", "tok_s=1\n");
        auto process = f.target->start(items[0].command);
        REQUIRE(process);
        f.slurm->end("100_0", "COMPLETED 0:0");
        auto [lines, end] = drain(**process);
        REQUIRE(end == PollState::exited);
        CHECK((*process)->exit_info()->success());
        CHECK(!f.target->halt_reason());
    }
    {
        // The files show up only after Slurm's final word (a filesystem's attribute cache).
        Fixture f(2, 0.1, [](SlurmOptions& o) { o.shared_check_grace = std::chrono::milliseconds(3000); });
        auto items = f.items(1);
        REQUIRE(f.target->submit(items));
        f.slurm->live["100_0"] = "RUNNING";
        auto process = f.target->start(items[0].command);
        REQUIRE(process);
        f.slurm->end("100_0", "COMPLETED 0:0");
        OutputLine line;
        for (int polls = 0; polls < 5000 && f.slurm->count("scontrol") == 0; ++polls)
            REQUIRE((*process)->poll(std::chrono::milliseconds(20), line) == PollState::timeout);
        REQUIRE(f.slurm->count("scontrol") > 0);  // Slurm's final state is known; the files are not here yet
        f.write("100_0", ".out", "tok_s=1\n");
        f.write("100_0", ".status", "0\n");
        auto [lines, end] = drain(**process);
        REQUIRE(end == PollState::exited);
        REQUIRE(lines.size() == 1);
        CHECK(lines[0].text == "tok_s=1");
        CHECK(!f.target->halt_reason());
    }
}

TEST_CASE("slurm target: tasks no node starts are warned about once and cancelled at pending_timeout") {
    Fixture f(2, 0.05, [](SlurmOptions& o) { o.spec.pending_timeout_seconds = 0.4; });
    auto items = f.items(3);
    REQUIRE(f.target->submit(items));
    for (const auto& task : {"100_0", "100_1", "100_2"})
        f.slurm->reasons[task] = "ReqNodeNotAvail, UnavailableNodes:node3";
    const double began = f.clock.seconds();
    auto started = f.target->start(items[0].command);
    REQUIRE_FALSE(started);
    CHECK(f.clock.seconds() - began >= 0.4);  // on the target's clock: not before pending_timeout
    CHECK(started.error().kind == ErrorKind::infrastructure);
    CHECK(started.error().message.find(
              "for 0.4 s (target.slurm.pending_timeout) no node of partition debug started") !=
          std::string::npos);
    CHECK(started.error().message.find("100_[0-2] waited (ReqNodeNotAvail, UnavailableNodes:node3)") !=
          std::string::npos);
    // Warned once (not once per squeue round), naming the tasks and Slurm's reason.
    REQUIRE(f.warnings.size() == 1);
    CHECK(f.warnings[0].find("tasks 100_[0-2] of partition debug pending: ReqNodeNotAvail") !=
          std::string::npos);
    CHECK(f.warnings[0].find("gives up if none of the sweep's tasks runs for 0.4 s") != std::string::npos);
    CHECK(f.slurm->count("squeue") >= 3);
    // The unstarted tasks were cancelled, and the target halts the sweep.
    CHECK(f.slurm->live.empty());
    CHECK(std::find(f.slurm->calls.begin(), f.slurm->calls.end(),
                    std::vector<std::string>{"scancel", "100_0", "100_1", "100_2"}) != f.slurm->calls.end());
    REQUIRE(f.target->halt_reason());
    CHECK(f.target->halt_reason()->message == started.error().message);
    auto next = f.target->start(items[1].command);
    REQUIRE_FALSE(next);
    CHECK(f.slurm->count("sbatch") == 1);
}

TEST_CASE(
    "slurm target: preflight refuses a work directory in this node's memory unless it is the only node") {
    auto on_tmpfs = [](SlurmOptions& o) {
        o.filesystem_of = [](const std::string&) -> Result<FilesystemInfo> {
            return FilesystemInfo{"tmpfs", FilesystemReach::node_memory};
        };
        o.this_host = [] { return std::string("login1"); };
    };
    Fixture f(2, 0.1, on_tmpfs);
    auto refused = f.target->check_before_sweep();
    REQUIRE_FALSE(refused);
    CHECK(refused.error().kind == ErrorKind::bad_input);
    CHECK(refused.error().message.find(f.dir.path().string() + " (target.workdir) is on tmpfs") !=
          std::string::npos);
    CHECK(f.slurm->count("sbatch") == 0);
    REQUIRE(f.slurm->count("sinfo") == 1);
    CHECK(f.slurm->calls.back() ==
          std::vector<std::string>{"sinfo", "--noheader", "--partition=debug", "--format=%N"});
    f.slurm->nodes = "login1";  // a workstation's Slurm: its one node is this host
    auto fine = f.target->check_before_sweep();
    REQUIRE(fine);
    CHECK(fine->warnings.empty());
    REQUIRE(fine->notes.size() == 1);
    CHECK(fine->notes[0].find("the only node of partition debug is this host") != std::string::npos);
}

TEST_CASE("slurm target: preflight creates the work directory root and says where it cannot") {
    TempDir other;
    const std::string root = (other.path() / "a" / "b").string();
    Fixture f(2, 0.1, [&](SlurmOptions& o) {
        o.workdir_root = root;
        o.filesystem_of = [](const std::string&) -> Result<FilesystemInfo> {
            return FilesystemInfo{"nfs", FilesystemReach::shared};
        };
    });
    auto checked = f.target->check_before_sweep();
    REQUIRE(checked);
    CHECK(std::filesystem::is_directory(root));
    CHECK(std::filesystem::is_empty(root));  // the write check left nothing behind
    CHECK(checked->warnings.empty());
    other.write("file", "x");
    Fixture g(2, 0.1, [&](SlurmOptions& o) { o.workdir_root = (other.path() / "file" / "work").string(); });
    auto blocked = g.target->check_before_sweep();
    REQUIRE_FALSE(blocked);
    CHECK(blocked.error().kind == ErrorKind::infrastructure);
    CHECK(blocked.error().message.find("cannot create the work directory root " +
                                       (other.path() / "file" / "work").string()) != std::string::npos);
}
