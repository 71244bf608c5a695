//! The DDR5 timing of `ddr5_controller` from first principles: every
//! number below is JEDEC's cycle count (JESD79-5, DDR5-4800B) times the
//! clock, tCK = 2 / 4800 MT/s = 416.67 ps, computed here independently of
//! the model.

use ccsim_coherence::memory::Ddr;
use ccsim_kernel::prelude::*;

const T_CK: f64 = 2e6 / 4800.0; // ps
const CONTROLLER: u64 = 20_000; // ps, the default controller_ns
const SUBCHANNELS: u64 = 4;
const GROUPS: u64 = 8;

fn ck(n: f64) -> u64 {
    (n * T_CK).round() as u64
}

fn ddr5() -> Ddr {
    Ddr::from_ddr5_params(&Params::new()).unwrap()
}

/// Line `i` of the row that line 0's bank holds open: same subchannel,
/// same bank group, the next column.
fn same_row(i: u64) -> u64 {
    i * SUBCHANNELS * GROUPS
}

#[test]
fn an_idle_bank_pays_activate_cas_and_burst() {
    let mut d = ddr5();
    let done = d.access(0, 0, false);
    assert_eq!(done, CONTROLLER + ck(39.0) + ck(40.0) + ck(8.0));
    assert_eq!(d.outcomes, [0, 1, 0]);
}

#[test]
fn a_row_hit_pays_cas_and_burst_and_a_conflict_precharges_first() {
    let mut d = ddr5();
    let t0 = 1_000_000;
    let first = d.access(0, 0, false);
    assert!(first < t0);
    // Long after: the row is still open (open page), a hit.
    let hit = d.access(t0, same_row(1), false) - t0;
    assert_eq!(hit, CONTROLLER + ck(40.0) + ck(8.0));
    // A line of another row of the same bank (past every column of the
    // 8 KiB row = 128 lines, and past the 4 banks of the group).
    let other_row = same_row(128 * 4);
    let t1 = 2_000_000;
    let conflict = d.access(t1, other_row, false) - t1;
    assert_eq!(
        conflict,
        CONTROLLER + ck(39.0) + ck(39.0) + ck(40.0) + ck(8.0)
    );
    assert_eq!(d.outcomes, [1, 1, 1]);
}

/// Reads issued together to one subchannel: alternating bank groups, the
/// data bus is the limit (one BL16 burst, 8 tCK, per line: tCCD_S); in
/// one bank group, tCCD_L (12 tCK at 4800) spaces the column commands.
#[test]
fn back_to_back_reads_are_spaced_by_tccd_s_across_groups_and_tccd_l_within() {
    let mut d = ddr5();
    let n = 64;
    // Lines 0, 4, 8, ...: subchannel 0, bank groups 0, 1, 2, ...
    let ends: Vec<u64> = (0..n)
        .map(|i| d.access(0, i * SUBCHANNELS, false))
        .collect();
    for w in ends[GROUPS as usize..].windows(2) {
        assert_eq!(w[1] - w[0], ck(8.0), "{ends:?}");
    }
    let mut d = ddr5();
    let ends: Vec<u64> = (0..n).map(|i| d.access(0, same_row(i), false)).collect();
    for w in ends[1..].windows(2) {
        assert_eq!(w[1] - w[0], ck(12.0), "{ends:?}");
    }
    // Peak of one 32-bit subchannel: 64 B per 8 tCK = 19.2 GB/s.
    let gbps = 64.0 / (ck(8.0) as f64 * 1e-12) / 1e9;
    assert!((gbps - 19.2).abs() < 0.01, "{gbps}");
}

fn unbuffered() -> Ddr {
    let mut p = Params::new();
    p.set("write_queue", ParamValue::Int(0), "test");
    Ddr::from_ddr5_params(&p).unwrap()
}

#[test]
fn a_write_uses_cwl_and_a_read_after_it_waits_twtr() {
    let mut d = unbuffered();
    let t0 = 100_000;
    d.access(0, 0, false); // open the row
    let w = d.access(t0, same_row(1), true);
    assert_eq!(w - t0, CONTROLLER + ck(38.0) + ck(8.0));
    // A read to another bank group of the subchannel, issued with the
    // write: its column command waits tWTR after the write's data.
    let r = d.access(t0, SUBCHANNELS, false);
    assert_eq!(r, w + ck(6.0) + ck(39.0) + ck(40.0) + ck(8.0) - ck(39.0));
}

#[test]
fn an_access_during_a_refresh_waits_for_it_and_finds_the_rows_closed() {
    let mut d = ddr5();
    d.access(0, 0, false);
    let t_refi = 3_900_000;
    let t_rfc = 295_000;
    // Arrives 1 ns into the first refresh (after the controller's time).
    let at = t_refi + 1_000 - CONTROLLER;
    let done = d.access(at, same_row(1), false);
    // Not a row hit any more: activate again, after the refresh.
    assert_eq!(done, t_refi + t_rfc + ck(39.0) + ck(40.0) + ck(8.0));
    assert_eq!(d.outcomes, [0, 2, 0]);
    assert_eq!(d.refreshes, 1);
}

/// Posted writes: each completes once queued; the 32nd fills the
/// subchannel's queue and drains all 32 back to back (one burst each,
/// alternating bank groups), and a read behind them waits for the last
/// one's data and tWTR.
#[test]
fn a_full_write_queue_drains_as_one_batch() {
    let mut d = ddr5();
    let t0 = 100_000;
    for i in 0..31 {
        assert_eq!(d.access(t0, i * SUBCHANNELS, true), t0 + CONTROLLER);
    }
    assert_eq!(d.outcomes, [0, 0, 0], "nothing reached the DRAM yet");
    assert_eq!(d.access(t0, 31 * SUBCHANNELS, true), t0 + CONTROLLER);
    // 32 lines over 8 bank groups: 4 columns of each group's bank 0 row.
    assert_eq!(d.outcomes, [24, 8, 0]);
    // The batch: the first write's data at activate + CWL, then one burst
    // per write (tCCD_L of a group is 12 tCK, 8 groups apart: 64 tCK).
    let last_write_end = t0 + CONTROLLER + ck(39.0) + ck(38.0) + 32 * ck(8.0);
    let r = d.access(t0, 32 * SUBCHANNELS * GROUPS, false);
    // A read of the row the batch left open (column 32 of group 0's bank
    // 0): a hit, its column command tWTR after the last write's data.
    assert_eq!(r, last_write_end + ck(6.0) + ck(40.0) + ck(8.0));
}
