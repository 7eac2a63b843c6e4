#include "results/store/records.hpp"

#include <array>
#include <utility>

#include "core/host.hpp"

namespace ncclsweep::results {
namespace {

constexpr std::array<std::pair<SweepState, std::string_view>, 4> k_sweep_states = {{
    {SweepState::running, "running"},
    {SweepState::done, "done"},
    {SweepState::interrupted, "interrupted"},
    {SweepState::failed, "failed"},
}};

constexpr std::array<std::pair<ExperimentStatus, std::string_view>, 9> k_statuses = {{
    {ExperimentStatus::pending, "pending"},
    {ExperimentStatus::running, "running"},
    {ExperimentStatus::ok, "ok"},
    {ExperimentStatus::failed, "failed"},
    {ExperimentStatus::timed_out, "timed_out"},
    {ExperimentStatus::infra_error, "infra_error"},
    {ExperimentStatus::skipped, "skipped"},
    {ExperimentStatus::pruned, "pruned"},
    {ExperimentStatus::dropped, "dropped"},
}};

constexpr std::array<std::pair<EventLevel, std::string_view>, 3> k_levels = {{
    {EventLevel::info, "info"},
    {EventLevel::warning, "warning"},
    {EventLevel::error, "error"},
}};

template <typename Enum, std::size_t N>
std::string_view name_of(const std::array<std::pair<Enum, std::string_view>, N>& table, Enum value) {
    for (const auto& [candidate, name] : table) {
        if (candidate == value) return name;
    }
    return "unknown";
}

template <typename Enum, std::size_t N>
std::optional<Enum> parse_name(const std::array<std::pair<Enum, std::string_view>, N>& table,
                               std::string_view text) {
    for (const auto& [value, name] : table) {
        if (name == text) return value;
    }
    return std::nullopt;
}

}  // namespace

std::string_view to_string(SweepState state) {
    return name_of(k_sweep_states, state);
}
std::string_view to_string(ExperimentStatus status) {
    return name_of(k_statuses, status);
}
std::string_view to_string(EventLevel level) {
    return name_of(k_levels, level);
}

std::optional<SweepState> parse_sweep_state(std::string_view text) {
    return parse_name(k_sweep_states, text);
}
std::optional<ExperimentStatus> parse_experiment_status(std::string_view text) {
    return parse_name(k_statuses, text);
}
std::optional<EventLevel> parse_event_level(std::string_view text) {
    return parse_name(k_levels, text);
}

bool is_finished(ExperimentStatus status) {
    switch (status) {
        case ExperimentStatus::ok:
        case ExperimentStatus::failed:
        case ExperimentStatus::timed_out:
        case ExperimentStatus::skipped:
        case ExperimentStatus::pruned:
        case ExperimentStatus::dropped:
            return true;
        case ExperimentStatus::pending:
        case ExperimentStatus::running:
        case ExperimentStatus::infra_error:
            return false;
    }
    return false;
}

int& StatusCounts::at(ExperimentStatus status) {
    switch (status) {
        case ExperimentStatus::pending:
            return pending;
        case ExperimentStatus::running:
            return running;
        case ExperimentStatus::ok:
            return ok;
        case ExperimentStatus::failed:
            return failed;
        case ExperimentStatus::timed_out:
            return timed_out;
        case ExperimentStatus::infra_error:
            return infra_error;
        case ExperimentStatus::skipped:
            return skipped;
        case ExperimentStatus::pruned:
            return pruned;
        case ExperimentStatus::dropped:
            return dropped;
    }
    return pending;
}

std::string state_text(const SweepInfo& sweep) {
    if (sweep.state == SweepState::running && sweep.runner_alive == false) return "running, runner gone";
    return std::string(to_string(sweep.state));
}

std::optional<bool> probe_runner(const SweepInfo& info) {
    if (info.state != SweepState::running || !info.runner_pid || *info.runner_pid <= 0) return std::nullopt;
    static const std::string host = host_name();
    if (host.empty() || info.runner_host != host) return std::nullopt;
    // A zombie has exited (only its parent has not reaped it yet), and a recorded identity that
    // differs means the pid now names another process: neither runs the sweep.
    switch (probe_process(*info.runner_pid, info.runner_process)) {
        case ProcessLiveness::gone:
            return false;
        case ProcessLiveness::unknown:
            return true;  // no /proc to ask: trust the probe
        case ProcessLiveness::running:
            break;
    }
    if (!info.runner_process.empty()) return true;  // the very process that recorded itself
    // Recorded before identities (schema < 6): only an ncclsweep process counts.
    const std::string name = process_name(*info.runner_pid);
    return name.empty() || name.rfind("ncclsweep", 0) == 0;
}

}  // namespace ncclsweep::results
