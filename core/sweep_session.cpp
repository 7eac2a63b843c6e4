#include "core/sweep_session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace ncclsweep {
namespace {

/// A resume re-plans from the spec: the stored experiments must be the same points.
Result<void> check_same_plan(const std::vector<Experiment>& stored, const std::vector<Experiment>& planned,
                             std::int64_t id) {
    if (stored.size() != planned.size())
        return Error::bad_input(fmt::format(
            "sweep {} has {} experiments but the spec now plans {}: the spec or its overrides changed since it "
            "started; run it as a new sweep (without --resume)",
            id, stored.size(), planned.size()));
    for (std::size_t i = 0; i < stored.size(); ++i)
        if (stored[i].id != planned[i].id || stored[i].key != planned[i].key)
            return Error::bad_input(fmt::format(
                "experiment {} of sweep {} is {} but the spec now plans {}: the spec or its overrides changed "
                "since the sweep started; run it as a new sweep (without --resume)",
                stored[i].id, id, stored[i].canonical, planned[i].canonical));
    return success();
}

}  // namespace

Result<SweepOutcome> run_sweep(const SweepRequest& request, Target& target, SweepStore& store,
                               SweepObserver& observer, SweepRunOptions options, const std::atomic<bool>& stop) {
    SweepOutcome outcome;
    outcome.total = static_cast<int>(request.experiments.size());
    std::vector<Experiment> todo;
    if (request.resume_id) {
        auto stored = store.resume(*request.resume_id);
        if (!stored) return stored.error();
        if (auto same = check_same_plan(*stored, request.experiments, *request.resume_id); !same) return same.error();
        auto finished = store.finished_ids();
        if (!finished) return finished.error();
        std::set<int> done(finished->begin(), finished->end());
        for (const auto& experiment : request.experiments)
            if (!done.count(experiment.id)) todo.push_back(experiment);
        outcome.sweep_id = *request.resume_id;
        outcome.skipped_finished = static_cast<int>(done.size());
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
    auto ran = run_experiments(target, todo, store, observer, options, stop);
    if (!ran) {
        (void)store.finish(SweepEnd::failed, ran.error().message);
        return ran.error();
    }
    outcome.summary = *ran;
    if (ran->interrupted) {
        if (auto f = store.finish(SweepEnd::interrupted, "stopped by the user (interrupt)"); !f) return f.error();
    } else {
        if (auto f = store.finish(SweepEnd::done, ""); !f) return f.error();
    }
    return outcome;
}

}  // namespace ncclsweep
