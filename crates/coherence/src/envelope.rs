//! The messages that travel in a simulation.
//!
//! Every component of every simulation speaks one message type, [`Msg`], so
//! PCIe traffic and coherent traffic of several protocols can share a
//! system (CXL.io beside CXL.cache, CCIX's VC0 beside VC1):
//!
//! * [`Msg::Coh`]: a coherent protocol message about one line
//!   ([`CohMsg`]), tagged with its protocol, with the line's bytes when the
//!   message carries data;
//! * [`Msg::Tlp`]: a PCIe transaction-layer packet with its real payload;
//! * [`Msg::MemReq`] / [`Msg::MemResp`]: a memory request and its answer;
//! * MMIO loads and stores, their data, and interrupts.

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

/// Every message of a simulation.
#[derive(Debug, Clone)]
pub enum Msg {
    /// A coherent protocol message.
    Coh(CohMsg),
    /// A TLP on a PCIe link (or between a link and its agents); boxed, like
    /// a memory request, so that the envelope is 40 bytes.
    Tlp(Box<Tlp>),
    /// A memory request.
    MemReq(Box<MemReq>),
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
        /// Core's id, echoed in [`Msg::MmioData`].
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

impl Msg {
    /// A TLP (boxed in the envelope).
    #[inline]
    pub fn tlp(t: Tlp) -> Msg {
        Msg::Tlp(Box::new(t))
    }

    /// A memory request (boxed in the envelope).
    #[inline]
    pub fn mem_req(r: MemReq) -> Msg {
        Msg::MemReq(Box::new(r))
    }

    /// The coherent message this is; anything else arriving at a coherent
    /// agent is a wiring mistake, reported with what arrived and where.
    #[inline]
    pub fn into_coh(self, at: &str) -> Result<CohMsg, String> {
        match self {
            Msg::Coh(m) => Ok(m),
            other => Err(not_coherent(at, &other)),
        }
    }

    /// The coherent message this is, of `catalogue`'s protocol: a message
    /// of another protocol, or not a coherent one, arriving at an agent
    /// named `at` is a wiring mistake, reported with what arrived.
    #[inline]
    pub fn into_coh_of(self, at: &str, catalogue: &'static Catalogue) -> Result<CohMsg, String> {
        let m = self.into_coh(at)?;
        if m.catalogue != catalogue {
            return Err(other_protocol(at, &m, catalogue));
        }
        Ok(m)
    }

    /// The coherent message this is, if it is one.
    #[inline]
    pub fn as_coh(&self) -> Option<&CohMsg> {
        match self {
            Msg::Coh(m) => Some(m),
            _ => None,
        }
    }

    /// The coherent message of a component's own local message (it put a
    /// coherent message there itself).
    #[inline]
    pub fn local_coh(self) -> CohMsg {
        match self {
            Msg::Coh(m) => m,
            other => unreachable!(
                "a coherent agent's local message is coherent: {}",
                other.label()
            ),
        }
    }
}

#[cold]
#[inline(never)]
fn not_coherent(at: &str, m: &Msg) -> String {
    format!(
        "{at}: {} arrived where only coherent messages go (a wiring mistake)",
        m.label()
    )
}

#[cold]
#[inline(never)]
fn other_protocol(at: &str, m: &CohMsg, runs: &Catalogue) -> String {
    format!(
        "{at}: {} for line {:#x} is a message of protocol {}, but {at} runs {}",
        m.name(),
        m.line,
        m.catalogue.protocol,
        runs.protocol
    )
}

impl Message for Msg {
    fn label(&self) -> String {
        match self {
            Msg::Coh(m) => m.label(),
            Msg::Tlp(t) => match t.kind {
                TlpKind::MemWrite => format!("MWr {:#x} {}B", t.addr, t.len),
                TlpKind::MemRead => format!("MRd {:#x} {}B tag={}", t.addr, t.len, t.tag),
                TlpKind::CplD => format!("CplD {}B tag={} bc={}", t.len, t.tag, t.byte_count),
            },
            Msg::MemReq(r) => match &**r {
                MemReq::Read { id, addr, len } => format!("RdReq {addr:#x} {len}B id={id}"),
                MemReq::Write { id, addr, data } => {
                    format!("WrReq {addr:#x} {}B id={id}", data.len())
                }
            },
            Msg::MemResp(MemResp::Data { id, data }) => format!("Data {}B id={id}", data.len()),
            Msg::MemResp(MemResp::Ack { id }) => format!("Ack id={id}"),
            Msg::MmioWrite { addr, data } => format!("MmioWr {addr:#x} {}B", data.len()),
            Msg::MmioRead { id, addr, len } => format!("MmioRd {addr:#x} {len}B id={id}"),
            Msg::MmioData { id, data } => format!("MmioData {}B id={id}", data.len()),
            Msg::Interrupt { vector } => format!("IRQ {vector}"),
        }
    }
}

/// Bytes a message occupies on an on-chip (non-PCIe) link: payload plus a
/// 16-byte command. Used where a kernel link has a finite bandwidth.
pub fn onchip_bytes(msg: &Msg) -> u32 {
    16 + match msg {
        Msg::Tlp(t) => t.data.len() as u32,
        Msg::MemReq(r) => match &**r {
            MemReq::Write { data, .. } => data.len() as u32,
            MemReq::Read { .. } => 0,
        },
        Msg::MemResp(MemResp::Data { data, .. }) => data.len() as u32,
        Msg::MmioWrite { data, .. } => data.len() as u32,
        Msg::MmioData { data, .. } => data.len() as u32,
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

/// A protocol's message catalogue: the names its message indices stand
/// for. Several protocols can share a simulation (the two ECI protocols on
/// the same links, CXL.cache beside CXL.mem) and each numbers its messages
/// from 0, so every [`CohMsg`] says whose catalogue its index is in.
///
/// Catalogues are interned for the life of the process ([`Catalogue::of`]):
/// a message carries a plain reference, copying it costs nothing, and two
/// catalogues are the same exactly when their ids are.
#[derive(Debug)]
pub struct Catalogue {
    /// Process-wide id (the order catalogues were first interned in; it
    /// never appears in outputs).
    pub id: u32,
    /// The protocol's name (`eci-dc`).
    pub protocol: &'static str,
    /// Message names by index.
    pub messages: Box<[&'static str]>,
}

impl PartialEq for Catalogue {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for Catalogue {}

impl Catalogue {
    /// The catalogue of `protocol` with these `messages`, interned: the same
    /// name and messages give the same catalogue.
    pub fn of(protocol: &str, messages: &[&str]) -> &'static Catalogue {
        type Key = (String, Vec<String>);
        static ALL: std::sync::OnceLock<
            std::sync::Mutex<std::collections::BTreeMap<Key, &'static Catalogue>>,
        > = std::sync::OnceLock::new();
        let mut all = ALL
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let key: Key = (
            protocol.to_string(),
            messages.iter().map(|m| m.to_string()).collect(),
        );
        let id = all.len() as u32;
        all.entry(key).or_insert_with(|| {
            Box::leak(Box::new(Catalogue {
                id,
                protocol: intern(protocol),
                messages: messages.iter().map(|m| intern(m)).collect(),
            }))
        })
    }
}

/// An agent's identity in a system, for messages between agents that have
/// several peers of a role (0 where a link has one agent at each end).
pub type AgentId = u16;

/// A message of the coherent system: a protocol message of a catalogue
/// about one line, with the line's data when the message carries some.
/// 32 bytes, so that the envelope [`Msg`] stays small.
#[derive(Clone, Debug)]
pub struct CohMsg {
    /// The catalogue `msg` indexes.
    pub catalogue: &'static Catalogue,
    /// Line index (byte address / line size).
    pub line: u64,
    /// The payload of data-carrying messages (made with
    /// [`boxed_line`](crate::boxed_line) and given back with
    /// [`recycle_line`](crate::recycle_line) by the hot paths, so that data
    /// messages allocate nothing in a long run).
    pub data: Option<Box<Line>>,
    /// Index in the catalogue.
    pub msg: u16,
    /// The sending agent (for agents with several peers of a role).
    pub src: AgentId,
    /// The receiving agent.
    pub dst: AgentId,
    /// The requester the message acts for (messages that carry one).
    pub req: AgentId,
}

impl CohMsg {
    /// Message `msg` of `catalogue` about `line`, between agents 0.
    #[inline]
    pub fn new(
        catalogue: &'static Catalogue,
        msg: u16,
        line: u64,
        data: Option<Box<Line>>,
    ) -> CohMsg {
        CohMsg {
            catalogue,
            line,
            data,
            msg,
            src: 0,
            dst: 0,
            req: 0,
        }
    }

    /// The message's name (`RLDD`).
    #[inline]
    pub fn name(&self) -> &'static str {
        self.catalogue.messages[self.msg as usize]
    }

    /// How traces and reports name the message.
    pub fn label(&self) -> String {
        format!("{} line={:#x}", self.name(), self.line)
    }
}

pub use ccsim_protocol::engine::intern;

#[cfg(test)]
mod tests {
    /// The envelope stays as small as the coherent messages that dominate
    /// coherent runs (their size is what every event-queue push copies).
    #[test]
    fn messages_are_small() {
        assert_eq!(std::mem::size_of::<super::CohMsg>(), 32);
        assert!(std::mem::size_of::<super::Msg>() <= 40);
    }

    /// An agent takes messages of its own protocol and names the others.
    #[test]
    fn into_coh_of_checks_the_protocol() {
        use super::{Catalogue, CohMsg, Msg};
        let mine = Catalogue::of("p-test", &["Get", "Put"]);
        let other = Catalogue::of("q-test", &["Get", "Put"]);
        let m = Msg::Coh(CohMsg::new(mine, 1, 0x40, None));
        assert_eq!(m.into_coh_of("agent", mine).unwrap().msg, 1);
        let m = Msg::Coh(CohMsg::new(other, 1, 0x40, None));
        assert_eq!(
            m.into_coh_of("agent", mine).unwrap_err(),
            "agent: Put for line 0x40 is a message of protocol q-test, but agent runs p-test"
        );
        let e = Msg::Interrupt { vector: 3 }
            .into_coh_of("agent", mine)
            .unwrap_err();
        assert!(e.contains("IRQ 3"), "{e}");
    }
}
