//! The Timely-Dataflow-shaped graph of `pio_timely` (PIO §6.4): a chain of
//! filter operators over a batch of 64-bit records, with the progress
//! tracking each operator reports per batch, computed two ways that must
//! agree:
//!
//! * [`FilterGraph::run_cpu`] — the CPU's operators one after the other,
//!   each consuming its input batch and producing the records its predicate
//!   keeps (operator `i` keeps a record unless the `i`-th prime from 1009
//!   divides it), as Timely schedules them; the bytes each operator reads
//!   are counted (they set the CPU's per-byte cost).
//! * [`FilterGraph::run_fpga`] — the FPGA's pipeline: every record passes
//!   all operator stages in one pass (a record survives when no stage
//!   drops it), each stage counting what it consumed.
//!
//! Either way each operator emits one **progress update** per batch (its
//! index, its input port, the batch's timestamp and the records it
//! consumed: Timely's pointstamp changes), 24 bytes each: with 31
//! operators, 744 bytes of progress tracking per batch that the offload
//! paths must carry back to the CPU's scheduler.
//!
//! ```
//! use ccsim_experiments::pio_apps::dataflow::FilterGraph;
//! let g = FilterGraph::new(31);
//! let records: Vec<u64> = (0..4096u64).map(|i| i * 7919 + 1).collect();
//! let cpu = g.run_cpu(&records, 5);
//! assert_eq!(cpu, g.run_fpga(&records, 5));
//! assert_eq!(cpu.progress.len(), 31 * 24);
//! assert!(cpu.output.len() < records.len());
//! ```

/// Bytes of one record.
pub const RECORD_BYTES: usize = 8;
/// Bytes of one operator's progress update.
pub const PROGRESS_BYTES: usize = 24;

/// A chain of filter operators.
#[derive(Clone, Debug, PartialEq)]
pub struct FilterGraph {
    /// Each operator's divisor: it drops the records it divides.
    divisors: Vec<u64>,
}

/// What one batch through the graph gives.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphRun {
    /// The records the last operator emits.
    pub output: Vec<u64>,
    /// Records each operator consumed.
    pub consumed: Vec<u64>,
    /// The progress updates, `PROGRESS_BYTES` per operator, as the bytes
    /// the device hands back.
    pub progress: Vec<u8>,
}

impl FilterGraph {
    /// A chain of `operators` filters (PIO §6.4: 31).
    pub fn new(operators: usize) -> Self {
        let mut divisors = Vec::with_capacity(operators);
        let mut n = 1009u64;
        while divisors.len() < operators {
            if (2..).take_while(|d| d * d <= n).all(|d| n % d != 0) {
                divisors.push(n);
            }
            n += 2;
        }
        FilterGraph { divisors }
    }

    /// Operators in the chain.
    pub fn operators(&self) -> usize {
        self.divisors.len()
    }

    fn progress(&self, consumed: &[u64], timestamp: u64) -> Vec<u8> {
        consumed
            .iter()
            .enumerate()
            .flat_map(|(op, c)| {
                let mut u = Vec::with_capacity(PROGRESS_BYTES);
                u.extend((op as u32).to_le_bytes());
                u.extend(0u32.to_le_bytes()); // input port 0
                u.extend(timestamp.to_le_bytes());
                u.extend((*c as i64).to_le_bytes());
                u
            })
            .collect()
    }

    /// The CPU's schedule: operator after operator, each over the whole
    /// batch its predecessor emitted.
    pub fn run_cpu(&self, records: &[u64], timestamp: u64) -> GraphRun {
        let mut batch = records.to_vec();
        let mut consumed = Vec::with_capacity(self.divisors.len());
        for d in &self.divisors {
            consumed.push(batch.len() as u64);
            batch.retain(|r| r % d != 0);
        }
        GraphRun {
            progress: self.progress(&consumed, timestamp),
            output: batch,
            consumed,
        }
    }

    /// The FPGA's pipeline: each record through every stage in one pass.
    pub fn run_fpga(&self, records: &[u64], timestamp: u64) -> GraphRun {
        let mut consumed = vec![0u64; self.divisors.len()];
        let mut output = Vec::new();
        for &r in records {
            // The stages the record reaches: up to and including the first
            // that drops it.
            let dropped_at = self.divisors.iter().position(|d| r % d == 0);
            let reached = dropped_at.map_or(self.divisors.len(), |s| s + 1);
            for c in &mut consumed[..reached] {
                *c += 1;
            }
            if dropped_at.is_none() {
                output.push(r);
            }
        }
        GraphRun {
            progress: self.progress(&consumed, timestamp),
            output,
            consumed,
        }
    }
}

/// Records as the little-endian bytes a batch travels as.
pub fn record_bytes(records: &[u64]) -> Vec<u8> {
    records.iter().flat_map(|r| r.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fpga_pipeline_equals_the_cpu_schedule() {
        let g = FilterGraph::new(31);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let records: Vec<u64> = (0..20_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            })
            .collect();
        let cpu = g.run_cpu(&records, 9);
        assert_eq!(cpu, g.run_fpga(&records, 9));
        // Each operator drops about 1 record in 1000-1200.
        let kept = cpu.output.len() as f64 / records.len() as f64;
        assert!((0.96..0.985).contains(&kept), "{kept}");
        assert_eq!(cpu.consumed[0], 20_000);
        assert!(cpu.consumed.windows(2).all(|w| w[0] >= w[1]));
    }

    #[test]
    fn the_operators_are_distinct_primes_and_progress_decodes() {
        let g = FilterGraph::new(31);
        assert_eq!(g.divisors[0], 1009);
        assert!(g.divisors.windows(2).all(|w| w[0] < w[1]));
        let r = g.run_cpu(&[1009, 1013, 2, 1009 * 1013], 77);
        assert_eq!(r.output, vec![2]);
        let upd = &r.progress[PROGRESS_BYTES..2 * PROGRESS_BYTES];
        assert_eq!(u32::from_le_bytes(upd[0..4].try_into().unwrap()), 1);
        assert_eq!(u64::from_le_bytes(upd[8..16].try_into().unwrap()), 77);
        // Operator 1 saw the two records operator 0 let through.
        assert_eq!(i64::from_le_bytes(upd[16..24].try_into().unwrap()), 2);
    }
}
