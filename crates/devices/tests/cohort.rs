//! The Cohort SoC's core model and SPSC queue library: a load after an
//! invalidation misses (the L1D is write-through and inclusive in the
//! L1.5, so the L1.5's state is the core's), store-buffer and fence
//! behaviour, posted uncached stores and uncached round trips, and two cores moving a sequence through a
//! queue that wraps.

mod cohort_common;
use ccsim_devices::accel::Accelerator;
use ccsim_devices::cohort::core::Device;
use ccsim_devices::cohort::maple::{Maple, REG_DMA_LEN};
use ccsim_devices::cohort::queue::{
    fifo_init, pop, publish_read, publish_write, push, try_pop, try_push, IndexCheck,
    PublishFences, CHECK_INSTRUCTIONS, POP_INSTRUCTIONS, PUSH_INSTRUCTIONS,
};
use ccsim_devices::cohort::{Soc, Timing};
use cohort_common::timing;

fn soc() -> Soc {
    let maple = Maple::new(0, Accelerator::sha256(1e6), 10, 8);
    Soc::new(timing(), 2, 8, vec![Accelerator::sha256(1e6)], 4, maple)
}

const VA: u64 = 0x10_0000_0000;

#[test]
fn a_load_after_an_invalidation_misses() {
    let mut s = soc();
    s.map(VA, 4096);
    // Core 1 loads the line (a miss, then a hit in its L1D).
    let t0 = s.world.cores[1].now;
    s.load(1, VA);
    assert_eq!(s.world.cores[1].now - t0, 34);
    let t1 = s.world.cores[1].now;
    s.load(1, VA + 8);
    assert_eq!(s.world.cores[1].now - t1, 1, "a hit in the L1D");
    // Core 0 stores to it: the store invalidates core 1's copy (L1.5 and
    // with it the inclusive, write-through L1D).
    s.world.cores[0].now = s.world.cores[1].now;
    s.store(0, VA, 7);
    s.fence(0);
    assert_eq!(s.world.counts.invalidations, 1);
    s.world.cores[1].now = s.world.cores[0].now;
    let t2 = s.world.cores[1].now;
    assert_eq!(s.load(1, VA), 7, "the new value");
    assert_eq!(s.world.cores[1].now - t2, 68, "a miss forwarded to core 0");
}

/// `fence` on the Ariane OpenPiton builds (CVA6 `4c01614f` with
/// `WT_DCACHE`): it waits for the older stores to drain and leaves the
/// write-through L1D as it is (`controller.sv` raises `flush_dcache` only
/// `ifndef WT_DCACHE`). The wait is counted in `fence_cycles`, and each
/// store's transaction in `store_cycles_by_line`; a line loaded before the
/// fence still hits after it.
#[test]
fn a_fence_waits_for_the_drain_and_keeps_the_l1d() {
    let mut s = soc();
    s.map(VA, 4096);
    s.load(0, VA); // a miss: the line is now in core 0's L1D/L1.5
    let before = s.world.cores[0].now;
    s.store(0, VA + 64, 1);
    s.store(0, VA + 128, 2);
    // The fence waits out both store misses (34 each, one at a time,
    // from the first store's issue) less the two cycles the stores took.
    s.fence(0);
    assert_eq!(s.world.cores[0].fence_cycles, 2 * 34 - 2);
    assert_eq!(s.world.cores[0].now, before + 2 * 34 + 1);
    let line = |va: u64| s.aspace.translate(&s.world.mem, va).unwrap() / 64;
    let by_line = &s.world.cores[0].store_cycles_by_line;
    assert_eq!(by_line[&line(VA + 64)], (1, 34));
    assert_eq!(by_line[&line(VA + 128)], (1, 34));
    // No flush: the line loaded before the fence is still a hit.
    let t = s.world.cores[0].now;
    s.load(0, VA + 8);
    assert_eq!(s.world.cores[0].now - t, 1, "still in the L1D");
    // A fence with nothing buffered waits for nothing.
    s.fence(0);
    assert_eq!(s.world.cores[0].fence_cycles, 2 * 34 - 2);
}

#[test]
fn stores_retire_into_the_buffer_and_fence_drains_it() {
    let mut s = soc();
    s.map(VA, 4096);
    // Eight stores to eight lines retire in eight cycles: the buffer takes them.
    for i in 0..8 {
        s.store(0, VA + 64 * i, i);
    }
    assert_eq!(s.world.cores[0].now, 8);
    assert_eq!(s.world.cores[0].buffered(), 8);
    // A ninth waits for the oldest to drain (one store miss, 34 cycles).
    s.store(0, VA + 64 * 8, 8);
    assert_eq!(s.world.cores[0].now, 35);
    // fence: all nine drained, one at a time (9 x 34), then one cycle.
    s.fence(0);
    assert_eq!(s.world.cores[0].now, 9 * 34 + 1);
    assert_eq!(s.world.cores[0].buffered(), 0);
    // A load of a buffered store forwards its value.
    s.store(0, VA + 64 * 9, 99);
    assert_eq!(s.load(0, VA + 64 * 9), 99);
    assert_eq!(s.world.cores[0].retired, 12);
}

#[test]
fn an_uncached_store_is_posted_and_the_next_uncached_access_waits_for_its_ack() {
    let mut s = soc();
    s.map(VA, 4096);
    s.store(0, VA, 1);
    let t = s.world.cores[0].now;
    s.mmio_store(0, Device::Maple, REG_DMA_LEN, 64);
    // The cached store drains first (34 from its issue), then the uncached
    // store retires in a cycle: the core does not wait for the device
    // (Ariane's store unit; a blocking store would take 3 + 10 + 3 more).
    let departed = t + 34 - 1;
    assert_eq!(s.world.cores[0].now, departed + 1);
    assert!(s.world.cores[0].ni_pending);
    // Work that touches no uncached space goes on meanwhile.
    s.exec(0, 5);
    assert_eq!(s.world.cores[0].now, departed + 6);
    // A second uncached store leaves only after the first's ack (3 there,
    // 10 handled, 3 back: the write buffer's ni_conflict), then retires.
    s.mmio_store(0, Device::Maple, REG_DMA_LEN, 64);
    let acked = departed + 3 + 10 + 3;
    assert_eq!(s.world.cores[0].now, acked + 1);
    // An uncached load waits for that one's ack too (stall_ni), then makes
    // its own round trip.
    s.mmio_load(
        0,
        Device::Maple,
        ccsim_devices::cohort::maple::REG_DMA_STATUS,
    );
    assert_eq!(s.world.cores[0].now, acked + 16 + 16);
    assert_eq!(s.world.cores[0].mmio, 3);
    assert!(!s.world.cores[0].ni_pending);
    assert_eq!(s.maple.accesses, 3);
}

#[test]
fn a_fence_waits_for_a_posted_uncached_store() {
    let mut s = soc();
    s.mmio_store(0, Device::Maple, REG_DMA_LEN, 64);
    assert_eq!(s.world.cores[0].now, 1);
    // fence: no_st_pending includes the write buffer's uncached store.
    s.fence(0);
    assert_eq!(s.world.cores[0].now, 3 + 10 + 3 + 1);
    assert_eq!(s.world.cores[0].fence_cycles, 3 + 10 + 3 - 1);
}

/// Producer on core 0, consumer on core 1, a 64-element queue that wraps
/// 15 times, batch 8: the consumer sees exactly the produced sequence.
#[test]
fn two_cores_move_the_exact_sequence_through_a_wrapping_queue() {
    let mut s = soc();
    let mut q = fifo_init(&mut s, VA, 64, 8, false, &[]);
    let mut consumer = q.clone();
    let n = 1000u64;
    let produced: Vec<u64> = (0..n)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5a5a)
        .collect();
    let mut got = Vec::new();
    let mut next = 0usize;
    while got.len() < n as usize {
        // The core whose clock is behind runs its next operation.
        if next < produced.len() && s.world.cores[0].now <= s.world.cores[1].now {
            if try_push(&mut s, 0, &mut q, produced[next]) {
                next += 1;
                if next == produced.len() {
                    publish_write(&mut s, 0, &mut q);
                }
            }
        } else if let Some(v) = try_pop(&mut s, 1, &mut consumer) {
            got.push(v);
        } else if next == produced.len() {
            publish_write(&mut s, 0, &mut q);
        }
    }
    publish_read(&mut s, 1, &mut consumer);
    s.fence(1);
    assert_eq!(got, produced);
    // The indices in memory agree.
    assert_eq!(s.peek(q.write_index), n);
    assert_eq!(s.peek(q.read_index), n);
    // Both sides' pointer traffic went through coherence.
    assert!(s.world.counts.invalidations > 2 * n / 8);
}

/// A poll loop (`ld`, `bne`, `j`) on a line the core holds: with the
/// Ariane/CVA6 L1D's 3-cycle hit, each turn takes 3 + 3 - 1 = 5 cycles
/// and retires 3 instructions, so a spinning core's IPC is 0.6, not 1.
/// Core 1's store then invalidates the line and the next turn's load
/// misses (forwarded to core 1) and returns the new value.
#[test]
fn a_poll_turn_on_a_held_line_retires_three_instructions_in_five_cycles() {
    let maple = Maple::new(0, Accelerator::sha256(1e6), 10, 8);
    let t = Timing {
        load_hit: 3,
        ..timing()
    };
    let mut s = Soc::new(t, 2, 8, vec![Accelerator::sha256(1e6)], 4, maple);
    s.map(VA, 4096);
    s.load(0, VA); // a miss: core 0 now holds the line
    let (t0, r0) = (s.world.cores[0].now, s.world.cores[0].retired);
    // Core 1 stores at cycle 1000; its store drains by a miss forwarded
    // to core 0's copy.
    s.world.cores[1].now = 1000;
    s.store(1, VA, 42);
    let seen = s.spin_while_equal(0, VA, 0, 3, |_, _, _| {});
    assert_eq!(seen, 42);
    let cycles = s.world.cores[0].now - t0;
    let retired = s.world.cores[0].retired - r0;
    // 195 turns of 3 instructions: 194 hits of 5 cycles (34 + 970 =
    // 1004), then a load that waits for core 1's store to the line (52
    // cycles from 1000, forwarded to core 0's copy) and misses, forwarded
    // to core 1 (68): 1052 + 68 + 2 = 1122.
    assert_eq!(retired, 195 * 3);
    assert_eq!(t0 + cycles, 1122);
    assert_eq!(s.world.counts.invalidations, 1);
    // The spin is the core's wait: its cycles and what it retired.
    assert_eq!(s.world.cores[0].wait_cycles, cycles);
    assert_eq!(s.world.cores[0].wait_retired, retired);
    // Two migrations: core 1's store took the line from core 0, core 0's
    // load took it back.
    let pa = s.aspace.translate(&s.world.mem, VA).unwrap();
    assert_eq!(s.world.migrations(pa), 2);
}

/// A line two agents take turns writing and reading migrates at every
/// turn; a miss to a line nobody holds, a hit and an upgrade of the only
/// copy do not count.
#[test]
fn line_migrations_count_the_transactions_that_take_a_line_from_another_agent() {
    let mut s = soc();
    s.map(VA, 4096);
    let pa = s.aspace.translate(&s.world.mem, VA).unwrap();
    s.load(0, VA); // a miss the L2 answers
    s.load(0, VA); // a hit
    s.store(0, VA, 1); // E to M, silent
    s.fence(0);
    assert_eq!(s.world.migrations(pa), 0);
    for turn in 0..5u64 {
        s.world.cores[1].now = s.world.cores[0].now;
        assert_eq!(s.load(1, VA), turn + 1); // forwarded from core 0
        s.store(1, VA, turn + 100); // invalidates core 0's shared copy
        s.fence(1);
        s.world.cores[0].now = s.world.cores[1].now;
        assert_eq!(s.load(0, VA), turn + 100); // forwarded from core 1
        s.store(0, VA, turn + 2); // invalidates core 1's copy
        s.fence(0);
    }
    assert_eq!(s.world.migrations(pa), 5 * 4);
    // Another line of the page is untouched.
    assert_eq!(s.world.migrations(pa + 64), 0);
}

/// What each queue operation retires (the IPC's numerator), both index
/// disciplines: a push is its store and 5 more, a pop its load and 5 more,
/// a publication a `fence` and the index store; an every-call check adds
/// the index load, a compare and a branch to each push and pop.
#[test]
fn each_queue_operation_retires_its_instructions() {
    assert_eq!(
        (PUSH_INSTRUCTIONS, POP_INSTRUCTIONS, CHECK_INSTRUCTIONS),
        (5, 5, 3)
    );
    for (check, extra) in [(IndexCheck::Cached, 0), (IndexCheck::EveryCall, 3)] {
        let mut s = soc();
        let mut q = fifo_init(&mut s, VA, 64, 8, false, &[]).with_check(check);
        let mut consumer = q.clone();
        let r0 = s.world.cores[0].retired;
        push(&mut s, 0, &mut q, 7);
        assert_eq!(s.world.cores[0].retired - r0, 6 + extra, "{check:?} push");
        for v in 1..8 {
            push(&mut s, 0, &mut q, v);
        }
        // The 8th push published: fence and index store.
        assert_eq!(
            s.world.cores[0].retired - r0,
            8 * (6 + extra) + 2,
            "{check:?} batch"
        );
        s.fence(0);
        s.world.cores[1].now = s.world.cores[0].now;
        let r1 = s.world.cores[1].retired;
        assert_eq!(pop(&mut s, 1, &mut consumer), 7);
        // Cached: the first pop finds its copy empty and polls once
        // (one 3-instruction turn that misses and sees 8).
        let first = if check == IndexCheck::Cached { 3 } else { 0 };
        assert_eq!(
            s.world.cores[1].retired - r1,
            first + 6 + extra,
            "{check:?} pop"
        );
        let r1 = s.world.cores[1].retired;
        pop(&mut s, 1, &mut consumer);
        assert_eq!(
            s.world.cores[1].retired - r1,
            6 + extra,
            "{check:?} second pop"
        );
        // Every-call loads the write index on each pop: both loads counted,
        // the first missed (the producer held the line modified).
        let (loads, misses) = (consumer.index_loads, consumer.index_misses);
        match check {
            IndexCheck::Cached => assert_eq!((loads, misses), (1, 1)),
            IndexCheck::EveryCall | IndexCheck::EveryPop => assert_eq!((loads, misses), (2, 1)),
        }
    }
}

/// The Cohort C library's fences ([`PublishFences::Around`]): a fence
/// after each index store makes the core wait for the store's own
/// transaction. Core 1 has read the write index (it holds the line S), so
/// the producer's index store is an INV_FWD store (52 cycles): with
/// `Before` the core goes on at once, with `Around` it waits it out; the
/// consumer's read-index store likewise.
#[test]
fn a_fence_after_the_index_store_waits_for_its_transaction() {
    let mut waited = Vec::new();
    for fences in [PublishFences::Before, PublishFences::Around] {
        let mut s = soc();
        let mut q = fifo_init(&mut s, VA, 64, 2, false, &[]).with_fences(fences);
        let mut consumer = q.clone();
        push(&mut s, 0, &mut q, 1);
        push(&mut s, 0, &mut q, 2); // publishes: fence, index store
        s.fence(0);
        s.world.cores[1].now = s.world.cores[0].now;
        assert_eq!(pop(&mut s, 1, &mut consumer), 1); // core 1 reads the index
        s.world.cores[0].now = s.world.cores[1].now;
        push(&mut s, 0, &mut q, 3);
        let (t, f) = (s.world.cores[0].now, s.world.cores[0].fence_cycles);
        push(&mut s, 0, &mut q, 4); // the second publication
        let publish = s.world.cores[0].now - t;
        let fenced = s.world.cores[0].fence_cycles - f;
        // And the consumer's read-index store, after its second pop.
        s.world.cores[1].now = s.world.cores[0].now;
        let f1 = s.world.cores[1].fence_cycles;
        assert_eq!(pop(&mut s, 1, &mut consumer), 2);
        waited.push((publish, fenced, s.world.cores[1].fence_cycles - f1));
    }
    // Before: the fence drains the element store (an upgrade: core 1 read
    // that line too) and the core goes on past the index store; the
    // consumer's read-index store is not waited for.
    assert_eq!(waited[0].2, 0);
    // Around: the same plus the index store's INV_FWD (52; the fence
    // waits 51 of it, the store having taken a cycle). The consumer waits
    // for its read-index store, forwarded to core 0, which owns the line
    // after its index store (STORE_FWD, 68, less the store's cycle).
    assert_eq!(waited[1].0 - waited[0].0, 52);
    assert_eq!(waited[1].1 - waited[0].1, 51);
    assert_eq!(waited[1].2, 67);
}

/// The pointer ping-pong: the producer publishes after every element and
/// the consumer checks every call, so each publication finds the line at
/// the consumer (an invalidation) and each check after it misses.
#[test]
fn every_call_checks_and_per_element_publications_ping_pong_the_control_line() {
    let mut s = soc();
    let mut q = fifo_init(&mut s, VA, 64, 1, false, &[]).with_check(IndexCheck::EveryCall);
    let mut consumer = q.clone();
    for v in 0..16u64 {
        push(&mut s, 0, &mut q, v);
        s.fence(0);
        s.world.cores[1].now = s.world.cores[1].now.max(s.world.cores[0].now);
        assert_eq!(pop(&mut s, 1, &mut consumer), v);
        s.fence(1); // the read index's store performed
        s.world.cores[0].now = s.world.cores[0].now.max(s.world.cores[1].now);
    }
    // Each pop's check missed: the producer's store had taken the line.
    assert_eq!((consumer.index_loads, consumer.index_misses), (16, 16));
    // Each push's check missed too after the first: the consumer's read
    // index store (batch 1) had taken it back.
    assert_eq!((q.index_loads, q.index_misses), (16, 16));
}

/// OpenPiton's L1.5 holds 16 B lines of the L2's 64 B lines
/// (`pyhplib.py`: `L15_LINE_SIZE = 16`, `L2_LINE_SIZE = 64`). A load of
/// the next 16 B of a line the core shares misses and the L2 answers it
/// (34 cycles, no forward, no migration); a store by the owner to a 16 B
/// it lacks does the same; a store of another agent takes all four L1.5
/// lines (the INV_FWD's full sub-line vector). With 64 B L1.5 lines the
/// same accesses hit after the first miss.
#[test]
fn an_l15_holds_16_byte_lines_of_a_64_byte_l2_line() {
    for (l15, fills, cycles) in [(16, 3, 4 * 34 + 4), (64, 0, 34 + 7)] {
        let mut s = soc();
        s.world.set_l15_line(l15).unwrap();
        s.map(VA, 4096);
        let pa = s.aspace.translate(&s.world.mem, VA).unwrap();
        let t0 = s.world.cores[1].now;
        // Eight words, one line: with 16 B lines a miss every other word.
        for k in 0..8 {
            s.load(1, VA + 8 * k);
        }
        assert_eq!(s.world.cores[1].now - t0, cycles, "l15 = {l15}");
        assert_eq!(s.world.counts.subline_fills, fills);
        assert_eq!(s.world.counts.load_misses, 1);
        assert_eq!(s.world.migrations(pa), 0);
        assert!(s.world.holds(1, pa + 48));
        // Core 0 stores into the last 16 B: every L1.5 line of core 1 goes.
        s.world.cores[0].now = s.world.cores[1].now;
        s.store(0, VA + 48, 5);
        s.fence(0);
        assert_eq!(s.world.counts.invalidations, 1);
        for k in 0..4 {
            assert!(!s.world.holds(1, pa + 16 * k), "l15 = {l15}, 16 B line {k}");
        }
        // Core 0 owns the L2 line; its store to another 16 B is a fill
        // the L2 answers itself with 16 B lines, a hit with 64 B lines.
        let t1 = s.world.cores[0].now;
        s.store(0, VA, 6);
        s.fence(0);
        let store = s.world.cores[0].now - t1;
        if l15 == 16 {
            assert_eq!(s.world.counts.subline_fills, fills + 1);
            assert!(store >= 34, "{store}");
        } else {
            assert!(store < 34, "{store}");
        }
        assert_eq!(
            s.world.migrations(pa),
            1,
            "only core 0's first store migrated"
        );
        assert_eq!(s.peek(VA), 6);
        assert_eq!(s.peek(VA + 48), 5);
    }
    // Not a split of the L2 line.
    let mut s = soc();
    assert_eq!(
        s.world.set_l15_line(48).unwrap_err(),
        "must split the 64 B L2 line into 1 to 4 L1.5 lines (16, 32 or 64), got 48"
    );
}
