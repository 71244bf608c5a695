//! CCKit Fig. 6 (`coherent_stream`): the paper's qualitative claims about
//! read and write throughput, checked against the simulation (the bar
//! heights are not in the paper's text).

use ccsim_experiments::run_point;
use ccsim_kernel::prelude::*;
use ccsim_platform::Platform;

fn gibps(config: &str, pattern: &str, op: &str, mib: f64) -> f64 {
    gibps_on(&Platform::load("enzian").unwrap(), config, pattern, op, mib)
}

fn gibps_on(enzian: &Platform, config: &str, pattern: &str, op: &str, mib: f64) -> f64 {
    let p = Params::new()
        .with("config", ParamValue::Str(config.into()), "test")
        .with("pattern", ParamValue::Str(pattern.into()), "test")
        .with("op", ParamValue::Str(op.into()), "test");
    run_point("coherent_stream", enzian, "streamed_mib", mib, &p, 3, false)
        .unwrap()
        .metrics["gibps"]
}

#[test]
fn reads_are_link_bound_and_dc_bram_slightly_exceeds_the_native_baseline() {
    let dc = gibps("dc_bram", "seq", "read", 4.0);
    let native = gibps("llc_ddr", "seq", "read", 4.0);
    // ECI achieves about 20 GiB/s (CCKit §4); CCPI 7% less (§5.1).
    assert!(dc > 19.0 && dc <= 20.1, "DC+BRAM sequential read {dc}");
    assert!(dc > native && dc < native * 1.15, "{dc} vs {native}");
}

#[test]
fn ddr_behind_the_dc_loses_on_random_reads_and_on_writes() {
    let bram_rand = gibps("dc_bram", "rand", "read", 4.0);
    let ddr_rand = gibps("dc_ddr", "rand", "read", 4.0);
    assert!(ddr_rand < bram_rand, "{ddr_rand} vs {bram_rand}");
    let ddr_seq = gibps("dc_ddr", "seq", "read", 4.0);
    assert!(
        ddr_rand <= ddr_seq,
        "random {ddr_rand} vs sequential {ddr_seq}"
    );
}

#[test]
fn the_mig_costs_sequential_reads_through_refresh_and_activates() {
    // DC+BRAM is link-bound; behind the MIG every line's loaded latency
    // grows by activates and forced refreshes, and the read stream (its
    // prefetch window over that latency) slows down. Without refresh the
    // loss shrinks, and random reads lose far more (row conflicts, tFAW).
    let bram = gibps("dc_bram", "seq", "read", 4.0);
    let ddr = gibps("dc_ddr", "seq", "read", 4.0);
    let no_refresh = Platform::load("enzian")
        .unwrap()
        .with_overrides(&[("dc_ddr.t_refi_ns".to_string(), ParamValue::Float(0.0))])
        .unwrap();
    let ddr_no_refresh = gibps_on(&no_refresh, "dc_ddr", "seq", "read", 4.0);
    let ddr_rand = gibps("dc_ddr", "rand", "read", 4.0);
    eprintln!("bram {bram} ddr {ddr} no refresh {ddr_no_refresh} rand {ddr_rand}");
    assert!(ddr < bram * 0.98, "DDR {ddr} vs BRAM {bram}");
    assert!(ddr_no_refresh > ddr, "{ddr_no_refresh} vs {ddr}");
    assert!(
        ddr_rand < ddr * 0.8,
        "random {ddr_rand} vs sequential {ddr}"
    );
}

#[test]
fn writes_past_the_llc_write_back_and_are_slower_than_reads() {
    // A 2 MiB LLC (16-way) and 4 MiB of stores: the second half evicts a
    // dirty line per store (the shipped 16 MiB LLC needs 32 MiB: the
    // release-mode experiment runs that).
    let small_llc = Platform::load("enzian")
        .unwrap()
        .with_overrides(&[("thunderx_cpu.llc_lines".to_string(), ParamValue::Int(16384))])
        .unwrap();
    let w = gibps_on(&small_llc, "dc_ddr", "seq", "write", 4.0);
    let r = gibps("dc_ddr", "seq", "read", 4.0);
    assert!(w < r * 0.9, "write {w} vs read {r}");
    assert!(w > 1.0, "write {w}");
}

#[test]
fn random_writes_match_random_reads_once_store_misses_take_tad_slots() {
    // CCKit §5.2: writes are "broadly consistent with random reads". The
    // LLC takes each store miss into a TAD transaction, so the write
    // buffer's 24 entries no longer bound the read-exclusives in flight;
    // without that path each entry waits for its round trip and writes
    // fall to about a third of reads. A 2 MiB LLC puts the 4 MiB run
    // past the LLC filling up (every store evicts a dirty line).
    let with = |in_tads: bool| {
        Platform::load("enzian")
            .unwrap()
            .with_overrides(&[
                ("thunderx_cpu.llc_lines".to_string(), ParamValue::Int(16384)),
                (
                    "thunderx_cpu.store_misses_in_tads".to_string(),
                    ParamValue::Bool(in_tads),
                ),
            ])
            .unwrap()
    };
    let read = gibps("dc_bram", "rand", "read", 4.0);
    let write = gibps_on(&with(true), "dc_bram", "rand", "write", 4.0);
    let waiting = gibps_on(&with(false), "dc_bram", "rand", "write", 4.0);
    eprintln!("read {read} write {write} write without the TAD path {waiting}");
    assert!(
        write > read * 0.8 && write < read * 1.25,
        "write {write} vs read {read}"
    );
    assert!(waiting < read * 0.45, "{waiting} vs {read}");
}

#[test]
fn bad_x_is_a_clear_error() {
    let enzian = Platform::load("enzian").unwrap();
    let e = run_point(
        "coherent_stream",
        &enzian,
        "accesses",
        4.0,
        &Params::new(),
        1,
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("sweeps streamed_mib"), "{e}");
    let e = run_point(
        "coherent_stream",
        &enzian,
        "streamed_mib",
        2048.0,
        &Params::new(),
        1,
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("at most 1024 MiB"), "{e}");
}

#[test]
fn the_experiment_file_covers_every_configuration_pattern_and_op() {
    let e = ccsim_platform::Experiment::load(
        "cckit-dc-throughput",
        &ccsim_experiments::workload_decls(),
    )
    .unwrap();
    assert_eq!(e.series.len(), 12);
    for op in ["read", "write"] {
        for config in ["llc_ddr", "dc_bram", "dc_ddr"] {
            for pattern in ["seq", "rand"] {
                let name = format!("{config}_{pattern}_{op}");
                let s = e.series(&name).unwrap();
                assert_eq!(s.params.str("config"), config);
            }
        }
    }
}

#[test]
fn the_migs_posted_writes_lift_dc_ddr_write_throughput_but_random_writes_stay_dram_bound() {
    // The MIG's AXI shim answers a write once the controller has taken it
    // (platforms/enzian.toml dc_ddr.write_response = "accepted"); the DCU
    // is free ~27 ns after its AXI write instead of after the DRAM write,
    // and reads go ahead of the queued writes. Sequential writes gain;
    // random writes gain less, since every line still costs its DIMM a
    // read and a randomly placed write (row conflicts in the in-order
    // Group FSMs when the write queue drains).
    let platform = |response: &str| {
        Platform::load("enzian")
            .unwrap()
            .with_overrides(&[
                ("thunderx_cpu.llc_lines".to_string(), ParamValue::Int(16384)),
                (
                    "dc_ddr.write_response".to_string(),
                    ParamValue::Str(response.into()),
                ),
            ])
            .unwrap()
    };
    let (posted, written) = (platform("accepted"), platform("written"));
    let seq_posted = gibps_on(&posted, "dc_ddr", "seq", "write", 4.0);
    let seq_written = gibps_on(&written, "dc_ddr", "seq", "write", 4.0);
    let rand_posted = gibps_on(&posted, "dc_ddr", "rand", "write", 4.0);
    let rand_read = gibps("dc_ddr", "rand", "read", 4.0);
    eprintln!(
        "seq posted {seq_posted} written {seq_written}; rand posted {rand_posted} read {rand_read}"
    );
    assert!(
        seq_posted > seq_written * 1.1,
        "{seq_posted} vs {seq_written}"
    );
    // The known gap (CCKit §5.2 'broadly consistent with random reads',
    // not held for DC+DDR): random writes stay well under random reads.
    assert!(
        rand_posted < rand_read * 0.8,
        "{rand_posted} vs {rand_read}"
    );
}
