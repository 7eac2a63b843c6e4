#include "remote/preflight.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

namespace ncclsweep::remote {

namespace {

constexpr const char* k_mark = "@@ncclsweep-preflight:";

/// Fixed probe (no user data in it). Sections start with k_mark + name.
constexpr const char* k_probe = R"SH(
m='@@ncclsweep-preflight:'
echo "${m}gpus"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader 2>&1 || echo "${m}gpus_failed"
  echo "${m}apps"
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader 2>&1 || echo "${m}apps_failed"
else
  echo "${m}no_nvidia_smi"
fi
echo "${m}libnccl"
for p in $( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null) | awk '/libnccl\.so/ {print $NF}'); do
  readlink -f "$p" 2>/dev/null || echo "$p"
done
echo "${m}torch"
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import torch; v = torch.cuda.nccl.version(); print(".".join(map(str, v)) if isinstance(v, tuple) else v)' 2>/dev/null
fi
echo "${m}etc_nccl_conf"
cat /etc/nccl.conf 2>/dev/null
echo
echo "${m}home_nccl_conf"
cat "$HOME/.nccl.conf" 2>/dev/null
echo
echo "${m}end"
)SH";

std::string trim(const std::string& text) {
    const auto begin = text.find_first_not_of(" \t\r\n");
    if (begin == std::string::npos) return {};
    const auto end = text.find_last_not_of(" \t\r\n");
    return text.substr(begin, end - begin + 1);
}

std::vector<std::string> split_csv(const std::string& line) {
    std::vector<std::string> fields;
    std::stringstream stream(line);
    std::string field;
    while (std::getline(stream, field, ',')) fields.push_back(trim(field));
    return fields;
}

/// "…/libnccl.so.2.21.5" -> "2.21.5"; "" when the name has no full version.
std::string version_from_path(const std::string& path) {
    const std::string key = "libnccl.so.";
    const auto at = path.rfind(key);
    if (at == std::string::npos) return {};
    const std::string version = path.substr(at + key.size());
    if (std::count(version.begin(), version.end(), '.') < 2) return {};
    if (!std::all_of(version.begin(), version.end(),
                     [](char c) { return (c >= '0' && c <= '9') || c == '.'; }))
        return {};
    return version;
}

}  // namespace

HostPreflight parse_preflight(const std::string& probe_output, const std::string& target_name) {
    HostPreflight out;
    out.target = target_name;
    std::string section;
    std::string etc_conf, home_conf;
    std::vector<std::string> libnccl;
    std::string torch_version;
    bool saw_end = false;
    std::stringstream stream(probe_output);
    std::string line;
    const std::string mark = k_mark;
    while (std::getline(stream, line)) {
        if (line.rfind(mark, 0) == 0) {
            const std::string name = line.substr(mark.size());
            if (name == "no_nvidia_smi")
                out.notes.emplace_back("nvidia-smi not found: GPU count 0, busy-GPU checks disabled");
            else if (name == "gpus_failed")
                out.notes.emplace_back("nvidia-smi --query-gpu failed (see the lines above in the probe)");
            else if (name == "apps_failed")
                out.notes.emplace_back("nvidia-smi --query-compute-apps failed: busy GPUs unknown");
            else if (name == "end")
                saw_end = true;
            else
                section = name;
            if (name == "gpus") out.has_nvidia_smi = true;
            if (name == "no_nvidia_smi") out.has_nvidia_smi = false;
            continue;
        }
        if (section == "gpus") {
            const auto fields = split_csv(line);
            if (fields.size() >= 3) out.gpus.push_back({fields[0], fields[1], fields[2]});
        } else if (section == "apps") {
            const auto fields = split_csv(line);
            if (fields.size() >= 3 && !fields[0].empty() &&
                std::all_of(fields[0].begin(), fields[0].end(), ::isdigit)) {
                out.busy.push_back({std::stol(fields[0]), fields[1], fields[2]});
            }
        } else if (section == "libnccl") {
            if (!trim(line).empty()) libnccl.push_back(trim(line));
        } else if (section == "torch") {
            if (!trim(line).empty()) torch_version = trim(line);
        } else if (section == "etc_nccl_conf") {
            etc_conf += line + "\n";
        } else if (section == "home_nccl_conf") {
            home_conf += line + "\n";
        }
    }
    // Each conf section ends with one extra newline from the probe's `echo`.
    auto strip_probe_newline = [](std::string text) {
        if (!text.empty()) text.pop_back();
        return text == "\n" ? std::string() : text;
    };
    out.etc_nccl_conf = strip_probe_newline(etc_conf);
    out.home_nccl_conf = strip_probe_newline(home_conf);
    if (!out.gpus.empty()) out.driver = out.gpus.front().driver;
    if (!torch_version.empty()) {
        out.nccl_version = torch_version;
        out.nccl_source = "torch.cuda.nccl.version()";
    } else {
        for (const auto& path : libnccl) {
            if (auto version = version_from_path(path); !version.empty()) {
                out.nccl_version = version;
                out.nccl_source = path;
                break;
            }
        }
    }
    if (out.nccl_version.empty())
        out.notes.emplace_back("NCCL version unknown: no libnccl.so in ldconfig and no importable torch");
    if (!saw_end) out.notes.emplace_back("the probe's output was incomplete");
    return out;
}

nlohmann::json HostPreflight::to_json() const {
    nlohmann::json json;
    json["preflight_version"] = 1;
    json["target"] = target;
    json["has_nvidia_smi"] = has_nvidia_smi;
    json["gpu_count"] = gpus.size();
    json["gpus"] = nlohmann::json::array();
    for (const auto& gpu : gpus)
        json["gpus"].push_back(
            {{"name", gpu.name}, {"driver", gpu.driver}, {"memory_used", gpu.memory_used}});
    json["driver"] = driver;
    json["nccl_version"] = nccl_version;
    json["nccl_source"] = nccl_source;
    json["etc_nccl_conf"] = etc_nccl_conf;
    json["home_nccl_conf"] = home_nccl_conf;
    json["busy"] = nlohmann::json::array();
    for (const auto& p : busy)
        json["busy"].push_back({{"pid", p.pid}, {"name", p.name}, {"used_memory", p.used_memory}});
    json["notes"] = notes;
    json["command_start_s"] = command_start_s;
    json["warnings"] = warnings;
    return json;
}

Result<HostPreflight> run_preflight(Target& target, std::chrono::seconds timeout) {
    const auto begin = std::chrono::steady_clock::now();
    auto started = target.capture({"true"}, timeout);
    if (!started) return started.error();
    const double start_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    auto output = target.capture({"/bin/sh", "-c", k_probe}, timeout);
    if (!output) return output.error();
    HostPreflight preflight = parse_preflight(*output, target.describe());
    preflight.command_start_s = start_s;
    if (start_s > k_slow_command_start_s) {
        preflight.warnings.push_back(fmt::format(
            "{}: starting a command takes {:.2f} s, and every experiment starts at least one. Over ssh a "
            "command is one request to ncclsweep's agent: the login shell and its start-up files "
            "(~/.bashrc with pyenv or conda) run once per connection and are not in this figure, so it is "
            "the host itself (a loaded machine, a slow $TMPDIR) or the network's round trip",
            preflight.target, start_s));
    }
    // The target's own checks (Slurm: is the work directory where the nodes can see it).
    auto findings = target.check_before_sweep();
    if (!findings) return findings.error();
    preflight.notes.insert(preflight.notes.end(), findings->notes.begin(), findings->notes.end());
    preflight.warnings.insert(preflight.warnings.end(), findings->warnings.begin(), findings->warnings.end());
    return preflight;
}

Result<void> check_gpus_idle(const HostPreflight& preflight, BusyPolicy policy) {
    if (preflight.busy.empty() || policy == BusyPolicy::force) return success();
    std::string list;
    for (const auto& p : preflight.busy)
        list += fmt::format("\n  pid {} {} ({})", p.pid, p.name, p.used_memory);
    return Error::infrastructure(
        fmt::format("{}: GPUs are busy; measurements would be disturbed. Compute processes:{}\n"
                    "Stop them, or pass --force to run anyway",
                    preflight.target, list));
}

Result<std::string> verify_gpus_released(Target& target, const std::vector<long>& process_groups,
                                         std::chrono::seconds timeout) {
    if (process_groups.empty()) return std::string();
    // pid and pgid of each GPU compute process, in one round trip.
    constexpr const char* k_check = R"SH(
if ! command -v nvidia-smi >/dev/null 2>&1; then echo no_nvidia_smi; exit 0; fi
for p in $(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null); do
  g=$(ps -o pgid= -p "$p" 2>/dev/null | tr -d ' ')
  [ -n "$g" ] && echo "$p $g"
done
exit 0
)SH";
    auto output = target.capture({"/bin/sh", "-c", k_check}, timeout);
    if (!output) return output.error();
    if (output->rfind("no_nvidia_smi", 0) == 0)
        return std::string("nvidia-smi not found: GPU release not checked");
    std::stringstream stream(*output);
    long pid = 0, pgid = 0;
    std::string held;
    while (stream >> pid >> pgid) {
        if (std::find(process_groups.begin(), process_groups.end(), pgid) != process_groups.end()) {
            held += fmt::format(" pid {} (group {})", pid, pgid);
        }
    }
    if (held.empty()) return std::string();
    return Error::infrastructure(
        fmt::format("{}: a previous experiment's process still holds a GPU:{}; it was killed but has not "
                    "exited (stuck in the driver?). Check the host before resuming",
                    target.describe(), held));
}

std::function<Result<void>(const std::vector<long>&)> gpu_release_check(Target& target,
                                                                        const HostPreflight& preflight,
                                                                        std::chrono::seconds timeout) {
    const bool check = preflight.has_nvidia_smi;
    return [&target, check, timeout](const std::vector<long>& previous_groups) -> Result<void> {
        if (!check || previous_groups.empty()) return success();
        auto released = verify_gpus_released(target, previous_groups, timeout);
        if (!released) return released.error();
        return success();
    };
}

}  // namespace ncclsweep::remote
