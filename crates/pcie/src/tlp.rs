//! PCIe byte and time accounting: pure functions, no simulation state.
//!
//! Everything a PCIe model needs to know about the wire is here, so it can be
//! unit-tested against hand-computed examples:
//!
//! * **Line rate and encoding.** Gen1–5 run at 2.5/5/8/16/32 GT/s per lane.
//!   Gen1–2 use 8b/10b (10 wire bits per byte), Gen3+ use 128b/130b.
//! * **Per-TLP overhead.** A TLP on the wire is framing + sequence number +
//!   header (3 DW for 32-bit addresses and completions, 4 DW for 64-bit
//!   addresses) + payload + optional ECRC (4 B) + LCRC (4 B). Gen1–2 frame it
//!   with STP (1 B) and END (1 B) around a 2-byte sequence number; Gen3+ use a
//!   4-byte STP token that carries the sequence number. Both add 8 B besides
//!   header, payload and ECRC (PCIe Base Spec 3.0 §4.2.2.3 and §3.5;
//!   Neugebauer et al., SIGCOMM'18, §2, count the same 20/24 B).
//! * **DLLPs.** ACK/NAK and UpdateFC DLLPs are 6 B plus 2 B of framing
//!   (SDP+END on Gen1–2, the 2-byte SDP token on Gen3+) = 8 B. They flow in
//!   the direction opposite to the TLPs they acknowledge or credit.
//! * **Splitting.** Posted writes split at MPS and at 4 KiB address boundaries
//!   (a TLP must not cross one, spec §2.2.7). Reads split at MRRS and 4 KiB.
//!   Completions split at the RCB: the first completion ends at the first RCB
//!   boundary it can reach within the completer's maximum size, later ones are
//!   whole multiples of the RCB.
//!
//! ```
//! use ccsim_pcie::tlp::{Generation, LinkConfig, TlpKind};
//! let link = LinkConfig::new(Generation::Gen3, 8);
//! // A 256-byte write to a 64-bit address: 4 DW header -> 24 B overhead.
//! assert_eq!(link.tlp_wire_bytes(TlpKind::MemWrite, 256, true), 280);
//! // 280 B over 8 lanes at 8 GT/s with 128b/130b: 280*8*130/(128*8*8) ns.
//! assert_eq!(link.serialization_ps(280), 35_547);
//! ```

use ccsim_kernel::time::Tick;

/// A PCIe generation (line rate and encoding).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Generation {
    /// 2.5 GT/s, 8b/10b.
    Gen1,
    /// 5 GT/s, 8b/10b.
    Gen2,
    /// 8 GT/s, 128b/130b.
    Gen3,
    /// 16 GT/s, 128b/130b.
    Gen4,
    /// 32 GT/s, 128b/130b.
    Gen5,
}

impl Generation {
    /// The generation numbered `n` (1–5).
    pub fn from_number(n: i64) -> Option<Generation> {
        Some(match n {
            1 => Generation::Gen1,
            2 => Generation::Gen2,
            3 => Generation::Gen3,
            4 => Generation::Gen4,
            5 => Generation::Gen5,
            _ => return None,
        })
    }
    /// Transfers per second per lane, in MT/s.
    pub fn mega_transfers(self) -> u64 {
        match self {
            Generation::Gen1 => 2_500,
            Generation::Gen2 => 5_000,
            Generation::Gen3 => 8_000,
            Generation::Gen4 => 16_000,
            Generation::Gen5 => 32_000,
        }
    }
    /// Line encoding as (payload bits, wire bits): 8b/10b or 128b/130b.
    pub fn encoding(self) -> (u64, u64) {
        match self {
            Generation::Gen1 | Generation::Gen2 => (8, 10),
            _ => (128, 130),
        }
    }
}

pub use ccsim_coherence::envelope::TlpKind;

/// Bytes of a DLLP on the wire (6 B + 2 B framing, every generation).
pub const DLLP_WIRE_BYTES: u32 = 8;

/// The configuration of one PCIe link and the sizes its agents negotiated.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkConfig {
    /// Generation (rate and encoding).
    pub generation: Generation,
    /// Negotiated width in lanes (1, 2, 4, 8, 16).
    pub lanes: u32,
    /// Max Payload Size in bytes (128–4096, power of two).
    pub mps: u32,
    /// Max Read Request Size in bytes (128–4096, power of two).
    pub mrrs: u32,
    /// Read Completion Boundary in bytes (64 or 128).
    pub rcb: u32,
    /// Whether TLPs carry an ECRC digest (4 B).
    pub ecrc: bool,
    /// One ACK DLLP per this many received TLPs (0 = none).
    pub ack_every: u32,
    /// One UpdateFC DLLP per this many received TLPs (0 = none).
    pub update_fc_every: u32,
}

impl LinkConfig {
    /// A link with common defaults: MPS 256, MRRS 512, RCB 64, no ECRC, an
    /// ACK and an UpdateFC every 4 TLPs.
    pub fn new(generation: Generation, lanes: u32) -> Self {
        LinkConfig {
            generation,
            lanes,
            mps: 256,
            mrrs: 512,
            rcb: 64,
            ecrc: false,
            ack_every: 4,
            update_fc_every: 4,
        }
    }

    /// Problems with this configuration, one sentence each.
    pub fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        if ![1, 2, 4, 8, 12, 16, 32].contains(&self.lanes) {
            p.push(format!(
                "lanes = {} is not a PCIe link width (1, 2, 4, 8, 12, 16, 32)",
                self.lanes
            ));
        }
        for (name, v) in [
            ("max_payload_bytes", self.mps),
            ("max_read_request_bytes", self.mrrs),
        ] {
            if !(128..=4096).contains(&v) || !v.is_power_of_two() {
                p.push(format!(
                    "{name} = {v} must be a power of two from 128 to 4096"
                ));
            }
        }
        if self.rcb != 64 && self.rcb != 128 {
            p.push(format!(
                "read_completion_boundary = {} must be 64 or 128",
                self.rcb
            ));
        }
        p
    }

    /// Header bytes of a TLP: 3 DW, or 4 DW for memory requests to 64-bit
    /// addresses. Completions always have a 3 DW header.
    pub fn header_bytes(kind: TlpKind, addr64: bool) -> u32 {
        match kind {
            TlpKind::CplD => 12,
            _ if addr64 => 16,
            _ => 12,
        }
    }

    /// Bytes a TLP of `kind` with `payload` bytes of data occupies on the
    /// wire before line encoding: framing + sequence number + header +
    /// payload + ECRC + LCRC.
    pub fn tlp_wire_bytes(&self, kind: TlpKind, payload: u32, addr64: bool) -> u32 {
        // STP(1)+seq(2)+LCRC(4)+END(1) on Gen1-2; STP token(4, carries the
        // sequence number)+LCRC(4) on Gen3+: 8 bytes either way.
        let framing_seq_lcrc = 8;
        let ecrc = if self.ecrc { 4 } else { 0 };
        let data = if kind == TlpKind::MemRead { 0 } else { payload };
        framing_seq_lcrc + Self::header_bytes(kind, addr64) + data + ecrc
    }

    /// Raw link bandwidth after line encoding, in bytes per second.
    pub fn bytes_per_second(&self) -> f64 {
        let (num, den) = self.generation.encoding();
        self.generation.mega_transfers() as f64 * 1e6 * self.lanes as f64 * num as f64
            / (den as f64 * 8.0)
    }

    /// Time to serialize `bytes` (pre-encoding) across all lanes, rounded up
    /// to whole picoseconds: `bytes * 8 * wire/payload bits / (rate * lanes)`.
    pub fn serialization_ps(&self, bytes: u32) -> Tick {
        let (num, den) = self.generation.encoding();
        // ps = bytes * 8 * den / num / (MT/s * 1e6 * lanes) * 1e12
        let numer = bytes as u128 * 8 * den as u128 * 1_000_000;
        let denom = num as u128 * self.generation.mega_transfers() as u128 * self.lanes as u128;
        numer.div_ceil(denom) as Tick
    }

    /// Encoded bits `bytes` occupy on the wire (what a bit error rate
    /// applies to).
    pub fn wire_bits(&self, bytes: u32) -> u64 {
        let (num, den) = self.generation.encoding();
        (bytes as u64 * 8 * den).div_ceil(num)
    }

    /// DLLP bytes the receiver sends back per TLP, averaged (ACK + UpdateFC).
    pub fn dllp_bytes_per_tlp(&self) -> f64 {
        let per = |every: u32| {
            if every == 0 {
                0.0
            } else {
                DLLP_WIRE_BYTES as f64 / every as f64
            }
        };
        per(self.ack_every) + per(self.update_fc_every)
    }

    /// Splits a posted write of `len` bytes at `addr` into TLP payloads:
    /// at most MPS bytes and never crossing a 4 KiB boundary.
    pub fn split_write(&self, addr: u64, len: u64) -> Vec<(u64, u32)> {
        split_bounded(addr, len, self.mps as u64)
    }

    /// Splits a read of `len` bytes at `addr` into read requests of at most
    /// MRRS bytes that never cross a 4 KiB boundary.
    pub fn split_read(&self, addr: u64, len: u64) -> Vec<(u64, u32)> {
        split_bounded(addr, len, self.mrrs as u64)
    }

    /// Splits the completion of a read request of `len` bytes at `addr` into
    /// CplD payloads of at most `max_bytes` (≤ MPS): every completion but
    /// the last ends on an RCB boundary.
    pub fn split_completion(&self, addr: u64, len: u32, max_bytes: u32) -> Vec<(u64, u32)> {
        let max = max_bytes.min(self.mps).max(self.rcb) as u64;
        let rcb = self.rcb as u64;
        let end = addr + len as u64;
        let mut out = Vec::new();
        let mut a = addr;
        while a < end {
            // Furthest RCB boundary within `max` bytes, or the end.
            let limit = a + max;
            let cut = if limit >= end { end } else { limit / rcb * rcb };
            let cut = if cut <= a { (a / rcb + 1) * rcb } else { cut }.min(end);
            out.push((a, (cut - a) as u32));
            a = cut;
        }
        out
    }

    /// Total wire bytes (TLPs only) of a posted write of `len` bytes at `addr`.
    pub fn write_wire_bytes(&self, addr: u64, len: u64) -> u64 {
        let addr64 = addr >= 1 << 32;
        self.split_write(addr, len)
            .iter()
            .map(|&(_, n)| self.tlp_wire_bytes(TlpKind::MemWrite, n, addr64) as u64)
            .sum()
    }

    /// Time on the wire of a posted write of `len` bytes at `addr`: the sum
    /// of each TLP's serialization (each rounded up to a picosecond).
    pub fn write_wire_time_ps(&self, addr: u64, len: u64) -> Tick {
        let addr64 = addr >= 1 << 32;
        self.split_write(addr, len)
            .iter()
            .map(|&(_, n)| self.serialization_ps(self.tlp_wire_bytes(TlpKind::MemWrite, n, addr64)))
            .sum()
    }

    /// Payload efficiency of back-to-back writes of `payload`-byte TLPs,
    /// counting the DLLPs of the reverse direction as free (they use the
    /// other wire): payload / (payload + overhead).
    pub fn write_efficiency(&self, payload: u32, addr64: bool) -> f64 {
        payload as f64 / self.tlp_wire_bytes(TlpKind::MemWrite, payload, addr64) as f64
    }
}

/// Splits `[addr, addr+len)` into chunks of at most `max` bytes that do not
/// cross a 4 KiB boundary.
fn split_bounded(addr: u64, len: u64, max: u64) -> Vec<(u64, u32)> {
    let mut out = Vec::new();
    let mut a = addr;
    let end = addr + len;
    while a < end {
        let page_end = (a / 4096 + 1) * 4096;
        let cut = end.min(a + max).min(page_end);
        out.push((a, (cut - a) as u32));
        a = cut;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overhead_matches_hand_counts() {
        let g3 = LinkConfig::new(Generation::Gen3, 8);
        // MWr 64 B, 32-bit address: STP token 4 + hdr 12 + 64 + LCRC 4 = 84.
        assert_eq!(g3.tlp_wire_bytes(TlpKind::MemWrite, 64, false), 84);
        // MWr 64 B, 64-bit address: 4 + 16 + 64 + 4 = 88.
        assert_eq!(g3.tlp_wire_bytes(TlpKind::MemWrite, 64, true), 88);
        // MRd (no payload), 64-bit: 4 + 16 + 4 = 24; 32-bit: 20.
        assert_eq!(g3.tlp_wire_bytes(TlpKind::MemRead, 512, true), 24);
        assert_eq!(g3.tlp_wire_bytes(TlpKind::MemRead, 512, false), 20);
        // CplD 256 B: 4 + 12 + 256 + 4 = 276.
        assert_eq!(g3.tlp_wire_bytes(TlpKind::CplD, 256, true), 276);
        // Gen2 framing: STP 1 + seq 2 + hdr 12 + 64 + LCRC 4 + END 1 = 84.
        let g2 = LinkConfig::new(Generation::Gen2, 4);
        assert_eq!(g2.tlp_wire_bytes(TlpKind::MemWrite, 64, false), 84);
        // ECRC adds 4: 84 + 4 = 88.
        let ecrc = LinkConfig { ecrc: true, ..g2 };
        assert_eq!(ecrc.tlp_wire_bytes(TlpKind::MemWrite, 64, false), 88);
        // DLLPs: one ACK and one UpdateFC per 4 TLPs = 2 * 8 / 4 = 4 B/TLP.
        assert_eq!(g3.dllp_bytes_per_tlp(), 4.0);
    }

    #[test]
    fn raw_bandwidth_per_generation() {
        // Gen1 x1: 2.5e9 * 8/10 / 8 = 250 MB/s.
        assert_eq!(
            LinkConfig::new(Generation::Gen1, 1).bytes_per_second(),
            250e6
        );
        // Gen2 x8: 5e9 * 8 * 0.8 / 8 = 4 GB/s.
        assert_eq!(LinkConfig::new(Generation::Gen2, 8).bytes_per_second(), 4e9);
        // Gen3 x16: 8e9 * 16 * 128/130 / 8 = 15.753846 GB/s.
        let g3 = LinkConfig::new(Generation::Gen3, 16).bytes_per_second();
        assert!((g3 - 15.753_846e9).abs() < 1e4, "{g3}");
        // Gen5 x16: 32e9 * 16 * 128/130 / 8 = 63.015 GB/s.
        let g5 = LinkConfig::new(Generation::Gen5, 16).bytes_per_second();
        assert!((g5 - 63.015_384e9).abs() < 1e4, "{g5}");
    }

    #[test]
    fn serialization_is_exact() {
        let g3x8 = LinkConfig::new(Generation::Gen3, 8);
        // 84 B: 84*8*130*1e6 / (128*8000*8) = 87_360_000_000/8_192_000 = 10664.06 -> 10665 ps.
        assert_eq!(g3x8.serialization_ps(84), 10_665);
        // Gen1 x1, 100 B: 100*8*10*1e6/(8*2500*1) = 400_000 ps exactly.
        assert_eq!(
            LinkConfig::new(Generation::Gen1, 1).serialization_ps(100),
            400_000
        );
        // Gen5 x16, 64 B: 64*8*130*1e6/(128*32000*16) = 66_560_000_000/65_536_000 = 1015.6 -> 1016.
        assert_eq!(
            LinkConfig::new(Generation::Gen5, 16).serialization_ps(64),
            1_016
        );
    }

    #[test]
    fn four_kib_write_on_gen3_x8() {
        let l = LinkConfig::new(Generation::Gen3, 8); // MPS 256
        let addr = 0x1_0000_0000; // 64-bit address -> 4 DW headers
        let parts = l.split_write(addr, 4096);
        assert_eq!(parts.len(), 16);
        assert!(parts.iter().all(|&(_, n)| n == 256));
        // 16 TLPs * (256 + 24) = 4480 wire bytes.
        assert_eq!(l.write_wire_bytes(addr, 4096), 4480);
        // Each 280 B TLP: 280*8*130*1e6/8_192_000 = 35546.875 -> 35547 ps; x16 = 568752 ps.
        assert_eq!(l.write_wire_time_ps(addr, 4096), 568_752);
        // Efficiency 256/280.
        assert!((l.write_efficiency(256, true) - 256.0 / 280.0).abs() < 1e-12);
    }

    #[test]
    fn writes_split_at_mps_and_4k() {
        let l = LinkConfig::new(Generation::Gen3, 8);
        // 600 B from 0xF80: 128 B up to 0x1000 (4 KiB boundary), then 256, 216.
        assert_eq!(
            l.split_write(0xF80, 600),
            vec![(0xF80, 128), (0x1000, 256), (0x1100, 216)]
        );
        // Reads: MRRS 512; 1300 B from 0x0 -> 512, 512, 276.
        assert_eq!(
            l.split_read(0, 1300),
            vec![(0, 512), (512, 512), (1024, 276)]
        );
        // A read crossing 4 KiB splits there even below MRRS.
        assert_eq!(l.split_read(0xF00, 512), vec![(0xF00, 256), (0x1000, 256)]);
    }

    #[test]
    fn completions_split_at_rcb() {
        let l = LinkConfig::new(Generation::Gen3, 8); // MPS 256, RCB 64
                                                      // 512 B aligned, max 256: two 256 B completions.
        assert_eq!(l.split_completion(0, 512, 256), vec![(0, 256), (256, 256)]);
        // 300 B from 0x30 with max 256: first ends at the RCB boundary
        // 0x100 (208 B, the furthest within 256), then 92 B.
        assert_eq!(
            l.split_completion(0x30, 300, 256),
            vec![(0x30, 208), (0x100, 92)]
        );
        // A host that completes in RCB-sized pieces: 200 B from 0x10 ->
        // 48 (to 0x40), 64, 64, 24.
        assert_eq!(
            l.split_completion(0x10, 200, 64),
            vec![(0x10, 48), (0x40, 64), (0x80, 64), (0xC0, 24)]
        );
    }

    #[test]
    fn bad_configs_are_reported() {
        let l = LinkConfig {
            lanes: 3,
            mps: 100,
            rcb: 32,
            ..LinkConfig::new(Generation::Gen3, 8)
        };
        assert_eq!(l.problems().len(), 3, "{:?}", l.problems());
        assert!(LinkConfig::new(Generation::Gen5, 16).problems().is_empty());
        assert_eq!(Generation::from_number(6), None);
    }
}
