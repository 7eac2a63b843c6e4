// One rank thread: setup, --check, warm-up, capture, and the timed passes.
#include <algorithm>
#include <cstdio>

#include "engine/cuda/worker.cuh"
#include "engine/stats.hpp"

namespace tpverify::cuda {
namespace {

/// With --check, the check runs again after every this many timed replays.
constexpr std::size_t k_check_every = 8;

class Worker {
public:
    Worker(SharedRun& run, int local)
        : m_run(run),
          m_local(local),
          m_slot(*run.slots[local]),
          m_options(*run.options),
          m_engine(*run.options, run.ranks[local], run.nranks, run.devices[local], run.gemm) {}

    Status run() {
        TPV_TRY(setup());
        if (m_options.check) {
            // The check runs its collectives inside a capture when --graph on (the same path as the
            // pass), so NCCL must connect eagerly first: a first use inside the capture fails with
            // "failed to peer ... operation not permitted when stream is capturing" (seen at TP=2).
            if (m_options.graph && m_options.warmup_before_capture) {
                enter("warmup");
                TPV_TRY(m_engine.warm_collectives(*m_run.plan));
            }
            enter("check");
            TPV_TRY(m_check.prepare(m_engine, *m_run.plan));
            TPV_TRY(check_once());
            TPV_TRY(check_stream_gemms(m_engine, *m_run.plan, m_slot.check));
            TPV_TRY(check_attention(m_engine, *m_run.plan, m_slot.check));
            TPV_TRY(check_head_attention(m_engine, {m_run.plan, m_run.draft}, m_slot.check));
            TPV_TRY(check_moe_streams(m_engine, *m_run.plan, m_slot.check));
            // All ranks stop together when any rank saw a wrong element (reported by the caller).
            bool bad = false;
            TPV_TRY(agree_check(bad));
            if (bad) return {};
        }
        bool bad = false;
        TPV_TRY(measure_verify(bad));
        if (bad) return {};
        // The 1-token, comm-only and norm-only passes: 10-20 samples (their spread on the H200
        // was under 0.1 %), so the result comes within seconds.
        int aux = std::clamp(m_options.iters, 10, 20);
        TPV_TRY(measure(*m_run.baseline, PassKind::full, aux, m_slot.baseline_us));
        if (m_engine.skips_collectives())
            m_slot.comm_us.assign(std::size_t(aux), 0.0);  // nothing to time: no collective runs
        else
            TPV_TRY(measure(*m_run.plan, PassKind::comm_only, aux, m_slot.comm_us));
        TPV_TRY(measure(*m_run.plan, PassKind::norm_only, aux, m_slot.norm_us));
        // The parts of the pass, each alone (parts_us), and the draft pass: fewer samples (their
        // spread on the H200 was under 0.1 %), so the result comes sooner.
        int parts = std::clamp(m_options.iters, 5, 8);
        TPV_TRY(measure(*m_run.plan, PassKind::gemm_only, parts, m_slot.gemm_us));
        TPV_TRY(measure(*m_run.plan, PassKind::attention_only, parts, m_slot.attention_us));
        TPV_TRY(measure(*m_run.plan, PassKind::norm_kernels, parts, m_slot.norm_kernels_us));
        TPV_TRY(measure(*m_run.plan, PassKind::ops_only, parts, m_slot.ops_us));
        if (m_run.draft != nullptr) TPV_TRY(measure(*m_run.draft, PassKind::full, parts, m_slot.draft_us));
        return {};
    }

private:
    void enter(const char* phase) {
        m_slot.phase.store(phase);
        m_slot.stamp.store(now_s());
    }
    void progress() { m_slot.stamp.store(now_s()); }
    bool reporting() const { return m_run.ranks[m_local] == 0; }

    // Every rank past this point (a synchronize, then an all-reduce of a flag).
    Status barrier(const char* phase) {
        TPV_CUDA(phase, cudaStreamSynchronize(m_engine.stream()));
        int flag = 0;
        return m_engine.comm().agree_max(flag, m_engine.stream(), phase);
    }

    // One check of the collectives (a replay of the check's graph) and of the fused norm.
    Status check_once() {
        TPV_TRY(m_check.run(m_engine, m_options, m_slot.check));
        return check_fused_norm(m_engine, *m_run.plan, unsigned(m_slot.check.graph_replays), m_slot.check);
    }

    // Every rank learns whether any rank's --check found wrong elements (an all-reduce).
    Status agree_check(bool& bad) {
        int any = m_slot.check.wrong + m_slot.check.fused_mismatch > 0 ? 1 : 0;
        TPV_TRY(m_engine.comm().agree_max(any, m_engine.stream(), "check"));
        bad = any != 0;
        if (bad) m_slot.check_failed_somewhere = true;
        return {};
    }

    Status setup() {
        enter("init");
        if (m_run.in_process && m_run.nranks > 1) {
            // Before NCCL's first call: its in-process P2P transport needs the peers reachable
            // (without this the first all-reduce failed with "internal error" on 2 H200s).
            std::string reason;
            if (!enable_peer_access(m_run.devices[m_local], m_run.devices, reason) && reporting())
                std::fprintf(stderr,
                             "tpverify: init: peer access between GPUs is not available (%s); NCCL picks "
                             "another transport\n",
                             reason.c_str());
        }
        std::vector<const PassPlan*> plans = {m_run.plan, m_run.baseline};
        if (m_run.draft != nullptr) plans.push_back(m_run.draft);
        TPV_TRY(m_engine.setup(plans, m_run.id));
        m_slot.weight_arena_bytes = m_engine.weight_arena_bytes();
        m_slot.comm.store(&m_engine.comm());
        m_slot.copy_gbps = m_engine.copy_gbps();
        m_slot.weight_bytes = m_engine.weight_bytes();
        progress();
        TPV_TRY(m_engine.allocate_fusion());
        if (m_run.in_process && m_run.barrier) {
            m_run.peers.buffers[m_local] = m_engine.comm().oneshot_buffer();
            m_run.barrier->arrive_and_wait();  // every rank's buffer is published
        }
        TPV_TRY(m_engine.setup_fusion(m_run.in_process ? &m_run.peers : nullptr, m_slot.fallback_reason));
        m_slot.fused_fallback = m_engine.fused_fallback();
        if (m_slot.fused_fallback && reporting())
            std::fprintf(
                stderr,
                "tpverify: fusion: the one-shot all-reduce cannot run here (%s); falling back to NCCL "
                "all-reduce + a separate residual+RMSNorm kernel\n",
                m_slot.fallback_reason.c_str());
        m_slot.init_s = now_s() - m_run.t_start;
        progress();
        return {};
    }

    // Graph of `plan` (captured after an eager warm-up of its collectives) or null for eager.
    Status prepare(const PassPlan& plan, PassKind kind, cudaGraphExec_t& exec, double& capture_s) {
        exec = nullptr;
        if (!m_options.graph) return {};
        if (m_options.warmup_before_capture && m_options.server == Server::sglang) {
            // SGLang's CUDA-graph runner: twice a synchronize, a barrier of the ranks and one eager
            // run of the forward; then the capture.
            enter("warmup");
            for (int i = 0; i < 2; ++i) {
                TPV_TRY(barrier("warmup"));
                TPV_TRY(m_engine.enqueue(plan, kind, "warmup"));
            }
            TPV_TRY(barrier("warmup"));
        } else if (m_options.warmup_before_capture) {
            enter("warmup");
            TPV_TRY(m_engine.warm_collectives(plan));
        }
        enter("capture");
        TPV_TRY(m_engine.capture(plan, kind, exec, capture_s));
        return {};
    }

    Status sample(const PassPlan& plan, PassKind kind, cudaGraphExec_t exec, std::vector<double>& out) {
        float us = 0;
        TPV_TRY(m_engine.timed_pass(plan, kind, exec, us));
        out.push_back(us);
        progress();
        return {};
    }

    // --warmup passes before the verify pass's samples; at most 2 before each later pass (the
    // GPU, NCCL and cuBLAS are warm by then).
    Status warm(const PassPlan& plan, PassKind kind, cudaGraphExec_t exec) {
        enter("warmup");
        std::vector<double> ignored;
        int count =
            kind == PassKind::full && &plan == m_run.plan ? m_options.warmup : std::min(m_options.warmup, 2);
        for (int i = 0; i < count; ++i) TPV_TRY(sample(plan, kind, exec, ignored));
        return {};
    }

    Status measure_verify(bool& bad) {
        const PassPlan& plan = *m_run.plan;
        cudaGraphExec_t exec = nullptr;
        if (m_options.graph && reporting()) {
            JsonLine f;
            f.add("phase", "begin");
            m_run.reporter->event("capture", std::move(f));
        }
        double capture_s = 0;
        Status st = prepare(plan, PassKind::full, exec, capture_s);
        if (!st.ok) return st;
        m_slot.capture_s = capture_s;
        if (m_options.graph && reporting()) {
            JsonLine f;
            f.add("phase", "end").add("seconds", capture_s);
            m_run.reporter->event("capture", std::move(f));
        }
        st = warm(plan, PassKind::full, exec);
        if (st.ok && reporting()) m_run.reporter->event("ready", JsonLine{});
        enter("replay");
        StopRule rule(m_options);
        double t0 = now_s();
        while (st.ok) {
            st = sample(plan, PassKind::full, exec, m_slot.verify_us);
            if (!st.ok) break;
            if (m_options.check && m_slot.verify_us.size() % k_check_every == 0) {
                // A sample of the timed replays: the check's collectives run again and are
                // compared, between replays, on every rank at the same replay.
                enter("check");
                st = check_once();
                if (st.ok) st = agree_check(bad);
                ++m_slot.check_replays;
                enter("replay");
                if (!st.ok || bad) break;
            }
            int stop = rule.done(m_slot.verify_us, now_s() - t0) ? 1 : 0;
            // Every rank must run the same passes: rank 0's rule decides for all.
            if (m_options.target_rsd && m_run.nranks > 1) {
                if (!reporting()) stop = 0;
                st = m_engine.comm().agree_max(stop, m_engine.stream(), "replay");
            }
            if (stop != 0) break;
        }
        if (exec != nullptr) cudaGraphExecDestroy(exec);
        return st;
    }

    Status measure(const PassPlan& plan, PassKind kind, int count, std::vector<double>& out) {
        cudaGraphExec_t exec = nullptr;
        double capture_s = 0;
        Status st = prepare(plan, kind, exec, capture_s);
        if (st.ok) st = warm(plan, kind, exec);
        enter("replay");
        for (int i = 0; i < count && st.ok; ++i) st = sample(plan, kind, exec, out);
        if (exec != nullptr) cudaGraphExecDestroy(exec);
        return st;
    }

    SharedRun& m_run;
    int m_local;
    RankSlot& m_slot;
    const Options& m_options;
    RankEngine m_engine;
    CollectiveCheck m_check;
};

}  // namespace

void run_rank(SharedRun& run, int local) {
    RankSlot& slot = *run.slots[local];
    auto worker = std::make_unique<Worker>(run, local);
    Status st = worker->run();
    if (!st.ok) {
        slot.status = st;
        // The watchdog reports, aborts the communicators and ends the process; tearing the
        // rank down here could block on peers that still wait in a collective.
        (void)worker.release();
        slot.failed.store(true);
        return;
    }
    slot.comm.store(nullptr);
    worker.reset();
    slot.done.store(true);
}

}  // namespace tpverify::cuda
