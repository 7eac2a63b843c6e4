// PendingWatch on its own, with squeue answers built by hand and a fake clock: which reasons
// are worth a warning, that a reason is said once per change, and that pending_timeout counts
// only the time in which none of the sweep's tasks runs.
#include <chrono>

#include "remote/slurm_pending.hpp"
#include "tests/support/catch.hpp"

using namespace ncclsweep::remote;
using namespace std::chrono_literals;

namespace {

std::map<std::string, QueuedTask> queue_of(std::initializer_list<std::pair<const char*, QueuedTask>> tasks) {
    std::map<std::string, QueuedTask> queue;
    for (const auto& [task, entry] : tasks) queue[task] = entry;
    return queue;
}

const QueuedTask k_drained{"PENDING", "ReqNodeNotAvail, UnavailableNodes:node7"};
const QueuedTask k_busy{"PENDING", "Resources"};
const QueuedTask k_running{"RUNNING", "None"};

}  // namespace

TEST_CASE("slurm pending: reasons of a queue that moves are quiet, reasons that need a person are not") {
    for (const char* moves :
         {"None", "Priority", "Resources", "JobArrayTaskLimit", "BeginTime", "Dependency", "AssocGrpGRES",
          "QOSGrpCpuLimit", "QOSMaxJobsPerUserLimit", "AssocMaxJobsLimit", "MaxCpuPerAccount", ""}) {
        INFO(moves);
        CHECK(pending_reason_clears_itself(moves));
    }
    for (const char* stuck :
         {"ReqNodeNotAvail", "ReqNodeNotAvail, UnavailableNodes:node[1-4]", "PartitionNodeLimit",
          "PartitionTimeLimit", "BadConstraints", "PartitionDown", "PartitionInactive", "InvalidAccount",
          "InvalidQOS", "AccountNotAllowed", "QOSNotAllowed", "JobHeldAdmin", "JobHeldUser",
          "DependencyNeverSatisfied", "QOSMaxWallDurationPerJobLimit", "AssocMaxNodesPerJobLimit",
          // Slurm 22.05 prints this description for ReqNodeNotAvail (recorded on a drained node)
          "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions",
          "Resources are odd"}) {
        INFO(stuck);
        CHECK_FALSE(pending_reason_clears_itself(stuck));
    }
}

TEST_CASE("slurm pending: task ids are grouped by job and range as Slurm writes them") {
    CHECK(compact_tasks({"7_0", "7_1", "7_2", "7_5", "8_0"}) == "7_[0-2,5] 8_0");
    CHECK(compact_tasks({"7_10", "7_9", "7_2"}) == "7_[2,9-10]");
    CHECK(compact_tasks({"12_3"}) == "12_3");
    CHECK(compact_tasks({}).empty());
}

TEST_CASE("slurm pending: a reason that needs a person is warned about once per change, naming the tasks") {
    PendingWatch watch("gpu", std::nullopt);
    const auto t0 = PendingWatch::Clock::time_point{} + 1h;
    auto first = watch.update(
        queue_of({{"7_0", k_drained}, {"7_1", k_drained}, {"7_2", k_drained}, {"7_3", k_busy}}), t0);
    REQUIRE(first.warnings.size() == 1);
    CHECK(first.warnings[0].find(
              "tasks 7_[0-2] of partition gpu pending: ReqNodeNotAvail, UnavailableNodes:node7") !=
          std::string::npos);
    CHECK(first.warnings[0].find("keeps waiting") != std::string::npos);
    CHECK(first.warnings[0].find("scontrol show job 7") != std::string::npos);
    CHECK(!first.expired);
    // The same reasons again: nothing new to say.
    CHECK(watch
              .update(queue_of({{"7_0", k_drained}, {"7_1", k_drained}, {"7_2", k_drained}, {"7_3", k_busy}}),
                      t0 + 2s)
              .warnings.empty());
    // Reworded is not changed: other node details, or Slurm's description of ReqNodeNotAvail
    // (slurm-wlm 22.05 shows the code first, then this, for tasks on a drained node).
    const QueuedTask described{
        "PENDING",
        "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions"};
    CHECK(watch
              .update(queue_of({{"7_0", {"PENDING", "ReqNodeNotAvail, UnavailableNodes:node[7-8]"}},
                                {"7_1", described},
                                {"7_2", k_drained},
                                {"7_3", k_busy}}),
                      t0 + 3s)
              .warnings.empty());
    // One task's reason changes to another that needs a person; another's to a normal one.
    auto changed = watch.update(
        queue_of(
            {{"7_0", k_drained}, {"7_1", {"PENDING", "PartitionDown"}}, {"7_2", k_busy}, {"7_3", k_busy}}),
        t0 + 4s);
    REQUIRE(changed.warnings.size() == 1);
    CHECK(changed.warnings[0].find("task 7_1 of partition gpu pending: PartitionDown") != std::string::npos);
    // Back to the first reason after a normal one: said again, it is news.
    auto again = watch.update(queue_of({{"7_2", k_drained}}), t0 + 6s);
    REQUIRE(again.warnings.size() == 1);
    CHECK(again.warnings[0].find("task 7_2 ") != std::string::npos);
}

TEST_CASE("slurm pending: the timeout counts only while tasks wait and none of the sweep's runs") {
    PendingWatch watch("debug", std::chrono::milliseconds(5000));
    const auto t0 = PendingWatch::Clock::time_point{} + 1h;
    CHECK(!watch.update(queue_of({{"9_0", k_busy}, {"9_1", k_busy}}), t0).expired);
    CHECK(!watch.update(queue_of({{"9_0", k_busy}, {"9_1", k_busy}}), t0 + 4900ms).expired);
    // One of ours runs: the clock starts again when none does.
    CHECK(!watch.update(queue_of({{"9_0", k_running}, {"9_1", k_busy}}), t0 + 5500ms).expired);
    CHECK(!watch.update(queue_of({{"9_1", k_drained}}), t0 + 8s).expired);
    CHECK(!watch.update(queue_of({{"9_1", k_drained}}), t0 + 12900ms).expired);
    auto expired = watch.update(queue_of({{"9_1", k_drained}, {"10_0", k_busy}}), t0 + 13s);
    REQUIRE(expired.expired);
    CHECK(expired.stuck == std::vector<std::string>{"10_0", "9_1"});
    CHECK(
        expired.expired->find("for 5 s (target.slurm.pending_timeout) no node of partition debug started") !=
        std::string::npos);
    CHECK(expired.expired->find("10_0 9_1 waited (ReqNodeNotAvail, UnavailableNodes:node7; Resources)") !=
          std::string::npos);
    CHECK(expired.expired->find("--resume") != std::string::npos);
    // Said once.
    CHECK(!watch.update(queue_of({{"9_1", k_drained}}), t0 + 20s).expired);
}

TEST_CASE("slurm pending: without a timeout tasks may wait as long as Slurm makes them") {
    PendingWatch watch("debug", std::nullopt);
    const auto t0 = PendingWatch::Clock::time_point{} + 1h;
    CHECK(!watch.update(queue_of({{"9_0", k_drained}}), t0).expired);
    CHECK(!watch.update(queue_of({{"9_0", k_drained}}), t0 + 48h).expired);
}
