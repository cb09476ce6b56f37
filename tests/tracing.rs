//! The `tracing` feature's events (`cargo test --features tracing --test tracing`): a launch
//! that cannot take the most specialized variant says which arguments refused it. Runs on the
//! interpreter too (module loads and variant choices are CUDA-only; there it checks a capture).

#![cfg(feature = "tracing")]

use std::sync::{Arc, Mutex};

use tile::prelude::*;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

#[tile_kernel]
/// `p += 1` in place.
fn inc(p: Ptr<f32, n>, n: i32, BLOCK: Const<256>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(p + offs, load(p + offs, mask) + 1.0, mask);
}

/// Collects every event's fields as `name=value` text.
#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Vec<String>>>);

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0 += &format!("{}={:?} ", field.name(), value);
    }
}

impl Subscriber for Collect {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, e: &Event<'_>) {
        let mut f = Fields(String::new());
        e.record(&mut f);
        self.0.lock().unwrap().push(f.0);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn events_name_the_variant_and_why() {
    let collect = Collect::default();
    let seen = collect.0.clone();
    tracing::subscriber::with_default(collect, || {
        let dev = Device::best_available().0;
        let mut p = dev.zeros::<f32>(1001).unwrap();
        // n = 1001: not a multiple of what the first variant assumes.
        inc::launch(&dev, cdiv(1001, 256), &mut p, 1001).unwrap();
        drop(dev.capture(|d| inc::launch(d, 4, &mut p, 1001)).unwrap());
        let events = seen.lock().unwrap().join("\n");
        if dev.is_cuda() {
            assert!(events.contains("loaded a kernel's module"), "{events}");
            assert!(events.contains("less specialized variant"), "{events}");
            assert!(
                events.contains("`n` = 1001 is not a multiple of"),
                "{events}"
            );
            assert!(events.contains("captured a CUDA graph"), "{events}");
            // Built with a ptxas at hand, the kernel carries its cubins, and the H100 (or A100)
            // loads one instead of compiling PTX.
            if !inc::KERNEL.variants[0].targets[0].cubin.is_empty() {
                assert!(events.contains("cubin=true"), "{events}");
            }
        } else {
            println!("skipped (GPU half): no CUDA device; events: {events:?}");
        }
    });
}
