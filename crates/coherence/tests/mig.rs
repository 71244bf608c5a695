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

/// The MIG with posted writes, answered `accept_ns` after they arrive,
/// and a write queue of `queue` per channel.
fn posted_mig(accept_ns: f64, queue: i64) -> Ddr {
    let mut p = Params::new();
    p.set("scheduler", ParamValue::Str("mig".into()), "test");
    p.set("controller_ns", ParamValue::Float(0.0), "test");
    p.set("t_refi_ns", ParamValue::Float(0.0), "test");
    p.set("write_response", ParamValue::Str("accepted".into()), "test");
    p.set("write_accept_ns", ParamValue::Float(accept_ns), "test");
    p.set("write_queue", ParamValue::Int(queue), "test");
    Ddr::from_params(&p).unwrap()
}

#[test]
fn a_posted_write_is_answered_on_acceptance_and_reads_go_first() {
    const CWL: Tick = 10_000 * PS;
    let t0 = 1_000_000;
    // Answered when written: activate (tRCD) + CWL + the burst.
    let mut written = mig(false);
    assert_eq!(written.access(t0, 0, true) - t0, CL + CWL + BURST);
    // Posted: answered 20 ns after arrival, whatever the DRAM does.
    let mut posted = posted_mig(20.0, 4);
    assert_eq!(posted.access(t0, 0, true) - t0, 20_000);
    // A read right behind it goes first: an idle bank, no tWTR, as on an
    // empty channel (the written model makes it wait for the write).
    assert_eq!(posted.access(t0, 2, false) - t0, CL + CL + BURST);
    const T_WTR: Tick = 7_500 * PS;
    assert!(written.access(t0, 2, false) - t0 >= CL + CWL + BURST + T_WTR + CL + BURST);
}

#[test]
fn queued_writes_fill_gaps_or_drain_when_the_queue_is_full() {
    let t0 = 1_000_000;
    // A gap: the write to line 0 (bank 0, row 0) waits; a read 1 us later
    // finds the bus idle long enough, so the write went first and left
    // row 0 open: the read of line 32 (bank 0, row 0) is a row hit.
    let mut d = posted_mig(20.0, 4);
    d.access(t0, 0, true);
    assert_eq!(
        d.access(t0 + 1_000_000, 32, false) - (t0 + 1_000_000),
        CL + BURST
    );
    assert_eq!(d.outcomes, [1, 1, 0]);
    // No gap: four writes at once fill the queue and drain back to back; a
    // read arriving with them waits behind the drain (write data, tWTR).
    let mut d = posted_mig(20.0, 4);
    for l in [0, 2, 4, 6] {
        assert_eq!(d.access(t0, l, true) - t0, 20_000);
    }
    assert_eq!(d.outcomes[1], 4, "the drain activated four banks");
    assert!(d.access(t0, 8, false) - t0 > CL + CL + BURST + 4 * BURST);
}

/// Mean latency of `n` reads issued one at a time, `gap` apart (the DC's
/// round trip around each, as in CCKit Table 2), and the outcome counts.
fn serialized(d: &mut Ddr, lines: &[u64], gap: Tick) -> (Tick, [u64; 3]) {
    // From 1 us: the tFAW window of the channel's (zeroed) first activates
    // has passed.
    let (mut now, mut sum) = (1_000_000, 0);
    for &l in lines {
        let done = d.access(now, l, false);
        sum += done - now;
        now = done + gap;
    }
    (sum / lines.len() as Tick, d.outcomes)
}

/// `n` lines scattered over 1 GiB (2^23 lines of 128 B) by a fixed
/// xorshift, the same sequence in every test.
fn scattered_lines(n: u64) -> Vec<u64> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % (1 << 23)
        })
        .collect()
}

#[test]
fn serialized_random_reads_pay_trp_only_for_banks_opened_since_the_last_refresh() {
    // CCKit Table 2's latency test: one read at a time, ~590 ns apart, over
    // 1 GiB (2^23 lines of 128 B); each DC slice's MIG sees every other line.
    const T_RCD: Tick = 14_160 * PS;
    const T_RP: Tick = 14_160 * PS;
    let n = 2048u64;
    let gap = 550_000;
    let seq: Vec<u64> = (0..n).collect();
    let rand = scattered_lines(n);
    // With refresh: every read finds its bank closed. Sequential lines come
    // back to a bank 32 lines (~19 us) later, after two refreshes: an
    // activate each (tRCD + CL + burst), never a hit or a conflict.
    let (seq_mean, seq_outcomes) = serialized(&mut mig(true), &seq, gap);
    assert_eq!(seq_outcomes, [0, n, 0]);
    assert_eq!(seq_mean, T_RCD + CL + BURST);
    // Random lines conflict (tRP more) only if their bank was opened since
    // the last refresh, about 7 reads per channel per 7.8 us over 16
    // banks: a small fraction, so random is slower by that fraction of tRP.
    let (rand_mean, [hits, idle, conflicts]) = serialized(&mut mig(true), &rand, gap);
    assert_eq!(hits + idle + conflicts, n);
    let fraction = conflicts as f64 / n as f64;
    assert!(
        (0.05..0.3).contains(&fraction),
        "conflict fraction {fraction}"
    );
    let predicted = T_RCD + CL + BURST + conflicts * T_RP / n;
    assert!(
        rand_mean.abs_diff(predicted) <= 1_000,
        "{rand_mean} vs {predicted}"
    );
    // That is under 4.3 ns: under 1% of the 591 ns round trip, below the
    // paper's 1-2% (6-12 ns).
    assert!(rand_mean - seq_mean < 4_300, "{}", rand_mean - seq_mean);
    // Without refresh, rows stay open: sequential reads hit (CL + burst)
    // and random ones nearly always conflict (tRP + tRCD + CL + burst),
    // 2 x 14.16 ns apart, about 4.8% of 591 ns, above the paper's figure.
    let (open_seq, _) = serialized(&mut mig(false), &seq, gap);
    let (open_rand, [_, _, open_conflicts]) = serialized(&mut mig(false), &rand, gap);
    assert!(open_seq - (CL + BURST) < 1_000, "{open_seq}");
    assert!(open_conflicts > n * 9 / 10, "{open_conflicts}");
    assert!(open_rand - open_seq > 26_000, "{open_rand} {open_seq}");
}

/// Reads kept `depth` in flight (each completion issues the next line of
/// `lines`), as the DC's 64 DCUs keep the MIGs busy: GiB/s over the run.
fn closed_loop_gibps(d: &mut Ddr, lines: &[u64], depth: usize) -> f64 {
    let start: Tick = 1_000_000;
    let mut in_flight: std::collections::BinaryHeap<std::cmp::Reverse<Tick>> =
        std::collections::BinaryHeap::new();
    let mut last = start;
    for (i, &l) in lines.iter().enumerate() {
        let now = if i < depth {
            start
        } else {
            in_flight.pop().unwrap().0
        };
        let done = d.access(now, l, false);
        last = last.max(done);
        in_flight.push(std::cmp::Reverse(done));
    }
    lines.len() as f64 * 128.0 / ((last - start) as f64 * 1e-12) / (1u64 << 30) as f64
}

#[test]
fn deep_scattered_row_reads_are_not_bounded_near_the_texts_plain_rate_by_jedec_timing() {
    // CCKit §5.5's plain path reads 7.8 GiB/s through two MIGs; §5.2 blames
    // the MIG under a pseudo-random pattern. With 64 reads in flight (the
    // DC's DCUs) this model's JEDEC timings (tRRD, tFAW, tRP + tRCD, the
    // in-order Group FSMs) and refresh give scattered single-line reads
    // 15.3 GiB/s, 43% of the sequential 35.7 but twice the text's 7.8: 128 B
    // lines carry 6.67 ns of data each, more than tFAW's 21 ns / 4
    // activates, so DRAM timing alone cannot be the text's limit even if
    // the LLC scrambler made sequential reads fully pseudo-random.
    // Nor does the Group FSMs' reordering window: the MIG's RTL (shipped
    // with the IP, ddr4_v2_2_*_mc_group.sv) gives each Group FSM a
    // 4-entry transaction FIFO admitting below 2 and a 4-entry CAS FIFO, so
    // one transaction can open its row while another waits for its column
    // command; this model's Group FSMs are stricter (the next transaction
    // starts after the previous one's column command), and a window of 2-4
    // with in-order acceptance changes none of these rates (checked). The
    // limit the text needs is elsewhere; this test fails once such a
    // mechanism lands, and is then to be rewritten around it.
    let n = 8192u64;
    let seq: Vec<u64> = (0..n).collect();
    let rand = scattered_lines(n);
    let seq_rate = closed_loop_gibps(&mut mig(true), &seq, 64);
    let rand_rate = closed_loop_gibps(&mut mig(true), &rand, 64);
    eprintln!("sequential {seq_rate:.2} GiB/s, scattered {rand_rate:.2} GiB/s");
    // Two channels of 128 B per 6.67 ns: 35.7 GiB/s at most.
    assert!(seq_rate < 35.8 && seq_rate > 30.0, "{seq_rate}");
    assert!((14.5..16.0).contains(&rand_rate), "{rand_rate}");
    assert!(rand_rate > 1.8 * 7.8, "{rand_rate}");
}

/// The MIG with a per-transaction cost of `issue_ns` on each channel's
/// single-line read path (`read_issue_ns`), no refresh.
fn issue_mig(issue_ns: f64) -> Ddr {
    let mut p = Params::new();
    p.set("scheduler", ParamValue::Str("mig".into()), "test");
    p.set("controller_ns", ParamValue::Float(0.0), "test");
    p.set("t_refi_ns", ParamValue::Float(0.0), "test");
    p.set("read_issue_ns", ParamValue::Float(issue_ns), "test");
    Ddr::from_params(&p).unwrap()
}

#[test]
fn the_read_issue_cost_spaces_single_line_reads_per_channel_only() {
    let t0 = 1_000_000;
    // Off (the default): two reads of channel 0 in different bank groups
    // at once overlap; the second only waits for the data bus.
    let mut off = issue_mig(0.0);
    let a = off.access(t0, 0, false);
    let b = off.access(t0, 2, false);
    assert_eq!(b - a, BURST);
    // 50 ns per transaction: the second read of channel 0 leaves 50 ns
    // after the first, so it ends 50 ns after it (same bank state).
    let mut on = issue_mig(50.0);
    let a = on.access(t0, 0, false);
    assert_eq!(a - t0, CL + CL + BURST, "the first read pays nothing");
    let b = on.access(t0, 2, false);
    assert_eq!(b - t0, 50_000 + CL + CL + BURST);
    // Channel 1 has its own read path: line 1 goes at once.
    assert_eq!(on.access(t0, 1, false) - t0, CL + CL + BURST);
    // Writes do not pass the read path.
    let mut w = issue_mig(50.0);
    w.access(t0, 0, false);
    assert_eq!(w.access(t0, 2, true) - t0, {
        let mut plain = issue_mig(0.0);
        plain.access(t0, 0, false);
        plain.access(t0, 2, true) - t0
    });
}

#[test]
fn the_lines_of_a_burst_pay_the_read_issue_cost_not_per_line() {
    use ccsim_coherence::memory::MemTiming;
    let t0 = 1_000_000;
    // Sixteen lines of channel 0 as single-line reads: each waits 50 ns
    // for the one before, so the last leaves 15 x 50 ns after the first.
    let mut single = MemTiming::Ddr(issue_mig(50.0));
    let last_single = (0..16)
        .map(|i| single.access(t0, 2 * i, false))
        .max()
        .unwrap();
    assert!(last_single - t0 >= 15 * 50_000, "{last_single}");
    // The same lines as one burst (the prefetcher's 64-beat transactions)
    // are limited by the DRAM only, as with no issue cost at all.
    let mut burst = MemTiming::Ddr(issue_mig(50.0));
    let mut plain = MemTiming::Ddr(issue_mig(0.0));
    for i in 0..16 {
        assert_eq!(
            burst.access_burst_line(t0, 2 * i),
            plain.access(t0, 2 * i, false)
        );
    }
}

#[test]
fn a_read_issue_cost_alone_caps_single_line_reads_whatever_the_pattern() {
    // Why read_issue_ns stays off (cckit-dc-throughput's notes): a
    // per-transaction cost caps sequential and scattered reads at the same
    // rate, 128 B per interval per channel, so once it binds the sequential
    // stream (claim 3's drop from BRAM) it also flattens the 'moderate
    // slowdown' of random reads relative to sequential ones.
    let n = 8192u64;
    let seq: Vec<u64> = (0..n).collect();
    let rand = scattered_lines(n);
    let cap = 2.0 * 128.0 / 30e-9 / (1u64 << 30) as f64; // 7.95 GiB/s
    let seq_rate = closed_loop_gibps(&mut issue_mig(30.0), &seq, 64);
    let rand_rate = closed_loop_gibps(&mut issue_mig(30.0), &rand, 64);
    assert!(
        seq_rate <= cap * 1.001 && seq_rate > 0.97 * cap,
        "{seq_rate} {cap}"
    );
    assert!(rand_rate / seq_rate > 0.95, "{rand_rate} {seq_rate}");
}
