//! The messages that travel in a simulation.
//!
//! * [`CohMsg`]: a coherent protocol message about one line, with the
//!   line's bytes when the message carries data;
//! * [`SysMsg`]: PCIe TLPs, memory requests and responses, MMIO and
//!   interrupts.

use ccsim_kernel::sim::Message;

use crate::line::Line;

/// A transaction-layer packet with its real payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Tlp {
    /// MWr, MRd or CplD.
    pub kind: TlpKind,
    /// Target address (MWr, MRd) or the address of the first completed byte
    /// (CplD; the wire carries only its low 7 bits).
    pub addr: u64,
    /// Requested bytes (MRd) or payload bytes (MWr, CplD).
    pub len: u32,
    /// Tag of the read request (MRd, CplD).
    pub tag: u16,
    /// Bytes still to complete including this completion (CplD byte count).
    pub byte_count: u32,
    /// Payload (MWr, CplD); empty for MRd.
    pub data: Vec<u8>,
}

impl Tlp {
    /// A memory write of `data` to `addr`.
    pub fn write(addr: u64, data: Vec<u8>) -> Tlp {
        Tlp {
            kind: TlpKind::MemWrite,
            addr,
            len: data.len() as u32,
            tag: 0,
            byte_count: 0,
            data,
        }
    }
    /// A memory read request of `len` bytes at `addr` with `tag`.
    pub fn read(addr: u64, len: u32, tag: u16) -> Tlp {
        Tlp {
            kind: TlpKind::MemRead,
            addr,
            len,
            tag,
            byte_count: len,
            data: Vec::new(),
        }
    }
    /// A completion with data for `tag`.
    pub fn completion(tag: u16, addr: u64, byte_count: u32, data: Vec<u8>) -> Tlp {
        Tlp {
            kind: TlpKind::CplD,
            addr,
            len: data.len() as u32,
            tag,
            byte_count,
            data,
        }
    }
    /// Whether a memory request uses a 4 DW header (address above 4 GiB).
    pub fn addr64(&self) -> bool {
        self.kind != TlpKind::CplD && self.addr >= 1 << 32
    }
    /// Whether this completion is the last one of its request.
    pub fn is_last_completion(&self) -> bool {
        self.kind == TlpKind::CplD && self.byte_count == self.len
    }
}

/// A request to a memory (host DRAM, device BRAM) or, later, a cache.
#[derive(Debug, Clone, PartialEq)]
pub enum MemReq {
    /// Read `len` bytes at `addr`; answered by [`MemResp::Data`] with `id`.
    Read {
        /// Requester's id, echoed in the response.
        id: u64,
        /// Byte address.
        addr: u64,
        /// Bytes to read.
        len: u32,
    },
    /// Write `data` at `addr`; answered by [`MemResp::Ack`] with `id`.
    Write {
        /// Requester's id, echoed in the response.
        id: u64,
        /// Byte address.
        addr: u64,
        /// Bytes to store.
        data: Vec<u8>,
    },
}

/// A memory's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum MemResp {
    /// The bytes of a read.
    Data {
        /// The request's id.
        id: u64,
        /// Bytes read.
        data: Vec<u8>,
    },
    /// A write is done (globally visible).
    Ack {
        /// The request's id.
        id: u64,
    },
}

/// Every message of a PCIe system.
#[derive(Debug, Clone, PartialEq)]
pub enum SysMsg {
    /// A TLP on a PCIe link (or between a link and its agents).
    Tlp(Tlp),
    /// A memory request.
    MemReq(MemReq),
    /// A memory response.
    MemResp(MemResp),
    /// Core → root complex: uncached/write-combined store to device space.
    MmioWrite {
        /// Device address.
        addr: u64,
        /// Bytes stored.
        data: Vec<u8>,
    },
    /// Core → root complex: uncached load from device space.
    MmioRead {
        /// Core's id, echoed in [`SysMsg::MmioData`].
        id: u64,
        /// Device address.
        addr: u64,
        /// Bytes to load.
        len: u32,
    },
    /// Root complex → core: the data of an MMIO read.
    MmioData {
        /// The read's id.
        id: u64,
        /// Bytes loaded.
        data: Vec<u8>,
    },
    /// Root complex → core: an MSI/MSI-X interrupt with this vector.
    Interrupt {
        /// The message data of the MSI write.
        vector: u32,
    },
}

impl Message for SysMsg {
    fn label(&self) -> String {
        match self {
            SysMsg::Tlp(t) => match t.kind {
                TlpKind::MemWrite => format!("MWr {:#x} {}B", t.addr, t.len),
                TlpKind::MemRead => format!("MRd {:#x} {}B tag={}", t.addr, t.len, t.tag),
                TlpKind::CplD => format!("CplD {}B tag={} bc={}", t.len, t.tag, t.byte_count),
            },
            SysMsg::MemReq(MemReq::Read { id, addr, len }) => {
                format!("RdReq {addr:#x} {len}B id={id}")
            }
            SysMsg::MemReq(MemReq::Write { id, addr, data }) => {
                format!("WrReq {addr:#x} {}B id={id}", data.len())
            }
            SysMsg::MemResp(MemResp::Data { id, data }) => format!("Data {}B id={id}", data.len()),
            SysMsg::MemResp(MemResp::Ack { id }) => format!("Ack id={id}"),
            SysMsg::MmioWrite { addr, data } => format!("MmioWr {addr:#x} {}B", data.len()),
            SysMsg::MmioRead { id, addr, len } => format!("MmioRd {addr:#x} {len}B id={id}"),
            SysMsg::MmioData { id, data } => format!("MmioData {}B id={id}", data.len()),
            SysMsg::Interrupt { vector } => format!("IRQ {vector}"),
        }
    }
}

/// Bytes a message occupies on an on-chip (non-PCIe) link: payload plus a
/// 16-byte command. Used where a kernel link has a finite bandwidth.
pub fn onchip_bytes(msg: &SysMsg) -> u32 {
    16 + match msg {
        SysMsg::Tlp(t) => t.data.len() as u32,
        SysMsg::MemReq(MemReq::Write { data, .. }) => data.len() as u32,
        SysMsg::MemResp(MemResp::Data { data, .. }) => data.len() as u32,
        SysMsg::MmioWrite { data, .. } => data.len() as u32,
        SysMsg::MmioData { data, .. } => data.len() as u32,
        _ => 0,
    }
}

/// The kinds of TLP ccsim moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlpKind {
    /// Memory write (posted), with payload.
    MemWrite,
    /// Memory read request (non-posted), no payload.
    MemRead,
    /// Completion with data.
    CplD,
}

/// Which protocol's message catalogue a [`CohMsg`] index belongs to: the
/// two protocols on ECI number their messages independently, so a receiver
/// must know whose catalogue `msg` indexes before it looks it up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Catalogue {
    /// FPGA-homed lines: memory at the generated agent (the DC, `eci-dc`
    /// and the invocation tables).
    FpgaHomed,
    /// CPU-homed lines: memory at the peer (the CPU home), the cache at the
    /// generated agent (the FPGA's CC, `eci-cc`).
    CpuHomed,
}

/// A message of the coherent system: a protocol message of the IR catalogue
/// about one line, with the line's data when the message carries some.
#[derive(Clone, Debug)]
pub struct CohMsg {
    /// Index in the IR's message catalogue.
    pub msg: u16,
    /// The catalogue `msg` indexes.
    pub catalogue: Catalogue,
    /// Line index (byte address / 128).
    pub line: u64,
    /// The payload (16 words) of data-carrying messages (made with
    /// [`boxed_line`](crate::boxed_line) and given back with [`recycle_line`](crate::recycle_line) by the hot paths,
    /// so that data messages allocate nothing in a long run).
    pub data: Option<Box<Line>>,
    /// Message name, for traces and reports ([`intern`]ed: copying it is a
    /// pointer copy, with no reference count to update per message).
    pub name: &'static str,
}

impl Message for CohMsg {
    fn label(&self) -> String {
        format!("{} line={:#x}", self.name, self.line)
    }
}

/// The process-wide copy of a message name. Each distinct name is stored
/// once for the life of the process (protocols have a few dozen names), so
/// messages can carry `&'static str` instead of a reference-counted string.
pub fn intern(name: &str) -> &'static str {
    static NAMES: std::sync::OnceLock<std::sync::Mutex<rustc_hash::FxHashSet<&'static str>>> =
        std::sync::OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.get(name) {
        return n;
    }
    let n: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(n);
    n
}
