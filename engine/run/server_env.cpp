// The --server preset's environment (engine/run/server_env.hpp).
#include "engine/run/server_env.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>

#include "engine/report.hpp"

extern char** environ;

namespace tpverify {

std::vector<std::pair<std::string, std::string>> server_preset(Server server) {
    if (server == Server::none) return {};
    // SGLang: NCCL_CUMEM_ENABLE and NCCL_NVLS_ENABLE are set to 0 unless the caller set them (and
    // symmetric memory / NVLS are off, SGLang's defaults); CUDA_DEVICE_MAX_CONNECTIONS and
    // CUDA_MODULE_LOADING it sets unconditionally, here too only where the caller has not.
    return {{"NCCL_CUMEM_ENABLE", "0"},
            {"NCCL_NVLS_ENABLE", "0"},
            {"CUDA_DEVICE_MAX_CONNECTIONS", "8"},
            {"CUDA_MODULE_LOADING", "AUTO"}};
}

bool collectives_skipped(const Options& o) {
    const int ranks = o.rank >= 0 ? o.nranks : o.tp;
    const bool stale =
        std::any_of(o.inject.begin(), o.inject.end(), [](const Injection& f) { return f.kind == "stale"; });
    return ranks == 1 && o.server == Server::sglang && !stale;
}

std::vector<EnvSetting> server_environment(Server server, bool apply,
                                           const std::function<const char*(const char*)>& get,
                                           const std::function<void(const char*, const char*)>& set,
                                           const std::vector<std::string>& environ_names) {
    // Names a launching tpverify set from the preset are the preset's, not the caller's.
    std::set<std::string> launcher_set;
    if (const char* list = get(k_preset_env)) {
        std::string s = list;
        for (std::size_t at = 0; at <= s.size();) {
            const std::size_t comma = std::min(s.find(',', at), s.size());
            if (comma > at) launcher_set.insert(s.substr(at, comma - at));
            at = comma + 1;
        }
    }
    std::vector<EnvSetting> out;
    std::set<std::string> seen;
    for (const auto& [name, value] : server_preset(server)) {
        EnvSetting e{name, value, false};
        if (const char* v = get(name.c_str())) {
            e.value = v;
            e.from_caller = launcher_set.count(name) == 0;
        } else if (apply) {
            set(name.c_str(), value.c_str());
        }
        out.push_back(e);
        seen.insert(name);
    }
    std::vector<std::string> names;
    for (const std::string& n : environ_names)
        if (n.rfind("NCCL_", 0) == 0 && !seen.count(n)) names.push_back(n);
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    // The launcher hands each rank NCCL_DEBUG_FILE=/dev/fd/N (its relay pipe): not the caller's.
    const bool relayed = get("TPVERIFY_RELAYED") != nullptr;
    for (const std::string& n : names)
        if (const char* v = get(n.c_str()))
            out.push_back({n, v,
                           launcher_set.count(n) == 0 &&
                               !(relayed && n == "NCCL_DEBUG_FILE" && std::strncmp(v, "/dev/fd/", 8) == 0)});
    return out;
}

std::vector<EnvSetting> process_server_environment(Server server, bool apply) {
    std::vector<std::string> names;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        const char* eq = std::strchr(*e, '=');
        if (eq != nullptr) names.emplace_back(*e, std::size_t(eq - *e));
    }
    return server_environment(
        server, apply, [](const char* n) { return std::getenv(n); },
        [](const char* n, const char* v) { setenv(n, v, 1); }, names);
}

std::string env_json(const std::vector<EnvSetting>& settings) {
    std::string out = "{";
    for (std::size_t i = 0; i < settings.size(); ++i)
        out += (i ? "," : "") + json_quote(settings[i].name) + ":" + json_quote(settings[i].value);
    return out + "}";
}

std::string caller_names_json(const std::vector<EnvSetting>& settings) {
    std::string out = "[";
    bool first = true;
    for (const EnvSetting& e : settings) {
        if (!e.from_caller) continue;
        out += (first ? "" : ",") + json_quote(e.name);
        first = false;
    }
    return out + "]";
}

}  // namespace tpverify
