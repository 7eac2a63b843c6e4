// tpverify --help: a usage text that also explains what is being measured.
#include "engine/options.hpp"

namespace tpverify {

std::string usage() {
    return R"(tpverify - replays the verify step of tensor-parallel speculative decoding

One "verify pass" is what an LLM server runs to check a batch of draft tokens: per rank
(TP = N GPUs), an embedding all-reduce, then for every layer the attention projections at
their TP-sharded shapes and decode attention over the KV cache, an all-reduce, residual +
RMSNorm, the MLP or MoE (shared expert + the routed experts a seeded top-k router chose for
the tokens: about 31 of 384 at 4 tokens), another all-reduce + residual + RMSNorm, and
finally the lm_head shard and a logits all-gather. The EAGLE-3 draft pass is timed as well. For Kimi-K2.5 that is 124 collectives of tokens x 14336 bytes
(57344 B at 4 tokens). tpverify times that pass so NCCL settings can be judged in seconds.

Usage: tpverify [flags]          (flags take `--flag value` or `--flag=value`)

Model
  --model NAME             kimi-k2.5 (default), deepseek-v3, llama-70b
  --layers N --hidden N --heads N --experts N --active-experts N --moe-intermediate N
  --dense-intermediate N --dense-layers N --vocab N
                           override one shape of the preset
Parallelism and workload
  --tp N                   tensor-parallel ranks, one GPU each (default 1)
  --tokens T               tokens per verify pass = batch x draft tokens (default 4)
  --context N              tokens in the KV cache the attention reads (default 4096)
  --draft-steps N          EAGLE-3 draft steps timed per cycle (default 3; 0 = --draft-us)
  --expert-format F        bf16 or int4: routed experts as the released Kimi-K2.5 checkpoint
                           stores them (INT4, one bf16 scale per 32 weights), run by a W4A16
                           kernel on tensor cores. Default: int4 for kimi-k2.5, bf16 otherwise
  --process-model M        processes (default: tpverify starts one process per rank, as a
                           server runs) or threads (one process, one thread per GPU)
  --rank R --nranks N      one rank of a run started by another launcher (NCCL_COMM_ID
                           rendezvous); --nranks is TP
  --server S               sglang (default): the CUDA backend runs with SGLang's NCCL
                           environment (NCCL_CUMEM_ENABLE=0, NCCL_NVLS_ENABLE=0,
                           CUDA_DEVICE_MAX_CONNECTIONS=8, CUDA_MODULE_LOADING=AUTO where you
                           did not set them) and captures as SGLang does (global mode, after
                           two eager passes and a barrier); at one rank it calls no
                           collective, as SGLang calls none there; none: bare NCCL (one-rank
                           collectives called), thread-local
  --graph on|off           capture the pass in a CUDA graph and replay it (default on)
  --capture-mode M         thread-local, global or relaxed (default: the server's)
  --no-warmup-before-capture
                           capture without warming every collective eagerly first
                           (reproduces lazy-connect failures inside a capture)
  --fusion on|off          fused all-reduce + residual + RMSNorm (default off)
  --check                  compare collective results with a host reference (new inputs at
                           every call, through a replayed graph), the W4A16/bf16 GEMMs and
                           the fused attention with double-precision references; any wrong
                           element is a failure (exit 1)
Measurement
  --warmup N               passes before measuring (default 5; 0 = none)
  --iters N                measured passes (default 50)
  --target-rsd X           instead of --iters: stop when the relative spread of the median
                           (half-width of its 95% interval / median) is below X, or at
  --max-seconds S          this time cap (default 20)
  --accept-len A           accepted tokens per verify cycle (default 3.2)
  --draft-us U             draft time per cycle in microseconds with --draft-steps 0
                           (default 2000); tok/s = A / (verify pass + draft) ;
                           baseline = 1 / (1-token pass)
  --timeout S              a hung collective fails after S seconds (default 60, 0 = never)
Backend
  --backend B              auto (CUDA when a GPU is visible, else sim), cuda, sim
                           (--topology, --topology-file, --noise and --calibration
                           describe the sim's machine: the CUDA backend ignores them with
                           a note on stderr; --inject other than stale is refused with
                           --backend cuda)
  --topology T             sim: pcie-gen4 (8 x L40S), pcie-gen5 (default; 8 x RTX PRO
                           6000 Blackwell, PCIe gen5), nvlink (8 x H200 SXM)
  --topology-file FILE     sim: the machine's own GPU-to-GPU paths, as `nvidia-smi topo -m`
                           prints them (NV#, PIX, PXB, PHB, NODE, SYS; colours, affinity
                           columns and the legend are fine); GPUs 0..tp-1 are the ranks.
                           P2P per pair under NCCL_P2P_LEVEL, rings across sockets at the
                           inter-socket bandwidth, fusion only without SYS pairs
  --seed N                 seed of the router (both backends) and of the sim's noise
                           (same seed, same numbers)
  --noise X                sim: relative noise per pass, e.g. 0.02 (default 0, or 0.02
                           when --seed is given)
  --calibration FILE       sim: price collectives from measured times (a file written by
                           'ncclsweep calibrate', or builtin:incident-pcie), matched by
                           NCCL's effective choice (algorithm, protocol, channels,
                           transport); a choice not measured is priced relative to a
                           measured one, as the result event's collective_times says
  --inject KIND[@PHASE][:SECONDS]
                           inject a fault (repeatable). KIND: capture-fail, nccl-error,
                           cuda-oom, hang, segv, exit (the sim's), stale (both backends:
                           collectives hand back the previous call's result; --check must
                           catch it). PHASE: init, warmup, capture, replay
                           (default capture for capture-fail, replay for the rest).
                           SECONDS: delay before the fault; for hang, how long it hangs
                           (0 = until --timeout, or forever with --timeout 0).
Calibration (instead of the pass)
  --measure-collectives    time NCCL all-reduce and all-gather (bf16) on --tp GPUs of this
                           host, under this process's NCCL_* environment, at the sizes of
                           the pass (--model, --tokens, and 1 token) and 1 KiB..1 MiB, and
                           print a calibration file on stdout for the sim's --calibration:
                           per size the out-of-place time per collective (in-place in a
                           comment), as nccl-tests -G measures it: --warmup calls, then
                           --iters calls in one CUDA graph (--graph off: eager), replayed
                           10 times per trial, median of 5 trials. One NCCL setting per
                           run; concatenate the files of several settings (cat a b > cal).
                           e.g. NCCL_PROTO=LL tpverify --measure-collectives --tp 8 > ll.txt
Kernel table (instead of the pass)
  --measure-kernels        time every distinct kernel of the pass on this GPU (GEMMs and
                           expert launches by shape, the small ops, attention, norms) and
                           print the table the sim prices them from (docs/engine.md)
Output
  --json                   one JSON event per line on stdout: start, capture (begin/end),
                           ready, result. Without it: a readable summary.
  --help                   this text
  --describe --json        the flags and metrics as JSON (what ncclsweep checks specs against)
  --validate ARGS [-- ARGS]...
                           judge argument lists as a run would (flags, values, flags that
                           exclude each other, a model that must split over --tp ranks)
                           and run nothing: one JSON line per list, {"valid":true} or
                           {"valid":false,"error":...,"parameters":[...]}; exit 0 once
                           judged. e.g. tpverify --validate --tp 3 -- --tp 8

The NCCL environment (NCCL_ALGO, NCCL_PROTO, NCCL_MIN/MAX_CTAS, NCCL_NTHREADS, ...) is taken
as inherited and never overridden; the sim backend models how NCCL would react to it.
Exit status: 0 ok, 1 a failure (the failing API and its error on stderr), 2 bad usage.
See docs/engine.md for the model and its constants.
)";
}

}  // namespace tpverify
