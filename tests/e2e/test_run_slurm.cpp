// End to end on a real Slurm: each test starts a one-node cluster (scripts/test-slurm.sh) and
// runs the real ncclsweep with `target: slurm://debug` against it: one job array with its
// throttle, each task's own environment, a crash, Slurm's time limit, a node failure, Ctrl-C,
// kill -9 followed by --resume, a work directory the node does not share, and tasks a drained
// node never starts (pending_timeout); every sweep's work directory has a '%' in its path.
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <regex>
#include <set>
#include <thread>

#include "tests/e2e/e2e_support.hpp"
#include "tests/support/catch.hpp"
#include "tests/support/test_slurm.hpp"

using namespace ncclsweep;
using namespace ncclsweep::test;
namespace fs = std::filesystem;

namespace {

/// The sweeps' work directory root, DIR/work%x: '%' starts a replacement in sbatch's --output
/// patterns (%x, the job name), so every task's files are found only if it goes there as text.
fs::path work_root(const TempDir& dir) {
    return dir.path() / "work%x";
}

/// A spec on slurm://debug running `sh TASK {mode}` per experiment, its files under work_root.
std::string slurm_spec(const std::string& name, const TempDir& dir, const fs::path& task,
                       const std::string& slurm, const std::string& axes) {
    return "sweep: " + name + "\n" + "baseline: none\n" +  // these tests are about the transport
           "target:\n"
           "  url: slurm://debug\n"
           "  workdir: " +
           work_root(dir).string() + "\n" + "  slurm: " + slurm + "\n" +
           "workload:\n"
           "  command: [/bin/sh, " +
           task.string() +
           ", \"{mode}\"]\n"
           "  metrics:\n"
           "    tok_s: 'tok_s=([0-9.]+)'\n"
           "axes:\n" +
           axes +
           "timeouts:\n"
           "  stall: 200\n"
           "  total: 300\n";
}

/// Points this test process (and the ncclsweep it starts) at the test cluster.
void use_cluster(const TestSlurm& slurm) {
    ::setenv("SLURM_CONF", slurm.conf.c_str(), 1);
}

fs::path slurm_dir(const TempDir& dir) {
    return sweep_dir(work_root(dir)) / "slurm";
}

int count_files(const fs::path& dir, const std::string& extension) {
    int n = 0;
    if (!fs::exists(dir)) return 0;
    for (const auto& entry : fs::directory_iterator(dir)) n += entry.path().extension() == extension ? 1 : 0;
    return n;
}

/// Whether a task's .out file in `dir` holds `text`.
bool any_out_contains(const fs::path& dir, const std::string& text) {
    if (!fs::exists(dir)) return false;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.path().extension() == ".out" && read_file(entry.path()).find(text) != std::string::npos)
            return true;
    return false;
}

/// Waits up to `limit` for `ready`; false when it never became true.
template <typename F>
bool wait_for(F ready, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (ready()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
}

std::string slurm_scalar(const std::string& db, const std::string& sql) {
    auto rows = sqlite_rows(db, sql);
    return rows.empty() || rows[0].empty() ? "" : rows[0][0];
}

/// After ncclsweep returned: no task of its sweep waits to run. Every task's command has ended
/// (ncclsweep returns on a task's exit status), but Slurm may list a task a little longer while
/// its batch script exits or its node cleans up (RUNNING, COMPLETING; a node that failed under a
/// task reports its end when it comes back), so the queue is then awaited, not read once.
void check_nothing_left(const TestSlurm& slurm) {
    const std::string queue = slurm.queue();
    INFO("squeue when ncclsweep returned:\n" << queue);
    CHECK(queue.find("|PENDING") == std::string::npos);
    CHECK(queue.find("|REQUEUE") == std::string::npos);
    CHECK(wait_for([&] { return slurm.queue().empty(); }, std::chrono::seconds(60)));
}

}  // namespace

TEST_CASE("slurm: six experiments go out as one throttled job array and each task sees its own NCCL values") {
    TestSlurm slurm;
    if (!slurm.available) return;
    use_cluster(slurm);
    TempDir dir;
    auto task =
        dir.write("task.sh",
                  "echo \"start $(date +%s.%N)\"\n"
                  "echo \"proto=$NCCL_PROTO algo=$NCCL_ALGO job=$SLURM_JOB_ID array=$SLURM_ARRAY_JOB_ID "
                  "pythonpath=$PYTHONPATH\"\n"
                  "sleep 1\n"
                  "echo \"end $(date +%s.%N)\"\n"
                  "echo tok_s=1\n");
    auto spec = dir.write(
        "s.yaml",
        slurm_spec("slurm-array", dir, task, "{array_limit: 2, time: \"00:02:00\"}",
                   "  mode: [run]\n  NCCL_PROTO: [LL, LL128, Simple]\n  NCCL_ALGO: [Ring, Tree]\n"));
    std::string db = (dir.path() / "r.db").string();
    auto run = run_ncclsweep({"run", spec.string(), "--db", db});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == 6);
    // One array: every experiment's task is JOB_INDEX of the same job.
    auto rows = sqlite_rows(db, "SELECT exp_id, scheduler_task FROM experiments ORDER BY exp_id");
    REQUIRE(rows.size() == 6);
    const std::string job = rows[0][1].substr(0, rows[0][1].find('_'));
    std::set<std::string> tasks;
    for (const auto& row : rows) {
        CHECK(row[1].substr(0, row[1].find('_')) == job);
        tasks.insert(row[1]);
    }
    CHECK(tasks.size() == 6);
    std::vector<std::pair<double, double>> spans;
    for (const auto& e : experiments) {
        INFO(e.experiment.canonical << ": " << e.outcome.diagnosis);
        CHECK(e.outcome.status == results::ExperimentStatus::ok);
        CHECK(e.outcome.samples.size() == 1);
        const std::string task_id = rows[static_cast<std::size_t>(e.experiment.id - 1)][1];
        const std::string out = read_file(slurm_dir(dir) / (task_id + ".out"));
        INFO(out);
        for (const auto& [name, value] : e.experiment.env)
            CHECK(out.find((name == "NCCL_PROTO" ? "proto=" : "algo=") + value + " ") != std::string::npos);
        CHECK(out.find("job= ") == std::string::npos);
        CHECK(out.find("array=" + job + " ") != std::string::npos);
        // sitecustomize.py delivery: the experiment's directory first on PYTHONPATH.
        CHECK(out.find("pythonpath=" + sweep_dir(work_root(dir)).string() + "/exp-" +
                       std::to_string(e.experiment.id)) != std::string::npos);
        std::smatch m;
        const std::regex times("start ([0-9.]+)[\\s\\S]*end ([0-9.]+)");
        REQUIRE(std::regex_search(out, m, times));
        spans.emplace_back(std::stod(m[1]), std::stod(m[2]));
    }
    // The throttle (%2): never more than two tasks at once.
    for (const auto& [start, end] : spans) {
        const double mid = (start + end) / 2;
        int running = 0;
        for (const auto& [s, e] : spans) running += s <= mid && mid <= e ? 1 : 0;
        CHECK(running <= 2);
    }
    check_nothing_left(slurm);
}

TEST_CASE(
    "slurm: a crash is a failed experiment, a task Slurm ends at its time limit is retried as a new task") {
    TestSlurm slurm;
    if (!slurm.available) return;
    use_cluster(slurm);
    TempDir dir;
    auto task = dir.write("task.sh",
                          "case \"$1\" in\n"
                          "ok) echo tok_s=2 ;;\n"
                          "crash) echo 'Segmentation fault in the workload' >&2; exit 3 ;;\n"
                          "hang) if [ -e '" +
                              (dir.path() / "hung").string() + "' ]; then echo tok_s=4; else : > '" +
                              (dir.path() / "hung").string() +
                              "'; echo started; sleep 300; fi ;;\n"
                              "esac\n");
    // Slurm's smallest time limit is one minute, enforced every 30 s or so: this test takes ~90 s.
    // The "hang" task hangs on its first run only (it leaves a marker), so its retry, a task of
    // its own, succeeds; a limit hit on every attempt is tests/core/test_sweep_session.cpp's.
    auto spec =
        dir.write("s.yaml", slurm_spec("slurm-ends", dir, task, "{array_limit: 3, time: \"1\", poll: 1}",
                                       "  mode: [ok, crash, hang]\n"));
    std::string db = (dir.path() / "r.db").string();
    auto run = run_ncclsweep({"run", spec.string(), "--db", db});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == 3);
    CHECK(experiments[0].outcome.status == results::ExperimentStatus::ok);
    CHECK(experiments[1].outcome.status == results::ExperimentStatus::failed);
    CHECK(experiments[1].outcome.exit_code == 3);
    CHECK(experiments[1].outcome.diagnosis.find("Segmentation fault in the workload") != std::string::npos);
    INFO(experiments[2].outcome.diagnosis);
    CHECK(experiments[2].outcome.status == results::ExperimentStatus::ok);
    CHECK(experiments[2].attempts == 2);
    CHECK(run.err.find("at its time limit") != std::string::npos);
    CHECK(run.err.find("retrying as a new task (attempt 2 of 3)") != std::string::npos);
    // The crash was not retried: one task.
    CHECK(experiments[1].attempts == 1);
    check_nothing_left(slurm);
}

TEST_CASE(
    "slurm: a node failure under a task is retried as infrastructure and the experiment still succeeds") {
    TestSlurm slurm;
    if (!slurm.available) return;
    use_cluster(slurm);
    TempDir dir;
    // The first run hangs (it leaves a marker) until its node goes down, so no timing decides
    // whether the node fails under it; the retry, a task of its own, sees the marker and succeeds.
    const std::string marker = (dir.path() / "ran").string();
    auto task = dir.write("task.sh", "if [ -e '" + marker + "' ]; then echo tok_s=3; else : > '" + marker +
                                         "'; echo started; sleep 300; fi\n");
    auto spec = dir.write(
        "s.yaml", slurm_spec("slurm-node", dir, task, "{time: \"00:02:00\", poll: 0.5}", "  mode: [run]\n"));
    std::string db = (dir.path() / "r.db").string();
    auto run = spawn_ncclsweep(dir.path(), {"run", spec.string(), "--db", db});
    REQUIRE(run.pid > 0);
    // Once the first task runs, its node goes down (Slurm ends the task NODE_FAIL) and comes back.
    REQUIRE(wait_for([&] { return any_out_contains(slurm_dir(dir), "started"); }, std::chrono::seconds(60)));
    const std::string node = slurm.run({"sinfo", "--noheader", "--format=%n"}).out;
    auto down = slurm.run({"scontrol", "update", "NodeName=" + node.substr(0, node.find('\n')), "State=DOWN",
                           "Reason=ncclsweep-test"});
    INFO(down.err);
    REQUIRE(down.exit_code == 0);
    auto done = finish(run);
    INFO(done.err);
    REQUIRE(done.exit_code == 0);
    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == 1);
    CHECK(experiments[0].outcome.status == results::ExperimentStatus::ok);
    CHECK(experiments[0].attempts == 2);
    CHECK(done.err.find("NODE_FAIL") != std::string::npos);
    check_nothing_left(slurm);
}

TEST_CASE("slurm: sitecustomize delivery is proven per task, a non-Python workload is a delivery failure") {
    TestSlurm slurm;
    if (!slurm.available) return;
    use_cluster(slurm);
    TempDir dir;
    const auto seen = dir.path() / "seen";
    auto task = write_delivery_task(dir, seen);
    std::string text = slurm_spec("slurm-delivery", dir, task, "{time: \"00:02:00\"}",
                                  "  NCCL_PROTO: [LL]\n  mode: [py, sh]\n");
    text.replace(text.find("  slurm: "), 0, "  env_delivery: sitecustomize\n");
    auto spec = dir.write("s.yaml", text);
    std::string db = (dir.path() / "r.db").string();
    auto run = run_ncclsweep({"run", spec.string(), "--db", db}, {"NCCL_PROTO=Simple"});
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    check_delivery_sweep(db, seen);
    // The evidence names the Slurm task that wrote it.
    const std::string task_id = slurm_scalar(db, "SELECT scheduler_task FROM experiments WHERE exp_id = 1");
    CHECK(read_file(sweep_dir(work_root(dir)) / "exp-1" / "delivered-0").find(" task=" + task_id + " ") !=
          std::string::npos);
}

TEST_CASE("slurm: Ctrl-C cancels the array's unfinished tasks and the sweep can be resumed") {
    TestSlurm slurm;
    if (!slurm.available) return;
    use_cluster(slurm);
    TempDir dir;
    auto task = dir.write("task.sh", "echo started; sleep 60; echo tok_s=1\n");
    auto spec = dir.write(
        "s.yaml", slurm_spec("slurm-int", dir, task, "{array_limit: 1, time: \"00:02:00\", poll: 0.5}",
                             "  mode: [a, b, c, d]\n"));
    std::string db = (dir.path() / "r.db").string();
    auto run = spawn_ncclsweep(dir.path(), {"run", spec.string(), "--db", db});
    REQUIRE(run.pid > 0);
    REQUIRE(wait_for([&] { return count_files(slurm_dir(dir), ".out") >= 1; }, std::chrono::seconds(60)));
    REQUIRE(wait_for([&] { return !slurm.queue().empty(); }, std::chrono::seconds(30)));
    ::kill(run.pid, SIGINT);
    auto done = finish(run);
    INFO(done.err);
    CHECK(done.exit_code == 3);
    CHECK(done.err.find("--resume") != std::string::npos);
    CHECK(slurm_scalar(db, "SELECT state FROM sweeps") == "interrupted");
    CHECK(wait_for([&] { return slurm.queue().empty(); }, std::chrono::seconds(60)));
    CHECK(slurm_scalar(db, "SELECT count(*) FROM experiments WHERE status = 'ok'") == "0");
}

TEST_CASE("slurm: kill -9 mid-sweep then --resume re-attaches and records each experiment once") {
    TestSlurm slurm;
    if (!slurm.available) return;
    use_cluster(slurm);
    TempDir dir;
    auto task = dir.write("task.sh", "echo started; sleep 2; echo tok_s=1\n");
    auto spec = dir.write(
        "s.yaml", slurm_spec("slurm-kill9", dir, task, "{array_limit: 2, time: \"00:02:00\", poll: 0.5}",
                             "  mode: [a, b, c, d, e, f]\n"));
    std::string db = (dir.path() / "r.db").string();
    auto run = spawn_ncclsweep(dir.path(), {"run", spec.string(), "--db", db});
    REQUIRE(run.pid > 0);
    // (A query that fails, the database not there yet, reads "ERROR ...": atoi makes it 0.)
    REQUIRE(wait_for(
        [&] {
            return std::atoi(
                       slurm_scalar(db, "SELECT count(*) FROM experiments WHERE status = 'ok'").c_str()) >= 1;
        },
        std::chrono::seconds(90)));
    ::kill(run.pid, SIGKILL);
    auto killed = finish(run);
    REQUIRE(killed.exit_code == 128 + SIGKILL);
    const std::string first_job = slurm_scalar(db, "SELECT scheduler_task FROM experiments WHERE exp_id = 1");
    auto resumed = run_ncclsweep({"run", spec.string(), "--db", db, "--resume"});
    INFO(killed.err << "\n--- resume:\n" << resumed.err);
    REQUIRE(resumed.exit_code == 0);
    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == 6);
    for (const auto& e : experiments) {
        INFO(e.experiment.canonical << ": " << e.outcome.diagnosis);
        CHECK(e.outcome.status == results::ExperimentStatus::ok);
        CHECK(e.outcome.samples.size() == 1);
    }
    // Every task ran once: the tasks of the first array were followed again, not run again.
    CHECK(count_files(slurm_dir(dir), ".status") == 6);
    CHECK(slurm_scalar(db, "SELECT count(DISTINCT scheduler_task) FROM experiments") == "6");
    CHECK(slurm_scalar(db, "SELECT count(*) FROM experiments WHERE scheduler_task LIKE '" +
                               first_job.substr(0, first_job.find('_')) + "\\_%' ESCAPE '\\'") == "6");
    CHECK(integrity_check(db) == "ok");
    check_nothing_left(slurm);
}

TEST_CASE("slurm: a work directory the nodes do not share stops the sweep at the first task, resumable") {
    TempDir dir;
    // slurmd, and so every task, sees an empty tmpfs at work_root: a compute node that does not
    // share the work directory with the login node.
    TestSlurm slurm(work_root(dir).string());
    if (!slurm.available) return;
    use_cluster(slurm);
    auto task = dir.write("task.sh", "echo tok_s=1\n");
    auto spec = dir.write(
        "s.yaml", slurm_spec("slurm-unshared", dir, task, "{array_limit: 2, time: \"00:02:00\", poll: 0.5}",
                             "  mode: [a, b, c]\n"));
    std::string db = (dir.path() / "r.db").string();
    auto run = run_ncclsweep({"run", spec.string(), "--db", db});
    INFO(run.err);
    CHECK(run.exit_code == 3);
    const std::string workdir = sweep_dir(work_root(dir)).string();
    CHECK(run.err.find("The work directory " + workdir + " is not on a filesystem that node shares") !=
          std::string::npos);
    CHECK(run.err.find("Set target.workdir") != std::string::npos);
    CHECK(run.err.find("--resume") != std::string::npos);
    // Stopped at once: no retry of the experiment as a lost task, nothing recorded for it.
    CHECK(run.err.find("retrying") == std::string::npos);
    CHECK(slurm_scalar(db,
                       "SELECT count(*) FROM experiments WHERE status IN ('ok', 'failed', 'timed_out', "
                       "'infra_error')") == "0");
    CHECK(wait_for([&] { return slurm.queue().empty(); }, std::chrono::seconds(60)));
}

TEST_CASE(
    "slurm: tasks no node starts are named with Slurm's reason and cancelled at pending_timeout, then "
    "resumed") {
    TestSlurm slurm;
    if (!slurm.available) return;
    use_cluster(slurm);
    TempDir dir;
    const std::string node_line = slurm.run({"sinfo", "--noheader", "--format=%n"}).out;
    const std::string node = node_line.substr(0, node_line.find('\n'));
    auto drain =
        slurm.run({"scontrol", "update", "NodeName=" + node, "State=DRAIN", "Reason=ncclsweep-test"});
    INFO(drain.err);
    REQUIRE(drain.exit_code == 0);
    auto task = dir.write("task.sh", "echo tok_s=1\n");
    auto spec =
        dir.write("s.yaml", slurm_spec("slurm-pending", dir, task,
                                       "{array_limit: 2, time: \"00:02:00\", poll: 0.5, pending_timeout: 8}",
                                       "  mode: [a, b]\n"));
    std::string db = (dir.path() / "r.db").string();
    // 8 s: with 4 s this test failed once (of four full runs) when it ran in the suite's busiest
    // first minutes on 2 cores, and passed alone and beside the other Slurm tests; its output was
    // not kept. The likely cause: Slurm names a drained node as a task's reason only at a
    // scheduling pass, and a 4 s timeout can end the wait before one has run.
    auto run = run_ncclsweep({"run", spec.string(), "--db", db});
    INFO(run.err);
    CHECK(run.exit_code == 3);
    // Warned once, with the tasks and Slurm's own words: 22.05 says ReqNodeNotAvail, then its
    // description ("Nodes required for job are DOWN, DRAINED or ..."), which is not news.
    const std::string warned = "_[0-1] of partition debug pending: ";
    const auto first = run.err.find(warned);
    REQUIRE(first != std::string::npos);
    CHECK(run.err.find(warned, first + 1) == std::string::npos);
    const std::string reason = run.err.substr(first + warned.size(), 40);
    CHECK(
        (reason.rfind("ReqNodeNotAvail", 0) == 0 || reason.rfind("Nodes required for job are DOWN", 0) == 0));
    CHECK(run.err.find("for 8 s (target.slurm.pending_timeout) no node of partition debug started") !=
          std::string::npos);
    CHECK(run.err.find("--resume") != std::string::npos);
    CHECK(slurm_scalar(db,
                       "SELECT count(*) FROM experiments WHERE status IN ('ok', 'failed', 'timed_out', "
                       "'infra_error')") == "0");
    CHECK(wait_for([&] { return slurm.queue().empty(); }, std::chrono::seconds(60)));
    // The node comes back: the resumed sweep submits what never ran and finishes.
    auto resume_node = slurm.run({"scontrol", "update", "NodeName=" + node, "State=RESUME"});
    INFO(resume_node.err);
    REQUIRE(resume_node.exit_code == 0);
    // A CI run on 2 busy cores failed here: right after RESUME the resumed tasks were held with
    // "Nodes required for job are DOWN, DRAINED or ..." past the 8 s pending_timeout (what sinfo
    // said then was not kept). RESUME returns before the node is usable when Slurm has not yet
    // put it back (a node marked not responding meanwhile waits for slurmd to register again):
    // the sweep starts once sinfo says the node is idle, and a failure shows sinfo's last word.
    std::string state;
    const bool idle = wait_for(
        [&] {
            state = slurm.run({"sinfo", "--noheader", "--nodes=" + node, "--format=%t"}).out;
            return state.rfind("idle", 0) == 0;
        },
        std::chrono::seconds(60));
    INFO("the node's state after RESUME: " << state);
    REQUIRE(idle);
    auto resumed = run_ncclsweep({"run", spec.string(), "--db", db, "--resume"});
    INFO(resumed.err);
    REQUIRE(resumed.exit_code == 0);
    auto experiments = latest_experiments(db);
    REQUIRE(experiments.size() == 2);
    for (const auto& e : experiments) CHECK(e.outcome.status == results::ExperimentStatus::ok);
    check_nothing_left(slurm);
}
