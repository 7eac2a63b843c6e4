#include "results/store/sweep_writer.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ncclsweep::results {

ExperimentOutcome to_outcome(const ExperimentReport& report) {
    ExperimentOutcome outcome;
    switch (report.status) {
        case RunStatus::ok:
            outcome.status = ExperimentStatus::ok;
            break;
        case RunStatus::failed:
            outcome.status = ExperimentStatus::failed;
            break;
        case RunStatus::timed_out:
            outcome.status = ExperimentStatus::timed_out;
            break;
        case RunStatus::infra_error:
            outcome.status = ExperimentStatus::infra_error;
            break;
        case RunStatus::pruned:
            outcome.status = ExperimentStatus::pruned;
            break;
        case RunStatus::dropped:
            outcome.status = ExperimentStatus::dropped;
            break;
    }
    outcome.failure_class = report.failure_class;
    outcome.diagnosis = report.diagnosis;
    outcome.detected_after_s = report.detected_after_s;
    outcome.effective_nccl = report.effective_nccl;
    outcome.collective_times = report.collective_times;
    outcome.timings.init_s = report.init_s;
    outcome.timings.capture_s = report.capture_s;
    outcome.timings.ready_s = report.ready_s;
    outcome.timings.measure_s = report.measure_s;
    outcome.timings.total_s = report.total_s;
    if (report.exit_code) outcome.exit_code = *report.exit_code;
    if (report.exit_signal) outcome.exit_signal = *report.exit_signal;
    for (const auto& s : report.samples) outcome.samples.push_back(Sample{s.repeat, s.metric, s.value});
    for (const auto& [rule, line] : report.warnings)
        outcome.events.push_back(Event{EventLevel::warning, rule, line, {}});
    return outcome;
}

std::optional<ExperimentReport> to_report(const StoredExperiment& stored) {
    const ExperimentOutcome& o = stored.outcome;
    ExperimentReport report;
    switch (o.status) {
        case ExperimentStatus::ok:
            report.status = RunStatus::ok;
            break;
        case ExperimentStatus::failed:
            report.status = RunStatus::failed;
            break;
        case ExperimentStatus::timed_out:
            report.status = RunStatus::timed_out;
            break;
        case ExperimentStatus::pruned:
            report.status = RunStatus::pruned;
            break;
        case ExperimentStatus::dropped:
            report.status = RunStatus::dropped;
            break;
        case ExperimentStatus::skipped:
            report.status = RunStatus::pruned;
            break;
        case ExperimentStatus::pending:
        case ExperimentStatus::running:
        case ExperimentStatus::infra_error:
            return std::nullopt;
    }
    report.exp_id = stored.experiment.id;
    report.failure_class = o.failure_class;
    report.diagnosis = o.diagnosis;
    report.detected_after_s = o.detected_after_s;
    report.effective_nccl = o.effective_nccl;
    report.collective_times = o.collective_times;
    report.init_s = o.timings.init_s;
    report.capture_s = o.timings.capture_s;
    report.ready_s = o.timings.ready_s;
    report.measure_s = o.timings.measure_s;
    report.total_s = o.timings.total_s;
    if (o.exit_code) report.exit_code = static_cast<int>(*o.exit_code);
    if (o.exit_signal) report.exit_signal = static_cast<int>(*o.exit_signal);
    report.attempts = std::max(1, stored.attempts);
    for (const auto& s : o.samples) report.samples.push_back(SampleValue{s.repeat, s.metric, s.value});
    return report;
}

Result<std::int64_t> SweepWriter::create(const NewSweep& sweep, const std::vector<Experiment>& experiments) {
    SweepRecord record;
    record.name = sweep.name;
    record.tag = sweep.tag;
    record.spec_path = sweep.spec_path;
    record.spec_text = sweep.spec_text;
    record.target = sweep.target;
    record.host_preflight = sweep.preflight_json;
    record.tool_version = sweep.tool_version;
    record.repeats = sweep.repeats;
    record.plan_fingerprint = sweep.fingerprint.to_json();
    record.metrics = sweep.metrics;
    record.backend = sweep.backend;
    // The sweep and its plan in one transaction: a crash leaves both or neither.
    auto id = m_store.create_sweep(record, experiments);
    if (!id) return id.error();
    m_sweep = *id;
    return m_sweep;
}

Result<StoredPlan> SweepWriter::load_plan(std::int64_t id) {
    auto info = m_store.get_sweep(id);
    if (!info) return info.error();
    auto fingerprint = PlanFingerprint::from_json(info->record.plan_fingerprint);
    if (!fingerprint)
        return Error::bad_input(
            fmt::format("sweep {} in {}: {}", id, m_store.path(), fingerprint.error().message));
    auto stored = m_store.load_experiments(id);
    if (!stored) return stored.error();
    StoredPlan plan;
    plan.fingerprint = std::move(*fingerprint);
    plan.experiments.reserve(stored->size());
    for (auto& s : *stored) plan.experiments.push_back(std::move(s.experiment));
    return plan;
}

Result<void> SweepWriter::reopen(std::int64_t id) {
    auto reset = m_store.resume_sweep(id);
    if (!reset) return reset.error();
    m_sweep = id;
    return success();
}

Result<std::vector<int>> SweepWriter::finished_ids() {
    return m_store.finished_experiment_ids(m_sweep);
}

Result<std::vector<ExperimentReport>> SweepWriter::finished_reports() {
    auto stored = m_store.load_experiments(m_sweep);
    if (!stored) return stored.error();
    std::vector<ExperimentReport> reports;
    for (const auto& experiment : *stored)
        if (auto report = to_report(experiment)) reports.push_back(std::move(*report));
    return reports;
}

Result<void> SweepWriter::note(const std::string& code, const std::string& message) {
    return m_store.add_event(m_sweep, std::nullopt, Event{EventLevel::warning, code, message, {}});
}

Result<void> SweepWriter::finish(SweepEnd end, const std::string& reason) {
    SweepState state = end == SweepEnd::done          ? SweepState::done
                       : end == SweepEnd::interrupted ? SweepState::interrupted
                                                      : SweepState::failed;
    return m_store.finish_sweep(m_sweep, state, reason);
}

Result<void> SweepWriter::experiment_started(int exp_id, int attempt) {
    return m_store.begin_experiment(m_sweep, exp_id, attempt);
}

Result<void> SweepWriter::experiment_finished(const ExperimentReport& report) {
    return m_store.record_experiment(m_sweep, report.exp_id, to_outcome(report));
}

Result<void> SweepWriter::experiment_scheduled(int exp_id, const std::string& tasks) {
    return m_store.set_scheduler_task(m_sweep, exp_id, tasks);
}

Result<std::map<int, std::string>> SweepWriter::scheduled_tasks() {
    return m_store.scheduler_tasks(m_sweep);
}

}  // namespace ncclsweep::results
