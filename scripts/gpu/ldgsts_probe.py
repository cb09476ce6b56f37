"""Microbenchmark (GPU machine): does a warp's 16-byte `cp.async` from a row whose start is
16 bytes past a 32-byte sector boundary cost twice the L2 traffic, and does rotating the lanes'
chunks by one (so that lanes 2i and 2i+1 share a sector) restore the aligned rate?

Each warp copies whole 512-byte row segments (32 lanes x 16 bytes, as tile's B-operand copies
do) of an 8 MB matrix that stays in L2, into a ring of shared-memory slots. Prints GB/s for
each row stride and lane-to-chunk mapping:
  identity: lane t copies chunk t;
  rotated:  lane t copies chunk (t - r) mod 32, r = bit 4 of the row's address, into slot t;
  rot+dst:  the same, into the slot of the chunk it copies (as a real copy must);
  rot+swz:  the same, that slot XORed with the row's low three bits (a 128-byte swizzle).
    python3 scripts/gpu/ldgsts_probe.py
"""
import ctypes

import torch

PTX = r"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry probe(.param .u64 p_src, .param .u32 p_stride, .param .u32 p_rows,
                      .param .u32 p_iters, .param .u32 p_mode)
{
  .reg .b64 %rd<10>;
  .reg .b32 %r<30>;
  .reg .pred %p<4>;
  .shared .align 128 .b8 buf[32768];
  ld.param.u64 %rd1, [p_src];
  ld.param.u32 %r1, [p_stride];
  ld.param.u32 %r2, [p_rows];
  ld.param.u32 %r3, [p_iters];
  ld.param.u32 %r4, [p_mode];
  mov.u32 %r5, %tid.x;
  and.b32 %r6, %r5, 31;
  shr.u32 %r7, %r5, 5;
  mov.u32 %r8, %ctaid.x;
  mov.u32 %r9, %ntid.x;
  shr.u32 %r9, %r9, 5;
  mad.lo.u32 %r10, %r8, %r9, %r7;
  mov.u32 %r11, %nctaid.x;
  mul.lo.u32 %r12, %r11, %r9;
  shl.b32 %r13, %r7, 12;
  mov.u32 %r14, buf;
  add.u32 %r13, %r13, %r14;
  shl.b32 %r15, %r6, 4;
  add.u32 %r13, %r13, %r15;
  mov.u32 %r16, 0;
  mov.u32 %r17, %r10;
  cvt.u64.u32 %rd3, %r1;
  setp.eq.u32 %p1, %r4, 0;
LOOP:
  rem.u32 %r18, %r17, %r2;
  cvt.u64.u32 %rd2, %r18;
  mul.lo.u64 %rd4, %rd2, %rd3;
  add.u64 %rd5, %rd1, %rd4;
  cvt.u32.u64 %r19, %rd5;
  shr.u32 %r20, %r19, 4;
  and.b32 %r20, %r20, 1;
  sub.u32 %r21, %r6, %r20;
  and.b32 %r21, %r21, 31;
  selp.u32 %r22, %r6, %r21, %p1;
  mul.wide.u32 %rd6, %r22, 16;
  add.u64 %rd7, %rd5, %rd6;
  and.b32 %r23, %r16, 7;
  shl.b32 %r23, %r23, 9;
  add.u32 %r24, %r13, %r23;
  // Modes 2 and 3: the destination follows the chunk copied (slot r22; mode 3 XORs the slot's
  // low three bits with the row's, a 128-byte swizzle), as a real copy's must.
  setp.ge.u32 %p3, %r4, 2;
  @!%p3 bra DST;
  and.b32 %r25, %r18, 7;
  setp.eq.u32 %p3, %r4, 3;
  selp.u32 %r25, %r25, 0, %p3;
  xor.b32 %r26, %r22, %r25;
  sub.u32 %r24, %r24, %r15;
  shl.b32 %r26, %r26, 4;
  add.u32 %r24, %r24, %r26;
DST:
  cp.async.cg.shared.global [%r24], [%rd7], 16;
  cp.async.commit_group;
  cp.async.wait_group 6;
  add.u32 %r17, %r17, %r12;
  add.u32 %r16, %r16, 1;
  setp.lt.u32 %p2, %r16, %r3;
  @%p2 bra LOOP;
  cp.async.wait_all;
  ret;
}
"""


def main():
    cuda = ctypes.CDLL("libcuda.so.1")
    torch.zeros(1, device="cuda")
    mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
    src = PTX.encode() + b"\0"
    assert cuda.cuModuleLoadData(ctypes.byref(mod), src) == 0, "module load"
    assert cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"probe") == 0
    rows, iters, blocks, threads = 4096, 2048, 132 * 4, 256
    buf = torch.zeros(rows * 2048 + 4096, dtype=torch.uint8, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    for stride in [2048, 2000, 2016, 1984, 2032]:
        for mode, name in [(0, "identity"), (1, "rotated"), (2, "rot+dst"), (3, "rot+swz")]:
            args = [ctypes.c_uint64(buf.data_ptr()), ctypes.c_uint32(stride), ctypes.c_uint32(rows),
                    ctypes.c_uint32(iters), ctypes.c_uint32(mode)]
            ptrs = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
            launch = lambda: cuda.cuLaunchKernel(fn, blocks, 1, 1, threads, 1, 1, 0,
                                                 ctypes.c_void_p(stream), ptrs, None)
            for _ in range(3):
                assert launch() == 0
            torch.cuda.synchronize()
            times = []
            for _ in range(10):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(); launch(); e.record(); e.synchronize()
                times.append(s.elapsed_time(e))
            ms = sorted(times)[len(times) // 2]
            nbytes = blocks * threads * 16 * iters
            print(f"stride {stride:5d} ({stride % 128:3d} mod 128) {name:8s}: {ms:.3f} ms, "
                  f"{nbytes / ms / 1e6:7.0f} GB/s")


if __name__ == "__main__":
    main()
