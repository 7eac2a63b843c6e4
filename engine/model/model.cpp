// Model presets (real shapes, docs/workload.md) and the per-rank verify-pass plan.
#include "engine/model/model.hpp"

#include <algorithm>
#include <cmath>
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
    // Its EAGLE-3 draft (assumed, as EAGLE-3 drafts for Llama-3.3-70B are built): GQA like the
    // target, a 32000-token draft vocabulary.
    m.draft_heads = 64;
    m.draft_kv_heads = 8;
    m.draft_intermediate = 28672;
    m.draft_vocab = 32000;
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

/// The router of one MoE layer: the `active` distinct experts of `experts` each token picks (a
/// seeded partial Fisher-Yates shuffle), token-major.
std::vector<int> route_layer(int experts, int active, int tokens, unsigned seed, int layer) {
    std::vector<int> choices;
    std::vector<int> ids(static_cast<std::size_t>(experts));
    for (int t = 0; t < tokens; ++t) {
        std::iota(ids.begin(), ids.end(), 0);
        std::uint64_t state =
            splitmix((std::uint64_t(seed) << 32) ^ (std::uint64_t(layer) << 16) ^ std::uint64_t(t));
        for (int i = 0; i < active; ++i) {
            state = splitmix(state);
            int j = i + static_cast<int>(state % std::uint64_t(experts - i));
            std::swap(ids[i], ids[j]);
            choices.push_back(ids[i]);
        }
    }
    return choices;
}

/// The experts step of a layer from the router's choices: experts ordered by tokens (busiest
/// first, then by id), and for each choice its row in the stacked outputs.
Experts experts_of(const std::vector<int>& choices, int tokens, int active) {
    std::map<int, int> counts;
    for (int id : choices) ++counts[id];
    std::vector<std::pair<int, int>> order(counts.begin(), counts.end());
    std::stable_sort(order.begin(), order.end(), [](auto& a, auto& b) { return a.second > b.second; });
    Experts e;
    std::map<int, int> first_row, used;
    int row = 0;
    for (const auto& [id, count] : order) {
        e.rows.push_back(count);
        first_row[id] = row;
        row += count;
    }
    for (int t = 0; t < tokens; ++t)
        for (int j = 0; j < active; ++j) {
            const int id = choices[std::size_t(t) * active + j];
            e.slots.push_back(first_row[id] + used[id]++);
        }
    return e;
}

void add_op(PassPlan& plan, Op op, int rows, int width, std::uint64_t bytes, std::string label) {
    Step s;
    s.kind = Step::Kind::op;
    s.op = op;
    s.op_rows = rows;
    s.op_width = width;
    s.bytes = bytes;
    s.label = std::move(label);
    plan.steps.push_back(std::move(s));
}

/// bf16 bytes of `rows` x `width`.
std::uint64_t act(int rows, int width) {
    return std::uint64_t(rows) * std::uint64_t(width) * 2;
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

namespace {
/// INT4 experts run on the weight-streaming kernel: k and n multiples of 64 and 16.
bool int4_shapes_fit(const ModelShape& m, const Options& options) {
    const int ranks = std::max(options.nranks > 0 ? options.nranks : options.tp, 1);
    return m.hidden % 64 == 0 && m.moe_intermediate % ranks == 0 && (m.moe_intermediate / ranks) % 64 == 0;
}
}  // namespace

bool int4_experts(const Options& options, const ModelShape& model) {
    if (options.expert_format) return *options.expert_format == ExpertFormat::int4;
    return model.name == "kimi-k2.5" && model.experts > 0 && int4_shapes_fit(model, options);
}

PassShape pass_shape(const Options& options, const ModelShape& model) {
    PassShape shape;
    shape.context = options.context;
    shape.int4_experts = int4_experts(options, model);
    shape.router_seed = options.seed.value_or(1);
    shape.draft_extend_tokens = std::max(1, static_cast<int>(std::lround(options.accept_len)));
    return shape;
}

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
        if (!int4_shapes_fit(m, options)) {
            const int ranks = std::max(options.nranks > 0 ? options.nranks : options.tp, 1);
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
    else if (options.draft_steps > 0 && m.draft_heads % tp != 0)
        error = not_divisible("the draft head's attention heads", m.draft_heads, tp, "--draft-steps 0");
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
        if (s.kind == Step::Kind::gemm)
            total += s.gemm.weight_bytes();
        else if (s.kind == Step::Kind::experts)
            total += s.experts.weight_bytes();
    return total;
}

double PassPlan::flops() const {
    double total = 0;
    for (const Step& s : steps)
        if (s.kind == Step::Kind::gemm)
            total += s.gemm.flops();
        else if (s.kind == Step::Kind::experts)
            total += s.experts.flops();
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

const char* op_name(Op op) {
    switch (op) {
        case Op::q_norm:
            return "q_norm";
        case Op::kv_norm:
            return "kv_norm";
        case Op::rope:
            return "rope";
        case Op::kv_write:
            return "kv_write";
        case Op::topk:
            return "topk";
        case Op::silu_mul:
            return "silu_mul";
        case Op::expert_sum:
            return "expert_sum";
    }
    return "?";
}

int Experts::total_rows() const {
    return std::accumulate(rows.begin(), rows.end(), 0);
}

Gemm Experts::gemm(int expert) const {
    Gemm g;
    g.m = rows[std::size_t(expert)];
    g.n = n;
    g.k = k;
    g.int4 = int4;
    return g;
}

std::uint64_t Experts::weight_bytes() const {
    return count() > 0 ? std::uint64_t(count()) * gemm(0).weight_bytes() : 0;
}

double Experts::flops() const {
    return 2.0 * total_rows() * double(n) * k;
}

std::vector<ExpertLaunch> expert_launches(const Experts& experts) {
    std::vector<ExpertLaunch> out;
    for (int first = 0; first < experts.count(); first += k_stream_max_batch) {
        ExpertLaunch l;
        l.first = first;
        l.count = std::min(k_stream_max_batch, experts.count() - first);
        for (int e = first; e < first + l.count; ++e)
            l.max_rows = std::max(l.max_rows, experts.rows[std::size_t(e)]);
        out.push_back(l);
    }
    return out;
}

int PassPlan::all_gather_count() const {
    return collective_count() - all_reduce_count();
}

int PassPlan::layer_kernels(int layer) const {
    const std::string prefix = "L" + std::to_string(layer) + ".";
    int kernels = 0;
    for (const Step& s : steps) {
        if (s.label.rfind(prefix, 0) != 0) continue;
        switch (s.kind) {
            case Step::Kind::experts:
                for (const ExpertLaunch& l : expert_launches(s.experts))
                    kernels += (l.max_rows + k_stream_rows_per_launch - 1) / k_stream_rows_per_launch;
                break;
            case Step::Kind::collective:
                kernels += s.fused_norm ? 2 : 1;  // the all-reduce, then the residual + RMSNorm
                break;
            default:
                ++kernels;
        }
    }
    return kernels;
}

std::size_t moe_block_steps(const PassPlan& plan, std::size_t index,
                            const std::function<bool(const Gemm&)>& skinny) {
    const std::vector<Step>& st = plan.steps;
    const int hidden = plan.model.hidden;
    auto op = [&](std::size_t i, Op o) {
        return i < st.size() && st[i].kind == Step::Kind::op && st[i].op == o;
    };
    auto gemm = [&](std::size_t i) {
        return i < st.size() && st[i].kind == Step::Kind::gemm && skinny(st[i].gemm) &&
               st[i].gemm.m == st[index].gemm.m;
    };
    auto experts = [&](std::size_t i, bool gate_up) {
        return i < st.size() && st[i].kind == Step::Kind::experts && st[i].experts.gate_up == gate_up;
    };
    if (!gemm(index) || st[index].gemm.k != hidden || st[index].gemm.n == hidden || !op(index + 1, Op::topk))
        return 0;
    std::size_t i = index + 2;
    while (gemm(i) && st[i].gemm.k == hidden && op(i + 1, Op::silu_mul) && gemm(i + 2) &&
           st[i + 2].gemm.n == hidden)
        i += 3;
    if (i == index + 2 || !experts(i, true) || !op(i + 1, Op::silu_mul) || !experts(i + 2, false) ||
        !op(i + 3, Op::expert_sum))
        return 0;
    return i + 4 - index;
}

std::vector<PrefetchRegion> prefetch_regions(const PassPlan& plan, std::size_t index, std::uint64_t budget) {
    std::vector<PrefetchRegion> regions;
    budget -= budget % 16;
    for (std::size_t i = index; i < plan.steps.size() && budget > 0; ++i) {
        const Step& s = plan.steps[i];
        if (s.kind == Step::Kind::attention || s.kind == Step::Kind::experts) break;
        if (s.kind != Step::Kind::gemm || s.gemm.int4) continue;
        const std::uint64_t bytes = std::min(budget, s.gemm.weight_bytes() - s.gemm.weight_bytes() % 16);
        if (bytes == 0) continue;
        regions.push_back({i, bytes});
        budget -= bytes;
    }
    return regions;
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
            add_op(plan, Op::q_norm, tokens, m.q_lora_rank, 2 * act(tokens, m.q_lora_rank), p + "q_norm");
            add_op(plan, Op::kv_norm, tokens, m.kv_lora_rank, 2 * act(tokens, m.kv_lora_rank), p + "kv_norm");
            add_gemm(plan, p + "q_b", m.q_lora_rank, heads * (m.qk_nope + m.qk_rope));
            add_gemm(plan, p + "kv_b", m.kv_lora_rank, heads * (m.qk_nope + m.v_head));
            const int rope = (heads + 1) * m.qk_rope;  // every local head's rope part and the key's
            add_op(plan, Op::rope, tokens, rope, 2 * act(tokens, rope), p + "rope");
            const int row = m.kv_lora_rank + m.qk_rope;
            add_op(plan, Op::kv_write, tokens, row, 2 * act(tokens, row), p + "kv_write");
            add_attention(plan, attention_of(true, m, heads, 1, tp, tokens, shape.context), p + "attention");
            add_gemm(plan, p + "o_proj", heads * m.v_head, m.hidden);
        } else {
            const int kv = m.kv_heads >= tp ? m.kv_heads / tp : 1;  // KV heads replicate when tp > kv_heads
            add_gemm(plan, p + "qkv", m.hidden, (heads + 2 * kv) * m.head_dim);
            const int rope = (heads + kv) * m.head_dim;
            add_op(plan, Op::rope, tokens, rope, 2 * act(tokens, rope), p + "rope");
            add_op(plan, Op::kv_write, tokens, 2 * kv * m.head_dim, 2 * act(tokens, 2 * kv * m.head_dim),
                   p + "kv_write");
            add_attention(plan, attention_of(false, m, heads, m.kv_heads, tp, tokens, shape.context),
                          p + "attention");
            add_gemm(plan, p + "o_proj", heads * m.head_dim, m.hidden);
        }
        add_collective(plan, CollectiveKind::all_reduce, act_bytes, true, p + "attn");

        if (l < m.dense_layers) {
            const int inter = m.dense_intermediate / tp;
            add_gemm(plan, p + "gate_up", m.hidden, 2 * inter);
            add_op(plan, Op::silu_mul, tokens, inter, 3 * act(tokens, inter), p + "silu_mul");
            add_gemm(plan, p + "down", inter, m.hidden);
        } else {
            const int inter = m.moe_intermediate / tp;
            add_gemm(plan, p + "router", m.hidden, m.experts);  // replicated
            add_op(plan, Op::topk, tokens, m.experts, std::uint64_t(tokens) * m.experts * 4, p + "topk");
            for (int e = 0; e < m.shared_experts; ++e) {
                const std::string q = p + "shared" + std::to_string(e) + ".";
                add_gemm(plan, q + "gate_up", m.hidden, 2 * inter);
                add_op(plan, Op::silu_mul, tokens, inter, 3 * act(tokens, inter), q + "silu_mul");
                add_gemm(plan, q + "down", inter, m.hidden);
            }
            const std::vector<int> choices =
                route_layer(m.experts, m.active_experts, tokens, shape.router_seed, l);
            Experts up = experts_of(choices, tokens, m.active_experts);
            up.int4 = shape.int4_experts;
            plan.routed_experts_touched.push_back(up.count());
            up.n = 2 * inter;
            up.k = m.hidden;
            Experts down = up;
            down.gate_up = false;
            down.n = m.hidden;
            down.k = inter;
            Step s;
            s.kind = Step::Kind::experts;
            s.experts = up;
            s.label = p + "experts.gate_up";
            plan.steps.push_back(s);
            const int routed = up.total_rows();
            add_op(plan, Op::silu_mul, routed, inter, 3 * act(routed, inter), p + "experts.silu_mul");
            s.experts = down;
            s.label = p + "experts.down";
            plan.steps.push_back(s);
            // Reads every routed row and the layer output, writes the layer output.
            add_op(plan, Op::expert_sum, tokens, m.hidden, act(routed, m.hidden) + 2 * act_bytes,
                   p + "experts.sum");
            plan.steps.back().experts = down;
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
    plan.tokens = std::max(1, shape.draft_extend_tokens);
    plan.context = shape.context;
    const ModelShape& m = model;
    const int heads = m.draft_heads / tp;
    const int head_dim = 128;
    const int kv = m.draft_kv_heads >= tp ? m.draft_kv_heads / tp : 1;
    ModelShape gqa = m;
    gqa.head_dim = head_dim;
    int position = 0;  // tokens the draft's KV cache gained in this cycle
    for (int d = 0; d < steps; ++d) {
        std::string p = "D";
        p += std::to_string(d);
        p += '.';
        // Forward 0 is the draft extend over the tokens the verify emitted; then one token each.
        const int t = d == 0 ? plan.tokens : 1;
        const std::size_t first = plan.steps.size();
        add_collective(plan, CollectiveKind::all_reduce, act(t, m.hidden), false, p + "embed");
        Step norm;  // the draft layer's two input norms (token embedding, hidden state)
        norm.kind = Step::Kind::norm;
        norm.bytes = act(t, m.hidden);
        norm.label = p + "input_norms";
        plan.steps.push_back(norm);
        plan.steps.push_back(norm);
        // The extend fuses three target hidden states into one (replicated fc).
        if (d == 0) add_gemm(plan, p + "fc", 3 * m.hidden, m.hidden);
        add_gemm(plan, p + "qkv", 2 * m.hidden, (heads + 2 * kv) * head_dim);  // [embedding, hidden] in
        const int rope = (heads + kv) * head_dim;
        add_op(plan, Op::rope, t, rope, 2 * act(t, rope), p + "rope");
        add_op(plan, Op::kv_write, t, 2 * kv * head_dim, 2 * act(t, 2 * kv * head_dim), p + "kv_write");
        position += t;
        Attention a = attention_of(false, gqa, heads, m.draft_kv_heads, tp, t, shape.context + position);
        add_attention(plan, a, "D.attention");  // one draft KV cache, filled as the cycle goes
        add_gemm(plan, p + "o_proj", heads * head_dim, m.hidden);
        add_collective(plan, CollectiveKind::all_reduce, act(t, m.hidden), true, p + "attn");
        add_gemm(plan, p + "gate_up", m.hidden, 2 * (m.draft_intermediate / tp));
        add_op(plan, Op::silu_mul, t, m.draft_intermediate / tp, 3 * act(t, m.draft_intermediate / tp),
               p + "silu_mul");
        add_gemm(plan, p + "down", m.draft_intermediate / tp, m.hidden);
        add_collective(plan, CollectiveKind::all_reduce, act(t, m.hidden), true, p + "mlp");
        for (std::size_t i = first; i < plan.steps.size(); ++i)
            if (plan.steps[i].kind == Step::Kind::gemm) plan.steps[i].gemm.m = t;
        // Logits of the last token only (the next draft token's), gathered over the vocabulary.
        add_gemm(plan, p + "lm_head", m.hidden, m.draft_vocab / tp);
        plan.steps.back().gemm.m = 1;
        add_collective(plan, CollectiveKind::all_gather, std::uint64_t(m.draft_vocab / tp) * 2, false,
                       p + "logits");
    }
    return plan;
}

}  // namespace tpverify
