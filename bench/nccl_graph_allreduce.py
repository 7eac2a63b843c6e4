"""nccl-tests-style reference for tpverify's per-collective time at N >= 2 GPUs.

Times a bf16 sum all-reduce of each size the way `all_reduce_perf -G` does: many all-reduces
captured in one CUDA graph, replayed, time divided by the count. One process per GPU (spawned
here), NCCL through torch.distributed. Prints one JSON line per size from rank 0.
Usage (on the GPU host): python3 bench/nccl_graph_allreduce.py [NGPUS]
"""
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES = [14336 * t for t in (1, 2, 4, 8, 16, 32)]  # tokens x hidden 7168 x 2 bytes
PER_GRAPH = 100
REPLAYS = 20


def worker(rank: int, world: int, port: int) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    stream = torch.cuda.Stream()
    for size in SIZES:
        x = torch.ones(size // 2, dtype=torch.bfloat16, device="cuda")
        with torch.cuda.stream(stream):
            for _ in range(5):  # eager warm-up: NCCL connects outside the capture
                dist.all_reduce(x)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(PER_GRAPH):
                dist.all_reduce(x)
        graph.replay()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(REPLAYS):
            graph.replay()
        end.record()
        torch.cuda.synchronize()
        us = start.elapsed_time(end) * 1000.0 / (REPLAYS * PER_GRAPH)
        if rank == 0:
            print(json.dumps({"bytes": size, "graph_allreduce_us": round(us, 3), "ranks": world}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else torch.cuda.device_count()
    mp.spawn(worker, args=(n, 29517), nprocs=n, join=True)
