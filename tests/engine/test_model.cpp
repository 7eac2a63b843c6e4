#include <string>

#include "engine/model.hpp"
#include "tests/support/catch.hpp"

using namespace tpverify;

namespace {
ModelShape resolve(Options o) {
    ModelShape m;
    std::string err;
    REQUIRE(resolve_model(o, m, err));
    return m;
}
const Step* find_step(const PassPlan& plan, const std::string& label) {
    for (const Step& s : plan.steps)
        if (s.label == label) return &s;
    return nullptr;
}
}  // namespace

TEST_CASE("model: presets carry the real shapes") {
    ModelShape k, d, l;
    REQUIRE(find_preset("kimi-k2.5", k));
    REQUIRE(find_preset("deepseek-v3", d));
    REQUIRE(find_preset("llama-70b", l));
    CHECK_FALSE(find_preset("gpt-5", k));
    CHECK(k.layers == 61);
    CHECK(k.dense_layers == 1);
    CHECK(k.hidden == 7168);
    CHECK(k.heads == 64);
    CHECK(k.experts == 384);
    CHECK(k.vocab == 163840);
    CHECK(d.heads == 128);
    CHECK(d.experts == 256);
    CHECK(d.dense_layers == 3);
    CHECK(d.vocab == 129280);
    CHECK_FALSE(l.mla);
    CHECK(l.layers == 80);
    CHECK(l.kv_heads == 8);
    CHECK(l.dense_intermediate == 28672);
    CHECK(preset_names().size() == 3);
}

TEST_CASE("model: Kimi-K2.5 pass has 124 collectives of 57344 B at 4 tokens") {
    Options o;
    PassPlan plan = build_pass(resolve(o), 8, 4);
    CHECK(plan.collective_count() == 124);
    CHECK(plan.all_reduce_count() == 123);
    CHECK(plan.all_reduce_bytes() == 57344);
    CHECK(plan.all_gather_bytes() == 4u * (163840 / 8) * 2);
    int fused = 0;
    for (const Step& s : plan.steps)
        if (s.kind == Step::Kind::collective && s.fused_norm) ++fused;
    CHECK(fused == 122);
    CHECK(plan.steps.front().label == "embed");
    CHECK(plan.steps.back().collective == CollectiveKind::all_gather);
}

TEST_CASE("model: MLA shapes are sharded by heads at TP=8") {
    Options o;
    PassPlan plan = build_pass(resolve(o), 8, 4);
    const Step* q_a = find_step(plan, "L0.q_a");
    const Step* q_b = find_step(plan, "L0.q_b");
    const Step* kv_b = find_step(plan, "L0.kv_b");
    const Step* o_proj = find_step(plan, "L0.o_proj");
    const Step* gate_up = find_step(plan, "L0.gate_up");
    const Step* expert = find_step(plan, "L1.expert7.gate_up");
    const Step* lm_head = find_step(plan, "lm_head");
    REQUIRE((q_a && q_b && kv_b && o_proj && gate_up && expert && lm_head));
    CHECK((q_a->gemm.k == 7168 && q_a->gemm.n == 1536));       // replicated
    CHECK((q_b->gemm.k == 1536 && q_b->gemm.n == 8 * 192));    // 64/8 heads x (128+64)
    CHECK((kv_b->gemm.k == 512 && kv_b->gemm.n == 8 * 256));   // 8 heads x (128+128)
    CHECK((o_proj->gemm.k == 8 * 128 && o_proj->gemm.n == 7168));
    CHECK(gate_up->gemm.n == 2 * 18432 / 8);                   // layer 0 is dense
    CHECK(expert->gemm.n == 2 * 2048 / 8);
    CHECK(lm_head->gemm.n == 163840 / 8);
    CHECK(q_b->gemm.m == 4);
    CHECK(find_step(plan, "L1.expert8.gate_up") == nullptr);   // only the 8 active experts
    CHECK(find_step(plan, "L1.shared0.down") != nullptr);
}

TEST_CASE("model: dense GQA preset") {
    Options o;
    o.model = "llama-70b";
    PassPlan plan = build_pass(resolve(o), 4, 2);
    CHECK(plan.collective_count() == 2 * 80 + 2);
    const Step* qkv = find_step(plan, "L0.qkv");
    REQUIRE(qkv);
    CHECK(qkv->gemm.n == (16 + 2 * 2) * 128);
    CHECK(plan.all_reduce_bytes() == 2u * 8192 * 2);
}

TEST_CASE("model: weight bytes and flops add up") {
    Options o;
    o.layers = 2;
    PassPlan plan = build_pass(resolve(o), 1, 4);
    std::uint64_t bytes = 0;
    for (const Step& s : plan.steps)
        if (s.kind == Step::Kind::gemm) bytes += std::uint64_t(s.gemm.n) * s.gemm.k * 2;
    CHECK(plan.weight_bytes() == bytes);
    CHECK(plan.flops() == Approx(2.0 * 4 * static_cast<double>(bytes) / 2));
}

TEST_CASE("model: invalid shapes and TP degrees are refused clearly") {
    ModelShape m;
    std::string err;
    Options o;
    o.tp = 3;
    CHECK_FALSE(resolve_model(o, m, err));
    CHECK(err.find("attention heads (64)") != std::string::npos);
    o = Options();
    o.model = "nope";
    CHECK_FALSE(resolve_model(o, m, err));
    CHECK(err.find("not a preset") != std::string::npos);
    o = Options();
    o.active_experts = 500;
    CHECK_FALSE(resolve_model(o, m, err));
    CHECK(err.find("--active-experts") != std::string::npos);
    o = Options();
    o.dense_layers = 70;
    CHECK_FALSE(resolve_model(o, m, err));
    o = Options();
    o.tp = 8;
    o.vocab = 1001;
    CHECK_FALSE(resolve_model(o, m, err));
    CHECK(err.find("vocabulary") != std::string::npos);
}
