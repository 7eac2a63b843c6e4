#!/usr/bin/env python3
"""Builds the sim's H200 kernel table (engine/sim/kernel_table.hpp) from measured files.

    scripts/kernel-table.py RUN3_INT4 RUN3_BF16 RUN2_INT4 RUN2_BF16 BENCH > h200.txt

The inputs are what the GPU machine printed on 2026-12-03 (tests/fixtures/tpverify-kernels/):
RUN3_* and RUN2_* are `tpverify --backend cuda --measure-kernels` of two engine builds (INT4
and bf16 experts), BENCH is scripts/device-kernel-bench.sh's table. tpverify's shipped kernels
are the ones each line below was measured with:
- expert launches (gemm lines with COUNT > 1): run 3, except launches of 16 experts or fewer
  (the 1-token pass), which run 3 measured with a one-shot variant of the kernel that tpverify
  no longer ships: those from run 2 (the streaming kernel tpverify ships);
- every other bf16 GEMM (COUNT 1): cuBLAS, from the bench's `cublas` column (m = 1 and 4);
- attention: run 2, whose attention was cuBLAS's (run 3 measured the fused MLA kernel);
- ops and norms: run 3 (the shipped kernels).
"""
import re
import sys


def read_table(path):
    lines = {}
    header = {}
    for line in open(path):
        line = line.rstrip('\n')
        if not line or line.startswith('#') or line.startswith('tpverify-kernels'):
            continue
        words = line.split()
        if words[0] in ('gpu', 'copy_gbps'):
            header[words[0]] = line
            continue
        lines[' '.join(words[:-1])] = float(words[-1])
    return header, lines


def bench_cublas(path):
    """bf16 NAME m=M n=N k=K ... | cublas US -> {"gemm bf16 M N K 1": US}"""
    out = {}
    pattern = re.compile(r'^bf16 (\S+)\s+m=(\d+) n=(\d+) k=(\d+) .*\| cublas ([0-9.]+)')
    for line in open(path):
        m = pattern.match(line)
        if m:
            out[f'gemm bf16 {m.group(2)} {m.group(3)} {m.group(4)} 1'] = float(m.group(5))
    return out


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__.splitlines()[2].strip())
    run3_int4, run3_bf16, run2_int4, run2_bf16, bench = sys.argv[1:]
    header, r3 = read_table(run3_int4)
    r3.update({k: v for k, v in read_table(run3_bf16)[1].items() if k not in r3})
    r2 = read_table(run2_int4)[1]
    r2.update({k: v for k, v in read_table(run2_bf16)[1].items() if k not in r2})
    cublas = bench_cublas(bench)
    table = {}
    for key, us in r3.items():
        kind = key.split()[0]
        if kind == 'gemm':
            count = int(key.split()[5])
            if count > 16:
                table[key] = us
            elif count > 1 and key in r2:
                table[key] = r2[key]
        elif kind in ('op', 'norm'):
            table[key] = us
    for key, us in r2.items():
        if key.startswith('attention'):
            table[key] = us
    table.update(cublas)
    print('tpverify-kernels 1')
    print('# builtin:h200 - kernel times measured on one NVIDIA H200 (device tool, 2026-12-03), composed')
    print('# by scripts/kernel-table.py from tests/fixtures/tpverify-kernels/ (its docstring says which line')
    print('# comes from which run): expert launches and small kernels from tpverify --measure-kernels,')
    print('# bf16 GEMMs on cuBLAS from scripts/device-kernel-bench.sh, attention (cuBLAS) from the run that')
    print('# timed it; us per kernel in a CUDA graph of its kind (its launch gap included).')
    print(header['gpu'])
    print(header['copy_gbps'])
    order = {'gemm': 0, 'attention': 1, 'op': 2, 'norm': 3}
    for key in sorted(table, key=lambda k: (order[k.split()[0]], k)):
        print(f'{key} {table[key]:.3f}')


if __name__ == '__main__':
    main()
