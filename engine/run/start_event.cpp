#include "engine/run/start_event.hpp"

#include <cstdint>
#include <vector>

#include "engine/run/server_env.hpp"

namespace tpverify {

namespace {

const char* capture_mode_name(CaptureMode mode) {
    switch (mode) {
        case CaptureMode::global:
            return "global";
        case CaptureMode::relaxed:
            return "relaxed";
        case CaptureMode::thread_local_mode:
            break;
    }
    return "thread-local";
}

std::string int_array(const std::vector<int>& values) {
    std::string out = "[";
    for (std::size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + std::to_string(values[i]);
    return out + "]";
}

}  // namespace

JsonLine start_event_fields(const Options& o, const PassPlan& plan, const StartFacts& facts) {
    JsonLine f;
    f.add("backend", facts.backend)
        .add("nccl_version", facts.nccl_version)
        .add("process_model", process_model_name(facts.process_model))
        .add("rank", o.rank >= 0 ? o.rank : 0)
        .add("model", plan.model.name)
        .add("tp", facts.tp)
        .add("tokens", plan.tokens)
        .add("layers", plan.model.layers)
        .add("hidden", plan.model.hidden)
        .add("graph", o.graph)
        .add("capture_mode", capture_mode_name(o.capture_mode))
        .add("server", server_name(o.server))
        .add("check", o.check)
        .add("fusion", o.fusion)
        .add("fused", o.fusion && facts.fusion_fallback.empty())
        .add("collectives", plan.collective_count())
        .add("collectives_skipped", collectives_skipped(o))
        .add("all_reduces", plan.all_reduce_count())
        .add("all_reduce_bytes", static_cast<std::int64_t>(plan.all_reduce_bytes()))
        .add("all_gather_bytes", static_cast<std::int64_t>(plan.all_gather_bytes()))
        .add("weight_bytes", static_cast<std::int64_t>(plan.weight_bytes()))
        .add("context", plan.context)
        .add("attention_bytes", static_cast<std::int64_t>(plan.attention_bytes()))
        .add_raw("routed_experts_touched", int_array(plan.routed_experts_touched))
        .add("routed_experts_touched_mean", plan.mean_routed_experts_touched())
        .add("expert_format", plan.int4_experts ? "int4-g32" : "bf16")
        .add("draft_steps", facts.draft_steps)
        .add("draft_all_reduces", facts.draft_all_reduces)
        .add("draft_all_gathers", facts.draft_all_gathers);
    if (!facts.nccl_env.empty()) f.add_raw("nccl_env", facts.nccl_env);
    if (!facts.nccl_env_from_caller.empty()) f.add_raw("nccl_env_from_caller", facts.nccl_env_from_caller);
    if (!facts.libnccl.empty()) f.add("libnccl", facts.libnccl);
    if (!facts.fusion_fallback.empty()) f.add("fusion_fallback", facts.fusion_fallback);
    return f;
}

}  // namespace tpverify
