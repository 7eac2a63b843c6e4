#!/usr/bin/env python3
"""Builds the sim's H200 kernel table (engine/sim/kernel_table.hpp) from measured files.

    scripts/kernel-table.py INT4_TABLE BF16_TABLE DATE > h200.txt

INT4_TABLE and BF16_TABLE are what `tpverify --backend cuda --measure-kernels --tokens 4` printed
on the GPU machine with INT4 and with bf16 routed experts (`--expert-format bf16`), from one
build (scripts/device-engine.sh writes both: kernels-int4.txt, kernels-bf16.txt; the checked-in
ones are tests/fixtures/tpverify-kernels/run*-int4.txt and run*-bf16.txt). Every line is the
kernel that build ran by default for that step, timed one step at a time in a CUDA graph of its
kind: bf16 GEMMs up to 160 MB on the skinny kernel and larger ones on cuBLAS, the routed experts
on the streaming kernel, the MLA attention on cuBLAS and the draft's GQA attention in one
kernel (head_decode, the default since 476eb3c; builtin:h200 predates it and timed cuBLAS), the
small kernels with programmatic dependent launch. The INT4 table gives every line; the bf16 table adds the bf16 expert launches.
What the table cannot hold: the groups of steps that tpverify runs as fewer launches
(TPVERIFY_FUSE, docs/engine-cuda.md) are timed here as their separate steps.
"""
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
        key = ' '.join(words[:-1])
        lines.setdefault(key, float(words[-1]))
    return header, lines


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.splitlines()[2].strip())
    int4, bf16, date = sys.argv[1:]
    header, table = read_table(int4)
    for key, us in read_table(bf16)[1].items():
        table.setdefault(key, us)
    print('tpverify-kernels 1')
    print(f'# builtin:h200 - kernel times measured on one NVIDIA H200 (device tool, {date}), composed')
    print('# by scripts/kernel-table.py from the INT4 and bf16 --measure-kernels tables of one build')
    print('# (tests/fixtures/tpverify-kernels/): the kernels that build ran by default, each step timed')
    print('# on its own; us per kernel in a CUDA graph of its kind (its launch gap included).')
    print(header['gpu'])
    print(header['copy_gbps'])
    order = {'gemm': 0, 'attention': 1, 'op': 2, 'norm': 3}
    for key in sorted(table, key=lambda k: (order[k.split()[0]], k)):
        print(f'{key} {table[key]:.3f}')


if __name__ == '__main__':
    main()
