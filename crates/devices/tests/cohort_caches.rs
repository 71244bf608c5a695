//! The Cohort SoC's bounded caches (`Caches`): a queue larger than the
//! L1.5 evicts and writes its dirty lines back, an L2 eviction invalidates
//! the L1.5 copies (inclusion) and the Reader Coherency Manager watching
//! one hears it, an L1D miss that hits the L1.5, and the L2's home slices.
//! Each test fails with the unbounded caches of the model before.

mod cohort_common;
use ccsim_devices::accel::Accelerator;
use ccsim_devices::cohort::cache::Geometry;
use ccsim_devices::cohort::maple::Maple;
use ccsim_devices::cohort::{Caches, Event, Soc};
use cohort_common::timing;

/// OpenPiton's defaults (Cohort §5): 8 KiB 4-way L1D and L1.5 of 16 B
/// lines, four 64 KiB 4-way L2 slices.
fn openpiton() -> Caches {
    Caches {
        l1d: Geometry {
            bytes: 8192,
            ways: 4,
            line: 16,
        },
        l15: Geometry {
            bytes: 8192,
            ways: 4,
            line: 16,
        },
        l2: Geometry {
            bytes: 65536,
            ways: 4,
            line: 64,
        },
        slices: 4,
    }
}

fn soc(caches: Caches) -> Soc {
    let maple = Maple::new(0, Accelerator::sha256(1e6), 10, 8);
    let mut s = Soc::new(timing(), 2, 8, vec![Accelerator::sha256(1e6)], 4, maple);
    s.world.set_caches(caches).unwrap();
    s
}

const VA: u64 = 0x10_0000_0000;

#[test]
fn a_queue_larger_than_the_l15_evicts_and_writes_its_dirty_lines_back() {
    // 2048 words (16 KiB) through core 0's 8 KiB L1.5.
    let words = 2048u64;
    let mut s = soc(openpiton());
    s.map(VA, words * 8);
    for i in 0..words {
        s.store(0, VA + 8 * i, i * 3 + 1);
    }
    s.fence(0);
    let c = s.world.counts;
    assert_eq!(
        c.l15_evictions,
        words * 8 / 16 - 8192 / 16,
        "every 16 B line past the 8 KiB"
    );
    assert_eq!(
        c.l15_writebacks, c.l15_evictions,
        "each victim was modified"
    );
    let first = s.aspace.translate(&s.world.mem, VA).unwrap();
    let last = s
        .aspace
        .translate(&s.world.mem, VA + 8 * (words - 1))
        .unwrap();
    assert!(!s.world.holds(0, first), "the first line was evicted");
    assert!(s.world.holds(0, last), "the last line is still there");
    // Core 1 reads the first word: the L2 has it (written back), no
    // forward to core 0.
    s.world.cores[1].now = s.world.cores[0].now + 100;
    let t0 = s.world.cores[1].now;
    assert_eq!(s.load(1, VA), 1);
    assert_eq!(s.world.cores[1].now - t0, 34, "answered by the L2");
    assert_eq!(s.world.counts.load_fwds, 0);
    // Every word reads back as stored.
    for i in 0..words {
        assert_eq!(s.load(1, VA + 8 * i), i * 3 + 1, "word {i}");
    }
}

#[test]
fn without_capacities_nothing_is_evicted() {
    let mut s = soc(Caches::default());
    s.map(VA, 16384);
    for i in 0..2048 {
        s.store(0, VA + 8 * i, i);
    }
    s.fence(0);
    assert_eq!(s.world.counts.l15_evictions, 0);
    s.world.cores[1].now = s.world.cores[0].now;
    s.load(1, VA);
    assert_eq!(
        s.world.counts.load_fwds, 1,
        "core 0 still holds it modified"
    );
}

/// A one-set, four-way L2 of one slice: the fifth line evicts the first.
fn tiny_l2() -> Caches {
    Caches {
        l2: Geometry {
            bytes: 256,
            ways: 4,
            line: 64,
        },
        slices: 1,
        ..Caches::default()
    }
}

#[test]
fn an_l2_eviction_invalidates_the_l15_copy() {
    let mut s = soc(tiny_l2());
    s.map(VA, 4096);
    s.poke(VA, 42);
    let a = s.aspace.translate(&s.world.mem, VA).unwrap();
    // The engine's RCM watches line A, which engine tile 2 reads.
    s.world.watch(2, a / 64, 0, 0);
    s.load(1, VA);
    assert!(s.world.holds(1, a));
    s.world
        .coherent(2, a, ccsim_devices::cohort::Access::Read, 0);
    // Core 0 reads four other lines: the fourth needs A's way.
    // (World::coherent directly: no events run, so the RCM's is left to
    // see.)
    let t = s.world.cores[1].now;
    for k in 1..=4 {
        s.world
            .coherent(0, a + 64 * k, ccsim_devices::cohort::Access::Read, t);
    }
    s.world.cores[0].now = t + 1000;
    let c = s.world.counts;
    assert_eq!(c.l2_evictions, 1);
    assert_eq!(
        c.l2_back_invalidations, 2,
        "core 1's and the engine's copies"
    );
    assert!(!s.world.holds(1, a) && !s.world.holds(2, a));
    assert_eq!(s.world.state_of(1, a), "I");
    // The RCM heard it.
    let mut heard = false;
    while let Some((_, ev)) = s.world.pop_due(u64::MAX) {
        heard |= ev == Event::Invalidated(0, 0);
    }
    assert!(heard, "the watched line's invalidation reached the RCM");
    // Core 1 misses on A again and reads the right value.
    s.world.cores[1].now = s.world.cores[0].now + 1000;
    let t0 = s.world.cores[1].now;
    assert_eq!(s.load(1, VA), 42);
    // A needs a way again: the L2 first takes its victim (a line core 0
    // holds E) back, 52, then answers, 34.
    assert_eq!(s.world.cores[1].now - t0, 52 + 34);
    assert_eq!(s.world.counts.l2_evictions, 2);
}

#[test]
fn an_l1d_miss_that_hits_the_l15_costs_the_lookup_and_the_l15() {
    // A one-set, two-way L1D of 16 B lines; the L1.5 unbounded.
    let mut s = soc(Caches {
        l1d: Geometry {
            bytes: 32,
            ways: 2,
            line: 16,
        },
        ..Caches::default()
    });
    s.map(VA, 4096);
    for k in 0..3 {
        s.load(1, VA + 16 * k);
    }
    let t0 = s.world.cores[1].now;
    s.load(1, VA);
    assert_eq!(s.world.counts.l1d_misses, 1, "the third line took A's way");
    assert_eq!(s.world.cores[1].now - t0, 2, "load_hit + l15_hit");
    let t1 = s.world.cores[1].now;
    s.load(1, VA + 8);
    assert_eq!(s.world.cores[1].now - t1, 1, "back in the L1D");
}

#[test]
fn the_home_slice_is_address_bits_7_6_xor_15_14() {
    let c = openpiton();
    for (pa, home) in [
        (0x0u64, 0usize),
        (0x40, 1),
        (0xc0, 3),
        (0x4000, 1),
        (0x4040, 0),
        (0xc0c0, 0),
        (0x8040, 3),
    ] {
        assert_eq!(c.home_of(pa / 64), home, "pa {pa:#x}");
    }
}
