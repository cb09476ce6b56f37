"""Runs Triton's tutorial matmul (03-matrix-multiplication) with one fixed configuration on
M x N x K f16 inputs, for profiling beside tile's GEMM (ncu, SASS). Checks it against torch.matmul
first, then launches it `--reps` times.

    python3 bench/python/triton_matmul.py --size 4096 --bm 128 --bn 256 --bk 64 --warps 8 --stages 3
"""
import argparse

import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--bm", type=int, default=128)
    p.add_argument("--bn", type=int, default=256)
    p.add_argument("--bk", type=int, default=64)
    p.add_argument("--warps", type=int, default=8)
    p.add_argument("--stages", type=int, default=3)
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args()
    m = n = k = a.size
    torch.manual_seed(0)
    x = torch.randn(m, k, device="cuda", dtype=torch.float16)
    y = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(m, a.bm) * triton.cdiv(n, a.bn),)

    def launch():
        matmul_kernel[grid](x, y, c, m, n, k, x.stride(0), x.stride(1), y.stride(0), y.stride(1),
                            c.stride(0), c.stride(1), BLOCK_SIZE_M=a.bm, BLOCK_SIZE_N=a.bn,
                            BLOCK_SIZE_K=a.bk, GROUP_SIZE_M=8, num_warps=a.warps, num_stages=a.stages)
    launch()
    ref = torch.matmul(x, y)
    err = ((c.float() - ref.float()).norm() / ref.float().norm()).item()
    print(f"triton {a.bm}x{a.bn}x{a.bk} w{a.warps} s{a.stages} {m}^3: rel. L2 error {err:.2e} -> {'ok' if err < 4e-3 else 'FAILED'}")
    for _ in range(a.reps):
        launch()
    torch.cuda.synchronize()
    ms = triton.testing.do_bench(launch, return_mode="median")
    print(f"triton {a.bm}x{a.bn}x{a.bk} w{a.warps} s{a.stages} {m}^3: {ms:.4f} ms {2 * m * n * k / ms / 1e9:.1f} TFLOP/s (do_bench)")


if __name__ == "__main__":
    main()
