"""cuBLAS (torch.matmul, f16) at 8192 x 4096 x N for N around 1000, timed by do_bench (median)."""
import torch, triton
torch.manual_seed(0)
for n in [992, 1000, 1008, 1016, 1024]:
    for dt in [torch.float16]:
        a = torch.randn(8192, 4096, device="cuda", dtype=dt)
        b = torch.randn(4096, n, device="cuda", dtype=dt)
        ms = triton.testing.do_bench(lambda: torch.matmul(a, b), warmup=50, rep=300, return_mode="median")
        print(f"cublas 8192x4096x{n} {dt}: {ms:.4f} ms  {2*8192*4096*n/ms/1e9:.0f} TFLOP/s")
