// Model presets (real shapes, docs/workload.md) and the per-rank verify-pass plan.
#include "engine/model/model.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace tpverify {
namespace {

ModelShape kimi_k25() {
    ModelShape m;  // the struct's defaults are Kimi-K2.5's text backbone
    m.name = "kimi-k2.5";
    return m;
}

ModelShape deepseek_v3() {
    ModelShape m = kimi_k25();
    m.name = "deepseek-v3";
    m.dense_layers = 3;
    m.heads = 128;
    m.experts = 256;
    m.vocab = 129280;
    return m;
}

ModelShape llama_70b() {
    ModelShape m;
    m.name = "llama-70b";
    m.layers = 80;
    m.dense_layers = 80;
    m.hidden = 8192;
    m.dense_intermediate = 28672;
    m.moe_intermediate = 0;
    m.heads = 64;
    m.kv_heads = 8;
    m.head_dim = 128;
    m.experts = 0;
    m.active_experts = 0;
    m.shared_experts = 0;
    m.mla = false;
    m.vocab = 128256;
    m.rms_eps = 1e-5;
    m.draft_intermediate = 28672;
    return m;
}

std::string not_divisible(const char* what, int value, int tp, const char* flag) {
    return "--tp " + std::to_string(tp) + ": " + what + " (" + std::to_string(value) +
           ") does not split evenly over " + std::to_string(tp) + " ranks; pick a --tp that divides it" +
           (flag[0] ? std::string(" or override ") + flag : std::string());
}

void add_gemm(PassPlan& plan, std::string name, int k, int n) {
    Step s;
    s.kind = Step::Kind::gemm;
    s.gemm.name = name;
    s.gemm.m = plan.tokens;
    s.gemm.k = k;
    s.gemm.n = n;
    s.label = std::move(name);
    plan.steps.push_back(std::move(s));
}

void add_attention(PassPlan& plan, const Attention& a, std::string label) {
    Step s;
    s.kind = Step::Kind::attention;
    s.attention = a;
    s.bytes = a.cache_bytes();
    s.label = std::move(label);
    plan.steps.push_back(std::move(s));
}

std::uint64_t splitmix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/// The router of one MoE layer: tokens routed to each chosen expert (id -> count), every token
/// picking `active` distinct experts of `experts` (a seeded partial Fisher-Yates shuffle).
std::map<int, int> route_layer(int experts, int active, int tokens, unsigned seed, int layer) {
    std::map<int, int> counts;
    std::vector<int> ids(static_cast<std::size_t>(experts));
    for (int t = 0; t < tokens; ++t) {
        std::iota(ids.begin(), ids.end(), 0);
        std::uint64_t state =
            splitmix((std::uint64_t(seed) << 32) ^ (std::uint64_t(layer) << 16) ^ std::uint64_t(t));
        for (int i = 0; i < active; ++i) {
            state = splitmix(state);
            int j = i + static_cast<int>(state % std::uint64_t(experts - i));
            std::swap(ids[i], ids[j]);
            ++counts[ids[i]];
        }
    }
    return counts;
}

/// Attention geometry per rank: MLA (absorbed, one latent row shared by all heads) or GQA.
Attention attention_of(bool mla, const ModelShape& m, int heads_local, int kv_heads, int tp, int rows,
                       int context) {
    Attention a;
    a.rows = rows;
    a.heads = heads_local;
    a.context = context;
    if (mla) {
        a.kv_heads = 1;
        a.row_dim = m.kv_lora_rank + m.qk_rope;
        a.qk_dim = a.row_dim;
        a.v_offset = 0;
        a.v_dim = m.kv_lora_rank;
    } else {
        a.kv_heads = kv_heads >= tp ? kv_heads / tp : 1;
        a.row_dim = 2 * m.head_dim;
        a.qk_dim = m.head_dim;
        a.v_offset = m.head_dim;
        a.v_dim = m.head_dim;
    }
    return a;
}

void add_collective(PassPlan& plan, CollectiveKind kind, std::uint64_t bytes, bool fused_norm,
                    std::string label) {
    Step s;
    s.kind = Step::Kind::collective;
    s.collective = kind;
    s.bytes = bytes;
    s.fused_norm = fused_norm;
    s.label = std::move(label);
    plan.steps.push_back(std::move(s));
}

}  // namespace

bool find_preset(const std::string& name, ModelShape& out) {
    if (name == "kimi-k2.5")
        out = kimi_k25();
    else if (name == "deepseek-v3")
        out = deepseek_v3();
    else if (name == "llama-70b")
        out = llama_70b();
    else
        return false;
    return true;
}

std::vector<std::string> preset_names() {
    return {"kimi-k2.5", "deepseek-v3", "llama-70b"};
}

bool resolve_model(const Options& options, ModelShape& out, std::string& error) {
    ModelShape m;
    if (!find_preset(options.model, m)) {
        error = "--model '" + options.model + "' is not a preset (use kimi-k2.5, deepseek-v3 or llama-70b)";
        return false;
    }
    const bool dense_preset = m.experts == 0;
    if (options.layers) m.layers = *options.layers;
    if (options.hidden) m.hidden = *options.hidden;
    if (options.heads) m.heads = *options.heads;
    if (options.experts) m.experts = *options.experts;
    if (options.active_experts) m.active_experts = *options.active_experts;
    if (options.moe_intermediate) m.moe_intermediate = *options.moe_intermediate;
    if (options.dense_intermediate) m.dense_intermediate = *options.dense_intermediate;
    if (options.vocab) m.vocab = *options.vocab;
    if (dense_preset && !options.experts) m.dense_layers = m.layers;
    if (options.dense_layers) m.dense_layers = *options.dense_layers;
    if (dense_preset && options.experts) {
        // A dense preset given experts becomes MoE after its dense layers.
        if (!options.dense_layers) m.dense_layers = 0;
        if (!options.active_experts) m.active_experts = std::min(8, m.experts);
        if (!options.moe_intermediate) m.moe_intermediate = m.dense_intermediate / 8;
        m.shared_experts = 1;
    }

    if (m.dense_layers > m.layers) {
        error = "--dense-layers " + std::to_string(m.dense_layers) + " exceeds --layers " +
                std::to_string(m.layers);
        return false;
    }
    const bool has_moe = m.dense_layers < m.layers;
    if (has_moe && (m.experts < 1 || m.active_experts < 1 || m.active_experts > m.experts)) {
        error = "MoE layers need 1 <= --active-experts <= --experts (got " +
                std::to_string(m.active_experts) + " of " + std::to_string(m.experts) + ")";
        return false;
    }
    if (has_moe && options.expert_format == ExpertFormat::int4) {
        const int ranks = std::max(options.nranks > 0 ? options.nranks : options.tp, 1);
        if (m.hidden % 64 != 0 || (m.moe_intermediate / ranks) % 64 != 0) {
            error =
                "--expert-format int4 needs the hidden size and the MoE intermediate size per rank to be "
                "multiples of 64 (got " +
                std::to_string(m.hidden) + " and " + std::to_string(m.moe_intermediate / ranks) +
                "); use --expert-format bf16";
            return false;
        }
    }
    if (has_moe && m.moe_intermediate < 1) {
        error = "MoE layers need --moe-intermediate >= 1";
        return false;
    }
    if (!m.mla) {
        if (m.hidden % m.heads != 0) {
            error = "--hidden " + std::to_string(m.hidden) + " is not a multiple of --heads " +
                    std::to_string(m.heads);
            return false;
        }
        m.head_dim = m.hidden / m.heads;
        if (m.heads % m.kv_heads != 0) m.kv_heads = m.heads;  // overridden heads: fall back to MHA
    }

    const int tp = options.nranks > 0 ? options.nranks : options.tp;
    if (m.heads % tp != 0)
        error = not_divisible("the attention heads", m.heads, tp, "--heads");
    else if (m.dense_layers > 0 && m.dense_intermediate % tp != 0)
        error = not_divisible("the dense MLP intermediate size", m.dense_intermediate, tp,
                              "--dense-intermediate");
    else if (has_moe && m.moe_intermediate % tp != 0)
        error = not_divisible("the MoE intermediate size", m.moe_intermediate, tp, "--moe-intermediate");
    else if (m.vocab % tp != 0)
        error = not_divisible("the vocabulary", m.vocab, tp, "--vocab");
    else if (options.draft_steps > 0 && (m.draft_vocab % tp != 0 || m.draft_intermediate % tp != 0))
        error = not_divisible("the draft head (vocabulary or MLP)", m.draft_vocab, tp, "--draft-steps 0");
    else if (!m.mla && m.kv_heads % tp != 0 && tp % m.kv_heads != 0)
        error = not_divisible("the KV heads", m.kv_heads, tp, "");
    if (!error.empty()) return false;
    out = m;
    return true;
}

int PassPlan::collective_count() const {
    return static_cast<int>(std::count_if(steps.begin(), steps.end(),
                                          [](const Step& s) { return s.kind == Step::Kind::collective; }));
}

int PassPlan::all_reduce_count() const {
    return static_cast<int>(std::count_if(steps.begin(), steps.end(), [](const Step& s) {
        return s.kind == Step::Kind::collective && s.collective == CollectiveKind::all_reduce;
    }));
}

std::uint64_t PassPlan::weight_bytes() const {
    std::uint64_t total = 0;
    for (const Step& s : steps)
        if (s.kind == Step::Kind::gemm) total += s.gemm.weight_bytes();
    return total;
}

double PassPlan::flops() const {
    double total = 0;
    for (const Step& s : steps)
        if (s.kind == Step::Kind::gemm) total += s.gemm.flops();
    return total;
}

std::uint64_t PassPlan::all_reduce_bytes() const {
    for (const Step& s : steps)
        if (s.kind == Step::Kind::collective && s.collective == CollectiveKind::all_reduce) return s.bytes;
    return 0;
}

std::uint64_t PassPlan::all_gather_bytes() const {
    for (const Step& s : steps)
        if (s.kind == Step::Kind::collective && s.collective == CollectiveKind::all_gather) return s.bytes;
    return 0;
}

double PassPlan::mean_routed_experts_touched() const {
    if (routed_experts_touched.empty()) return 0;
    return std::accumulate(routed_experts_touched.begin(), routed_experts_touched.end(), 0.0) /
           double(routed_experts_touched.size());
}

std::uint64_t PassPlan::attention_bytes() const {
    std::uint64_t total = 0;
    for (const Step& s : steps)
        if (s.kind == Step::Kind::attention) total += s.attention.cache_bytes();
    return total;
}

std::vector<ExpertRun> expert_runs(const PassPlan& plan, int hidden) {
    const std::vector<Step>& steps = plan.steps;
    auto is_pair = [&](std::size_t i) {
        if (i + 1 >= steps.size()) return false;
        const Step &a = steps[i], &b = steps[i + 1];
        return a.kind == Step::Kind::gemm && b.kind == Step::Kind::gemm && a.gemm.k == hidden &&
               b.gemm.n == hidden && a.gemm.n == 2 * b.gemm.k && a.gemm.m == b.gemm.m &&
               a.gemm.int4 == b.gemm.int4;
    };
    auto same = [](const Gemm& a, const Gemm& b) {
        return a.m == b.m && a.n == b.n && a.k == b.k && a.int4 == b.int4;
    };
    std::vector<ExpertRun> runs;
    for (std::size_t i = 0; i < steps.size();) {
        if (!is_pair(i)) {
            ++i;
            continue;
        }
        ExpertRun run{i, 0};
        std::size_t j = i;
        while (is_pair(j) && same(steps[j].gemm, steps[i].gemm) &&
               same(steps[j + 1].gemm, steps[i + 1].gemm)) {
            ++run.pairs;
            j += 2;
        }
        if (run.pairs >= 2) runs.push_back(run);
        i = run.pairs >= 2 ? j : i + 1;
    }
    return runs;
}

PassPlan build_pass(const ModelShape& model, int tp, int tokens, const PassShape& shape) {
    PassPlan plan;
    plan.model = model;
    plan.tp = tp;
    plan.tokens = tokens;
    plan.context = shape.context;
    plan.int4_experts = shape.int4_experts;
    const ModelShape& m = model;
    const std::uint64_t act_bytes = std::uint64_t(tokens) * m.hidden * 2;  // bf16 activations
    const int heads = m.heads / tp;

    // Vocab-parallel embedding: each rank looks up its vocab slice, the partial rows are summed.
    add_collective(plan, CollectiveKind::all_reduce, act_bytes, false, "embed");
    Step norm;
    norm.kind = Step::Kind::norm;
    norm.bytes = act_bytes;
    norm.label = "L0.input_norm";
    plan.steps.push_back(norm);

    for (int l = 0; l < m.layers; ++l) {
        // Built by appending: GCC 12 -O2 warns (-Wrestrict, a known false positive) on "L" + to_string.
        std::string p = "L";
        p += std::to_string(l);
        p += '.';
        if (m.mla) {
            add_gemm(plan, p + "q_a", m.hidden, m.q_lora_rank);                // replicated
            add_gemm(plan, p + "kv_a", m.hidden, m.kv_lora_rank + m.qk_rope);  // replicated
            add_gemm(plan, p + "q_b", m.q_lora_rank, heads * (m.qk_nope + m.qk_rope));
            add_gemm(plan, p + "kv_b", m.kv_lora_rank, heads * (m.qk_nope + m.v_head));
            add_attention(plan, attention_of(true, m, heads, 1, tp, tokens, shape.context), p + "attention");
            add_gemm(plan, p + "o_proj", heads * m.v_head, m.hidden);
        } else {
            const int kv = m.kv_heads >= tp ? m.kv_heads / tp : 1;  // KV heads replicate when tp > kv_heads
            add_gemm(plan, p + "qkv", m.hidden, (heads + 2 * kv) * m.head_dim);
            add_attention(plan, attention_of(false, m, heads, m.kv_heads, tp, tokens, shape.context),
                          p + "attention");
            add_gemm(plan, p + "o_proj", heads * m.head_dim, m.hidden);
        }
        add_collective(plan, CollectiveKind::all_reduce, act_bytes, true, p + "attn");

        if (l < m.dense_layers) {
            const int inter = m.dense_intermediate / tp;
            add_gemm(plan, p + "gate_up", m.hidden, 2 * inter);
            add_gemm(plan, p + "down", inter, m.hidden);
        } else {
            const int inter = m.moe_intermediate / tp;
            add_gemm(plan, p + "router", m.hidden, m.experts);  // replicated
            for (int e = 0; e < m.shared_experts; ++e) {
                const std::string q = p + "shared" + std::to_string(e) + ".";
                add_gemm(plan, q + "gate_up", m.hidden, 2 * inter);
                add_gemm(plan, q + "down", inter, m.hidden);
            }
            // Experts with more tokens first, so equal shapes stay adjacent (batched together).
            std::map<int, int> counts =
                route_layer(m.experts, m.active_experts, tokens, shape.router_seed, l);
            std::vector<std::pair<int, int>> order(counts.begin(), counts.end());
            std::stable_sort(order.begin(), order.end(),
                             [](auto& a, auto& b) { return a.second > b.second; });
            plan.routed_experts_touched.push_back(static_cast<int>(order.size()));
            for (const auto& [id, count] : order) {
                const std::string q = p + "expert" + std::to_string(id) + ".";
                add_gemm(plan, q + "gate_up", m.hidden, 2 * inter);
                add_gemm(plan, q + "down", inter, m.hidden);
                for (Gemm* g : {&plan.steps[plan.steps.size() - 2].gemm, &plan.steps.back().gemm}) {
                    g->m = count;
                    g->int4 = shape.int4_experts;
                }
            }
        }
        add_collective(plan, CollectiveKind::all_reduce, act_bytes, true, p + "mlp");
    }

    // The last fused_norm all-reduce's RMSNorm is the final norm; then the lm_head shard.
    add_gemm(plan, "lm_head", m.hidden, m.vocab / tp);
    add_collective(plan, CollectiveKind::all_gather, std::uint64_t(tokens) * (m.vocab / tp) * 2, false,
                   "logits");
    return plan;
}

PassPlan build_draft_pass(const ModelShape& model, int tp, int steps, const PassShape& shape) {
    PassPlan plan;
    plan.model = model;
    plan.tp = tp;
    plan.tokens = 1;
    plan.context = shape.context;
    const ModelShape& m = model;
    const int heads = m.heads / tp;
    const int head_dim = 128;
    const int kv = m.draft_kv_heads >= tp ? m.draft_kv_heads / tp : 1;
    const std::uint64_t act_bytes = std::uint64_t(m.hidden) * 2;
    ModelShape gqa = m;
    gqa.head_dim = head_dim;
    for (int d = 0; d < steps; ++d) {
        std::string p = "D";
        p += std::to_string(d);
        p += '.';
        // Step 0 fuses the target's three hidden states into one (replicated fc).
        if (d == 0) add_gemm(plan, p + "fc", 3 * m.hidden, m.hidden);
        add_gemm(plan, p + "qkv", 2 * m.hidden, (heads + 2 * kv) * head_dim);  // [embedding, hidden] in
        add_attention(plan, attention_of(false, gqa, heads, m.draft_kv_heads, tp, 1, shape.context + d),
                      p + "attention");
        add_gemm(plan, p + "o_proj", heads * head_dim, m.hidden);
        add_collective(plan, CollectiveKind::all_reduce, act_bytes, true, p + "attn");
        add_gemm(plan, p + "gate_up", m.hidden, 2 * (m.draft_intermediate / tp));
        add_gemm(plan, p + "down", m.draft_intermediate / tp, m.hidden);
        add_collective(plan, CollectiveKind::all_reduce, act_bytes, true, p + "mlp");
        add_gemm(plan, p + "lm_head", m.hidden, m.draft_vocab / tp);
        add_collective(plan, CollectiveKind::all_gather, std::uint64_t(m.draft_vocab / tp) * 2, false,
                       p + "logits");
    }
    for (Step& s : plan.steps)
        if (s.kind == Step::Kind::gemm) s.gemm.m = 1;
    return plan;
}

}  // namespace tpverify
