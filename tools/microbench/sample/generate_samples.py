#!/usr/bin/env python3
"""Writes the SYNTHETIC sample JSON-lines files in this directory (for unit tests).

The numbers are not measurements: they follow the closed-form curves below (also listed in
../README.md), chosen to look like an H100 SXM. Run from anywhere:
    python3 tools/microbench/sample/generate_samples.py
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
COMMON = {"gpu": "NVIDIA H100 80GB HBM3", "driver": "13.0", "runtime": "13.0", "device": 0}
MIB = 1 << 20
GIB = 1 << 30


def line(bench, **fields):
    return {"bench": bench, **COMMON, **fields}


def gemm():
    for s in [256, 512, 1024, 2048, 4096, 8192, 16384]:
        flops = 2 * s * s * s
        tflops = 0.80 * flops / (flops + 2e10) * 989
        time_s = flops / (tflops * 1e12)
        yield line("gemm", dtype="bf16", m=s, n=s, k=s, flops=flops, time_s=time_s,
                   tflops=tflops)


def hbm():
    for per_array in [MIB * 4**i for i in range(7)]:  # 1 MiB .. 4 GiB per array
        n = per_array // 4
        nbytes = 2 * n * 4                             # copy: 2 MiB .. 8 GiB moved
        gbps = 0.9 * 3350 * nbytes / (nbytes + 8e6)
        yield line("hbm", kernel="copy", bytes=nbytes, time_s=nbytes / (gbps * 1e9), gbps=gbps)


def embedding():
    batch, pooling, rows = 16384, 8, 10_000_000
    for dim in [16, 32, 64, 128, 256]:
        nbytes = batch * pooling * dim * 4
        gbps = 0.6 * 3350 * (dim * 4) / (dim * 4 + 128)
        yield line("embedding", dtype="fp32", rows=rows, dim=dim, pooling=pooling, batch=batch,
                   zipf_alpha=0.0, bytes=nbytes, time_s=nbytes / (gbps * 1e9), gbps=gbps)


def embedding_backward():
    batch, pooling, rows = 16384, 8, 10_000_000
    unique = batch * pooling  # uniform ids over 1e7 rows: taken as all distinct
    for dim in [16, 32, 64, 128, 256]:
        nbytes = 2 * (batch * dim * 4 + batch * pooling * dim * 4) + 2 * unique * 4
        gbps = 0.3 * 3350 * (dim * 4) / (dim * 4 + 128)
        yield line("embedding_backward", dtype="fp32", optimizer="rowwise_adagrad", rows=rows,
                   dim=dim, pooling=pooling, batch=batch, zipf_alpha=0.0, unique_rows=unique,
                   bytes=nbytes, time_s=nbytes / (gbps * 1e9), gbps=gbps)


def copy():
    for bench in ["h2d", "d2h"]:
        for nbytes in [MIB * 4**i for i in range(6)]:  # 1 MiB .. 1 GiB
            gbps = 55 * nbytes / (nbytes + 2e5)
            yield line(bench, bytes=nbytes, time_s=nbytes / (gbps * 1e9), gbps=gbps, pinned=True)


def nccl():
    ranks = 8
    for nbytes in [MIB * 2**i for i in range(11)]:  # 1 MiB .. 1 GiB
        time_s = 30e-6 + nbytes * 1.75 / 360e9
        algbw = nbytes / time_s / 1e9
        yield line("nccl", op="all_reduce", ranks=ranks, bytes=nbytes, time_s=time_s,
                   algbw=algbw, busbw=algbw * 2 * (ranks - 1) / ranks)


def main():
    for name, gen in [("gemm", gemm), ("hbm", hbm), ("embedding", embedding),
                      ("embedding_backward", embedding_backward), ("copy", copy), ("nccl", nccl)]:
        path = os.path.join(HERE, name + ".jsonl")
        with open(path, "w") as f:
            for obj in gen():
                f.write(json.dumps(obj, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
