// The --server preset's environment (engine/run/server_env.hpp), on a fake environment.
#include <map>
#include <string>
#include <vector>

#include "engine/run/server_env.hpp"
#include "tests/support/catch.hpp"

using namespace tpverify;

namespace {
/// A fake environment: getenv / setenv over a map.
struct FakeEnv {
    std::map<std::string, std::string> vars;
    std::vector<EnvSetting> run(Server server, bool apply) {
        std::vector<std::string> names;
        for (const auto& [name, value] : vars) names.push_back(name);
        return server_environment(
            server, apply,
            [this](const char* n) -> const char* {
                auto it = vars.find(n);
                return it == vars.end() ? nullptr : it->second.c_str();
            },
            [this](const char* n, const char* v) { vars[n] = v; }, names);
    }
};
}  // namespace

TEST_CASE("server env: SGLang's variables are set where the caller has not, and the caller's win") {
    FakeEnv env;
    env.vars = {{"NCCL_NVLS_ENABLE", "1"}, {"NCCL_PROTO", "LL"}, {"HOME", "/root"}};
    const std::vector<EnvSetting> out = env.run(Server::sglang, true);
    // SGLang's engine.py, _set_envs_and_config: the four it sets.
    CHECK(env.vars["NCCL_CUMEM_ENABLE"] == "0");
    CHECK(env.vars["NCCL_NVLS_ENABLE"] == "1");  // the caller's value stays
    CHECK(env.vars["CUDA_DEVICE_MAX_CONNECTIONS"] == "8");
    CHECK(env.vars["CUDA_MODULE_LOADING"] == "AUTO");
    CHECK(env_json(out) ==
          R"({"NCCL_CUMEM_ENABLE":"0","NCCL_NVLS_ENABLE":"1","CUDA_DEVICE_MAX_CONNECTIONS":"8",)"
          R"("CUDA_MODULE_LOADING":"AUTO","NCCL_PROTO":"LL"})");
    CHECK(caller_names_json(out) == R"(["NCCL_NVLS_ENABLE","NCCL_PROTO"])");
}

TEST_CASE("server env: without apply nothing changes, none sets nothing and reports the NCCL_* there") {
    FakeEnv env;
    env.vars = {{"NCCL_ALGO", "Ring"}};
    const std::vector<EnvSetting> would = env.run(Server::sglang, false);
    CHECK(env.vars.size() == 1);  // reported, not set
    CHECK(env_json(would).find(R"("NCCL_CUMEM_ENABLE":"0")") != std::string::npos);
    const std::vector<EnvSetting> bare = env.run(Server::none, true);
    CHECK(env.vars.size() == 1);
    CHECK(env_json(bare) == R"({"NCCL_ALGO":"Ring"})");
}

TEST_CASE("server env: what the launcher set for its ranks is the preset's, not the caller's") {
    FakeEnv env;
    env.vars = {
        {"NCCL_CUMEM_ENABLE", "0"},
        {"NCCL_NVLS_ENABLE", "0"},
        {"CUDA_DEVICE_MAX_CONNECTIONS", "8"},
        {"CUDA_MODULE_LOADING", "AUTO"},
        {k_preset_env, "NCCL_CUMEM_ENABLE,NCCL_NVLS_ENABLE,CUDA_DEVICE_MAX_CONNECTIONS,CUDA_MODULE_LOADING"},
        {"TPVERIFY_RELAYED", "1"},
        {"NCCL_DEBUG_FILE", "/dev/fd/9"}};
    CHECK(caller_names_json(env.run(Server::sglang, true)) == "[]");
}
