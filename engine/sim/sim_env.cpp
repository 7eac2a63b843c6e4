// Reads the NCCL_* environment the way NCCL does (parsing rules of NCCL 2.24+), for the sim.
#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "engine/sim/sim_model.hpp"

namespace tpverify::sim {
namespace {

const char* const k_func_names[k_funcs] = {"Broadcast",     "Reduce",    "AllGather",
                                           "ReduceScatter", "AllReduce", "SendRecv"};
const char* const k_algo_names[k_algos] = {"Tree",     "Ring", "CollNetDirect", "CollNetChain", "NVLS",
                                           "NVLSTree", "PAT"};
const char* const k_algo_upper[k_algos] = {"TREE",      "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS",
                                           "NVLS_TREE", "PAT"};
const char* const k_proto_names[k_protos] = {"LL", "LL128", "Simple"};

bool iequals(const std::string& a, const char* b) {
    if (a.size() != std::strlen(b)) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (c == sep) {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

/// NCCL's list syntax: "[prefix:][^]elem,elem;prefix:[^]elem" into list[func][elem].
bool parse_list(const std::string& str, const char* const* elems, int nelems, int* list, std::string& warn) {
    const std::vector<std::string> entries = split(str, ';');
    for (std::size_t i = 0; i < entries.size(); ++i) {
        std::string prefix, elem_list = entries[i];
        if (auto colon = entries[i].find(':'); colon != std::string::npos) {
            prefix = entries[i].substr(0, colon);
            elem_list = entries[i].substr(colon + 1);
        } else if (i > 0) {
            warn = "All entries except the first must have a prefix: \"" + str + "\"";
            return false;
        }
        int unset = 0, set = 1;
        if (!elem_list.empty() && elem_list[0] == '^') {
            unset = 1;
            set = 0;
            elem_list.erase(0, 1);
        }
        bool found_prefix = false;
        for (int f = 0; f < k_funcs; ++f) {
            if (!prefix.empty() && !iequals(prefix, k_func_names[f])) continue;
            found_prefix = true;
            for (int e = 0; e < nelems; ++e) list[f * nelems + e] = unset;
            for (const std::string& token : split(elem_list, ',')) {
                int e = 0;
                while (e < nelems && !iequals(token, elems[e])) ++e;
                if (e == nelems) {
                    warn = "Unrecognized element token \"" + token + "\" when parsing \"" + str + "\"";
                    return false;
                }
                list[f * nelems + e] = set;
            }
        }
        if (!found_prefix) {
            warn = "Unrecognized prefix token \"" + prefix + "\" when parsing \"" + str + "\"";
            return false;
        }
    }
    return true;
}

/// NCCL_PARAM-style integer: strtoll, logged when taken; garbage keeps the default.
long long int_param(const std::function<const char*(const char*)>& getenv, const char* name, long long def,
                    NcclEnv& env) {
    const char* v = getenv(name);
    if (!v || !*v) return def;
    errno = 0;
    char* end = nullptr;
    long long x = std::strtoll(v, &end, 0);
    if (errno != 0 || end == v) {
        env.env_lines.push_back(std::string("Invalid value ") + v + " for " + name + ", using default " +
                                std::to_string(def) + ".");
        return def;
    }
    env.env_lines.push_back(std::string(name) + " set by environment to " + std::to_string(x) + ".");
    return x;
}

}  // namespace

const char* func_name(Func f) {
    return k_func_names[static_cast<int>(f)];
}
const char* algo_name(Algo a) {
    return k_algo_names[static_cast<int>(a)];
}
const char* algo_upper(Algo a) {
    return k_algo_upper[static_cast<int>(a)];
}
const char* proto_name(Proto p) {
    return k_proto_names[static_cast<int>(p)];
}
const char* transport_name(Transport t) {
    switch (t) {
        case Transport::p2p:
            return "P2P/CUMEM";
        case Transport::shm:
            return "SHM/direct/direct";
        case Transport::net:
            return "NET/Socket/0";
    }
    return "?";
}

void print_nccl_line(int rank, const char* level, const std::string& text) {
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    if (char* dot = std::strchr(host, '.')) *dot = '\0';
    const int pid = static_cast<int>(getpid());
    std::fflush(stdout);
    std::printf("%s%s:%d:%d [%d] NCCL %s %s\n", k_sim_line_marker, host, pid, pid, rank, level, text.c_str());
    std::fflush(stdout);
}

bool NcclEnv::info(const char* subsys_name) const {
    if (debug_level < 3) return false;
    return std::find(subsys.begin(), subsys.end(), subsys_name) != subsys.end() ||
           std::find(subsys.begin(), subsys.end(), "ALL") != subsys.end();
}

bool parse_nccl_env(const std::function<const char*(const char*)>& getenv, NcclEnv& env, std::string& warn) {
    for (auto& row : env.algo_enable) std::fill(std::begin(row), std::end(row), 1);
    for (auto& row : env.proto_enable) {
        row[0] = 1;
        row[1] = 2;
        row[2] = 1;
    }
    // Debug settings first: they decide which of the lines below anyone sees.
    if (const char* d = getenv("NCCL_DEBUG")) {
        std::string level = d;
        if (iequals(level, "VERSION"))
            env.debug_level = 1;
        else if (iequals(level, "WARN"))
            env.debug_level = 2;
        else if (iequals(level, "INFO"))
            env.debug_level = 3;
        else if (iequals(level, "TRACE"))
            env.debug_level = 4;
    }
    const char* subsys = getenv("NCCL_DEBUG_SUBSYS");
    std::string subsys_str = subsys ? subsys : "INIT,BOOTSTRAP,ENV";
    const bool invert = !subsys_str.empty() && subsys_str[0] == '^';
    const char* const all[] = {"INIT",  "COLL", "P2P",   "SHM",  "NET",       "GRAPH", "TUNING",  "ENV",
                               "ALLOC", "CALL", "PROXY", "NVLS", "BOOTSTRAP", "REG",   "PROFILE", "RAS"};
    std::vector<std::string> listed;
    for (std::string s : split(invert ? subsys_str.substr(1) : subsys_str, ',')) {
        for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        listed.push_back(s);
    }
    if (invert) {
        for (const char* s : all)
            if (std::find(listed.begin(), listed.end(), s) == listed.end()) env.subsys.emplace_back(s);
    } else {
        env.subsys = listed;
    }

    if (const char* p = getenv("NCCL_PROTO")) {
        env.proto_str = p;
        env.env_lines.push_back(std::string("NCCL_PROTO set by environment to ") + p);
        if (!parse_list(env.proto_str, k_proto_names, k_protos, &env.proto_enable[0][0], warn)) return false;
    }
    if (const char* a = getenv("NCCL_ALGO")) {
        env.algo_str = a;
        env.env_lines.push_back(std::string("NCCL_ALGO set by environment to ") + a);
        if (!parse_list(env.algo_str, k_algo_names, k_algos, &env.algo_enable[0][0], warn)) return false;
    }

    // Channel limits: the deprecated NCHANNELS names still count; the more restrictive wins.
    const long long min_ctas = int_param(getenv, "NCCL_MIN_CTAS", -1, env);
    const long long min_nch = int_param(getenv, "NCCL_MIN_NCHANNELS", -1, env);
    const long long max_ctas = int_param(getenv, "NCCL_MAX_CTAS", -1, env);
    const long long max_nch = int_param(getenv, "NCCL_MAX_NCHANNELS", -1, env);
    const long long lo = std::max(min_ctas, min_nch);
    long long hi = max_ctas > 0 && max_nch > 0 ? std::min(max_ctas, max_nch) : std::max(max_ctas, max_nch);
    env.min_ctas = lo > 0 ? static_cast<int>(std::min(lo, 64LL)) : -1;
    env.max_ctas = hi > 0 ? static_cast<int>(std::min(hi, 64LL)) : -1;

    long long nt = int_param(getenv, "NCCL_NTHREADS", -2, env);
    if (nt > 0) {
        if (nt % 32 != 0) {
            env.env_lines.push_back("Invalid NCCL_NTHREADS " + std::to_string(nt) +
                                    " (must be a multiple of 32)");
            nt = 512;
        } else if (nt > 512) {
            env.env_lines.push_back("Invalid NCCL_NTHREADS " + std::to_string(nt) + " (maximum 512).");
            nt = 512;
        } else if (nt < 64) {
            env.env_lines.push_back("Invalid NCCL_NTHREADS " + std::to_string(nt) + " (minimum 64).");
            nt = 64;
        }
        env.nthreads = static_cast<int>(nt);
    }
    env.buffsize = int_param(getenv, "NCCL_BUFFSIZE", -2, env);
    if (env.buffsize <= 0) env.buffsize = -1;
    // NCCL compares these with 1 (paths.cc, ncclGetLevel; shm.cc): "2" disables nothing.
    env.p2p_disable = int_param(getenv, "NCCL_P2P_DISABLE", 0, env) == 1;
    env.shm_disable = int_param(getenv, "NCCL_SHM_DISABLE", 0, env) == 1;
    env.runtime_connect = int_param(getenv, "NCCL_RUNTIME_CONNECT", 1, env) != 0;
    if (const char* level = getenv("NCCL_P2P_LEVEL"); level != nullptr && !env.p2p_disable) {
        env.p2p_level = parse_p2p_level(level);
        if (env.p2p_level >= 0)
            env.env_lines.push_back(std::string("NCCL_P2P_LEVEL set by environment to ") +
                                    path_name(static_cast<Path>(env.p2p_level)));
    }
    return true;
}

}  // namespace tpverify::sim
