#pragma once
// The server preset's process environment (--server): the variables SGLang sets for its NCCL
// and CUDA before any communicator exists (python/sglang/srt/entrypoints/engine.py,
// _set_envs_and_config), applied where the caller has not set them, and reported in the start
// event as `nccl_env`.
#include <functional>
#include <string>
#include <vector>

#include "engine/options.hpp"

namespace tpverify {

/// One variable the engine runs with.
struct EnvSetting {
    std::string name, value;
    bool from_caller = false;  ///< the caller set it (a preset value it overrides, or any NCCL_*)
};

/// The preset's variables and values: sglang -> NCCL_CUMEM_ENABLE=0, NCCL_NVLS_ENABLE=0,
/// CUDA_DEVICE_MAX_CONNECTIONS=8, CUDA_MODULE_LOADING=AUTO; none -> nothing.
std::vector<std::pair<std::string, std::string>> server_preset(Server server);

/// Environment variable through which the launcher tells its rank processes which variables
/// it set from the preset (so that a rank does not report them as the caller's).
inline constexpr const char* k_preset_env = "TPVERIFY_SERVER_ENV_SET";

/// Sets each preset variable the environment lacks (when `apply`; otherwise only says what it
/// would be) and returns the variables the engine runs with: the preset's, then every other
/// NCCL_* of the environment, in name order. `get`/`set` stand in for getenv/setenv in tests;
/// `environ_names` lists the environment's variable names.
std::vector<EnvSetting> server_environment(Server server, bool apply,
                                           const std::function<const char*(const char*)>& get,
                                           const std::function<void(const char*, const char*)>& set,
                                           const std::vector<std::string>& environ_names);
/// The same on this process's environment.
std::vector<EnvSetting> process_server_environment(Server server, bool apply);

/// Whether the pass calls no collective. SGLang's GroupCoordinator returns a one-rank group's
/// all-reduce and all-gather input as it is (python/sglang/srt/distributed/parallel_state.py:
/// "Bypass the function if we are using only 1 GPU"), so at TP 1 the server makes no NCCL call;
/// --server sglang at one rank does the same (the residual + RMSNorm after each all-reduce still
/// runs). --server none calls NCCL at one rank, as bare NCCL code does, and so does --inject
/// stale, whose fault is the collective's.
bool collectives_skipped(const Options& o);

/// {"NAME":"value",...} in the order given.
std::string env_json(const std::vector<EnvSetting>& settings);
/// ["NAME",...] of the settings the caller set.
std::string caller_names_json(const std::vector<EnvSetting>& settings);

}  // namespace tpverify
