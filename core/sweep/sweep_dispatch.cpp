// The sweep loop's dispatcher: a batch target gets every experiment x repeat in one submit,
// then the experiments run one at a time, or up to target.slots() at once on worker threads.
// The sink and the observer are only ever called by one thread at a time (the store has one
// writer).
#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "core/sweep/sweep.hpp"
#include "core/sweep/sweep_detail.hpp"

namespace ncclsweep::inline sweep {
namespace {
using detail::Batched;
using detail::ExperimentEnd;

/// A ResultSink that lets one caller through at a time.
class LockedSink final : public ResultSink {
public:
    LockedSink(ResultSink& sink, std::mutex& mutex) : m_sink(sink), m_mutex(mutex) {}
    Result<void> experiment_started(int exp_id, int attempt) override {
        std::lock_guard lock(m_mutex);
        return m_sink.experiment_started(exp_id, attempt);
    }
    Result<void> experiment_finished(const ExperimentReport& report) override {
        std::lock_guard lock(m_mutex);
        return m_sink.experiment_finished(report);
    }
    Result<void> experiment_scheduled(int exp_id, const std::string& tasks) override {
        std::lock_guard lock(m_mutex);
        return m_sink.experiment_scheduled(exp_id, tasks);
    }

private:
    ResultSink& m_sink;
    std::mutex& m_mutex;
};

/// A SweepObserver that lets one caller through at a time.
class LockedObserver final : public SweepObserver {
public:
    LockedObserver(SweepObserver& observer, std::mutex& mutex) : m_observer(observer), m_mutex(mutex) {}
    void started(const Experiment& experiment, int index, int total, int repeat) override {
        std::lock_guard lock(m_mutex);
        m_observer.started(experiment, index, total, repeat);
    }
    void finished(const Experiment& experiment, const ExperimentReport& report, int index,
                  int total) override {
        std::lock_guard lock(m_mutex);
        m_observer.finished(experiment, report, index, total);
    }
    void notice(const std::string& message) override {
        std::lock_guard lock(m_mutex);
        m_observer.notice(message);
    }

private:
    SweepObserver& m_observer;
    std::mutex& m_mutex;
};

std::vector<std::string> split_words(const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> words;
    for (std::string word; in >> word;) words.push_back(word);
    return words;
}

/// Delivers every experiment's files and hands all experiment x repeat commands to the batch
/// target at once; records the task ids it gives each experiment. An experiment whose files
/// cannot be rendered is left out (its attempt records that failure).
Result<void> submit_batch(Target& target, const std::vector<Experiment>& experiments, ResultSink& sink,
                          const SweepRunOptions& options) {
    std::vector<BatchItem> items;
    std::vector<int> owners;  // experiment id of each item
    const int repeats = std::max(1, options.repeats);
    for (const auto& experiment : experiments) {
        auto dir = detail::deliver(target, experiment, options);
        if (!dir) {
            if (dir.error().kind == ErrorKind::infrastructure) return dir.error();
            continue;
        }
        auto previous = options.previous_tasks.find(experiment.id);
        const std::vector<std::string> before = previous == options.previous_tasks.end()
                                                    ? std::vector<std::string>{}
                                                    : split_words(previous->second);
        for (int repeat = 0; repeat < repeats; ++repeat) {
            BatchItem item;
            item.command = detail::command_for(experiment.argv, experiment, *dir, options.delivery, repeat,
                                               Batched::yes, options.extra_env);
            item.key = item.command.batch_key;
            if (static_cast<std::size_t>(repeat) < before.size())
                item.previous_task = before[static_cast<std::size_t>(repeat)];
            items.push_back(std::move(item));
            owners.push_back(experiment.id);
        }
    }
    if (items.empty()) return success();
    auto tasks = target.submit(items);
    if (!tasks) return tasks.error();
    if (tasks->size() != items.size())
        return Error::internal(
            fmt::format("{} gave {} tasks for {} commands", target.describe(), tasks->size(), items.size()));
    std::string joined;
    for (std::size_t i = 0; i < items.size(); ++i) {
        joined += (joined.empty() ? "" : " ") + (*tasks)[i];
        if (i + 1 == items.size() || owners[i + 1] != owners[i]) {
            if (auto noted = sink.experiment_scheduled(owners[i], joined); !noted) return noted.error();
            joined.clear();
        }
    }
    return success();
}

void count_outcome(SweepRunSummary& summary, const detail::ExperimentRun& run) {
    const ExperimentReport& report = run.report;
    summary.runs += run.runs;
    ++summary.ran;
    if (report.status == RunStatus::ok)
        ++summary.ok;
    else
        ++summary.failed;
}

/// One experiment after another on slot 0.
Result<SweepRunSummary> run_in_order(Target& target, const std::vector<Experiment>& experiments,
                                     ResultSink& sink, SweepObserver& observer,
                                     const SweepRunOptions& options, const std::atomic<bool>& stop,
                                     Batched batched) {
    SweepRunSummary summary;
    const int total = static_cast<int>(experiments.size());
    Target& host = target.slot_target(0);
    std::vector<long> previous_groups;
    for (int index = 0; index < total; ++index) {
        const Experiment& experiment = experiments[static_cast<std::size_t>(index)];
        if (stop.load()) {
            summary.interrupted = true;
            return summary;
        }
        if (options.before_experiment)
            if (auto ready = options.before_experiment(previous_groups); !ready) return ready.error();
        previous_groups.clear();
        auto run = detail::run_experiment(host, experiment, index + 1, total, sink, observer, options, stop,
                                          previous_groups, batched);
        if (!run) return run.error();
        if (run->end == ExperimentEnd::interrupted) {
            summary.interrupted = true;
            return summary;
        }
        count_outcome(summary, *run);
        observer.finished(experiment, run->report, index + 1, total);
    }
    return summary;
}

/// Up to `slots` experiments at once, one worker thread per slot taking the next experiment in
/// plan order. The first error (or `stop`) halts every worker: running experiments are killed.
Result<SweepRunSummary> run_concurrently(Target& target, int slots,
                                         const std::vector<Experiment>& experiments, ResultSink& sink,
                                         SweepObserver& observer, const SweepRunOptions& options,
                                         const std::atomic<bool>& stop, Batched batched) {
    std::mutex sink_mutex;
    std::mutex state_mutex;
    std::condition_variable workers_done;
    LockedSink locked_sink(sink, sink_mutex);
    LockedObserver locked_observer(observer, sink_mutex);
    SweepRunSummary summary;
    std::optional<Error> first_error;
    std::atomic<bool> halt{false};
    std::size_t next = 0;
    int running = slots;
    const int total = static_cast<int>(experiments.size());
    auto worker = [&](int slot) {
        Target& host = target.slot_target(slot);
        std::vector<long> previous_groups;
        for (;;) {
            std::size_t index = 0;
            {
                std::lock_guard lock(state_mutex);
                if (halt.load() || next >= experiments.size()) break;
                index = next++;
            }
            const Experiment& experiment = experiments[index];
            if (options.before_experiment) {
                if (auto ready = options.before_experiment(previous_groups); !ready) {
                    std::lock_guard lock(state_mutex);
                    if (!first_error) first_error = ready.error();
                    halt = true;
                    break;
                }
            }
            previous_groups.clear();
            auto run =
                detail::run_experiment(host, experiment, static_cast<int>(index) + 1, total, locked_sink,
                                       locked_observer, options, halt, previous_groups, batched);
            std::lock_guard lock(state_mutex);
            if (!run) {
                if (!first_error) first_error = run.error();
                halt = true;
                break;
            }
            if (run->end == ExperimentEnd::interrupted) break;
            count_outcome(summary, *run);
            locked_observer.finished(experiment, run->report, static_cast<int>(index) + 1, total);
        }
        std::lock_guard lock(state_mutex);
        if (--running == 0) workers_done.notify_all();
    };
    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(slots));
    for (int slot = 0; slot < slots; ++slot) threads.emplace_back(worker, slot);
    {
        std::unique_lock lock(state_mutex);
        while (running > 0) {
            if (stop.load()) halt = true;
            workers_done.wait_for(lock, std::chrono::milliseconds(20));
        }
    }
    for (auto& thread : threads) thread.join();
    if (first_error) return *first_error;
    if (stop.load()) summary.interrupted = true;
    return summary;
}

}  // namespace

Result<SweepRunSummary> run_experiments(Target& target, const std::vector<Experiment>& experiments,
                                        ResultSink& sink, SweepObserver& observer,
                                        const SweepRunOptions& options, const std::atomic<bool>& stop) {
    Batched batched = Batched::no;
    if (target.schedules_batches() && !experiments.empty() && !stop.load()) {
        if (auto submitted = submit_batch(target, experiments, sink, options); !submitted) {
            target.cancel_all();
            return submitted.error();
        }
        batched = Batched::yes;
    }
    const int slots = std::clamp(target.slots(), 1, std::max(1, static_cast<int>(experiments.size())));
    auto summary = slots == 1
                       ? run_in_order(target, experiments, sink, observer, options, stop, batched)
                       : run_concurrently(target, slots, experiments, sink, observer, options, stop, batched);
    if (!summary || summary->interrupted) target.cancel_all();
    return summary;
}

}  // namespace ncclsweep::inline sweep
