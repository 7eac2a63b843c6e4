#include "remote/slurm_pending.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <set>

namespace ncclsweep::remote {
namespace {

/// The code at the start of a reason ("ReqNodeNotAvail, UnavailableNodes:n1" -> "ReqNodeNotAvail").
std::string_view code_of(std::string_view reason) {
    std::size_t end = 0;
    while (end < reason.size() && std::isalnum(static_cast<unsigned char>(reason[end])) != 0) ++end;
    return reason.substr(0, end);
}

bool contains(std::string_view text, std::string_view part) {
    return text.find(part) != std::string_view::npos;
}

std::optional<long> number(std::string_view text) {
    long value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

/// What a reason means, for telling a change from the same reason reworded: its code, with
/// the details after it dropped ("ReqNodeNotAvail, UnavailableNodes:n1" -> "ReqNodeNotAvail")
/// and Slurm's known descriptions read as their codes (22.05 shows a task on a drained node
/// first as ReqNodeNotAvail, then as its description).
std::string meaning_of(std::string_view reason) {
    if (reason.rfind("Nodes required for job are DOWN", 0) == 0) return "ReqNodeNotAvail";
    const std::string_view code = code_of(reason);
    if (code.size() == reason.size() || reason.substr(code.size(), 1) == ",") return std::string(code);
    return std::string(reason);
}

}  // namespace

bool pending_reason_clears_itself(std::string_view reason) {
    if (reason.empty()) return true;  // squeue said nothing: nothing to warn about
    const std::string_view code = code_of(reason);
    // Only the whole text can be a known code: a description ("Nodes required for job are
    // DOWN, ...") starts with an ordinary word.
    if (code.size() != reason.size() && reason.substr(code.size(), 1) != ",") return false;
    static constexpr std::array<std::string_view, 10> k_queue_moves = {
        "None",       "Priority", "Resources", "JobArrayTaskLimit", "BeginTime",
        "Dependency", "Prolog",   "Licenses",  "Reservation",       "Cleaning"};
    if (std::find(k_queue_moves.begin(), k_queue_moves.end(), code) != k_queue_moves.end()) return true;
    // Aggregate limits of an association or QOS (what its other jobs use) clear when they end.
    if (code.rfind("AssocGrp", 0) == 0 || code.rfind("QOSGrp", 0) == 0) return true;
    // Limits on how many jobs, or how much per user or account, run at once clear the same way;
    // a limit per job (AssocMaxWallDurationPerJobLimit, QOSMaxNodePerJobLimit, ...) never does.
    const bool limit =
        code.rfind("AssocMax", 0) == 0 || code.rfind("QOSMax", 0) == 0 || code.rfind("Max", 0) == 0;
    if (limit && !contains(code, "PerJob") &&
        (contains(code, "PerUser") || contains(code, "PerAccount") || contains(code, "MaxJobs")))
        return true;
    return false;
}

std::string compact_tasks(const std::vector<std::string>& tasks) {
    std::map<std::string, std::set<long>> by_job;
    std::vector<std::string> odd;  // not JOB_INDEX
    for (const auto& task : tasks) {
        const auto underscore = task.find('_');
        auto index = underscore == std::string::npos ? std::nullopt
                                                     : number(std::string_view(task).substr(underscore + 1));
        if (!index) {
            odd.push_back(task);
            continue;
        }
        by_job[task.substr(0, underscore)].insert(*index);
    }
    std::string out;
    auto add = [&](const std::string& word) { out += (out.empty() ? "" : " ") + word; };
    for (const auto& [job, indices] : by_job) {
        if (indices.size() == 1) {
            add(fmt::format("{}_{}", job, *indices.begin()));
            continue;
        }
        std::string ranges;
        for (auto it = indices.begin(); it != indices.end();) {
            long first = *it, last = *it;
            for (++it; it != indices.end() && *it == last + 1; ++it) last = *it;
            ranges += (ranges.empty() ? "" : ",") +
                      (first == last ? fmt::format("{}", first) : fmt::format("{}-{}", first, last));
        }
        add(fmt::format("{}_[{}]", job, ranges));
    }
    for (const auto& task : odd) add(task);
    return out;
}

PendingWatch::PendingWatch(std::string partition, std::optional<std::chrono::milliseconds> timeout)
    : m_partition(std::move(partition)), m_timeout(timeout) {}

PendingNews PendingWatch::update(const std::map<std::string, QueuedTask>& queue, Clock::time_point now) {
    PendingNews news;
    std::map<std::string, std::vector<std::string>> newly_stuck;  // reason -> tasks given it this round
    std::map<std::string, std::string> reasons;
    bool running = false;
    std::vector<std::string> pending;
    for (const auto& [task, entry] : queue) {
        if (entry.state != "PENDING") {
            running = running || is_live_state(entry.state);
            continue;
        }
        pending.push_back(task);
        reasons[task] = entry.reason;
        auto before = m_reason_of.find(task);
        if ((before == m_reason_of.end() || meaning_of(before->second) != meaning_of(entry.reason)) &&
            !pending_reason_clears_itself(entry.reason))
            newly_stuck[entry.reason].push_back(task);
    }
    m_reason_of = std::move(reasons);
    const std::string what_then =
        m_timeout ? fmt::format(
                        "ncclsweep gives up if none of the sweep's tasks runs for {} s "
                        "(target.slurm.pending_timeout)",
                        m_timeout->count() / 1000.0)
                  : "ncclsweep keeps waiting (set target.slurm.pending_timeout to give up after a while)";
    for (const auto& [reason, tasks] : newly_stuck)
        news.warnings.push_back(
            fmt::format("slurm: task{} {} of partition {} pending: {}. Slurm does not start {} until that "
                        "changes (a drained or "
                        "down node, a partition's state or limits, an account or QOS it does not allow, a "
                        "request no node "
                        "meets: `scontrol show job {}` and `sinfo -p {}` say more); {}",
                        tasks.size() == 1 ? "" : "s", compact_tasks(tasks), m_partition, reason,
                        tasks.size() == 1 ? "it" : "them", tasks.front().substr(0, tasks.front().find('_')),
                        m_partition, what_then));

    if (running || pending.empty()) {
        m_idle_since.reset();
        return news;
    }
    if (!m_idle_since) m_idle_since = now;
    if (m_timeout && !m_expired && now - *m_idle_since >= *m_timeout) {
        m_expired = true;
        std::set<std::string> why;
        for (const auto& task : pending) why.insert(m_reason_of[task]);
        std::string reasons_text;
        for (const auto& reason : why) reasons_text += (reasons_text.empty() ? "" : "; ") + reason;
        news.stuck = pending;
        news.expired = fmt::format(
            "slurm: for {} s (target.slurm.pending_timeout) no node of partition {} started any of the "
            "sweep's tasks; "
            "{} waited ({}) and were cancelled. Once Slurm can start them (`scontrol show job {}`), continue "
            "the sweep "
            "with --resume",
            m_timeout->count() / 1000.0, m_partition, compact_tasks(pending), reasons_text,
            pending.front().substr(0, pending.front().find('_')));
    }
    return news;
}

}  // namespace ncclsweep::remote
