// Overhead of the Slurm target: N experiments of /bin/true as one job array on a real Slurm
// (SLURM_CONF), run through the sweep loop exactly as `ncclsweep run` does (one submit, the
// watcher per task, a sink per result). Prints ncclsweep's own CPU time per experiment (this
// process; Slurm's client commands it ran are counted apart), squeue calls per poll round, and
// the wall time, which is Slurm's scheduling.
// Usage: bench_slurm [EXPERIMENTS=200] [POLL_SECONDS=2] [ARRAY_LIMIT=16] [PARTITION=debug]
//   bash scripts/test-slurm.sh start /tmp/bench-slurm
//   SLURM_CONF=/tmp/bench-slurm/slurm.conf build/bench/bench_slurm 200
// (figures in docs/benchmarks.md, section "Slurm target")
#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/sweep/sweep.hpp"
#include "core/watch/rule_catalog.hpp"
#include "remote/local_target.hpp"
#include "remote/slurm_target.hpp"

using namespace ncclsweep;

namespace {

double cpu_seconds(int who) {
    struct rusage usage {};
    ::getrusage(who, &usage);
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

struct CountingSink final : ResultSink {
    int finished = 0, ok = 0;
    Result<void> experiment_started(int, int) override { return success(); }
    Result<void> experiment_finished(const ExperimentReport& report) override {
        ++finished;
        ok += report.status == RunStatus::ok ? 1 : 0;
        return success();
    }
};

struct QuietObserver final : SweepObserver {
    void started(const Experiment&, int, int, int) override {}
    void finished(const Experiment&, const ExperimentReport&, int, int) override {}
    void notice(const std::string& message) override { std::fprintf(stderr, "%s\n", message.c_str()); }
};

}  // namespace

int main(int argc, char** argv) {
    const int count = argc > 1 ? std::atoi(argv[1]) : 200;
    const double poll = argc > 2 ? std::atof(argv[2]) : 2.0;
    const int limit = argc > 3 ? std::atoi(argv[3]) : 16;
    const std::string partition = argc > 4 ? argv[4] : "debug";
    if (!std::getenv("SLURM_CONF"))
        std::fprintf(stderr, "bench_slurm: SLURM_CONF is not set; using Slurm's default\n");

    const std::filesystem::path root =
        std::filesystem::temp_directory_path() / fmt::format("bench-slurm-{}", ::getpid());
    remote::LocalOptions login_options;
    login_options.workdir_root = root.string();
    auto login = std::make_unique<remote::LocalTarget>(login_options);
    auto commands = remote::login_node_commands(*login);
    remote::SlurmOptions options;
    options.partition = partition;
    options.spec.array_limit = limit;
    options.spec.time = "00:05:00";
    options.spec.poll_seconds = poll;
    remote::SlurmTarget target(std::move(login), std::move(commands), options);

    std::vector<Experiment> experiments;
    for (int id = 1; id <= count; ++id) {
        Experiment e;
        e.id = id;
        e.key = fmt::format("k{}", id);
        e.canonical = fmt::format("NCCL_PROTO={}", id % 2 ? "LL" : "Simple");
        e.env = {{"NCCL_PROTO", id % 2 ? "LL" : "Simple"}};
        e.argv = {"/bin/true"};
        experiments.push_back(std::move(e));
    }
    SweepRunOptions run;
    run.sweep_name = "bench-slurm";
    run.watcher.timeouts = Timeouts{0, 0, 0, 0};
    auto catalog = RuleCatalog::with_user_rules({});
    if (!catalog) return 2;
    run.catalog = *catalog;
    auto workdir = target.prepare_workdir("sweep-1");
    if (!workdir) {
        std::fprintf(stderr, "bench_slurm: %s\n", workdir.error().message.c_str());
        return 3;
    }
    run.workdir = *workdir;
    CountingSink sink;
    QuietObserver observer;
    std::atomic<bool> stop{false};

    const double self_before = cpu_seconds(RUSAGE_SELF);
    const double children_before = cpu_seconds(RUSAGE_CHILDREN);
    const auto start = std::chrono::steady_clock::now();
    auto summary = run_experiments(target, experiments, sink, observer, run, stop);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double self = cpu_seconds(RUSAGE_SELF) - self_before;
    const double children = cpu_seconds(RUSAGE_CHILDREN) - children_before;
    if (!summary) {
        std::fprintf(stderr, "bench_slurm: %s\n", summary.error().message.c_str());
        return 3;
    }
    const remote::SlurmCounters c = target.counters();
    const double rounds = wall / poll;
    std::printf("experiments            %d (%d ok), array limit %d, poll %.1f s\n", count, sink.ok, limit,
                poll);
    std::printf("wall                   %.1f s (%.3f s per experiment: Slurm's scheduling)\n", wall,
                wall / count);
    std::printf("ncclsweep CPU          %.2f s (%.4f s per experiment)\n", self, self / count);
    std::printf("Slurm client CPU       %.2f s (%.4f s per experiment: sbatch, squeue, scontrol)\n", children,
                children / count);
    std::printf("sbatch calls           %d\n", c.sbatch_calls);
    std::printf("squeue calls           %d in %.0f poll rounds (%.2f per round)\n", c.squeue_calls, rounds,
                rounds > 0 ? c.squeue_calls / rounds : 0.0);
    std::printf("final-state calls      %d (sacct/scontrol)\n", c.final_state_calls);
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
    return sink.ok == count ? 0 : 1;
}
