// The injected faults and the exact kind of text the real failure prints.
#include "engine/sim/inject.hpp"

#include <sys/resource.h>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "engine/run/backend.hpp"
#include "engine/sim/sim_model.hpp"

namespace tpverify {
namespace {

/// The API a fault surfaces through in each phase.
const char* nccl_api(Phase p) {
    return p == Phase::init ? "ncclCommInitRank" : "ncclAllReduce";
}

int fail() {
    return static_cast<int>(Exit::failure);
}

}  // namespace

const char* phase_name(Phase p) {
    switch (p) {
        case Phase::init:
            return "init";
        case Phase::warmup:
            return "warmup";
        case Phase::capture:
            return "capture";
        case Phase::replay:
            return "replay";
    }
    return "?";
}

void sleep_seconds(double seconds) {
    using clock = std::chrono::steady_clock;
    const auto end = clock::now() + std::chrono::duration<double>(seconds);
    while (clock::now() < end) {
        auto left = std::chrono::duration<double>(end - clock::now()).count();
        std::this_thread::sleep_for(std::chrono::duration<double>(std::min(left, 0.05)));
    }
}

Injector::Injector(std::vector<Injection> faults, double timeout_s, bool nccl_warn, int rank)
    : m_faults(std::move(faults)), m_timeout_s(timeout_s), m_nccl_warn(nccl_warn), m_rank(rank) {}

Phase Injector::phase_of(const Injection& fault) {
    if (fault.phase == "init") return Phase::init;
    if (fault.phase == "warmup") return Phase::warmup;
    if (fault.phase == "capture") return Phase::capture;
    if (fault.phase == "replay") return Phase::replay;
    return fault.kind == "capture-fail" ? Phase::capture : Phase::replay;
}

std::optional<int> Injector::at_phase(Phase p, Reporter& reporter) const {
    const std::string phase = phase_name(p);
    for (const Injection& f : m_faults) {
        if (phase_of(f) != p) continue;
        if (f.kind == "hang") {
            // A hung collective: no output at all. It ends when SECONDS pass (then the run goes
            // on) or when the --timeout watchdog aborts it (an error), whichever comes first;
            // with neither it waits forever, as a real hang does, until it is killed.
            const bool bounded_by_hang = f.seconds > 0;
            const bool bounded_by_timeout = m_timeout_s > 0;
            if (!bounded_by_hang && !bounded_by_timeout) {
                for (;;) sleep_seconds(3600);
            }
            if (bounded_by_hang && (!bounded_by_timeout || f.seconds < m_timeout_s)) {
                sleep_seconds(f.seconds);
                continue;
            }
            sleep_seconds(m_timeout_s);
            char what[200];
            std::snprintf(what, sizeof what,
                          "timed out after %g s waiting for the collective to complete (watchdog aborted the "
                          "communicator with ncclCommAbort)",
                          m_timeout_s);
            reporter.error(phase, nccl_api(p), what);
            return fail();
        }
        sleep_seconds(f.seconds);
        if (f.kind == "capture-fail") {
            reporter.error(
                phase, p == Phase::capture ? "cudaStreamEndCapture" : "cudaGraphLaunch",
                "operation not permitted when stream is capturing (cudaErrorStreamCaptureUnsupported)");
            std::fputs("CUDA error: operation not permitted when stream is capturing\n", stderr);
            std::fflush(stderr);
            return fail();
        }
        if (f.kind == "nccl-error") {
            if (m_nccl_warn)
                sim::print_nccl_line(m_rank, "WARN",
                                     "Cuda failure 'an illegal memory access was encountered'");
            reporter.error(phase, nccl_api(p), "unhandled cuda error (run with NCCL_DEBUG=INFO for details)");
            std::fputs("NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)\n", stderr);
            std::fflush(stderr);
            return fail();
        }
        if (f.kind == "cuda-oom") {
            reporter.error(
                phase, "cudaMalloc",
                "out of memory (cudaErrorMemoryAllocation): CUDA out of memory. Tried to allocate 2.00 GiB");
            return fail();
        }
        if (f.kind == "segv") {
            std::fflush(stdout);
            struct rlimit no_core {
                0, 0
            };
            setrlimit(RLIMIT_CORE, &no_core);  // a test fault should not leave core files behind
            std::signal(SIGSEGV, SIG_DFL);
            std::raise(SIGSEGV);
            return fail();  // only reached if SIGSEGV is blocked
        }
        if (f.kind == "exit") {
            std::fflush(stdout);
            std::fflush(stderr);
            std::_Exit(1);
        }
    }
    return std::nullopt;
}

}  // namespace tpverify
