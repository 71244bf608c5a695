//! The Xilinx DDR4 MIG model behind CCKit's DC+DDR (`ddr_controller` with
//! `scheduler = "mig"`): row hits, misses and conflicts cost their JEDEC
//! timings, refresh blocks the channel, and sequential streams keep the
//! data bus busier than random ones.

use ccsim_coherence::memory::Ddr;
use ccsim_kernel::prelude::*;

/// The MIG with JEDEC DDR4-2400 defaults (CL = tRCD = tRP = 14.16 ns) and
/// no fixed controller latency, so differences are the DRAM's own.
fn mig(refresh: bool) -> Ddr {
    let mut p = Params::new();
    p.set("scheduler", ParamValue::Str("mig".into()), "test");
    p.set("controller_ns", ParamValue::Float(0.0), "test");
    if !refresh {
        p.set("t_refi_ns", ParamValue::Float(0.0), "test");
    }
    Ddr::from_params(&p).unwrap()
}

const PS: Tick = 1;
const CL: Tick = 14_160 * PS;
const BURST: Tick = 6_670 * PS;

#[test]
fn a_row_hit_costs_cl_an_idle_bank_trcd_and_a_conflict_trp_more() {
    let mut d = mig(false);
    // Line 0: channel 0, bank 0, row 0 (idle bank: activate + read).
    let t0 = 1_000_000;
    assert_eq!(d.access(t0, 0, false) - t0, CL + CL + BURST);
    // Two channels x 16 banks: line 32 is bank 0 again, the same row.
    let t1 = 2_000_000;
    assert_eq!(d.access(t1, 32, false) - t1, CL + BURST);
    // A row of 64 lines per bank: line 32 * 64 is bank 0, row 1: conflict.
    let t2 = 3_000_000;
    assert_eq!(d.access(t2, 32 * 64, false) - t2, 3 * CL + BURST);
    assert_eq!(d.outcomes, [1, 1, 1]);
}

#[test]
fn refresh_closes_every_row_and_blocks_a_busy_channel() {
    let mut d = mig(true);
    let t0 = 1_000_000;
    d.access(t0, 0, false);
    // The first refresh is due at 7.8 us; the channel idles from about
    // 1.03 us, so the controller refreshes in the gap: an access at 7.9 us
    // does not wait but finds its row closed (an activate again).
    let t1 = 8_200_000;
    assert_eq!(d.access(t1, 32, false) - t1, CL + CL + BURST);
    assert_eq!(d.refreshes, 1);
    // A channel kept busy owes refreshes; beyond 8 owed, one is forced and
    // the access waits tRFC for it.
    let mut d = mig(true);
    let mut now = 0;
    let mut waited = 0;
    while now < 10 * 7_800_000 {
        let done = d.access(now, now / 20_000 % 64, false);
        if done - now > 300_000 {
            waited += 1;
        }
        now += 20_000;
    }
    // Nine refreshes fall due per channel: the one beyond the eight owed
    // is forced on each of the two channels, and the accesses queued behind
    // it wait too.
    assert_eq!(d.refreshes, 2);
    assert!(waited >= 2, "{waited}");
}

#[test]
fn sequential_lines_stream_faster_than_random_ones() {
    // 4096 reads issued at once on one channel pair: sequential lines
    // spread over bank groups and hit open rows; random lines conflict and
    // wait for tRRD/tFAW between activates.
    let n = 4096u64;
    let finish = |lines: &mut dyn Iterator<Item = u64>| {
        let mut d = mig(true);
        lines.map(|l| d.access(0, l, false)).max().unwrap()
    };
    let seq = finish(&mut (0..n));
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut rand = (0..n).map(|_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % (1 << 23)
    });
    let random = finish(&mut rand);
    // Sequential: the two data buses nearly saturated (a burst per line
    // per channel, plus refresh); random: activate-limited, at least 1.5x
    // slower.
    assert!(seq < n / 2 * BURST * 11 / 10, "sequential {seq} ps");
    assert!(
        random * 2 > seq * 3,
        "random {random} ps vs sequential {seq} ps"
    );
}

#[test]
fn a_read_after_a_write_waits_for_the_turnaround() {
    let mut d = mig(false);
    let t0 = 1_000_000;
    let w = d.access(t0, 0, true);
    // A read of another bank group on the same channel (line 2: bank 1)
    // issues its column command tWTR after the write's data.
    let r = d.access(t0, 2, false);
    assert!(r >= w + 7_500 + CL + BURST, "write done {w}, read done {r}");
}

#[test]
fn the_plain_model_is_unchanged_without_the_mig() {
    let mut d = Ddr::from_params(&Params::new()).unwrap();
    let first = d.access(0, 0, false);
    let second = d.access(first, 2, false) - first;
    assert!(second < first);
    assert_eq!(d.refreshes, 0);
}

#[test]
fn serialized_reads_see_the_controller_latency() {
    // One read at a time, as CCKit Table 2's latency test: the mean moves
    // one for one with the controller's fixed latency.
    let mean = |ctrl: f64| {
        let mut p = Params::new();
        p.set("scheduler", ParamValue::Str("mig".into()), "test");
        p.set("controller_ns", ParamValue::Float(ctrl), "test");
        let mut d = Ddr::from_params(&p).unwrap();
        let (mut now, mut sum) = (0, 0);
        for l in 0..2048u64 {
            let done = d.access(now, l, false);
            sum += done - now;
            now = done + 450_000;
        }
        sum / 2048
    };
    let (a, b) = (mean(100.0), mean(110.0));
    assert!((b - a).abs_diff(10_000) < 1_000, "{a} {b}");
}
