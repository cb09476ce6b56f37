//! `rand_stream TRITON_DIR OUT_DIR`: checks that tile's `rand` and `randint` give Triton's stream
//! bit for bit on the GPU. `TRITON_DIR` is written by `bench/python/rand_reference.py generate`
//! (Triton 3.6's `tl.randint` / `tl.rand` for several seeds and offset sets, int32 and int64);
//! this runs tile's kernels on the same seeds and offsets (an `i32` seed where Triton types the
//! Python int as `i32`, else `i64` with the same 64 bits), compares with Triton's values and with
//! `tile::random` on the CPU, prints a table, and writes `OUT_DIR/<case>.randint.bin` and
//! `.rand.bin` in the same layout (so `rand_reference.py compare TRITON_DIR OUT_DIR` reads them).
//! Exit status 1 on any difference.

use std::path::Path;

use tile::prelude::*;

/// Triton's `randint` and `rand` of an `i64` seed at the loaded offsets.
#[tile_kernel]
fn stream64(
    off: Ptr<O, n>,
    bits: Ptr<i32, n>,
    u: Ptr<f32, n>,
    n: i32,
    seed: i64,
    O: Type<{ [i32, i64] }>,
    BLOCK: Const<1024>,
) {
    let i = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = i < n;
    let o = load(off + i, m);
    store(bits + i, randint(seed, o), m);
    store(u + i, rand(seed, o), m);
}

/// The same with an `i32` seed.
#[tile_kernel]
fn stream32(
    off: Ptr<O, n>,
    bits: Ptr<i32, n>,
    u: Ptr<f32, n>,
    n: i32,
    seed: i32,
    O: Type<{ [i32, i64] }>,
    BLOCK: Const<1024>,
) {
    let i = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = i < n;
    let o = load(off + i, m);
    store(bits + i, randint(seed, o), m);
    store(u + i, rand(seed, o), m);
}

fn read<T: Copy>(path: &Path, from: fn([u8; 4]) -> T) -> Result<Vec<T>, String> {
    let b = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(b.chunks_exact(4)
        .map(|c| from([c[0], c[1], c[2], c[3]]))
        .collect())
}

fn run<O: tile::Element>(
    dev: &Device,
    offs: &[O],
    seed: i128,
) -> Result<(Vec<i32>, Vec<f32>), Error> {
    let n = offs.len();
    let off = dev.upload(offs)?;
    let mut bits = dev.zeros::<i32>(n)?;
    let mut u = dev.zeros::<f32>(n)?;
    let grid = Grid::x(cdiv(n, 1024));
    match i32::try_from(seed) {
        Ok(s) => stream32::launch(dev, grid, &off, &mut bits, &mut u, n as i32, s)?,
        Err(_) => stream64::launch(dev, grid, &off, &mut bits, &mut u, n as i32, seed as i64)?,
    }
    Ok((dev.download(&bits)?, dev.download(&u)?))
}

fn main() -> std::process::ExitCode {
    match check() {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::from(1),
        Err(e) => {
            eprintln!("rand_stream: {e}");
            std::process::ExitCode::from(2)
        }
    }
}

fn check() -> Result<bool, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [triton, out] = &args[..] else {
        return Err("usage: rand_stream TRITON_DIR OUT_DIR".into());
    };
    let (triton, out) = (Path::new(triton), Path::new(out));
    let text = std::fs::read_to_string(triton.join("manifest.json")).map_err(|e| e.to_string())?;
    let manifest: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(out).map_err(|e| e.to_string())?;
    std::fs::write(out.join("manifest.json"), &text).map_err(|e| e.to_string())?;
    let (dev, why) = Device::best_available();
    if let Some(e) = why {
        println!("no GPU ({e}): running on the interpreter");
    }
    println!(
        "Triton {} on {}; tile on {dev:?}",
        manifest["triton"], manifest["device"]
    );
    println!("| case | offsets | values | randint = Triton | rand = Triton | = tile::random |");
    println!("|---|---|---|---|---|---|");
    let cases = manifest["cases"]
        .as_array()
        .ok_or("manifest without cases")?;
    let mut all = true;
    let (mut total, mut same) = (0usize, 0usize);
    for c in cases {
        let name = c["name"].as_str().ok_or("case without a name")?;
        let seed = c["seed"]
            .as_i64()
            .map(i128::from)
            .or_else(|| c["seed"].as_u64().map(i128::from))
            .ok_or("seed")?;
        let dtype = c["offset_dtype"].as_str().ok_or("offset_dtype")?;
        let path = triton.join(format!("{name}.offsets.bin"));
        // Offsets as the counter takes them (int32 zero-extended), and tile's results.
        let (counters, (bits, u)): (Vec<u64>, _) = if dtype == "int64" {
            let b = std::fs::read(&path).map_err(|e| e.to_string())?;
            let offs: Vec<i64> = b
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect();
            let r = run(&dev, &offs, seed).map_err(|e| e.to_string())?;
            (offs.iter().map(|&o| o as u64).collect(), r)
        } else {
            let offs = read(&path, i32::from_le_bytes)?;
            let r = run(&dev, &offs, seed).map_err(|e| e.to_string())?;
            (offs.iter().map(|&o| u64::from(o as u32)).collect(), r)
        };
        let tb = read(
            &triton.join(format!("{name}.randint.bin")),
            u32::from_le_bytes,
        )?;
        let tu = read(&triton.join(format!("{name}.rand.bin")), u32::from_le_bytes)?;
        let key = seed as u64;
        let n = bits.len();
        let eq_bits = (0..n).filter(|&i| bits[i] as u32 == tb[i]).count();
        let eq_rand = (0..n).filter(|&i| u[i].to_bits() == tu[i]).count();
        let eq_ref = (0..n)
            .filter(|&i| {
                bits[i] as u32 == tile::random::randint(key, counters[i])
                    && u[i].to_bits() == tile::random::rand(key, counters[i]).to_bits()
            })
            .count();
        all &= eq_bits == n && eq_rand == n && eq_ref == n && tb.len() == n;
        total += 2 * n;
        same += eq_bits + eq_rand;
        println!("| {name} | {dtype} | {n} | {eq_bits} | {eq_rand} | {eq_ref} |");
        let bytes: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
        std::fs::write(out.join(format!("{name}.randint.bin")), bytes)
            .map_err(|e| e.to_string())?;
        let bytes: Vec<u8> = u.iter().flat_map(|b| b.to_le_bytes()).collect();
        std::fs::write(out.join(format!("{name}.rand.bin")), bytes).map_err(|e| e.to_string())?;
    }
    println!(
        "{same} of {total} values equal to Triton's ({}): {}",
        cases.len(),
        if all { "bit-identical" } else { "DIFFERENCES" }
    );
    Ok(all)
}
