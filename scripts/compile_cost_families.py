"""The compile-cost budget's calibration (tile-codegen/src/budget.rs): for each family of kernels
that repeat one op (float and integer arithmetic, Philox, randn, the transcendentals, loads,
masked loads, stores, casts, reductions along either axis, scans, rolls, atomics, a dot loop),
the repetition count that brings the kernel's compile cost just under TARGET, then that kernel
compiled alone by `tile-fuzz replay`, which prints its time and cost.

    cargo build --release -p tile-fuzz
    python3 scripts/compile_cost_families.py [TARGET [FAMILY ...]]   # TARGET default 223000

On the 2-core build machine every family at 223000 compiled in 1.1-1.8 s (docs/DECISIONS.md,
"Compile cost"). The kernels go to $TMPDIR/tile-cost-families/.
"""
import os, re, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FZ = os.path.join(ROOT, "target", "release", "tile-fuzz")
DIR = os.path.join(tempfile.gettempdir(), "tile-cost-families")
os.makedirs(DIR, exist_ok=True)
hdr="#[tile_kernel(num_warps = 4)]\n"
def k(name, lines, args="x: Ptr<f32, 8192>, out: Ptr<f32, 8192>", init="let mut v = load(x + offs);", fin="store(out + offs, v);"):
    return hdr+f"""fn {name}({args}) {{
    let offs = arange(0, 64).expand_dims(1) * 128 + arange(0, 128).expand_dims(0);
    {init}
{lines}
    {fin}
}}
"""
fams = {
 "ew": lambda n: k("ew", "\n".join("    v = v * 1.5 + v;" for _ in range(n))),
 "int": lambda n: k("int", "\n".join("    v = (v * 3) ^ v;" for _ in range(n)), "x: Ptr<i32, 8192>, out: Ptr<i32, 8192>"),
 "rnd": lambda n: k("rnd", "\n".join(f"    v = v + rand(seed + {i}, offs);" for i in range(n)), "x: Ptr<f32, 8192>, out: Ptr<f32, 8192>, seed: i32"),
 "randn": lambda n: k("randn", "\n".join(f"    v = v + randn(seed + {i}, offs);" for i in range(n)), "x: Ptr<f32, 8192>, out: Ptr<f32, 8192>, seed: i32"),
 "erf": lambda n: k("erf", "\n".join("    v = erf(v) + v;" for _ in range(n))),
 "sin": lambda n: k("sin", "\n".join("    v = sin(v) + v;" for _ in range(n))),
 "exp": lambda n: k("exp", "\n".join("    v = exp(v) * 0.5;" for _ in range(n))),
 "log": lambda n: k("log", "\n".join("    v = log(v) + v;" for _ in range(n))),
 "tanh": lambda n: k("tanh", "\n".join("    v = tanh(v) + v;" for _ in range(n))),
 "ld": lambda n: k("ld", "\n".join(f"    v = v + load(x + offs + {i});" for i in range(n)), "x: Ptr<f32, 99000>, out: Ptr<f32, 8192>"),
 "ldm": lambda n: k("ldm", "\n".join(f"    v = v + load(x + offs + {i}, offs < n);" for i in range(n)), "x: Ptr<f32, 99000>, out: Ptr<f32, 8192>, n: i32"),
 "st": lambda n: k("st", "\n".join(f"    store(out + offs + {i}, v);" for i in range(n)), "x: Ptr<f32, 8192>, out: Ptr<f32, 99000>"),
 "bf": lambda n: k("bf", "\n".join("    v = (v as bf16) as f32 + v;" for _ in range(n))),
 "red": lambda n: k("red", "\n".join(f"    v = v - v.max({i%2}).expand_dims({i%2});" for i in range(n))),
 "red1": lambda n: k("red1", "\n".join(f"    v = v - v.max(1).expand_dims(1);" for i in range(n))),
 "red0": lambda n: k("red0", "\n".join(f"    v = v - v.max(0).expand_dims(0);" for i in range(n))),
 "sum": lambda n: k("sum", "\n".join(f"    v = v - v.sum({i%2}).expand_dims({i%2});" for i in range(n))),
 "scan": lambda n: k("scan", "\n".join(f"    v = v.cumsum({i%2});" for i in range(n))),
 "roll": lambda n: k("roll", "\n".join(f"    v = v.roll({1+i%60}, {i%2}) + v;" for i in range(n))),
 "atom": lambda n: k("atom", "\n".join(f"    v = v + atomic_add(out + offs + {i}, v);" for i in range(n)), "x: Ptr<f32, 8192>, out: Ptr<f32, 99000>"),
 "dotloop": lambda n: hdr+f"""fn dotloop(a: Ptr<f16, {{128 * 1024}}>, b: Ptr<f16, {{1024 * 128}}>, out: Ptr<f32, 16384>) {{
    let r = arange(0, 128);
    let kk = arange(0, 32);
    let mut acc = zeros([128, 128]);
{chr(10).join(f"    acc = dot(load(a + r.expand_dims(1) * 1024 + kk.expand_dims(0) + {32*(i%32)}), load(b + (kk.expand_dims(1) + {32*(i%32)}) * 128 + r.expand_dims(0)), acc);" for i in range(n))}
    store(out + r.expand_dims(1) * 128 + r.expand_dims(0), acc);
}}
""",
}
def cost(text):
    probe = os.path.join(DIR, "probe.rs")
    open(probe, "w").write(text)
    o = subprocess.run([FZ, "replay", probe], capture_output=True, text=True).stdout
    m = re.search(r"cost (\d+) in (\d+) modules", o)
    return int(m.group(1)) if m else None, o
target = int(sys.argv[1]) if len(sys.argv) > 1 else 223000
only = sys.argv[2:] 
for name, f in fams.items():
    if only and name not in only: continue
    c1,_ = cost(f(2)); c2,o2 = cost(f(4))
    if c1 is None or c2 is None:
        print(name, "failed", o2.strip()[:200]); continue
    per = (c2-c1)/2; base = c1-2*per
    n = max(1, int((target-base)/per))
    text = f(n)
    path = os.path.join(DIR, f"{name}.rs")
    open(path, "w").write(text)
    o = subprocess.run([FZ, "replay", path], capture_output=True, text=True).stdout.strip()
    print(f"{name:8} n={n:4} {o.split(': ',1)[1][:110]}")
