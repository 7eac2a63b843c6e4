#include <algorithm>
#include <map>
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
    const Step* expert = find_step(plan, "L1.experts.gate_up");  // layer 1's routed experts
    const Step* lm_head = find_step(plan, "lm_head");
    REQUIRE((q_a && q_b && kv_b && o_proj && gate_up && expert && lm_head));
    CHECK((q_a->gemm.k == 7168 && q_a->gemm.n == 1536));      // replicated
    CHECK((q_b->gemm.k == 1536 && q_b->gemm.n == 8 * 192));   // 64/8 heads x (128+64)
    CHECK((kv_b->gemm.k == 512 && kv_b->gemm.n == 8 * 256));  // 8 heads x (128+128)
    CHECK((o_proj->gemm.k == 8 * 128 && o_proj->gemm.n == 7168));
    CHECK(gate_up->gemm.n == 2 * 18432 / 8);  // layer 0 is dense
    CHECK(expert->experts.n == 2 * 2048 / 8);
    CHECK(expert->experts.k == 7168);
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
/// Routed experts of layer `l` and the tokens routed to each.
std::vector<int> expert_tokens(const PassPlan& plan, int l) {
    const Step* s = find_step(plan, "L" + std::to_string(l) + ".experts.gate_up");
    return s ? s->experts.rows : std::vector<int>{};
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
        if (s.kind == Step::Kind::gemm) CHECK_FALSE(s.gemm.int4);  // shared experts, attention, lm_head: bf16
        if (s.kind != Step::Kind::experts) continue;
        ++quantized;
        CHECK(s.experts.int4);
        const std::uint64_t nk = std::uint64_t(s.experts.n) * s.experts.k;
        CHECK(s.experts.weight_bytes() == std::uint64_t(s.experts.count()) * (nk / 2 + nk / 32 * 2));
        CHECK(bf.steps[i].experts.weight_bytes() == std::uint64_t(s.experts.count()) * nk * 2);
    }
    CHECK(quantized == 60 * 2);  // gate_up and down of every MoE layer
    CHECK(q.int4_experts);
    o.expert_format = ExpertFormat::int4;
    o.moe_intermediate = 96 * 8;  // 96 per rank at TP=8: not a multiple of 64
    o.tp = 8;
    ModelShape bad;
    std::string err;
    CHECK_FALSE(resolve_model(o, bad, err));
    CHECK(err.find("--expert-format int4") != std::string::npos);
}

TEST_CASE("model: kimi-k2.5 runs INT4 experts by default, as its checkpoint, the others bf16") {
    Options o;
    CHECK(pass_shape(o, resolve(o)).int4_experts);
    o.expert_format = ExpertFormat::bf16;
    CHECK_FALSE(pass_shape(o, resolve(o)).int4_experts);
    Options d;
    d.model = "deepseek-v3";
    CHECK_FALSE(pass_shape(d, resolve(d)).int4_experts);
    // A kimi-k2.5 shape the INT4 kernel cannot take falls back to bf16 unless INT4 was asked for.
    Options odd;
    odd.moe_intermediate = 96 * 8;
    odd.tp = 8;
    CHECK_FALSE(pass_shape(odd, resolve(odd)).int4_experts);
}

TEST_CASE("model: a layer's routed experts run as one launch per side, their rows the tokens' choices") {
    Options o;
    const ModelShape m = resolve(o);
    PassShape int4;
    int4.int4_experts = true;
    const PassPlan four = build_pass(m, 8, 4, int4);
    int layers = 0, experts = 0;
    for (const Step& s : four.steps) {
        if (s.kind != Step::Kind::experts || !s.experts.gate_up) continue;
        ++layers;
        const Experts& x = s.experts;
        experts += x.count();
        const std::vector<ExpertLaunch> launches = expert_launches(x);
        REQUIRE(launches.size() == 1);  // at most 32 experts (4 tokens x 8): one launch of up to 40
        CHECK(launches[0].count == x.count());
        CHECK(launches[0].max_rows == x.rows.front());
        CHECK(x.total_rows() == 4 * 8);
        // Every choice has a row of its own.
        REQUIRE(x.slots.size() == 4u * 8u);
        std::vector<int> seen(std::size_t(x.total_rows()), 0);
        for (int slot : x.slots) ++seen[std::size_t(slot)];
        CHECK(std::count(seen.begin(), seen.end(), 1) == x.total_rows());
    }
    CHECK(layers == 60);
    CHECK(experts == 1872);  // 31.2 per MoE layer x 60 at router seed 1
    // 41 experts with one row each are two launches (40 + 1).
    Experts many;
    many.rows.assign(41, 1);
    const std::vector<ExpertLaunch> two = expert_launches(many);
    REQUIRE(two.size() == 2);
    CHECK((two[0].count == 40 && two[1].first == 40 && two[1].count == 1));
}

TEST_CASE("model: an MoE layer launches the server's 22-28 kernels, the stand-ins included") {
    Options o;
    const ModelShape m = resolve(o);
    for (int tokens : {1, 4}) {
        const PassPlan plan = build_pass(m, 8, tokens);
        INFO(tokens << " tokens");
        const int kernels = plan.layer_kernels(5);
        CHECK(kernels >= 22);
        CHECK(kernels <= 28);
        std::map<Op, int> ops;
        for (const Step& s : plan.steps)
            if (s.kind == Step::Kind::op && s.label.rfind("L5.", 0) == 0) ++ops[s.op];
        CHECK(ops[Op::q_norm] == 1);
        CHECK(ops[Op::kv_norm] == 1);
        CHECK(ops[Op::rope] == 1);
        CHECK(ops[Op::kv_write] == 1);
        CHECK(ops[Op::topk] == 1);
        CHECK(ops[Op::silu_mul] == 2);  // the shared expert's and the routed experts'
        CHECK(ops[Op::expert_sum] == 1);
    }
}

TEST_CASE("model: the router seed picks other experts, the same seed the same ones") {
    Options o;
    const ModelShape m = resolve(o);
    PassShape a, b;
    b.router_seed = 99;
    auto labels = [](const PassPlan& p) {
        std::string all;
        for (const Step& s : p.steps)
            for (int r : s.experts.rows) all += std::to_string(r) + ",";
        for (const Step& s : p.steps)
            for (int slot : s.experts.slots) all += std::to_string(slot) + ";";
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

TEST_CASE(
    "model: the EAGLE-3 draft pass is SGLang's: an extend over the emitted tokens, then 1-token steps") {
    Options o;
    const ModelShape m = resolve(o);
    // The published Kimi-K2.5 EAGLE-3 draft (TorchSpec's kimi_k25_eagle3.json).
    CHECK(m.draft_heads == 64);
    CHECK(m.draft_kv_heads == 64);
    CHECK(m.draft_intermediate == 12288);
    CHECK(m.draft_vocab == 163840);
    o.accept_len = 3.2;
    const PassPlan draft = build_draft_pass(m, 8, 3, pass_shape(o, m));
    // 3 forwards: each an embedding, an attention and an MLP all-reduce and a logits all-gather.
    CHECK(draft.all_reduce_count() == 9);
    CHECK(draft.all_gather_count() == 3);
    const Step* embed0 = find_step(draft, "D0.embed");
    const Step* embed1 = find_step(draft, "D1.embed");
    REQUIRE((embed0 && embed1));
    CHECK(embed0->bytes == 3u * 7168 * 2);  // the extend: round(3.2) = 3 tokens
    CHECK(embed1->bytes == 1u * 7168 * 2);
    CHECK(find_step(draft, "D0.fc") != nullptr);
    CHECK(find_step(draft, "D1.fc") == nullptr);
    const Step* qkv = find_step(draft, "D0.qkv");
    REQUIRE(qkv);
    CHECK(qkv->gemm.k == 2 * 7168);
    CHECK(qkv->gemm.n == (8 + 2 * 8) * 128);  // 64 heads and 64 KV heads over 8 ranks
    CHECK(qkv->gemm.m == 3);
    std::vector<int> contexts;
    for (const Step& s : draft.steps)
        if (s.kind == Step::Kind::attention) contexts.push_back(s.attention.context);
    CHECK(contexts == std::vector<int>{4096 + 3, 4096 + 4, 4096 + 5});
    const Step* lm = find_step(draft, "D1.lm_head");
    REQUIRE(lm);
    CHECK(lm->gemm.n == 163840 / 8);
    CHECK(lm->gemm.m == 1);
    CHECK(find_step(draft, "D0.lm_head")->gemm.m == 1);  // the extend's logits: its last token's
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

TEST_CASE("model: moe_block_steps finds each MoE layer's block from the router to the expert sum") {
    Options o;
    const ModelShape m = resolve(o);
    const PassPlan plan = build_pass(m, 1, 4);
    auto every_bf16 = [](const Gemm& g) { return !g.int4; };
    int blocks = 0;
    for (std::size_t i = 0; i < plan.steps.size(); ++i) {
        const std::size_t n = moe_block_steps(plan, i, every_bf16);
        if (n == 0) continue;
        ++blocks;
        const std::string layer = plan.steps[i].label.substr(0, plan.steps[i].label.find('.') + 1);
        INFO(plan.steps[i].label);
        CHECK(plan.steps[i].label == layer + "router");
        // router, top-k, the shared expert's three steps, the routed experts' three, their sum.
        CHECK(n == 9);
        CHECK(plan.steps[i + n - 1].label == layer + "experts.sum");
        i += n - 1;
    }
    CHECK(blocks == m.layers - m.dense_layers);
    // Dense layers and a block whose shared GEMM is not on the skinny kernel are no block.
    const std::size_t router = find_step(plan, "L5.router") - plan.steps.data();
    CHECK(moe_block_steps(plan, router, every_bf16) == 9);
    CHECK(moe_block_steps(plan, router + 1, every_bf16) == 0);
    const int shared_n = plan.steps[router + 2].gemm.n;
    CHECK(moe_block_steps(plan, router, [&](const Gemm& g) { return !g.int4 && g.n != shared_n; }) == 0);
    const Step* dense = find_step(plan, "L0.gate_up");
    REQUIRE(dense != nullptr);
    CHECK(moe_block_steps(plan, std::size_t(dense - plan.steps.data()), every_bf16) == 0);
}

TEST_CASE("model: prefetch_regions names the coming bf16 GEMMs' first bytes, up to the budget") {
    Options o;
    const ModelShape m = resolve(o);
    const PassPlan plan = build_pass(m, 1, 1);
    auto at = [&](const std::string& label) {
        const Step* s = find_step(plan, label);
        REQUIRE(s != nullptr);
        return std::size_t(s - plan.steps.data());
    };
    auto bytes = [&](const std::string& label) { return plan.steps[at(label)].gemm.weight_bytes(); };
    constexpr std::uint64_t mib = 1ull << 20;
    // After an MLA attention: o_proj, cut at the budget (a multiple of 16 bytes).
    const std::vector<PrefetchRegion> attn = prefetch_regions(plan, at("L3.attention") + 1, 24 * mib + 5);
    REQUIRE(attn.size() == 1);
    CHECK(attn[0].step == at("L3.o_proj"));
    CHECK(attn[0].bytes == 24 * mib);
    CHECK(bytes("L3.o_proj") > 24 * mib);
    // From a MoE layer's expert sum: past the collective and the norm, the next layer's q_a and
    // kv_a whole, past their norms q_b whole and the first part of kv_b; never past the attention.
    const std::uint64_t qa = bytes("L4.q_a"), kva = bytes("L4.kv_a"), qb = bytes("L4.q_b"),
                        kvb = bytes("L4.kv_b");
    const std::size_t sum = at("L3.experts.sum");
    const std::vector<PrefetchRegion> end = prefetch_regions(plan, sum + 1, qa + kva + qb + 4096);
    REQUIRE(end.size() == 4);
    CHECK(end[0].step == at("L4.q_a"));
    CHECK(end[0].bytes == qa);
    CHECK(end[1].step == at("L4.kv_a"));
    CHECK(end[1].bytes == kva);
    CHECK(end[2].step == at("L4.q_b"));
    CHECK(end[3].step == at("L4.kv_b"));
    CHECK(end[3].bytes == 4096);
    const std::vector<PrefetchRegion> all = prefetch_regions(plan, sum + 1, 1ull << 40);
    REQUIRE(all.size() == 4);
    CHECK(all[3].bytes == kvb);
    // Up to a MoE layer's routed experts (INT4, their weights not one region) and no further;
    // nothing from a budget of 0 or at the plan's end.
    const std::vector<PrefetchRegion> moe = prefetch_regions(plan, at("L3.o_proj") + 1, 1ull << 40);
    REQUIRE(!moe.empty());
    for (const PrefetchRegion& r : moe) {
        CHECK(r.step < at("L3.experts.gate_up"));
        CHECK(plan.steps[r.step].kind == Step::Kind::gemm);
        CHECK(!plan.steps[r.step].gemm.int4);
    }
    CHECK(moe.front().step == at("L3.router"));
    CHECK(prefetch_regions(plan, sum + 1, 0).empty());
    CHECK(prefetch_regions(plan, sum + 1, 15).empty());
    CHECK(prefetch_regions(plan, plan.steps.size(), 1ull << 40).empty());
}
