#include "remote/slurm_state.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <vector>

namespace ncclsweep::remote {
namespace {

std::vector<std::string_view> split(std::string_view text, char separator) {
    std::vector<std::string_view> parts;
    std::size_t begin = 0;
    for (;;) {
        std::size_t end = text.find(separator, begin);
        parts.push_back(
            text.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin));
        if (end == std::string_view::npos) return parts;
        begin = end + 1;
    }
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
    return text;
}

int to_int(std::string_view text) {
    int value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value);
    return value;
}

/// "CODE:SIGNAL" as Slurm prints ExitCode.
ExitInfo parse_exit_code(std::string_view text) {
    auto colon = text.find(':');
    if (colon == std::string_view::npos) return ExitInfo{to_int(text), 0};
    return ExitInfo{to_int(text.substr(0, colon)), to_int(text.substr(colon + 1))};
}

/// The first word of a state ("CANCELLED by 0" -> "CANCELLED").
std::string first_word(std::string_view text) {
    text = trim(text);
    return std::string(text.substr(0, text.find(' ')));
}

}  // namespace

std::map<std::string, QueuedTask> parse_squeue(std::string_view text) {
    std::map<std::string, QueuedTask> tasks;
    for (auto line : split(text, '\n')) {
        line = trim(line);
        auto fields = split(line, '|');
        if (fields.size() != 3 || fields[0].empty()) continue;
        tasks[std::string(fields[0])] = QueuedTask{std::string(fields[1]), std::string(fields[2])};
    }
    return tasks;
}

std::map<std::string, TaskFinal> parse_scontrol_jobs(std::string_view text) {
    std::map<std::string, TaskFinal> tasks;
    for (auto line : split(text, '\n')) {
        std::string array_job, task_id, job_id;
        TaskFinal final;
        for (auto word : split(trim(line), ' ')) {
            auto eq = word.find('=');
            if (eq == std::string_view::npos) continue;
            const auto key = word.substr(0, eq);
            const auto value = word.substr(eq + 1);
            if (key == "JobId")
                job_id = value;
            else if (key == "ArrayJobId")
                array_job = value;
            else if (key == "ArrayTaskId")
                task_id = value;
            else if (key == "JobState")
                final.state = value;
            else if (key == "Reason")
                final.reason = value;
            else if (key == "ExitCode")
                final.exit = parse_exit_code(value);
            else if (key == "NodeList" && value != "(null)")
                final.node = value;
        }
        if (final.state.empty()) continue;
        // A job outside an array is its own task 0 (how ncclsweep names single submissions too).
        const std::string id =
            !array_job.empty() && !task_id.empty() ? array_job + "_" + task_id : job_id + "_0";
        tasks[id] = final;
    }
    return tasks;
}

std::map<std::string, TaskFinal> parse_sacct(std::string_view text) {
    std::map<std::string, TaskFinal> tasks;
    for (auto line : split(text, '\n')) {
        auto fields = split(trim(line), '|');
        if (fields.size() < 3 || fields[0].empty()) continue;
        std::string id(fields[0]);
        if (id.find('_') == std::string::npos) id += "_0";
        TaskFinal final;
        final.state = first_word(fields[1]);
        final.exit = parse_exit_code(fields[2]);
        if (fields.size() > 3 && fields[3] != "None assigned") final.node = fields[3];
        tasks[id] = final;
    }
    return tasks;
}

TaskVerdict verdict_of(const TaskFinal& final) {
    const std::string& s = final.state;
    if (s == "COMPLETED" || s == "FAILED") return TaskVerdict::exited;
    if (s == "TIMEOUT" || s == "DEADLINE") return TaskVerdict::time_limit;
    if (s == "OUT_OF_MEMORY") return TaskVerdict::out_of_memory;
    if (s == "CANCELLED") return TaskVerdict::cancelled;
    // NODE_FAIL, PREEMPTED, BOOT_FAIL, REVOKED, SPECIAL_EXIT and anything newer: not the
    // command's doing.
    return TaskVerdict::infrastructure;
}

bool is_live_state(std::string_view state) {
    static constexpr std::array<std::string_view, 11> k_live = {
        "PENDING",     "CONFIGURING",  "RUNNING",  "COMPLETING", "SUSPENDED", "REQUEUED",
        "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "SIGNALING",  "STAGE_OUT"};
    return std::find(k_live.begin(), k_live.end(), state) != k_live.end();
}

Result<std::string> parse_sbatch_job_id(std::string_view text) {
    text = trim(text);
    text = text.substr(0, text.find(';'));
    const bool digits = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) != 0;
    });
    if (!digits)
        return Error::infrastructure(
            fmt::format("sbatch printed '{}' where a job id was expected", std::string(text)));
    return std::string(text);
}

}  // namespace ncclsweep::remote
