#include "core/sweep/sweep_session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <set>

#include "core/sweep/inherited_env.hpp"

namespace ncclsweep::inline sweep {
namespace {

/// A resume re-plans from the spec and flags: refused (bad_input, before anything is written)
/// unless the stored points and settings are the ones planned now.
Result<void> check_same_plan(const StoredPlan& stored, const SweepRequest& request, std::int64_t id) {
    std::vector<std::string> differences =
        fingerprint_differences(stored.fingerprint, request.sweep.fingerprint);
    for (auto& d : plan_differences(stored.experiments, request.experiments))
        differences.push_back(std::move(d));
    // What the workload inherits is part of what ran: a resume under another environment would
    // mix two configurations under one record.
    if (stored.inherited_env)
        for (auto& d : inherited_differences(*stored.inherited_env, request.sweep.inherited_env))
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

/// Who holds a work directory, for a second runner's refusal.
std::string holder_of(std::int64_t id, const std::string& uuid, const std::string& database) {
    return fmt::format("sweep {} ({}) of database {}", id, uuid, database.empty() ? "(unnamed)" : database);
}

}  // namespace

std::string new_sweep_uuid() {
    std::random_device random;
    std::string out;
    for (int i = 0; i < 4; ++i) out += fmt::format("{:08x}", static_cast<std::uint32_t>(random()));
    return out;
}

std::string workdir_name(std::int64_t sweep_id, const std::string& uuid) {
    return fmt::format("sweep-{}-{}", sweep_id, uuid);
}

Result<void> check_pythonpath_dir(const std::string& dir, EnvDelivery delivery, const std::string& target) {
    if (delivery == EnvDelivery::env) return success();
    const auto bad = dir.find_first_of(std::string(":\n\0", 3));
    if (bad == std::string::npos) return success();
    const char c = dir[bad];
    return Error::bad_input(fmt::format(
        "the work directory {} on {} contains {}, so it cannot go on PYTHONPATH ({}): the workload would "
        "run without the sweep's settings. Set target.workdir to a path without ':' or newlines (or run "
        "from a directory without them), or use target.env_delivery: env",
        dir, target,
        c == ':'    ? "':'"
        : c == '\n' ? "a newline"
                    : "a NUL byte",
        c == ':' ? "':' separates its entries" : "it cannot be carried there"));
}

Result<SweepOutcome> run_sweep(const SweepRequest& request, Target& target, SweepStore& store,
                               SweepObserver& observer, SweepRunOptions options,
                               const std::atomic<bool>& stop) {
    SweepOutcome outcome;
    outcome.total = static_cast<int>(request.experiments.size());
    std::vector<Experiment> todo;
    std::vector<ExperimentReport> history;
    const bool searching = options.search.has_value();
    std::string uuid = request.sweep.uuid;
    if (request.resume_id) {
        auto stored = store.load_plan(*request.resume_id);
        if (!stored) return stored.error();
        if (auto same = check_same_plan(*stored, request, *request.resume_id); !same) return same.error();
        uuid = stored->uuid;
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
        NewSweep sweep = request.sweep;
        if (sweep.uuid.empty()) sweep.uuid = new_sweep_uuid();
        uuid = sweep.uuid;
        auto id = store.create(sweep, request.experiments);
        if (!id) return id.error();
        outcome.sweep_id = *id;
        for (const auto& [code, message] : request.plan_warnings)
            if (auto noted = store.note(code, message); !noted) return noted.error();
        todo = request.experiments;
    }

    // A sweep recorded without an id (a store that keeps none) still gets a directory of its own.
    if (uuid.empty()) uuid = new_sweep_uuid();
    auto workdir = target.prepare_workdir(workdir_name(outcome.sweep_id, uuid));
    Result<void> ready = workdir ? target.lock_workdir(holder_of(outcome.sweep_id, uuid, request.database))
                                 : Result<void>(workdir.error());
    if (ready) ready = check_pythonpath_dir(*workdir, options.delivery, target.describe());
    if (!ready) {
        (void)store.finish(SweepEnd::failed, ready.error().message);
        return ready.error();
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
