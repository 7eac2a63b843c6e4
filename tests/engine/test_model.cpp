#include <algorithm>
#include <string>
#include <vector>

#include "engine/model/model.hpp"
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
    const Step* expert = nullptr;  // the first routed expert of layer 1, whichever the router chose
    for (const Step& s : plan.steps)
        if (!expert && s.label.rfind("L1.expert", 0) == 0) expert = &s;
    const Step* lm_head = find_step(plan, "lm_head");
    REQUIRE((q_a && q_b && kv_b && o_proj && gate_up && expert && lm_head));
    CHECK((q_a->gemm.k == 7168 && q_a->gemm.n == 1536));      // replicated
    CHECK((q_b->gemm.k == 1536 && q_b->gemm.n == 8 * 192));   // 64/8 heads x (128+64)
    CHECK((kv_b->gemm.k == 512 && kv_b->gemm.n == 8 * 256));  // 8 heads x (128+128)
    CHECK((o_proj->gemm.k == 8 * 128 && o_proj->gemm.n == 7168));
    CHECK(gate_up->gemm.n == 2 * 18432 / 8);  // layer 0 is dense
    CHECK(expert->gemm.n == 2 * 2048 / 8);
    CHECK(lm_head->gemm.n == 163840 / 8);
    CHECK(q_b->gemm.m == 4);
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

TEST_CASE("model: a 1-token Kimi-K2.5 pass reads the published 32 B activated parameters") {
    // Kimi K2's model card (moonshotai/Kimi-K2-Instruct on Hugging Face): 1.04 T parameters,
    // 32 B activated per token. The pass reads every activated weight once as a GEMM except the
    // token embedding (a lookup: 163,840 x 7,168 = 1.17 B), so a 1-token bf16 pass reads about
    // 30.8 B parameters (61.7 GB); we allow the card's rounding (+-3 %).
    Options o;
    const PassPlan one = build_pass(resolve(o), 1, 1);
    const double params = static_cast<double>(one.weight_bytes()) / 2.0;
    CHECK(params > 0.97 * (32e9 - 1.17e9));
    CHECK(params < 1.03 * (32e9 - 1.17e9) + 1.17e9);
    // One token uses each weight it reads once: a multiply and an add per bf16 weight of 2 bytes.
    CHECK(one.flops() == Approx(static_cast<double>(one.weight_bytes())));
    // Four tokens share the dense weights but touch more experts: between 1 and 4 flops per byte.
    const PassPlan four = build_pass(resolve(o), 1, 4);
    CHECK(four.flops() / static_cast<double>(four.weight_bytes()) > 1.0);
    CHECK(four.flops() / static_cast<double>(four.weight_bytes()) < 4.0);
}

namespace {
/// Routed (gate_up) experts of layer `l` and the tokens routed to each.
std::vector<int> expert_tokens(const PassPlan& plan, int l) {
    std::vector<int> out;
    const std::string prefix = "L" + std::to_string(l) + ".expert";
    for (const Step& s : plan.steps)
        if (s.label.rfind(prefix, 0) == 0 && s.label.find("gate_up") != std::string::npos)
            out.push_back(s.gemm.m);
    return out;
}
}  // namespace

TEST_CASE("model: the router makes a 4-token verify touch about 31 distinct experts, 1 token 8") {
    Options o;
    const ModelShape m = resolve(o);
    const PassPlan four = build_pass(m, 8, 4);
    const PassPlan one = build_pass(m, 8, 1);
    REQUIRE(four.routed_experts_touched.size() == 60);  // 61 layers, the first dense
    for (int touched : one.routed_experts_touched) CHECK(touched == 8);
    // Expected distinct experts: 384 * (1 - (1 - 8/384)^4) = 31.0.
    CHECK(four.mean_routed_experts_touched() > 30.0);
    CHECK(four.mean_routed_experts_touched() < 32.0);
    for (int l = 1; l < 61; ++l) {
        std::vector<int> tokens = expert_tokens(four, l);
        CHECK(int(tokens.size()) == four.routed_experts_touched[std::size_t(l - 1)]);
        int routed = 0;
        for (int t : tokens) routed += t;
        CHECK(routed == 4 * 8);                                 // every token chose 8 experts
        CHECK(std::is_sorted(tokens.rbegin(), tokens.rend()));  // busier experts first
    }
    CHECK(four.weight_bytes() > 2 * one.weight_bytes());  // 31 vs 8 experts, same attention
}

TEST_CASE("model: INT4 routed experts read a quarter of the bytes plus one bf16 scale per 32") {
    Options o;
    const ModelShape m = resolve(o);
    PassShape int4;
    int4.int4_experts = true;
    const PassPlan bf = build_pass(m, 8, 4), q = build_pass(m, 8, 4, int4);
    REQUIRE(bf.steps.size() == q.steps.size());
    int quantized = 0;
    for (std::size_t i = 0; i < q.steps.size(); ++i) {
        const Step& s = q.steps[i];
        if (s.kind != Step::Kind::gemm) continue;
        const bool routed = s.label.find(".expert") != std::string::npos;
        CHECK(s.gemm.int4 == routed);  // shared experts, attention and lm_head stay bf16
        if (!routed) continue;
        ++quantized;
        const std::uint64_t nk = std::uint64_t(s.gemm.n) * s.gemm.k;
        CHECK(s.gemm.weight_bytes() == nk / 2 + nk / 32 * 2);
        CHECK(bf.steps[i].gemm.weight_bytes() == nk * 2);
    }
    CHECK(quantized > 60 * 2 * 28);
    CHECK(q.int4_experts);
    o.expert_format = ExpertFormat::int4;
    o.moe_intermediate = 96 * 8;  // 96 per rank at TP=8: not a multiple of 64
    o.tp = 8;
    ModelShape bad;
    std::string err;
    CHECK_FALSE(resolve_model(o, bad, err));
    CHECK(err.find("--expert-format int4") != std::string::npos);
}

TEST_CASE("model: a layer's experts of equal m form the runs both backends batch") {
    Options o;
    const ModelShape m = resolve(o);
    PassShape int4;
    int4.int4_experts = true;
    const PassPlan four = build_pass(m, 8, 4, int4);
    const std::vector<ExpertRun> runs = expert_runs(four, m.hidden);
    std::vector<bool> in_run(four.steps.size(), false);
    for (const ExpertRun& run : runs) {
        CHECK(run.pairs >= 2);
        const Gemm& up = four.steps[run.first_step].gemm;
        const Gemm& down = four.steps[run.first_step + 1].gemm;
        for (int e = 0; e < run.pairs; ++e) {
            const std::size_t at = run.first_step + 2 * std::size_t(e);
            const Step& u = four.steps[at];
            const Step& d = four.steps[at + 1];
            CHECK(u.label.find(".expert") != std::string::npos);  // INT4: the shared expert is bf16
            CHECK(u.label.find(".gate_up") != std::string::npos);
            CHECK(d.label.find(".down") != std::string::npos);
            CHECK((u.gemm.m == up.m && u.gemm.n == up.n && u.gemm.k == up.k && u.gemm.int4));
            CHECK((d.gemm.m == down.m && d.gemm.n == down.n && d.gemm.k == down.k && d.gemm.int4));
            in_run[at] = in_run[at + 1] = true;
        }
    }
    // Every routed expert is in a run, unless it is the only expert of its m in its layer.
    int experts = 0, batched = 0;
    for (std::size_t i = 0; i < four.steps.size(); ++i) {
        const Step& s = four.steps[i];
        const bool routed_gate_up =
            s.label.find(".expert") != std::string::npos && s.label.find(".gate_up") != std::string::npos;
        if (!routed_gate_up) continue;
        ++experts;
        if (in_run[i]) {
            ++batched;
            continue;
        }
        const std::string layer = s.label.substr(0, s.label.find('.') + 1);
        int same_m = 0;
        for (const Step& t : four.steps)
            same_m += t.label.rfind(layer, 0) == 0 && t.label.find(".expert") != std::string::npos &&
                      t.label.find(".gate_up") != std::string::npos && t.gemm.m == s.gemm.m;
        CHECK(same_m == 1);
    }
    CHECK(experts == 1872);         // 31.2 per MoE layer x 60 at router seed 1
    CHECK(batched > experts - 60);  // at most one expert per layer left alone
    // One token: each MoE layer's 8 experts are one run; with bf16 experts the shared expert,
    // of the same shape, joins it (as the CUDA backend batches it).
    const PassPlan one_q = build_pass(m, 8, 1, int4);
    const std::vector<ExpertRun> one_runs = expert_runs(one_q, m.hidden);
    REQUIRE(one_runs.size() == 60);
    for (const ExpertRun& run : one_runs) CHECK(run.pairs == 8);
    const PassPlan one_bf = build_pass(m, 8, 1);
    for (const ExpertRun& run : expert_runs(one_bf, m.hidden)) CHECK(run.pairs == 9);
}

TEST_CASE("model: the router seed picks other experts, the same seed the same ones") {
    Options o;
    const ModelShape m = resolve(o);
    PassShape a, b;
    b.router_seed = 99;
    auto labels = [](const PassPlan& p) {
        std::string all;
        for (const Step& s : p.steps) all += s.label + ",";
        return all;
    };
    CHECK(labels(build_pass(m, 8, 4, a)) == labels(build_pass(m, 8, 4, a)));
    CHECK(labels(build_pass(m, 8, 4, a)) != labels(build_pass(m, 8, 4, b)));
}

TEST_CASE("model: MLA decode attention reads the latent KV cache of --context tokens") {
    Options o;
    PassShape shape;
    shape.context = 2048;
    const PassPlan plan = build_pass(resolve(o), 8, 4, shape);
    const Step* attn = find_step(plan, "L5.attention");
    REQUIRE(attn);
    REQUIRE(attn->kind == Step::Kind::attention);
    const Attention& a = attn->attention;
    CHECK(a.heads == 8);
    CHECK(a.kv_heads == 1);
    CHECK(a.row_dim == 512 + 64);
    CHECK(a.qk_dim == 576);
    CHECK(a.v_dim == 512);
    CHECK(a.rows == 4);
    CHECK(a.cache_bytes() == 2048ull * 576 * 2);
    CHECK(plan.attention_bytes() == 61ull * 2048 * 576 * 2);
    o.model = "llama-70b";
    const PassPlan gqa = build_pass(resolve(o), 4, 2, shape);
    const Step* g = find_step(gqa, "L0.attention");
    REQUIRE(g);
    CHECK(g->attention.kv_heads == 2);
    CHECK(g->attention.cache_bytes() == 2ull * 2048 * 256 * 2);  // K and V of 128 per KV head
}

TEST_CASE("model: the EAGLE-3 draft pass runs its own layer and collectives per step") {
    Options o;
    const ModelShape m = resolve(o);
    const PassPlan draft = build_draft_pass(m, 8, 3);
    CHECK(draft.all_reduce_count() == 6);
    CHECK(draft.collective_count() == 9);
    CHECK(find_step(draft, "D0.fc") != nullptr);
    CHECK(find_step(draft, "D1.fc") == nullptr);
    const Step* attn = find_step(draft, "D2.attention");
    REQUIRE(attn);
    CHECK(attn->attention.context == 4096 + 2);
    const Step* lm = find_step(draft, "D1.lm_head");
    REQUIRE(lm);
    CHECK(lm->gemm.n == 32000 / 8);
    CHECK(lm->gemm.m == 1);
    CHECK(build_draft_pass(m, 8, 0).steps.empty());
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
