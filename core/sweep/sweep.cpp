#include "core/sweep/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <span>

#include "core/plan/render.hpp"
#include "core/stats/stats.hpp"
#include "core/sweep/delivery.hpp"
#include "core/sweep/sweep_detail.hpp"
#include "core/text.hpp"
#include "core/watch/supervise.hpp"

namespace ncclsweep::inline sweep {
namespace detail {

std::string experiment_dir(const SweepRunOptions& options, const Experiment& experiment) {
    return fmt::format("{}/exp-{}", options.workdir, experiment.id);
}

Result<std::string> deliver(Target& target, const Experiment& experiment, const SweepRunOptions& options) {
    std::string dir = experiment_dir(options, experiment);
    render::Provenance provenance{options.sweep_name, experiment.id, experiment.key};
    auto env_text = render::env_file(experiment.env, provenance);
    if (!env_text) return env_text.error();
    if (auto put = target.put_file(dir + "/" + k_env_file, *env_text); !put) return put.error();
    if (options.delivery != EnvDelivery::env) {
        auto put =
            target.put_file(dir + "/" + k_sitecustomize_file,
                            render::sitecustomize(experiment.env, provenance, render::Evidence::marker_file));
        if (!put) return put.error();
    }
    return dir;
}

std::string batch_key(int exp_id, int repeat) {
    return fmt::format("exp-{}/rep-{}", exp_id, repeat);
}

Command command_for(const std::vector<std::string>& argv, const Experiment& experiment,
                    const std::string& dir, EnvDelivery delivery, int repeat, Batched batched,
                    const std::vector<Assignment>& extra_env) {
    Command command;
    command.argv = argv;
    command.workdir = dir;
    if (delivery != EnvDelivery::sitecustomize) command.env = experiment.env;
    for (const auto& extra : extra_env)
        if (std::none_of(experiment.env.begin(), experiment.env.end(),
                         [&](const Assignment& a) { return a.first == extra.first; }))
            command.env.push_back(extra);
    if (delivery != EnvDelivery::env) command.pythonpath_prepend = dir;
    command.env.emplace_back("NCCLSWEEP_EXPERIMENT_ID", std::to_string(experiment.id));
    command.env.emplace_back("NCCLSWEEP_EXPERIMENT_KEY", experiment.key);
    command.env.emplace_back("NCCLSWEEP_REPEAT", std::to_string(repeat));
    if (batched == Batched::yes) command.batch_key = batch_key(experiment.id, repeat);
    return command;
}

}  // namespace detail

namespace {
using detail::Batched;

enum class RepeatEnd { ok, failed, timed_out, lost, interrupted };

struct RepeatOutcome {
    RepeatEnd end = RepeatEnd::ok;
    std::string lost_reason;
    std::unique_ptr<Watcher> watcher;
    std::optional<ExitInfo> exit;
    std::vector<long> process_groups;  ///< of the server (and client) it started
    DeliveryRun delivery;              ///< which evidence of delivery belongs to the server's run
    bool started = false;              ///< the server's command started (there can be evidence)
    double seconds = 0;
    std::optional<SchedulerEnd> scheduler_end;  ///< a batch scheduler ended it (time limit, memory)
};

/// The client command (workload.client) rendered for this experiment, if there is one.
Result<std::vector<std::string>> client_argv(const SweepRunOptions& options, const Experiment& experiment) {
    if (options.workload.client.empty()) return std::vector<std::string>{};
    WorkloadSpec client = options.workload;
    client.engine.clear();
    client.command = options.workload.client;
    client.command_is_shell = options.workload.client_is_shell;
    return render::command_argv(client, experiment.workload, "");
}

RepeatOutcome run_repeat(Target& target, const Experiment& experiment, const std::string& dir, int repeat,
                         const std::vector<std::string>& client_args, const SweepRunOptions& options,
                         const std::atomic<bool>& stop, Batched batched) {
    const Clock& clock = clock_or_steady(options.clock);
    RepeatOutcome outcome;
    auto start_time = clock.now();
    auto finish = [&](RepeatEnd end) {
        outcome.end = end;
        outcome.seconds = std::chrono::duration<double>(clock.now() - start_time).count();
        return std::move(outcome);
    };
    auto process = target.start(detail::command_for(experiment.argv, experiment, dir, options.delivery,
                                                    repeat, batched, options.extra_env));
    // A batch target returns once the task runs: the time it waited in the queue is not the
    // experiment's (its timeouts start now).
    start_time = clock.now();
    if (!process) {
        if (stop.load()) return finish(RepeatEnd::interrupted);
        outcome.lost_reason = process.error().message;
        if (process.error().kind == ErrorKind::infrastructure) return finish(RepeatEnd::lost);
        // The command itself cannot start (not found, bad argv): a failure of this experiment.
        outcome.watcher = std::make_unique<Watcher>(options.catalog, options.watcher, start_time);
        outcome.watcher->feed(OutputLine{Stream::err, process.error().message, clock.now(), false});
        outcome.watcher->on_exit(ExitInfo{127, 0}, clock.now());
        outcome.exit = ExitInfo{127, 0};  // recorded like a shell's "command not found"
        return finish(RepeatEnd::failed);
    }
    outcome.watcher = std::make_unique<Watcher>(options.catalog, options.watcher, start_time);
    Watcher& watcher = *outcome.watcher;
    if (auto group = (*process)->process_group()) outcome.process_groups.push_back(*group);
    outcome.delivery = DeliveryRun{repeat, (*process)->process_group(), (*process)->scheduler_task()};
    outcome.started = true;

    // Optional client: started once the server is ready; when it ends, the server is stopped.
    std::unique_ptr<Process> client;
    bool client_done = false;
    std::optional<ExitInfo> client_exit;
    SuperviseOptions supervise_options;
    supervise_options.kill_grace = options.kill_grace;
    supervise_options.clock = &clock;
    // A server without a client ends by `stop_after` (docs/spec.md "workload"): once every metric
    // matched N times, or N seconds after it became ready.
    const StopAfter& stop_after = options.workload.stop_after;
    if (client_args.empty() &&
        (stop_after.kind == StopAfter::Kind::matches || stop_after.kind == StopAfter::Kind::seconds)) {
        std::optional<Clock::TimePoint> ready_at;
        supervise_options.stop_when = [&watcher, &options, &stop_after, &clock, ready_at]() mutable {
            if (watcher.state() != WatchState::ready && watcher.state() != WatchState::measuring)
                return false;
            if (stop_after.kind == StopAfter::Kind::seconds) {
                if (!ready_at) ready_at = clock.now();
                return std::chrono::duration<double>(clock.now() - *ready_at).count() >= stop_after.seconds;
            }
            for (const auto& [name, regex] : options.workload.metrics) {
                auto found = watcher.metrics().find(name);
                if (found == watcher.metrics().end() ||
                    static_cast<int>(found->second.size()) < stop_after.matches)
                    return false;
            }
            return true;
        };
    }
    if (!client_args.empty()) {
        supervise_options.stop_when = [&]() {
            if (client_done) return true;
            if (!client && (watcher.state() == WatchState::ready)) {
                auto started = target.start(detail::command_for(client_args, experiment, dir,
                                                                options.delivery, repeat, Batched::no, {}));
                if (!started) {
                    watcher.feed(
                        OutputLine{Stream::err, "client: " + started.error().message, clock.now(), false});
                    client_done = true;
                    client_exit = ExitInfo{127, 0};
                    return true;
                }
                client = std::move(*started);
                if (auto group = client->process_group()) outcome.process_groups.push_back(*group);
                watcher.mark_measuring(clock.now());
            }
            if (client) {
                OutputLine line;
                for (int i = 0; i < 64; ++i) {
                    PollState state = client->poll(std::chrono::milliseconds(0), line);
                    if (state == PollState::line) {
                        watcher.feed(line, clock.now());
                        continue;
                    }
                    if (state == PollState::exited || state == PollState::lost) {
                        client_done = true;
                        client_exit = client->exit_info().value_or(ExitInfo{255, 0});
                    }
                    break;
                }
            }
            return client_done;
        };
    }
    Supervision supervision = supervise(**process, watcher, supervise_options, &stop);
    if (client && !client_done) client->kill(options.kill_grace);
    outcome.exit = supervision.exit;
    switch (supervision.end) {
        case SupervisionEnd::lost:
            if (stop.load()) return finish(RepeatEnd::interrupted);
            outcome.lost_reason = supervision.lost_reason;
            return finish(RepeatEnd::lost);
        case SupervisionEnd::interrupted:
            return finish(RepeatEnd::interrupted);
        case SupervisionEnd::stopped:
            if (client_exit && !client_exit->success() && watcher.state() != WatchState::failed) {
                watcher.feed(OutputLine{
                    Stream::err,
                    fmt::format("client exited with status {}{}", client_exit->exit_code,
                                client_exit->signal ? fmt::format(" (signal {})", client_exit->signal) : ""),
                    clock.now(), false});
                return finish(RepeatEnd::failed);
            }
            break;
        case SupervisionEnd::exited:
            if (auto ended = (*process)->scheduler_end()) {
                outcome.scheduler_end = std::move(ended);
                return finish(RepeatEnd::failed);
            }
            break;
    }
    switch (watcher.state()) {
        case WatchState::failed:
            return finish(RepeatEnd::failed);
        case WatchState::timed_out:
            return finish(RepeatEnd::timed_out);
        default:
            return finish(RepeatEnd::ok);
    }
}

/// After a run of `repeat` that the watcher judged: the marker file of the experiment's
/// sitecustomize.py says whether the settings reached the workload. A shadowed sitecustomize's
/// error becomes a warning of the experiment; with env_delivery sitecustomize (the only way the
/// settings travel), a run without evidence is a `delivery` failure, never ok (returns true).
/// Errors: reading the file failed (infrastructure: the host was lost).
Result<bool> judge_delivery(Target& target, const std::string& dir, const RepeatOutcome& outcome,
                            const SweepRunOptions& options, ExperimentReport& report) {
    if (options.delivery == EnvDelivery::env || !outcome.started) return false;
    auto text = target.get_file(dir + "/" + render::delivery_marker_file(outcome.delivery.repeat),
                                k_marker_read_limit);
    if (!text) return text.error();
    const DeliveryEvidence evidence = read_delivery_evidence(text->value_or(""), outcome.delivery);
    for (const auto& error : evidence.chained_errors)
        if (report.warnings.size() < 20) report.warnings.emplace_back(k_chained_warning, error);
    if (options.delivery != EnvDelivery::sitecustomize || outcome.end != RepeatEnd::ok ||
        evidence.delivered())
        return false;
    report.status = RunStatus::failed;
    report.failure_class = k_delivery_class;
    report.diagnosis = delivery_failure_cause(evidence, dir);
    report.detected_after_s = outcome.seconds;
    // Numbers measured without the settings are not the setting's.
    const int repeat = outcome.delivery.repeat;
    std::erase_if(report.samples, [&](const SampleValue& sample) { return sample.repeat == repeat; });
    return true;
}

}  // namespace

std::string_view to_string(RunStatus status) {
    switch (status) {
        case RunStatus::ok:
            return "ok";
        case RunStatus::failed:
            return "failed";
        case RunStatus::timed_out:
            return "timed_out";
        case RunStatus::infra_error:
            return "infra_error";
        case RunStatus::pruned:
            return "pruned";
        case RunStatus::dropped:
            return "dropped";
    }
    return "?";
}

std::string weaker_collective_times(const std::string& a, const std::string& b) {
    static const std::vector<std::string> k_order = {"calibrated", "relative", "modelled"};
    const auto rank = [](const std::string& label) {
        const auto at = std::find(k_order.begin(), k_order.end(), label);
        return at == k_order.end() ? (label.empty() ? -1 : static_cast<int>(k_order.size()))
                                   : static_cast<int>(at - k_order.begin());
    };
    return rank(b) > rank(a) ? b : a;
}

std::optional<double> ExperimentReport::median(const std::string& name) const {
    std::vector<double> values;
    for (const auto& s : samples)
        if (s.metric == name) values.push_back(s.value);
    if (values.empty()) return std::nullopt;
    return stats::median(values);
}

namespace detail {

Result<ExperimentRun> run_experiment(Target& target, const Experiment& experiment, int index, int total,
                                     ResultSink& sink, SweepObserver& observer,
                                     const SweepRunOptions& options, const std::atomic<bool>& stop,
                                     std::vector<long>& previous_groups, Batched batched,
                                     const Rounds& rounds) {
    ExperimentRun run;
    ExperimentReport& report = run.report;
    const ExperimentReport before = rounds.before != nullptr ? *rounds.before : ExperimentReport{};
    const int first_repeat = rounds.first_repeat;
    const int repeats = rounds.repeats > 0 ? rounds.repeats : std::max(1, options.repeats);
    for (int attempt = 1; attempt <= options.max_attempts; ++attempt) {
        // A later round adds to a recorded point: the point stays recorded (with its earlier
        // samples) until the new ones are committed with them, so a kill loses only this round.
        if (first_repeat == 0)
            if (auto begun = sink.experiment_started(experiment.id, attempt); !begun) return begun.error();
        report = before;
        report.warnings.clear();  // an earlier round's warnings are recorded already
        report.exp_id = experiment.id;
        report.status = RunStatus::ok;
        report.attempts = attempt;
        double total_s = 0;
        bool lost = false;
        std::string lost_reason;
        bool time_limit_retry = false;  // the scheduler's time limit ended it: run it again as a new task
        // The client command and the environment files are prepared once per attempt; every
        // repeat uses them. One that cannot be rendered is a failure of this point, not of the host.
        auto client_args = client_argv(options, experiment);
        auto dir =
            client_args ? deliver(target, experiment, options) : Result<std::string>(client_args.error());
        if (!dir && dir.error().kind != ErrorKind::infrastructure) {
            report.status = RunStatus::failed;
            report.failure_class = "config";
            report.diagnosis = client_args ? dir.error().message : "client: " + dir.error().message;
            if (auto done = sink.experiment_finished(report); !done) return done.error();
            return run;
        }
        if (!dir) {
            lost = true;
            lost_reason = dir.error().message;
        }
        for (int repeat = first_repeat; !lost && repeat < first_repeat + repeats; ++repeat) {
            observer.started(experiment, index, total, repeat);
            ++run.runs;
            RepeatOutcome outcome =
                run_repeat(target, experiment, *dir, repeat, *client_args, options, stop, batched);
            total_s += outcome.seconds;
            previous_groups.insert(previous_groups.end(), outcome.process_groups.begin(),
                                   outcome.process_groups.end());
            if (outcome.end == RepeatEnd::interrupted) {
                run.end = ExperimentEnd::interrupted;
                return run;
            }
            if (outcome.end == RepeatEnd::lost) {
                // No retry can get past this (the target says so): stop, leaving the experiment
                // unrecorded, so that a resume runs it again.
                if (auto halt = target.halt_reason()) return *halt;
                lost = true;
                lost_reason = outcome.lost_reason;
                break;
            }
            const Watcher& watcher = *outcome.watcher;
            detail::fill_from_watcher(report, watcher, repeat, options.workload);
            if (outcome.exit) {
                report.exit_code = outcome.exit->exit_code;
                if (outcome.exit->signal) report.exit_signal = outcome.exit->signal;
            }
            auto undelivered = judge_delivery(target, *dir, outcome, options, report);
            if (!undelivered) {
                lost = true;
                lost_reason = undelivered.error().message;
                break;
            }
            if (*undelivered) break;
            if (outcome.scheduler_end) {
                // Ended by the scheduler, not by the setting: its time limit is a timeout.
                const bool time_limit =
                    outcome.scheduler_end->state == "TIMEOUT" || outcome.scheduler_end->state == "DEADLINE";
                if (time_limit && attempt < options.max_attempts) {
                    // Infrastructure, not the setting (a slow or shared node, a late start):
                    // retried like a lost connection, as a task of its own.
                    observer.notice(
                        fmt::format("experiment {}: {}; retrying as a new task (attempt {} of {}) in case "
                                    "the node was the cause",
                                    experiment.id, first_line(outcome.scheduler_end->message, 200),
                                    attempt + 1, options.max_attempts));
                    time_limit_retry = true;
                    break;
                }
                report.status = time_limit ? RunStatus::timed_out : RunStatus::failed;
                report.failure_class = time_limit ? "scheduler_time_limit" : "scheduler_memory";
                const std::string lines = watcher.diagnosis().text();
                report.diagnosis = outcome.scheduler_end->message + (lines.empty() ? "" : "\n" + lines);
                report.detected_after_s = outcome.seconds;
                break;
            }
            if (outcome.end != RepeatEnd::ok) {
                report.status =
                    outcome.end == RepeatEnd::timed_out ? RunStatus::timed_out : RunStatus::failed;
                report.failure_class = watcher.failure_class();
                report.diagnosis = watcher.diagnosis().text();
                report.detected_after_s = watcher.seconds_to_detection();
                break;
            }
        }
        if (time_limit_retry) continue;
        report.total_s = before.total_s.value_or(0) + total_s;
        if (!lost) {
            if (auto done = sink.experiment_finished(report); !done) return done.error();
            return run;
        }
        if (attempt < options.max_attempts) {
            observer.notice(fmt::format(
                "experiment {}: connection to {} lost ({}); reconnecting and retrying (attempt {} of {})",
                experiment.id, target.describe(), lost_reason, attempt + 1, options.max_attempts));
            if (auto again = target.reconnect(); !again) {
                report.status = RunStatus::infra_error;
                report.failure_class = "infrastructure";
                report.diagnosis = lost_reason + "\nreconnect failed: " + again.error().message;
                (void)sink.experiment_finished(report);
                return Error::infrastructure(
                    fmt::format("lost the connection to {} during experiment {} and could not reconnect: {}",
                                target.describe(), experiment.id, again.error().message));
            }
            continue;
        }
        report.status = RunStatus::infra_error;
        report.failure_class = "infrastructure";
        report.diagnosis = lost_reason;
        (void)sink.experiment_finished(report);
        return Error::infrastructure(
            fmt::format("lost the connection to {} during experiment {} ({} attempts): {}", target.describe(),
                        experiment.id, attempt, lost_reason));
    }
    return run;
}

}  // namespace detail

namespace {

std::vector<double> values_of(const ExperimentReport& report, const std::string& metric, int from_repeat) {
    std::vector<double> values;
    for (const auto& sample : report.samples)
        if (sample.metric == metric && sample.repeat >= from_repeat) values.push_back(sample.value);
    return values;
}

}  // namespace

search::Observation observation_of(const ExperimentReport& report, const std::string& metric) {
    search::Observation observation;
    observation.ok = report.status == RunStatus::ok || report.status == RunStatus::dropped;
    // A run that never got its settings says nothing about them.
    observation.says_about_setting =
        report.status == RunStatus::failed && report.failure_class != k_delivery_class;
    observation.failure_class = report.failure_class;
    observation.effective = report.effective_nccl;
    observation.values = values_of(report, metric, 0);
    int highest = -1;
    for (const auto& sample : report.samples) highest = std::max(highest, sample.repeat);
    observation.runs = report.status == RunStatus::pruned ? 0 : std::max(1, highest + 1);
    observation.seconds = report.total_s.value_or(0);
    return observation;
}

Result<SweepRunSummary> run_search(Target& target, const std::vector<Experiment>& experiments,
                                   const std::vector<ExperimentReport>& history, ResultSink& sink,
                                   SweepObserver& observer, const SweepRunOptions& options,
                                   const std::atomic<bool>& stop) {
    search::Settings settings = options.search.value_or(search::Settings{});
    if (!options.search) settings.repeats = std::max(1, options.repeats);
    std::vector<search::Point> points;
    std::map<int, std::size_t> index_of;
    for (const auto& experiment : experiments) {
        index_of[experiment.id] = points.size();
        points.push_back({experiment.id, experiment.params, experiment.defaults});
    }
    search::Search search(std::move(points), settings);
    // A resume: what was recorded before is the search's starting point (marks first, so a
    // restored failure does not prune a point again).
    std::map<int, ExperimentReport> recorded;
    for (const auto& report : history) {
        auto found = index_of.find(report.exp_id);
        if (found == index_of.end()) continue;
        if (report.status == RunStatus::pruned || report.status == RunStatus::dropped)
            search.restore_mark(found->second, report.status == RunStatus::pruned ? search::Mark::pruned
                                                                                  : search::Mark::dropped);
    }
    for (const auto& report : history) {
        auto found = index_of.find(report.exp_id);
        if (found == index_of.end() || report.status == RunStatus::pruned) continue;
        search.restore(found->second, observation_of(report, settings.metric));
        recorded[report.exp_id] = report;
        if (recorded[report.exp_id].status == RunStatus::dropped)
            recorded[report.exp_id].status = RunStatus::ok;
    }

    SweepRunSummary summary;
    std::set<int> counted_ok;  // points counted ok by this run (a resume's earlier ones are not)
    const int total = static_cast<int>(experiments.size());
    int round = search.progress().round;
    std::vector<long> previous_groups;
    for (;;) {
        if (stop.load()) {
            summary.interrupted = true;
            break;
        }
        const search::Step step = search.next();
        summary.rounds = search.progress().round;
        if (step.action == search::Action::stop) {
            summary.budget_spent = step.budget_spent;
            summary.search_end = step.reason;
            break;
        }
        const Experiment& experiment = experiments[step.point];
        const int index = static_cast<int>(step.point) + 1;
        if (step.action == search::Action::skip) {
            ExperimentReport report =
                recorded.count(experiment.id) ? recorded[experiment.id] : ExperimentReport{};
            report.exp_id = experiment.id;
            report.status = step.mark == search::Mark::pruned ? RunStatus::pruned : RunStatus::dropped;
            report.diagnosis = step.reason;
            if (auto done = sink.experiment_finished(report); !done) return done.error();
            ++(step.mark == search::Mark::pruned ? summary.pruned : summary.dropped);
            // A point that ran ok in this run and is now dropped counts as dropped, not ok, so
            // ok + failed + dropped is what ran and matches `results list`.
            if (step.mark == search::Mark::dropped && counted_ok.erase(experiment.id) > 0) {
                --summary.ok;
                ++summary.dropped_after_running;
            }
            observer.finished(experiment, report, index, total);
            continue;
        }
        if (search.progress().round != round) {
            round = search.progress().round;
            observer.notice(
                fmt::format("round {}: up to {} repeats per point still in the race ({} pruned, {} dropped, "
                            "{} runs so far)",
                            round, step.first_repeat + step.repeats, search.progress().pruned,
                            search.progress().dropped, search.progress().runs));
        }
        if (options.before_experiment)
            if (auto ready = options.before_experiment(previous_groups); !ready) return ready.error();
        previous_groups.clear();
        ExperimentReport& report = recorded[experiment.id];
        if (step.first_repeat == 0) report = ExperimentReport{};
        const double seconds_before = report.total_s.value_or(0);
        auto ended = detail::run_experiment(target.slot_target(0), experiment, index, total, sink, observer,
                                            options, stop, previous_groups, detail::Batched::no,
                                            detail::Rounds{step.first_repeat, step.repeats, &report});
        if (!ended) return ended.error();
        summary.runs += ended->runs;
        if (ended->end == detail::ExperimentEnd::interrupted) {
            summary.interrupted = true;
            break;
        }
        report = std::move(ended->report);
        search::Observation observation = observation_of(report, settings.metric);
        observation.values = values_of(report, settings.metric, step.first_repeat);
        observation.runs = ended->runs;
        observation.seconds = report.total_s.value_or(0) - seconds_before;
        search.record(step.point, observation);
        if (step.first_repeat == 0) {
            ++summary.ran;
            ++(report.status == RunStatus::ok ? summary.ok : summary.failed);
            if (report.status == RunStatus::ok) counted_ok.insert(experiment.id);
        } else if (report.status != RunStatus::ok && counted_ok.erase(experiment.id) > 0) {
            // A point that fails in a later round is out of the race: count it as failed.
            --summary.ok;
            ++summary.failed;
        }
        observer.finished(experiment, report, index, total);
    }
    summary.collapsed = search.progress().collapsed;
    summary.settled = search.progress().settled;
    summary.noise = search.progress().noise;
    return summary;
}

}  // namespace ncclsweep::inline sweep
