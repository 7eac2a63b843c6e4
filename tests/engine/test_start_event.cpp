// The `start` event's shared builder (engine/start_event.*), which both backends call.
#include <string>

#include "engine/model/model.hpp"
#include "engine/options.hpp"
#include "engine/run/start_event.hpp"
#include "tests/support/catch.hpp"

using namespace tpverify;

namespace {

PassPlan kimi_pass(int tp, int tokens) {
    ModelShape model;
    REQUIRE(find_preset("kimi-k2.5", model));
    return build_pass(model, tp, tokens);
}

std::string keys_of(const JsonLine& line) {
    std::string keys;
    for (const auto& [key, value] : line.fields()) keys += key + ",";
    return keys;
}

}  // namespace

TEST_CASE("start event: both backends share one field list in one order") {
    Options o;
    const PassPlan plan = kimi_pass(8, 4);
    StartFacts sim{"sim", "2.28.3 (modeled by sim)", ProcessModel::processes, 8, 0, ""};
    StartFacts cuda{"cuda", "2.28.3", ProcessModel::threads, 8, 0, ""};
    const JsonLine a = start_event_fields(o, plan, sim);
    const JsonLine b = start_event_fields(o, plan, cuda);
    CHECK(keys_of(a) == keys_of(b));
    CHECK(keys_of(a).rfind("backend,nccl_version,process_model,rank,model,tp,tokens,", 0) == 0);
    CHECK(a.str().find(R"("backend":"sim")") != std::string::npos);
    CHECK(b.str().find(R"("process_model":"threads")") != std::string::npos);
}

TEST_CASE("start event: rank is the reporting process and 0 when tpverify starts the ranks") {
    Options o;
    const PassPlan plan = kimi_pass(2, 4);
    StartFacts facts{"cuda", "2.28.3", ProcessModel::processes, 2, 0, ""};
    CHECK(start_event_fields(o, plan, facts).str().find(R"("rank":0)") != std::string::npos);
    o.rank = 1;
    CHECK(start_event_fields(o, plan, facts).str().find(R"("rank":1)") != std::string::npos);
}

TEST_CASE("start event: fused only when fusion is on and nothing made it fall back") {
    Options o;
    o.fusion = true;
    const PassPlan plan = kimi_pass(8, 4);
    StartFacts facts{"sim", "2.28.3", ProcessModel::processes, 8, 0, ""};
    std::string line = start_event_fields(o, plan, facts).str();
    CHECK(line.find(R"("fused":true)") != std::string::npos);
    CHECK(line.find("fusion_fallback") == std::string::npos);
    facts.fusion_fallback = "no peer access between the ranks";
    line = start_event_fields(o, plan, facts).str();
    CHECK(line.find(R"("fused":false)") != std::string::npos);
    CHECK(line.find(R"("fusion_fallback":"no peer access between the ranks")") != std::string::npos);
}

TEST_CASE("start event: the server preset, its capture mode, the environment and the draft's collectives") {
    Options o;
    const PassPlan plan = kimi_pass(8, 4);
    StartFacts facts{"cuda", "2.28.3", ProcessModel::processes, 8, 3, ""};
    facts.draft_all_reduces = 9;
    facts.draft_all_gathers = 3;
    facts.nccl_env = R"({"NCCL_CUMEM_ENABLE":"0","NCCL_PROTO":"LL"})";
    facts.nccl_env_from_caller = R"(["NCCL_PROTO"])";
    facts.libnccl = "/usr/lib/x86_64-linux-gnu/libnccl.so.2";
    const std::string line = start_event_fields(o, plan, facts).str();
    CHECK(line.find(R"("capture_mode":"global","server":"sglang")") != std::string::npos);
    CHECK(line.find(R"("draft_steps":3,"draft_all_reduces":9,"draft_all_gathers":3)") != std::string::npos);
    CHECK(line.find(R"("nccl_env":{"NCCL_CUMEM_ENABLE":"0","NCCL_PROTO":"LL"})") != std::string::npos);
    CHECK(line.find(R"("nccl_env_from_caller":["NCCL_PROTO"])") != std::string::npos);
    CHECK(line.find(R"("libnccl":"/usr/lib/x86_64-linux-gnu/libnccl.so.2")") != std::string::npos);
    o.server = Server::none;
    o.capture_mode = CaptureMode::thread_local_mode;
    CHECK(start_event_fields(o, plan, facts).str().find(R"("capture_mode":"thread-local","server":"none")") !=
          std::string::npos);
}
