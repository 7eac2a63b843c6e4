// Command-line parsing for tpverify: `--flag value` and `--flag=value`, no third-party deps.
#include "engine/options.hpp"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>

namespace tpverify {
namespace {

/// True for words that read as a boolean; sets `out`.
bool parse_bool_word(const std::string& text, bool& out) {
    static const std::map<std::string, bool> k_words = {{"on", true},  {"true", true}, {"yes", true},
                                                        {"1", true},   {"off", false}, {"false", false},
                                                        {"no", false}, {"0", false}};
    auto it = k_words.find(text);
    if (it == k_words.end()) return false;
    out = it->second;
    return true;
}

bool parse_int(const std::string& text, long long lo, long long hi, int& out) {
    if (text.empty()) return false;
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
    out = static_cast<int>(v);
    return true;
}

bool parse_double(const std::string& text, double lo, double hi, double& out) {
    if (text.empty()) return false;
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (errno != 0 || *end != '\0' || !std::isfinite(v) || v < lo || v > hi) return false;
    out = v;
    return true;
}

const char* const k_inject_kinds[] = {"capture-fail", "nccl-error", "cuda-oom", "hang",
                                      "segv",         "exit",       "stale"};
const char* const k_phases[] = {"init", "warmup", "capture", "replay"};

/// Parses KIND[@PHASE][:SECONDS]; error text on failure.
std::string parse_injection(const std::string& text, Injection& out) {
    std::string rest = text;
    std::string seconds;
    if (auto colon = rest.find(':'); colon != std::string::npos) {
        seconds = rest.substr(colon + 1);
        rest = rest.substr(0, colon);
        if (!parse_double(seconds, 0, 1e7, out.seconds))
            return "--inject '" + text + "': SECONDS must be a number >= 0, got '" + seconds + "'";
    }
    if (auto at = rest.find('@'); at != std::string::npos) {
        out.phase = rest.substr(at + 1);
        rest = rest.substr(0, at);
        bool known = false;
        for (const char* p : k_phases) known = known || out.phase == p;
        if (!known)
            return "--inject '" + text + "': unknown phase '" + out.phase +
                   "' (use init, warmup, capture or replay)";
    }
    out.kind = rest;
    for (const char* k : k_inject_kinds)
        if (out.kind == k) return {};
    return "--inject '" + text + "': unknown kind '" + out.kind +
           "' (use capture-fail, nccl-error, cuda-oom, hang, segv, exit or stale)";
}

/// One flag: whether it takes a value and how to apply it. `apply` returns an error or "".
struct FlagSpec {
    enum class Arity { value, none, optional_bool } arity;
    std::function<std::string(Options&, const std::string&)> apply;
};

std::string bad(const std::string& flag, const std::string& value, const std::string& expected) {
    return "--" + flag + ": expected " + expected + ", got '" + value + "'";
}

FlagSpec int_flag(const char* name, long long lo, long long hi, int Options::*field) {
    return {FlagSpec::Arity::value, [=](Options& o, const std::string& v) {
                return parse_int(v, lo, hi, o.*field)
                           ? std::string()
                           : bad(name, v, "an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
            }};
}

FlagSpec shape_flag(const char* name, std::optional<int> Options::*field) {
    return {FlagSpec::Arity::value, [=](Options& o, const std::string& v) {
                int n = 0;
                if (!parse_int(v, 1, 10000000, n)) return bad(name, v, "a positive integer");
                o.*field = n;
                return std::string();
            }};
}

FlagSpec double_flag(const char* name, double lo, double hi, double Options::*field) {
    return {FlagSpec::Arity::value, [=](Options& o, const std::string& v) {
                return parse_double(v, lo, hi, o.*field) ? std::string() : bad(name, v, "a number in range");
            }};
}

FlagSpec bool_flag(const char* name, bool Options::*field, bool when_set = true) {
    return {FlagSpec::Arity::optional_bool, [=](Options& o, const std::string& v) {
                bool b = true;
                if (!v.empty() && !parse_bool_word(v, b)) return bad(name, v, "on or off");
                o.*field = when_set ? b : !b;
                return std::string();
            }};
}

const std::map<std::string, FlagSpec>& flag_table() {
    static const std::map<std::string, FlagSpec> k_flags = [] {
        std::map<std::string, FlagSpec> f;
        using A = FlagSpec::Arity;
        f["model"] = {A::value, [](Options& o, const std::string& v) {
                          o.model = v;
                          return std::string();
                      }};
        f["layers"] = shape_flag("layers", &Options::layers);
        f["hidden"] = shape_flag("hidden", &Options::hidden);
        f["heads"] = shape_flag("heads", &Options::heads);
        f["experts"] = shape_flag("experts", &Options::experts);
        f["active-experts"] = shape_flag("active-experts", &Options::active_experts);
        f["moe-intermediate"] = shape_flag("moe-intermediate", &Options::moe_intermediate);
        f["dense-intermediate"] = shape_flag("dense-intermediate", &Options::dense_intermediate);
        f["vocab"] = shape_flag("vocab", &Options::vocab);
        f["dense-layers"] = {A::value, [](Options& o, const std::string& v) {
                                 int n = 0;
                                 if (!parse_int(v, 0, 100000, n))
                                     return bad("dense-layers", v, "an integer >= 0");
                                 o.dense_layers = n;
                                 return std::string();
                             }};
        f["tp"] = int_flag("tp", 1, 1024, &Options::tp);
        f["tokens"] = int_flag("tokens", 1, 1 << 20, &Options::tokens);
        f["rank"] = int_flag("rank", 0, 1023, &Options::rank);
        f["nranks"] = int_flag("nranks", 1, 1024, &Options::nranks);
        f["context"] = int_flag("context", 0, 1 << 20, &Options::context);
        f["draft-steps"] = int_flag("draft-steps", 0, 64, &Options::draft_steps);
        f["process-model"] = {A::value, [](Options& o, const std::string& v) {
                                  if (v == "processes")
                                      o.process_model = ProcessModel::processes;
                                  else if (v == "threads")
                                      o.process_model = ProcessModel::threads;
                                  else
                                      return bad("process-model", v, "processes or threads");
                                  return std::string();
                              }};
        f["expert-format"] = {A::value, [](Options& o, const std::string& v) {
                                  if (v == "bf16")
                                      o.expert_format = ExpertFormat::bf16;
                                  else if (v == "int4")
                                      o.expert_format = ExpertFormat::int4;
                                  else
                                      return bad("expert-format", v, "bf16 or int4");
                                  return std::string();
                              }};
        f["graph"] = bool_flag("graph", &Options::graph);
        f["fusion"] = bool_flag("fusion", &Options::fusion);
        f["check"] = bool_flag("check", &Options::check);
        f["json"] = bool_flag("json", &Options::json);
        f["measure-collectives"] = {A::none, [](Options& o, const std::string&) {
                                        o.measure_collectives = true;
                                        return std::string();
                                    }};
        f["measure-kernels"] = {A::none, [](Options& o, const std::string&) {
                                    o.measure_kernels = true;
                                    return std::string();
                                }};
        f["no-warmup-before-capture"] =
            bool_flag("no-warmup-before-capture", &Options::warmup_before_capture, false);
        f["server"] = {A::value, [](Options& o, const std::string& v) {
                           if (v == "sglang")
                               o.server = Server::sglang;
                           else if (v == "none")
                               o.server = Server::none;
                           else
                               return bad("server", v, "sglang or none");
                           return std::string();
                       }};
        f["capture-mode"] = {A::value, [](Options& o, const std::string& v) {
                                 o.capture_mode_given = true;
                                 if (v == "thread-local")
                                     o.capture_mode = CaptureMode::thread_local_mode;
                                 else if (v == "global")
                                     o.capture_mode = CaptureMode::global;
                                 else if (v == "relaxed")
                                     o.capture_mode = CaptureMode::relaxed;
                                 else
                                     return bad("capture-mode", v, "thread-local, global or relaxed");
                                 return std::string();
                             }};
        f["warmup"] = int_flag("warmup", 0, 1000000, &Options::warmup);
        f["iters"] = int_flag("iters", 1, 10000000, &Options::iters);
        f["target-rsd"] = {A::value, [](Options& o, const std::string& v) {
                               double x = 0;
                               if (!parse_double(v, 1e-9, 1.0, x))
                                   return bad("target-rsd", v, "a fraction in (0, 1], e.g. 0.01");
                               o.target_rsd = x;
                               return std::string();
                           }};
        f["max-seconds"] = double_flag("max-seconds", 1e-6, 1e7, &Options::max_seconds);
        f["accept-len"] = double_flag("accept-len", 1e-6, 1e6, &Options::accept_len);
        f["draft-us"] = double_flag("draft-us", 0, 1e9, &Options::draft_us);
        f["timeout"] = double_flag("timeout", 0, 1e7, &Options::timeout_s);
        f["backend"] = {A::value, [](Options& o, const std::string& v) {
                            if (v == "auto")
                                o.backend = BackendKind::automatic;
                            else if (v == "cuda")
                                o.backend = BackendKind::cuda;
                            else if (v == "sim")
                                o.backend = BackendKind::sim;
                            else
                                return bad("backend", v, "auto, cuda or sim");
                            return std::string();
                        }};
        f["topology"] = {A::value, [](Options& o, const std::string& v) {
                             if (v == "pcie-gen4")
                                 o.topology = Topology::pcie_gen4;
                             else if (v == "pcie-gen5")
                                 o.topology = Topology::pcie_gen5;
                             else if (v == "nvlink")
                                 o.topology = Topology::nvlink;
                             else
                                 return bad("topology", v, "pcie-gen4, pcie-gen5 or nvlink");
                             o.sim_only_flags.emplace_back("--topology");
                             return std::string();
                         }};
        f["topology-file"] = {A::value, [](Options& o, const std::string& v) {
                                  if (v.empty())
                                      return bad("topology-file", v, "a file of `nvidia-smi topo -m`");
                                  o.topology_file = v;
                                  o.sim_only_flags.emplace_back("--topology-file");
                                  return std::string();
                              }};
        f["seed"] = {A::value, [](Options& o, const std::string& v) {
                         char* end = nullptr;
                         errno = 0;
                         unsigned long long u = v.empty() ? 0 : std::strtoull(v.c_str(), &end, 10);
                         if (v.empty() || v[0] == '-' || *end != '\0' || errno != 0 || u > 4294967295ULL)
                             return bad("seed", v, "an integer in 0..4294967295");
                         o.seed = static_cast<unsigned>(u);
                         return std::string();
                     }};
        f["noise"] = {A::value, [](Options& o, const std::string& v) {
                          if (!parse_double(v, 0, 1, o.noise)) return bad("noise", v, "a number in range");
                          o.sim_only_flags.emplace_back("--noise");
                          return std::string();
                      }};
        f["calibration"] = {A::value, [](Options& o, const std::string& v) {
                                if (v.empty()) return bad("calibration", v, "a calibration file");
                                o.calibration = v;
                                o.sim_only_flags.emplace_back("--calibration");
                                return std::string();
                            }};
        f["inject"] = {A::value, [](Options& o, const std::string& v) {
                           Injection inj;
                           std::string err = parse_injection(v, inj);
                           if (err.empty()) o.inject.push_back(inj);
                           // A stale collective is a fault of both backends; the others the sim's.
                           if (err.empty() && inj.kind != "stale") o.sim_only_flags.emplace_back("--inject");
                           return err;
                       }};
        return f;
    }();
    return k_flags;
}

/// Cross-flag checks once everything is parsed.
std::string validate(const Options& o) {
    if (o.rank >= 0 && o.nranks == 0) return "--rank needs --nranks (the total number of ranks)";
    if (o.rank >= 0 && o.rank >= o.nranks)
        return "--rank " + std::to_string(o.rank) + " is out of range for --nranks " +
               std::to_string(o.nranks);
    if (o.nranks > 0 && o.tp != 1 && o.tp != o.nranks)
        return "--tp " + std::to_string(o.tp) + " disagrees with --nranks " + std::to_string(o.nranks) +
               " (with one process per rank, --nranks is the TP degree)";
    // --topology, --noise and --calibration describe the sim's machine: the CUDA backend runs
    // on the real one and ignores them (main says so in one line). A fault is not ignored.
    for (const Injection& inj : o.inject)
        if (o.backend == BackendKind::cuda && inj.kind != "stale")
            return "--inject " + inj.kind +
                   " is a fault of the sim backend (the CUDA backend injects only stale); drop it with "
                   "--backend cuda (or use --backend sim)";
    if (o.measure_collectives && o.backend == BackendKind::sim)
        return "--measure-collectives times NCCL on this host's GPUs; use --backend cuda (or auto) on a GPU "
               "host, not --backend sim";
    if (o.measure_collectives && !o.sim_only_flags.empty())
        return o.sim_only_flags.front() + " is for the sim backend; --measure-collectives times real GPUs";
    if (o.measure_kernels && (o.backend == BackendKind::sim || o.measure_collectives || o.rank >= 0))
        return "--measure-kernels times this host's GPU alone: use --backend cuda (or auto) on a GPU host, "
               "without "
               "--measure-collectives or --rank";
    if (o.measure_collectives && (o.rank >= 0 || o.nranks > 0))
        return "--measure-collectives runs every rank in this process (like nccl-tests -g N); give --tp N, "
               "not --rank/--nranks";
    if (o.rank >= 0 && o.process_model == ProcessModel::threads)
        return "--rank runs one rank per process; it cannot be combined with --process-model threads";
    for (const Injection& inj : o.inject) {
        std::string phase =
            inj.phase.empty() ? (inj.kind == "capture-fail" ? "capture" : "replay") : inj.phase;
        if (phase == "capture" && !o.graph)
            return "--inject " + inj.kind +
                   "@capture needs --graph on (with --graph off nothing is captured)";
    }
    return {};
}

}  // namespace

ParseOutcome parse_options(int argc, const char* const* argv) {
    ParseOutcome out;
    const auto& flags = flag_table();
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            out.help = true;
            return out;
        }
        if (arg.rfind("--", 0) != 0) {
            out.error = "unexpected argument '" + arg + "' (flags start with --)";
            return out;
        }
        std::string name = arg.substr(2);
        std::string value;
        bool has_inline = false;
        if (auto eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
            has_inline = true;
        }
        for (char& c : name)
            if (c == '_') c = '-';
        auto it = flags.find(name);
        if (it == flags.end()) {
            out.error = "unknown flag --" + name;
            return out;
        }
        const FlagSpec& spec = it->second;
        if (!has_inline) {
            if (spec.arity == FlagSpec::Arity::value) {
                if (i + 1 >= argc) {
                    out.error = "--" + name + " needs a value";
                    return out;
                }
                value = argv[++i];
            } else if (spec.arity == FlagSpec::Arity::optional_bool && i + 1 < argc) {
                bool ignored = false;
                if (parse_bool_word(argv[i + 1], ignored)) value = argv[++i];
            }
        } else if (spec.arity == FlagSpec::Arity::none) {
            out.error = "--" + name + " takes no value";
            return out;
        }
        if (std::string err = spec.apply(out.options, value); !err.empty()) {
            out.error = err;
            return out;
        }
    }
    if (!out.options.capture_mode_given)
        out.options.capture_mode =
            out.options.server == Server::sglang ? CaptureMode::global : CaptureMode::thread_local_mode;
    out.error = validate(out.options);
    return out;
}

const char* server_name(Server server) {
    return server == Server::none ? "none" : "sglang";
}

const char* process_model_name(ProcessModel model) {
    return model == ProcessModel::threads ? "threads" : "process-per-rank";
}

unsigned repeat_index(const char* env_value) {
    if (env_value == nullptr || *env_value == '\0') return 0;
    int value = 0;
    if (!parse_int(env_value, 0, 1000000, value)) return 0;
    return static_cast<unsigned>(value);
}

unsigned noise_seed(unsigned seed, unsigned repeat) {
    if (repeat == 0) return seed;
    std::uint64_t x = (static_cast<std::uint64_t>(seed) << 32) ^ repeat;  // splitmix64 finaliser
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return static_cast<unsigned>(x);
}

}  // namespace tpverify
