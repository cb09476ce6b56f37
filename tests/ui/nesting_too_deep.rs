//! Must not compile: expressions nest at most 128 levels deep (deeper input would overflow the
//! compiler's stack); the error is at the group that goes too deep.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    let deep = ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((n))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))));
    store(x + offs, 0.0, offs < deep);
}

fn main() {}
