//! The Bloom filter's k = 8 byte-wide hash functions (PIO §6.5), computed
//! two ways that must agree:
//!
//! * [`cpu_hashes`] — the CPU reference: for each 128-byte element, each of
//!   the eight hashes folds the element's bytes in order with a
//!   shift-add-xor step (the "sequential bit shifting, addition, and
//!   XOR-ing" of §6.5; Ramakrishna and Zobel's SAX family), each hash with
//!   its own seed and shift amounts.
//! * [`FpgaBloomPipeline`] — the FPGA's pipeline, cycle by cycle: the
//!   per-byte step unrolled by 2 (two bytes per stage), so 128 bytes take 64
//!   stages, i.e. a **64-cycle latency**; a new element enters every **2
//!   cycles** (the initiation interval), which is what a 512-bit (64-byte)
//!   input bus needs to carry a 128-byte element. Every stage holds the
//!   element's remaining bytes and its eight running hashes, as the
//!   registers of the hardware would; the eight 64-bit results (64 bytes)
//!   leave the last stage.
//!
//! ```
//! use ccsim_experiments::pio_apps::hash::{cpu_hashes, FpgaBloomPipeline, ELEMENT_BYTES};
//! let data: Vec<u8> = (0..3 * ELEMENT_BYTES).map(|i| (i * 7) as u8).collect();
//! let run = FpgaBloomPipeline::paper().run(&data).unwrap();
//! assert_eq!(run.hashes, cpu_hashes(&data).unwrap());
//! // First result after 64 cycles, one more every 2 cycles.
//! assert_eq!(run.done_cycle, vec![64, 66, 68]);
//! ```

/// Bytes of one element (PIO §6.5: "128-byte elements").
pub const ELEMENT_BYTES: usize = 128;
/// Hash functions (PIO §6.5: "k = 8").
pub const K: usize = 8;
/// Bytes of one element's result: eight 64-bit hashes.
pub const RESULT_BYTES: usize = K * 8;

/// Seeds and shifts of the eight hash functions (SAX: `h ^= (h << l) +
/// (h >> r) + byte`): distinct odd seeds and shift pairs, so the eight
/// functions differ.
const FUNCS: [(u64, u32, u32); K] = [
    (0x243f_6a88_85a3_08d3, 5, 2),
    (0x1319_8a2e_0370_7345, 6, 3),
    (0xa409_3822_299f_31d1, 7, 2),
    (0x082e_fa98_ec4e_6c89, 5, 4),
    (0x4528_21e6_38d0_1377, 9, 3),
    (0xbe54_66cf_34e9_0c6d, 4, 1),
    (0xc0ac_29b7_c97c_50dd, 11, 5),
    (0x3f84_d5b5_b547_0917, 3, 2),
];

/// One shift-add-xor step of hash function `f` on one input byte.
fn step(h: u64, f: usize, byte: u8) -> u64 {
    let (_, l, r) = FUNCS[f];
    h ^ (h << l).wrapping_add(h >> r).wrapping_add(byte as u64)
}

fn whole_elements(data: &[u8]) -> Result<usize, String> {
    if data.is_empty() || data.len() % ELEMENT_BYTES != 0 {
        return Err(format!(
            "bloom: {} bytes is not a whole, non-zero number of {ELEMENT_BYTES}-byte elements",
            data.len()
        ));
    }
    Ok(data.len() / ELEMENT_BYTES)
}

/// The CPU reference: the eight hashes of every element, in order.
pub fn cpu_hashes(data: &[u8]) -> Result<Vec<[u64; K]>, String> {
    whole_elements(data)?;
    Ok(data
        .chunks(ELEMENT_BYTES)
        .map(|e| std::array::from_fn(|f| e.iter().fold(FUNCS[f].0, |h, &b| step(h, f, b))))
        .collect())
}

/// An element's result as the 64 bytes the FPGA returns (little-endian
/// words, hash 0 first).
pub fn result_bytes(h: &[u64; K]) -> Vec<u8> {
    h.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// The FPGA's hash pipeline (PIO §6.5).
#[derive(Clone, Debug, PartialEq)]
pub struct FpgaBloomPipeline {
    /// Input bytes each stage folds per hash ("unroll ... by a factor of 2").
    pub unroll: usize,
    /// Cycles between two elements entering ("initiation interval of 2").
    pub ii_cycles: u64,
    /// Input bus width in bits ("the 512-bit bus").
    pub bus_bits: u64,
}

/// One element in flight: its index, the bytes still to fold, and its
/// eight running hashes.
#[derive(Clone, Debug)]
struct InFlight {
    index: usize,
    bytes: Vec<u8>,
    hashes: [u64; K],
}

/// What [`FpgaBloomPipeline::run`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct PipelineRun {
    /// The eight hashes of each element, in order.
    pub hashes: Vec<[u64; K]>,
    /// The cycle each element's result left the last stage (cycle 0: the
    /// first element's first bus beat).
    pub done_cycle: Vec<u64>,
}

impl FpgaBloomPipeline {
    /// The paper's pipeline: unroll 2, II 2, 512-bit bus.
    pub fn paper() -> Self {
        FpgaBloomPipeline {
            unroll: 2,
            ii_cycles: 2,
            bus_bits: 512,
        }
    }

    /// Pipeline stages, which is the latency in cycles (one stage a cycle).
    pub fn stages(&self) -> u64 {
        (ELEMENT_BYTES / self.unroll) as u64
    }

    /// Cycles from the first element entering to the last result of `n`.
    pub fn batch_cycles(&self, n: u64) -> u64 {
        self.stages() + self.ii_cycles * n.saturating_sub(1)
    }

    /// Runs `data` through the pipeline cycle by cycle: an element enters
    /// when the bus has delivered its bytes and `ii_cycles` after the
    /// previous one; each cycle every stage folds `unroll` bytes into its
    /// eight hashes and passes the element on.
    pub fn run(&self, data: &[u8]) -> Result<PipelineRun, String> {
        let n = whole_elements(data)?;
        if self.unroll == 0 || ELEMENT_BYTES % self.unroll != 0 {
            return Err(format!(
                "bloom pipeline: unroll {} must divide {ELEMENT_BYTES}",
                self.unroll
            ));
        }
        let beats_per_element = (ELEMENT_BYTES as u64 * 8).div_ceil(self.bus_bits);
        if self.ii_cycles < beats_per_element {
            return Err(format!(
                "bloom pipeline: an initiation interval of {} cycles is shorter than the {beats_per_element} beats of a {}-bit bus per element",
                self.ii_cycles, self.bus_bits
            ));
        }
        let stages = self.stages() as usize;
        let mut pipe: Vec<Option<InFlight>> = vec![None; stages];
        let mut hashes = vec![[0u64; K]; n];
        let mut done_cycle = vec![0u64; n];
        let (mut next, mut finished, mut cycle) = (0usize, 0usize, 0u64);
        while finished < n {
            // The last stage's element leaves; the others move one stage on.
            if let Some(e) = pipe[stages - 1].take() {
                hashes[e.index] = e.hashes;
                done_cycle[e.index] = cycle;
                finished += 1;
            }
            pipe.rotate_right(1);
            if next < n && cycle == next as u64 * self.ii_cycles {
                let bytes = data[next * ELEMENT_BYTES..(next + 1) * ELEMENT_BYTES].to_vec();
                pipe[0] = Some(InFlight {
                    index: next,
                    bytes,
                    hashes: std::array::from_fn(|f| FUNCS[f].0),
                });
                next += 1;
            }
            // Every occupied stage folds its next `unroll` bytes.
            for e in pipe.iter_mut().flatten() {
                let chunk: Vec<u8> = e.bytes.drain(..self.unroll).collect();
                for (f, h) in e.hashes.iter_mut().enumerate() {
                    *h = chunk.iter().fold(*h, |h, &b| step(h, f, b));
                }
            }
            cycle += 1;
        }
        Ok(PipelineRun { hashes, done_cycle })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize, salt: u8) -> Vec<u8> {
        (0..n * ELEMENT_BYTES)
            .map(|i| {
                (i as u8)
                    .wrapping_mul(31)
                    .wrapping_add(salt ^ (i >> 7) as u8)
            })
            .collect()
    }

    #[test]
    fn fpga_hashes_equal_the_cpu_reference() {
        for (n, salt) in [(1, 0), (2, 9), (37, 200), (256, 3)] {
            let d = data(n, salt);
            let run = FpgaBloomPipeline::paper().run(&d).unwrap();
            assert_eq!(run.hashes, cpu_hashes(&d).unwrap(), "{n} elements");
        }
    }

    #[test]
    fn the_eight_functions_differ_and_see_every_byte() {
        let d = data(1, 1);
        let h = cpu_hashes(&d).unwrap()[0];
        for i in 0..K {
            for j in i + 1..K {
                assert_ne!(h[i], h[j], "hashes {i} and {j}");
            }
        }
        for pos in [0, 63, 64, 127] {
            let mut e = d.clone();
            e[pos] ^= 1;
            let g = cpu_hashes(&e).unwrap()[0];
            assert!(h.iter().zip(&g).all(|(a, b)| a != b), "byte {pos}");
        }
    }

    #[test]
    fn latency_64_cycles_then_one_result_every_2() {
        let p = FpgaBloomPipeline::paper();
        assert_eq!(p.stages(), 64);
        let run = p.run(&data(10, 5)).unwrap();
        let want: Vec<u64> = (0..10).map(|i| 64 + 2 * i).collect();
        assert_eq!(run.done_cycle, want);
        assert_eq!(p.batch_cycles(10), 82);
        assert_eq!(*run.done_cycle.last().unwrap(), p.batch_cycles(10));
    }

    #[test]
    fn refuses_partial_elements_and_a_too_narrow_bus() {
        assert!(cpu_hashes(&[0u8; 100]).unwrap_err().contains("128-byte"));
        let narrow = FpgaBloomPipeline {
            bus_bits: 256,
            ..FpgaBloomPipeline::paper()
        };
        let e = narrow.run(&data(2, 0)).unwrap_err();
        assert!(e.contains("4 beats of a 256-bit bus"), "{e}");
    }
}
