#include "core/sweep/sweep_session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace ncclsweep::inline sweep {
namespace {

/// A resume re-plans from the spec and flags: refused (bad_input, before anything is written)
/// unless the stored points and settings are the ones planned now.
Result<void> check_same_plan(const StoredPlan& stored, const SweepRequest& request, std::int64_t id) {
    std::vector<std::string> differences =
        fingerprint_differences(stored.fingerprint, request.sweep.fingerprint);
    for (auto& d : plan_differences(stored.experiments, request.experiments))
        differences.push_back(std::move(d));
    if (differences.empty()) return success();
    std::string list;
    for (const auto& d : differences) list += "\n  - " + d;
    std::string how = stored.fingerprint.command_line.empty()
                          ? std::string("resume it with the spec and flags it started with")
                          : fmt::format("resume it with the command it started with: {} --resume {}",
                                        stored.fingerprint.command_line, id);
    return Error::bad_input(
        fmt::format("refusing to resume sweep {}: it would mix configurations; what differs from when it "
                    "started:{}\n{}, or run "
                    "it as a new sweep (without --resume); nothing was changed in the database",
                    id, list, how));
}

}  // namespace

Result<SweepOutcome> run_sweep(const SweepRequest& request, Target& target, SweepStore& store,
                               SweepObserver& observer, SweepRunOptions options,
                               const std::atomic<bool>& stop) {
    SweepOutcome outcome;
    outcome.total = static_cast<int>(request.experiments.size());
    std::vector<Experiment> todo;
    std::vector<ExperimentReport> history;
    const bool searching = options.search.has_value();
    if (request.resume_id) {
        auto stored = store.load_plan(*request.resume_id);
        if (!stored) return stored.error();
        if (auto same = check_same_plan(*stored, request, *request.resume_id); !same) return same.error();
        if (auto reopened = store.reopen(*request.resume_id); !reopened) return reopened.error();
        auto finished = store.finished_ids();
        if (!finished) return finished.error();
        std::set<int> done(finished->begin(), finished->end());
        if (searching) {
            // The search sees every point and what each showed; it decides what still runs.
            auto reports = store.finished_reports();
            if (!reports) return reports.error();
            history = std::move(*reports);
            todo = request.experiments;
        } else {
            for (const auto& experiment : request.experiments)
                if (!done.count(experiment.id)) todo.push_back(experiment);
        }
        outcome.sweep_id = *request.resume_id;
        outcome.skipped_finished = static_cast<int>(done.size());
        auto tasks = store.scheduled_tasks();
        if (!tasks) return tasks.error();
        options.previous_tasks = std::move(*tasks);
    } else {
        auto id = store.create(request.sweep, request.experiments);
        if (!id) return id.error();
        outcome.sweep_id = *id;
        for (const auto& [code, message] : request.plan_warnings)
            if (auto noted = store.note(code, message); !noted) return noted.error();
        todo = request.experiments;
    }

    auto workdir = target.prepare_workdir(fmt::format("sweep-{}", outcome.sweep_id));
    if (!workdir) {
        (void)store.finish(SweepEnd::failed, workdir.error().message);
        return workdir.error();
    }
    options.workdir = *workdir;
    // A search decides each run from the results before it; the full product may run points at
    // once (a pool, a batch scheduler).
    auto ran = options.search ? run_search(target, todo, history, store, observer, options, stop)
                              : run_experiments(target, todo, store, observer, options, stop);
    if (!ran) {
        (void)store.finish(SweepEnd::failed, ran.error().message);
        return ran.error();
    }
    outcome.summary = *ran;
    if (ran->interrupted) {
        if (auto f = store.finish(SweepEnd::interrupted, "stopped by the user (interrupt)"); !f)
            return f.error();
    } else if (ran->budget_spent) {
        if (auto f = store.finish(SweepEnd::interrupted, ran->search_end); !f) return f.error();
    } else {
        if (auto f = store.finish(SweepEnd::done, ""); !f) return f.error();
    }
    return outcome;
}

SweepEnding ending_of(const SweepOutcome& outcome) {
    if (outcome.summary.interrupted) return SweepEnding::interrupted;
    if (outcome.summary.ran > 0 && outcome.summary.ok == 0 && outcome.skipped_finished == 0)
        return SweepEnding::nothing_succeeded;
    return SweepEnding::done;
}

}  // namespace ncclsweep::inline sweep
