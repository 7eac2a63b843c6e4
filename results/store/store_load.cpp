// Store::load_experiments: three queries (experiments, samples, events) merged in memory, so
// 10,000 experiments x 5 repeats load in one pass each (see docs/benchmarks for figures).
#include <fmt/format.h>

#include <algorithm>

#include "core/plan/baseline.hpp"
#include "results/store/json_columns.hpp"
#include "results/store/store.hpp"

namespace ncclsweep::results {
namespace {

StoredExperiment read_experiment(const sqlite::Statement& s) {
    StoredExperiment stored;
    Experiment& e = stored.experiment;
    e.id = static_cast<int>(s.column_int64(0));
    e.key = s.column_text(1);
    e.canonical = s.column_text(2);
    e.params = detail::assignments_from_json(s.column_text(3));
    e.env = detail::assignments_from_json(s.column_text(4));
    e.workload = detail::assignments_from_json(s.column_text(5));
    e.argv = detail::strings_from_json(s.column_text(6));
    e.shell = s.column_int64(7) != 0;
    ExperimentOutcome& o = stored.outcome;
    o.status = parse_experiment_status(s.column_text(8)).value_or(ExperimentStatus::pending);
    o.failure_class = s.column_text(9);
    o.diagnosis = s.column_text(10);
    o.detected_after_s = s.column_optional_double(11);
    o.effective_nccl = s.column_text(12);
    o.timings.init_s = s.column_optional_double(13);
    o.timings.capture_s = s.column_optional_double(14);
    o.timings.ready_s = s.column_optional_double(15);
    o.timings.measure_s = s.column_optional_double(16);
    o.timings.total_s = s.column_optional_double(17);
    o.exit_code = s.column_optional_int64(18);
    o.exit_signal = s.column_optional_int64(19);
    stored.attempts = static_cast<int>(s.column_int64(20));
    stored.started_at = s.column_text(21);
    stored.ended_at = s.column_text(22);
    return stored;
}

// Index of experiment `exp_id` in `experiments` (sorted by id), or nullptr.
StoredExperiment* find(std::vector<StoredExperiment>& experiments, std::int64_t exp_id, std::size_t& hint) {
    if (hint < experiments.size() && experiments[hint].experiment.id == exp_id) return &experiments[hint];
    const auto it =
        std::lower_bound(experiments.begin(), experiments.end(), exp_id,
                         [](const StoredExperiment& e, std::int64_t id) { return e.experiment.id < id; });
    if (it == experiments.end() || it->experiment.id != exp_id) return nullptr;
    hint = static_cast<std::size_t>(it - experiments.begin());
    return &*it;
}

}  // namespace

Result<std::vector<StoredExperiment>> Store::load_experiments(std::int64_t sweep) {
    const std::string what = fmt::format("loading the experiments of sweep {}", sweep);
    Result<sqlite::Transaction> tx = sqlite::Transaction::begin(m_db, what, sqlite::TransactionKind::read);
    if (!tx) return tx.error();
    Result<sqlite::Statement*> s = m_db.cached(
        "SELECT exp_id, key, canonical, params, env, workload, argv, shell, status, failure_class, "
        "diagnosis, "
        "detected_after_s, effective_nccl, init_s, capture_s, ready_s, measure_s, total_s, exit_code, "
        "exit_signal, "
        "attempts, started_at, ended_at FROM experiments WHERE sweep_id = ?1 ORDER BY exp_id",
        what);
    if (!s) return s.error();
    (*s)->bind(1, sweep);
    std::vector<StoredExperiment> experiments;
    for (;;) {
        Result<bool> row = (*s)->step(what);
        if (!row) return row.error();
        if (!*row) break;
        experiments.push_back(read_experiment(**s));
    }
    // NCCL's defaults point is recognised by the planner's own rule (core/plan/baseline.hpp).
    std::vector<Experiment*> points;
    points.reserve(experiments.size());
    for (auto& stored : experiments) points.push_back(&stored.experiment);
    mark_defaults_points(points);

    Result<sqlite::Statement*> samples = m_db.cached(
        "SELECT exp_id, repeat, metric, value FROM samples WHERE sweep_id = ?1 ORDER BY exp_id, repeat, "
        "metric",
        what);
    if (!samples) return samples.error();
    (*samples)->bind(1, sweep);
    std::size_t hint = 0;
    for (;;) {
        Result<bool> row = (*samples)->step(what);
        if (!row) return row.error();
        if (!*row) break;
        StoredExperiment* owner = find(experiments, (*samples)->column_int64(0), hint);
        if (!owner) continue;  // impossible with foreign keys on; tolerated for old files
        owner->outcome.samples.push_back(Sample{static_cast<int>((*samples)->column_int64(1)),
                                                (*samples)->column_text(2), (*samples)->column_double(3)});
    }

    Result<sqlite::Statement*> events = m_db.cached(
        "SELECT exp_id, at, level, code, message FROM events WHERE sweep_id = ?1 AND exp_id IS NOT NULL "
        "ORDER BY exp_id, id",
        what);
    if (!events) return events.error();
    (*events)->bind(1, sweep);
    hint = 0;
    for (;;) {
        Result<bool> row = (*events)->step(what);
        if (!row) return row.error();
        if (!*row) break;
        StoredExperiment* owner = find(experiments, (*events)->column_int64(0), hint);
        if (!owner) continue;
        if ((*events)->column_text(3) ==
            k_collective_times_event) {  // a field of the outcome, kept as an event
            owner->outcome.collective_times = (*events)->column_text(4);
            continue;
        }
        owner->outcome.events.push_back(
            Event{parse_event_level((*events)->column_text(2)).value_or(EventLevel::warning),
                  (*events)->column_text(3), (*events)->column_text(4), (*events)->column_text(1)});
    }
    return experiments;
}

Result<LoadedSweep> Store::load_sweep(std::string_view ref) {
    auto id = resolve_sweep_ref(ref);
    if (!id) return id.error();
    auto info = get_sweep(*id);
    if (!info) return info.error();
    auto experiments = load_experiments(*id);
    if (!experiments) return experiments.error();
    return LoadedSweep{std::move(*info), std::move(*experiments)};
}

}  // namespace ncclsweep::results
