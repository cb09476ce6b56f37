# Runs the Liger-style cross-entropy kernel of baseline.py on 4096 x 128256 f32 logits (no
# ignored rows), 4 times, for ncu (scripts/gpu/call5_21.sh).
import sys
sys.path.insert(0, ".device-wg")
import torch
import baseline as b
rows, v = 4096, 128256
x = torch.randn(rows, v, device="cuda", dtype=torch.float32) * 4
y = torch.randint(0, v, (rows,), device="cuda", dtype=torch.int64)
loss = torch.empty(rows, device="cuda", dtype=torch.float32)
n_valid = torch.tensor([rows], device="cuda", dtype=torch.int32)
for _ in range(4):
    b.k_liger_cross_entropy[(rows,)](x, x.stride(0), y, loss, v, n_valid, -100, 0.0,
                                      BLOCK_SIZE=32768, num_warps=32)
torch.cuda.synchronize()
print("ok", float(loss.sum()))
