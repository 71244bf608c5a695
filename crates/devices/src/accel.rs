//! Stream accelerators that compute real outputs: the SHA-256 and AES-128
//! units of the Cohort prototype (Cohort §5.2), behind the ratchets that
//! resize a queue endpoint's 64-bit words to the accelerator's blocks.
//!
//! * **SHA-256** takes a 512-bit block and gives a 256-bit digest, 66
//!   cycles later (Cohort §5.3: "SHA's latency of 66 cycles"). The core
//!   hashes each block on its own: the digest is the SHA-256 compression of
//!   the block from the standard initial hash value (FIPS 180-4 §5.3.3,
//!   §6.2.2), so a block the software padded (FIPS 180-4 §5.1.1) gives the
//!   SHA-256 of its message. "To hash 1 block of text we push 64 bits of
//!   data 8 times and fetch the corresponding hash with 4 pops" (§5.2).
//! * **AES-128** encrypts a 128-bit block with a 128-bit key in 41 cycles
//!   (§5.3); the key comes from the coherent CSR struct (§5.2), here
//!   [`Accelerator::set_key`]. Two pushes and two pops a block.
//! * **Ratchets.** Words enter and leave as 64-bit values; a word's bytes
//!   are its little-endian bytes in memory, so a block is the bytes of its
//!   words in order, as they lie in the queue.
//! * **Interfaces.** "Our prototype supports both simple valid-ready
//!   handshakes and AXI-Stream as latency insensitive interfaces to and
//!   from the accelerator" (Cohort §4.2, Fig. 6). Both move one 64-bit word
//!   a cycle while the accelerator is ready; AXI-Stream also frames them:
//!   each transfer ([`AxisBeat`]) carries TKEEP (its data bytes) and TLAST
//!   (the last transfer of a packet, here of a block; AMBA AXI4-Stream,
//!   IHI0051A §2), and a unit on AXI-Stream checks the framing
//!   ([`Accelerator::push_beat`], [`Accelerator::pop_beat`]). SHA-256 and AES
//!   use valid-ready, as in the prototype ("Each accelerator uses
//!   valid-ready handshakes", §4.2); the AXI-Stream FIFO the authors used as
//!   a "null" accelerator to demonstrate AXI-Stream is
//!   [`Accelerator::axis_fifo`].
//! * **Timing.** The unit holds one block at a time (the open-source cores
//!   Cohort integrates iterate over a block; assumed: no overlap of
//!   blocks): a block starts when its last word has arrived and the block
//!   before it is done, and its result is ready `latency_cycles` later.
//!
//! The arithmetic is RustCrypto's (`sha2`, `aes`); the tests check it and
//! the ratchets against the FIPS test vectors.
//!
//! ```
//! use ccsim_devices::accel::Accelerator;
//! // FIPS 180-4's one-block example: "abc", padded to 512 bits.
//! let mut block = [0u8; 64];
//! block[..3].copy_from_slice(b"abc");
//! block[3] = 0x80;
//! block[63] = 24; // the message length in bits
//! let mut sha = Accelerator::sha256(100.0);
//! for (i, w) in block.chunks(8).enumerate() {
//!     sha.push_word(i as u64 * 10_000, u64::from_le_bytes(w.try_into().unwrap()));
//! }
//! // The last word came at 70 ns; 66 cycles of 10 ns later the digest is out.
//! assert_eq!(sha.output_ready_at(), Some(70_000 + 66 * 10_000));
//! let digest: Vec<u8> = (0..4).flat_map(|_| sha.pop_word().unwrap().to_le_bytes()).collect();
//! assert_eq!(digest[..4], [0xba, 0x78, 0x16, 0xbf]);
//! ```

use std::collections::VecDeque;

use aes::cipher::{BlockEncrypt, KeyInit};
use ccsim_kernel::component::{ComponentSpec, ParamDefault, ParamKind, ParamRange, ParamSpec};
use ccsim_kernel::prelude::*;

/// Bytes of a queue word, the endpoints' width (Cohort §5.2: 64-bit data).
pub const WORD_BYTES: usize = 8;

/// The declaration of `stream_accelerator`: an accelerator on a Cohort
/// engine's endpoints (or any host that feeds it words).
pub static STREAM_ACCELERATOR: ComponentSpec = ComponentSpec {
    type_name: "stream_accelerator",
    description: "A streaming accelerator computing real outputs (SHA-256 digests or AES-128 ciphertext) on blocks built from 64-bit words by a ratchet; one block at a time, its result latency_cycles after the block's last word.",
    params: &[
        ParamSpec { name: "kernel", kind: ParamKind::Enum(&["sha256", "aes128"]), default: ParamDefault::Str("sha256"), unit: "", range: ParamRange::ANY, from: "Cohort §5.2: the SHA-256 and AES-128 accelerators of the prototype", description: "sha256: 512-bit blocks to 256-bit digests; aes128: 128-bit blocks to 128-bit ciphertext under the CSR key." },
        ParamSpec { name: "latency_cycles", kind: ParamKind::Int, default: ParamDefault::Int(66), unit: "cycles", range: ParamRange::between(1.0, 1e6), from: "Cohort §5.3: SHA's latency of 66 cycles (AES: 41)", description: "Cycles from a block's last word to its result." },
        ParamSpec { name: "clock_mhz", kind: ParamKind::Float, default: ParamDefault::Float(100.0), unit: "MHz", range: ParamRange::positive(), from: "Cohort §5.1: the FPGA prototype at 100 MHz", description: "The accelerator's clock." },
    ],
    ports: &[],
    stats: &[],
    check: None,
};

/// What an accelerator computes on a block.
#[derive(Clone)]
enum Kernel {
    Sha256,
    Aes128(Box<aes::Aes128>),
    /// The "null" accelerator: an AXI-Stream FIFO in packet mode, which
    /// gives each packet back unchanged.
    Fifo,
}

/// The handshake between an endpoint and its accelerator (Cohort §4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamInterface {
    /// Valid-ready FIFO handshakes: a word a transfer, no framing.
    ValidReady,
    /// AXI4-Stream: a word a transfer with TKEEP and TLAST (IHI0051A §2).
    AxiStream,
}

/// One AXI4-Stream transfer of a 64-bit stream (IHI0051A §2.1: TDATA,
/// TKEEP, TLAST; TVALID/TREADY are the handshake the timing models).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AxisBeat {
    /// The word.
    pub tdata: u64,
    /// One bit a byte of `tdata`: set for a data byte.
    pub tkeep: u8,
    /// The last transfer of a packet (a block of the accelerator).
    pub tlast: bool,
}

/// A transfer whose framing does not match the accelerator's blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FramingError {
    /// A transfer with null or position bytes (TKEEP not all set): the
    /// blocks take whole words.
    PartialTransfer {
        /// The transfer's TKEEP.
        tkeep: u8,
    },
    /// TLAST before a block's last word.
    EarlyLast {
        /// The word of the block it came on (from 0).
        word: usize,
        /// Words a block takes.
        of: usize,
    },
    /// A block's last word without TLAST.
    MissingLast {
        /// Words a block takes.
        of: usize,
    },
}

impl std::fmt::Display for FramingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FramingError::PartialTransfer { tkeep } => {
                write!(f, "TKEEP {tkeep:#04x}: the blocks take whole 64-bit words")
            }
            FramingError::EarlyLast { word, of } => {
                write!(f, "TLAST on word {word} of a {of}-word block")
            }
            FramingError::MissingLast { of } => {
                write!(f, "no TLAST on the last word of a {of}-word block")
            }
        }
    }
}

/// One accelerator with its input and output ratchets.
#[derive(Clone)]
pub struct Accelerator {
    kernel: Kernel,
    interface: StreamInterface,
    in_bytes: usize,
    latency: Tick,
    /// Bytes of the block being gathered.
    gathering: Vec<u8>,
    /// When the block before finishes (the unit is free from then on).
    free_at: Tick,
    /// Result words and the time the first of their block is ready.
    out: VecDeque<(Tick, u64)>,
    /// Result words taken, for the output's TLAST.
    popped: u64,
    /// Blocks computed.
    pub blocks: u64,
}

impl std::fmt::Debug for Accelerator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kernel {
            Kernel::Sha256 => "sha256",
            Kernel::Aes128(_) => "aes128",
            Kernel::Fifo => "axis_fifo",
        };
        f.debug_struct("Accelerator")
            .field("kernel", &kind)
            .field("blocks", &self.blocks)
            .finish()
    }
}

impl Accelerator {
    /// SHA-256 at `clock_mhz`, 66 cycles a block (Cohort §5.3).
    pub fn sha256(clock_mhz: f64) -> Accelerator {
        Accelerator::new(Kernel::Sha256, 64, 66, clock_mhz)
    }

    /// AES-128 under `key` at `clock_mhz`, 41 cycles a block (Cohort §5.3).
    pub fn aes128(key: [u8; 16], clock_mhz: f64) -> Accelerator {
        Accelerator::new(
            Kernel::Aes128(Box::new(aes::Aes128::new(&key.into()))),
            16,
            41,
            clock_mhz,
        )
    }

    /// The "null" accelerator the Cohort authors demonstrated AXI-Stream
    /// with (Cohort §4.2: "an AXI-Stream FIFO as a \"null\" accelerator"):
    /// an AXI4-Stream FIFO in packet mode, which forwards a packet once its
    /// TLAST has arrived (Xilinx PG085, packet mode), here packets of
    /// `packet_words` words given back unchanged `latency_cycles` later
    /// (both assumed: the paper gives neither).
    pub fn axis_fifo(packet_words: usize, latency_cycles: u64, clock_mhz: f64) -> Accelerator {
        assert!(packet_words > 0, "a packet takes at least one word");
        Accelerator::new(
            Kernel::Fifo,
            packet_words * WORD_BYTES,
            latency_cycles,
            clock_mhz,
        )
        .with_interface(StreamInterface::AxiStream)
    }

    /// The same unit behind another interface.
    pub fn with_interface(mut self, interface: StreamInterface) -> Accelerator {
        self.interface = interface;
        self
    }

    /// The unit's interface to the endpoints.
    pub fn interface(&self) -> StreamInterface {
        self.interface
    }

    /// From a `stream_accelerator` instance's parameters (an AES unit's key
    /// is zero until [`set_key`](Self::set_key)).
    pub fn from_params(p: &Params) -> Accelerator {
        let clock = p.float("clock_mhz");
        let mut a = match p.str("kernel") {
            "aes128" => Accelerator::aes128([0; 16], clock),
            _ => Accelerator::sha256(clock),
        };
        a.latency = (p.uint("latency_cycles") as f64 * 1e6 / clock).round() as Tick;
        a
    }

    fn new(kernel: Kernel, in_bytes: usize, cycles: u64, clock_mhz: f64) -> Accelerator {
        Accelerator {
            kernel,
            interface: StreamInterface::ValidReady,
            in_bytes,
            latency: (cycles as f64 * 1e6 / clock_mhz).round() as Tick,
            gathering: Vec::with_capacity(in_bytes),
            free_at: 0,
            out: VecDeque::new(),
            popped: 0,
            blocks: 0,
        }
    }

    /// Sets an AES unit's key (the CSR struct's field); a SHA unit has none.
    pub fn set_key(&mut self, key: [u8; 16]) {
        if let Kernel::Aes128(cipher) = &mut self.kernel {
            **cipher = aes::Aes128::new(&key.into());
        }
    }

    /// Words a block takes (8 for SHA-256, 2 for AES-128).
    pub fn words_per_block(&self) -> usize {
        self.in_bytes / WORD_BYTES
    }

    /// Words a result takes (4 for SHA-256's digest, 2 for AES-128).
    pub fn words_per_output_block(&self) -> usize {
        match self.kernel {
            Kernel::Sha256 => 32 / WORD_BYTES,
            Kernel::Aes128(_) => 16 / WORD_BYTES,
            Kernel::Fifo => self.in_bytes / WORD_BYTES,
        }
    }

    /// A word arrives at `now`. When it completes a block, the block goes
    /// in (once the unit is free) and its result words are queued, ready at
    /// the returned time.
    pub fn push_word(&mut self, now: Tick, word: u64) -> Option<Tick> {
        self.gathering.extend_from_slice(&word.to_le_bytes());
        if self.gathering.len() < self.in_bytes {
            return None;
        }
        let block = std::mem::take(&mut self.gathering);
        let result = self.compute(&block);
        let ready = now.max(self.free_at) + self.latency;
        self.free_at = ready;
        self.blocks += 1;
        for w in result.chunks(WORD_BYTES) {
            let bytes: [u8; WORD_BYTES] = w.try_into().expect("whole words");
            self.out.push_back((ready, u64::from_le_bytes(bytes)));
        }
        Some(ready)
    }

    /// An AXI-Stream transfer arrives at `now`: the word of
    /// [`push_word`](Self::push_word), once its framing is checked against
    /// the block being gathered (whole words; TLAST exactly on a block's
    /// last word). A transfer that fails the check changes nothing.
    pub fn push_beat(&mut self, now: Tick, beat: AxisBeat) -> Result<Option<Tick>, FramingError> {
        if beat.tkeep != 0xff {
            return Err(FramingError::PartialTransfer { tkeep: beat.tkeep });
        }
        let (word, of) = (self.gathering.len() / WORD_BYTES, self.words_per_block());
        match (beat.tlast, word + 1 == of) {
            (true, false) => return Err(FramingError::EarlyLast { word, of }),
            (false, true) => return Err(FramingError::MissingLast { of }),
            _ => {}
        }
        Ok(self.push_word(now, beat.tdata))
    }

    /// Takes the next result word as an AXI-Stream transfer, TLAST on the
    /// last word of each result block.
    pub fn pop_beat(&mut self) -> Option<AxisBeat> {
        let of = self.words_per_output_block() as u64;
        let popped = self.popped;
        self.pop_word().map(|tdata| AxisBeat {
            tdata,
            tkeep: 0xff,
            tlast: (popped + 1) % of == 0,
        })
    }

    /// When the next result word is ready, if one is queued.
    pub fn output_ready_at(&self) -> Option<Tick> {
        self.out.front().map(|&(t, _)| t)
    }

    /// Takes the next result word (whether or not its time has come: the
    /// caller keeps time with [`output_ready_at`](Self::output_ready_at)).
    pub fn pop_word(&mut self) -> Option<u64> {
        let word = self.out.pop_front().map(|(_, w)| w);
        self.popped += u64::from(word.is_some());
        word
    }

    fn compute(&self, block: &[u8]) -> Vec<u8> {
        match &self.kernel {
            Kernel::Sha256 => {
                let mut state = SHA256_INITIAL;
                let b = sha2::digest::generic_array::GenericArray::clone_from_slice(block);
                sha2::compress256(&mut state, &[b]);
                state.iter().flat_map(|v| v.to_be_bytes()).collect()
            }
            Kernel::Aes128(cipher) => {
                let mut b = aes::Block::clone_from_slice(block);
                cipher.encrypt_block(&mut b);
                b.to_vec()
            }
            Kernel::Fifo => block.to_vec(),
        }
    }
}

/// SHA-256's initial hash value (FIPS 180-4 §5.3.3).
const SHA256_INITIAL: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest;

    fn words(bytes: &[u8]) -> Vec<u64> {
        bytes
            .chunks(WORD_BYTES)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
            .collect()
    }

    fn drain(a: &mut Accelerator) -> Vec<u8> {
        std::iter::from_fn(|| a.pop_word())
            .flat_map(|w| w.to_le_bytes())
            .collect()
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// The one padded block of a message under 56 bytes (FIPS 180-4 §5.1.1).
    fn padded(msg: &[u8]) -> [u8; 64] {
        let mut b = [0u8; 64];
        b[..msg.len()].copy_from_slice(msg);
        b[msg.len()] = 0x80;
        b[56..].copy_from_slice(&(msg.len() as u64 * 8).to_be_bytes());
        b
    }

    #[test]
    fn sha256_of_a_padded_block_is_the_fips_digest() {
        let mut sha = Accelerator::sha256(100.0);
        for w in words(&padded(b"abc")) {
            sha.push_word(0, w);
        }
        // FIPS 180-4 example "abc" (NIST CSRC SHA256.pdf).
        assert_eq!(
            drain(&mut sha),
            hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
        // Any short message: the unit's digest is the library's SHA-256.
        let msg = b"Cohort: software-oriented acceleration";
        for w in words(&padded(msg)) {
            sha.push_word(0, w);
        }
        assert_eq!(drain(&mut sha), sha2::Sha256::digest(msg).to_vec());
    }

    #[test]
    fn aes128_encrypts_the_fips_197_example() {
        // FIPS-197 Appendix C.1.
        let key: [u8; 16] = hex("000102030405060708090a0b0c0d0e0f").try_into().unwrap();
        let mut aes = Accelerator::aes128([0; 16], 100.0);
        aes.set_key(key);
        assert_eq!(aes.words_per_block(), 2);
        for w in words(&hex("00112233445566778899aabbccddeeff")) {
            aes.push_word(0, w);
        }
        assert_eq!(drain(&mut aes), hex("69c4e0d86a7b0430d8cdb78070b4c55a"));
    }

    #[test]
    fn one_block_at_a_time_each_after_its_last_word() {
        // 100 MHz: a cycle is 10 ns.
        let mut sha = Accelerator::sha256(100.0);
        let block = words(&padded(b"x"));
        let mut ready = Vec::new();
        for k in 0..2u64 {
            for (i, &w) in block.iter().enumerate() {
                // Both blocks' words arrive within the first 16 cycles.
                if let Some(t) = sha.push_word((k * 8 + i as u64) * 10_000, w) {
                    ready.push(t);
                }
            }
        }
        // The first starts at its last word (70 ns); the second waits for it.
        assert_eq!(ready, vec![70_000 + 660_000, 70_000 + 2 * 660_000]);
        let mut aes = Accelerator::aes128([7; 16], 100.0);
        assert_eq!(aes.push_word(0, 1), None);
        assert_eq!(aes.push_word(5_000, 2), Some(5_000 + 410_000));
    }

    #[test]
    fn aes_into_sha_chains_through_the_words() {
        // Fig. 5's chain: AES ciphertext words fed to SHA as they come out.
        let key = [0x2b; 16];
        let mut aes = Accelerator::aes128(key, 100.0);
        let mut sha = Accelerator::sha256(100.0);
        let plain: Vec<u8> = (0..64).collect();
        for w in words(&plain) {
            aes.push_word(0, w);
        }
        let mut cipher = Vec::new();
        while let (Some(t), Some(w)) = (aes.output_ready_at(), aes.pop_word()) {
            cipher.extend_from_slice(&w.to_le_bytes());
            sha.push_word(t, w);
        }
        // Four AES blocks one after another (41 cycles each), then SHA.
        assert_eq!(sha.output_ready_at(), Some(4 * 410_000 + 660_000));
        let reference = aes::Aes128::new(&key.into());
        for (c, p) in cipher.chunks(16).zip(plain.chunks(16)) {
            let mut b = aes::Block::clone_from_slice(p);
            reference.encrypt_block(&mut b);
            assert_eq!(c, b.as_slice());
        }
        let mut state = SHA256_INITIAL;
        sha2::compress256(
            &mut state,
            &[sha2::digest::generic_array::GenericArray::clone_from_slice(
                &cipher,
            )],
        );
        let digest: Vec<u8> = state.iter().flat_map(|v| v.to_be_bytes()).collect();
        assert_eq!(drain(&mut sha), digest);
    }

    #[test]
    fn axi_stream_frames_blocks_with_tlast_and_refuses_bad_framing() {
        let beat = |tdata, tlast| AxisBeat {
            tdata,
            tkeep: 0xff,
            tlast,
        };
        // AES on AXI-Stream: TLAST on every second word in and out.
        let mut aes =
            Accelerator::aes128([0; 16], 100.0).with_interface(StreamInterface::AxiStream);
        assert_eq!(
            aes.push_beat(0, beat(1, true)),
            Err(FramingError::EarlyLast { word: 0, of: 2 })
        );
        assert_eq!(
            aes.push_beat(
                0,
                AxisBeat {
                    tkeep: 0x0f,
                    ..beat(1, false)
                }
            ),
            Err(FramingError::PartialTransfer { tkeep: 0x0f })
        );
        // The refused transfers left nothing behind.
        assert_eq!(aes.push_beat(0, beat(1, false)), Ok(None));
        assert_eq!(
            aes.push_beat(0, beat(2, false)),
            Err(FramingError::MissingLast { of: 2 })
        );
        assert_eq!(aes.push_beat(0, beat(2, true)), Ok(Some(410_000)));
        let mut reference = Accelerator::aes128([0; 16], 100.0);
        reference.push_word(0, 1);
        reference.push_word(0, 2);
        let lasts: Vec<(u64, bool)> = std::iter::from_fn(|| aes.pop_beat())
            .map(|b| (b.tdata, b.tlast))
            .collect();
        let words: Vec<u64> = std::iter::from_fn(|| reference.pop_word()).collect();
        assert_eq!(lasts, vec![(words[0], false), (words[1], true)]);
    }

    #[test]
    fn the_null_axi_stream_fifo_gives_each_packet_back_once_its_tlast_is_in() {
        let mut fifo = Accelerator::axis_fifo(4, 2, 100.0);
        assert_eq!(fifo.interface(), StreamInterface::AxiStream);
        assert_eq!(
            (fifo.words_per_block(), fifo.words_per_output_block()),
            (4, 4)
        );
        let mut ready = None;
        for k in 0..4u64 {
            let beat = AxisBeat {
                tdata: 0xc0de + k,
                tkeep: 0xff,
                tlast: k == 3,
            };
            ready = fifo.push_beat(k * 10_000, beat).unwrap();
            assert_eq!(ready.is_some(), k == 3, "packet mode: nothing before TLAST");
        }
        assert_eq!(ready, Some(30_000 + 2 * 10_000));
        let out: Vec<AxisBeat> = std::iter::from_fn(|| fifo.pop_beat()).collect();
        assert_eq!(
            out.iter().map(|b| b.tdata).collect::<Vec<_>>(),
            vec![0xc0de, 0xc0df, 0xc0e0, 0xc0e1]
        );
        assert_eq!(
            out.iter().map(|b| b.tlast).collect::<Vec<_>>(),
            vec![false, false, false, true]
        );
    }

    #[test]
    fn parameters_set_kernel_latency_and_clock() {
        let p = Params::new()
            .with("kernel", ParamValue::Str("aes128".into()), "test")
            .with("latency_cycles", ParamValue::Int(41), "test")
            .with("clock_mhz", ParamValue::Float(50.0), "test");
        let p = ccsim_coherence::util::complete(&STREAM_ACCELERATOR, &p).unwrap();
        let mut a = Accelerator::from_params(&p);
        a.push_word(0, 0);
        assert_eq!(a.push_word(0, 0), Some(41 * 20_000));
    }
}
