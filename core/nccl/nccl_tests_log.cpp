// Parsing nccl-tests logs into calibration tables for tpverify's sim (docs/engine.md).
#include "core/nccl/nccl_tests_log.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

namespace ncclsweep::nccl {
namespace {

std::vector<std::string_view> words(std::string_view line) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
        std::size_t start = i;
        while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
        if (i > start) out.push_back(line.substr(start, i - start));
    }
    return out;
}

bool to_u64(std::string_view text, std::uint64_t& out) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && end == text.data() + text.size();
}

bool to_double(std::string_view text, double& out) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && end == text.data() + text.size() && std::isfinite(out);
}

bool debug_variable(std::string_view name) {
    return name.substr(0, 10) == "NCCL_DEBUG";
}

/// "NCCL_X=V" words in front of the command of a "$ ..." line.
void command_line_setting(std::string_view line, std::map<std::string, std::string>& setting) {
    auto w = words(line.substr(1));
    for (std::string_view word : w) {
        const auto eq = word.find('=');
        if (eq == std::string_view::npos) break;  // the command itself
        if (word.substr(0, 5) == "NCCL_" && !debug_variable(word.substr(0, eq)))
            setting[std::string(word.substr(0, eq))] = std::string(word.substr(eq + 1));
    }
}

/// "... NCCL INFO NCCL_X set by environment to V" (NCCL_PARAM integers end with '.').
void environment_line_setting(std::string_view line, std::map<std::string, std::string>& setting) {
    constexpr std::string_view marker = " set by environment to ";
    const auto at = line.find(marker);
    if (at == std::string_view::npos) return;
    const auto name_start = line.rfind(' ', at - 1);
    std::string_view name = line.substr(name_start == std::string_view::npos ? 0 : name_start + 1,
                                        at - (name_start == std::string_view::npos ? 0 : name_start + 1));
    if (name.substr(0, 5) != "NCCL_" || debug_variable(name)) return;
    std::string_view value = line.substr(at + marker.size());
    while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.remove_suffix(1);
    if (value.size() > 1 && value.back() == '.') {
        double ignored = 0;
        if (to_double(value.substr(0, value.size() - 1), ignored)) value.remove_suffix(1);
    }
    setting[std::string(name)] = std::string(value);
}

}  // namespace

Result<NcclTestsLog> parse_nccl_tests_log(std::string_view text, const std::string& source) {
    NcclTestsLog log;
    log.source = source;
    std::map<std::string, std::string> setting;
    bool in_devices = false;
    std::uint64_t raw_rows = 0;
    std::vector<std::pair<std::uint64_t, double>> raw;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        const auto nl = text.find('\n', pos);
        std::string_view line =
            text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
        auto w = words(line);
        if (w.empty()) continue;
        if (w[0] == "$") {
            command_line_setting(line.substr(line.find('$')), setting);
            continue;
        }
        if (w[0] == "#") {
            if (w.size() >= 4 && w[1] == "nccl-tests" && w[2] == "version") log.version = std::string(w[3]);
            if (w.size() >= 5 && w[1] == "Collective" && w[2] == "test" && w[3] == "starting:") {
                if (w[4] == "all_reduce_perf")
                    log.collective = "all_reduce";
                else if (w[4] == "all_gather_perf")
                    log.collective = "all_gather";
                else
                    return Error::bad_input(
                        fmt::format("{}: a {} log; calibration reads all_reduce_perf and "
                                    "all_gather_perf only",
                                    source, w[4]));
            }
            if (w.size() >= 2 && w[1] == "nThread")
                for (std::size_t i = 1; i + 1 < w.size(); ++i)
                    if (w[i] == "graph:") log.graph = w[i + 1] != "0";
            if (w.size() >= 3 && w[1] == "Using" && w[2] == "devices")
                in_devices = true;
            else if (in_devices && w.size() >= 2 && w[1] == "Rank")
                ++log.nranks;
            else if (w.size() == 1)
                in_devices = false;
            continue;
        }
        if (line.find(" NCCL ") != std::string_view::npos) {
            environment_line_setting(line, setting);
            continue;
        }
        // A data row: size count type redop root time algbw busbw #wrong time algbw busbw #wrong
        std::uint64_t size = 0, count = 0;
        double time_us = 0;
        if (w.size() >= 9 && to_u64(w[0], size) && to_u64(w[1], count) && to_double(w[5], time_us)) {
            ++raw_rows;
            if (size > 0 && time_us > 0) raw.emplace_back(size, time_us);
        }
    }
    if (log.collective.empty())
        return Error::bad_input(
            fmt::format("{}: no '# Collective test starting:' line; this is not nccl-tests output "
                        "(run all_reduce_perf or all_gather_perf and save what it prints)",
                        source));
    if (log.nranks == 0)
        return Error::bad_input(
            fmt::format("{}: no '#  Rank' lines under '# Using devices'; the log is cut short", source));
    if (raw.empty())
        return Error::bad_input(
            fmt::format("{}: {} result rows, none with a size > 0 and a time; rerun with -b 8 "
                        "or larger sizes",
                        source, raw_rows));
    std::sort(raw.begin(), raw.end());
    for (auto [size, us] : raw) {
        const std::uint64_t bytes =
            log.collective == "all_gather" ? size / static_cast<std::uint64_t>(log.nranks) : size;
        if (bytes == 0) continue;
        if (!log.points.empty() && log.points.back().first == bytes)
            return Error::bad_input(
                fmt::format("{}: size {} appears twice; keep one run per log", source, size));
        log.points.emplace_back(bytes, us);
    }
    log.setting.assign(setting.begin(), setting.end());
    return log;
}

Result<std::string> calibration_text(const std::vector<NcclTestsLog>& logs, std::string_view topology_block) {
    using Key = std::tuple<std::vector<std::pair<std::string, std::string>>, std::string, int>;
    std::map<Key, const NcclTestsLog*> tables;
    for (const NcclTestsLog& log : logs) {
        auto [it, fresh] = tables.emplace(Key{log.setting, log.collective, log.nranks}, &log);
        if (!fresh)
            return Error::bad_input(
                fmt::format("{} and {} both measure {} at {} ranks under the same NCCL setting; "
                            "keep one of them in the directory",
                            it->second->source, log.source, log.collective, log.nranks));
    }
    std::string out =
        "tpverify-calibration 1\n# Written by 'ncclsweep calibrate' from nccl-tests logs; times are the\n"
        "# out-of-place column in microseconds, sizes are bytes per rank (docs/engine.md).\n";
    out += topology_block;
    const std::vector<std::pair<std::string, std::string>>* last_setting = nullptr;
    for (const auto& [key, log] : tables) {
        const auto& setting = std::get<0>(key);
        if (last_setting == nullptr || *last_setting != setting) {
            out += "\nsetting";
            for (const auto& [name, value] : setting) out += " " + name + "=" + value;
            out += setting.empty() ? "   # NCCL's defaults\n" : "\n";
            last_setting = &setting;
        }
        out +=
            fmt::format("table {} {}   # {}{}{}\n", log->collective, log->nranks, log->source,
                        log->version.empty() ? "" : ", nccl-tests " + log->version, log->graph ? ", -G" : "");
        for (auto [bytes, us] : log->points) out += fmt::format("{} {}\n", bytes, us);
    }
    return out;
}

Result<std::string> topology_block(Target& target, const std::string& engine,
                                   const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in)
        return Error::bad_input(
            fmt::format("{}: cannot read the topology file (save `nvidia-smi topo -m > FILE` on "
                        "the machine the logs were measured on and give that file)",
                        file.string()));
    std::ostringstream text;
    text << in.rdbuf();
    auto verdict =
        target.capture({engine, "--validate", "--topology-file", file.string()}, std::chrono::seconds(30));
    if (!verdict)
        return Error::infrastructure(
            fmt::format("cannot ask {} to read {}: {} (give the engine with --engine)", engine, file.string(),
                        verdict.error().message));
    const auto j = nlohmann::json::parse(*verdict, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("valid"))
        return Error::infrastructure(fmt::format(
            "{} --validate printed '{}', not a verdict; use a tpverify of this ncclsweep build (--engine)",
            engine, *verdict));
    if (!j["valid"].get<bool>()) return Error::bad_input(j.value("error", std::string("refused")));
    std::string block =
        fmt::format("\ntopology {}   # `nvidia-smi topo -m` of the machine the logs were measured on\n",
                    file.filename().string());
    std::istringstream lines(text.str());
    for (std::string line; std::getline(lines, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        block += "| " + line + "\n";
    }
    return block;
}

Result<std::vector<NcclTestsLog>> read_nccl_tests_dir(const std::filesystem::path& dir,
                                                      std::vector<std::string>& skipped) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
        return Error::bad_input(
            fmt::format("{}: not a directory; give the directory that holds the nccl-tests logs "
                        "(one file per NCCL setting)",
                        dir.string()));
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
        if (entry.is_regular_file()) files.push_back(entry.path());
    if (ec)
        return Error::infrastructure(
            fmt::format("{}: cannot list the directory: {}", dir.string(), ec.message()));
    std::sort(files.begin(), files.end());
    std::vector<NcclTestsLog> logs;
    for (const auto& file : files) {
        std::ifstream in(file, std::ios::binary);
        if (!in) {
            skipped.push_back(fmt::format("{}: cannot be read", file.string()));
            continue;
        }
        std::ostringstream text;
        text << in.rdbuf();
        auto log = parse_nccl_tests_log(text.str(), file.filename().string());
        if (!log) {
            const bool topo =
                text.str().find("GPU0") != std::string::npos && text.str().find(" X ") != std::string::npos;
            skipped.push_back(
                log.error().message +
                (topo ? " (it looks like `nvidia-smi topo -m` output: give it with --topology-file)" : ""));
            continue;
        }
        logs.push_back(std::move(*log));
    }
    if (logs.empty())
        return Error::bad_input(
            fmt::format("{}: no file is all_reduce_perf or all_gather_perf output ({} skipped)", dir.string(),
                        skipped.size()));
    return logs;
}

}  // namespace ncclsweep::nccl
