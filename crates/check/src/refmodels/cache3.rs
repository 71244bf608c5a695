//! The `cache3` directory protocol shipped with CMurphi (`ex/others/cache3.m`,
//! David L. Dill, after Andreas Nowatzyk and Ken McMillan; modified by Norris
//! Ip), re-implemented in Rust from the Murphi original's semantics.
//!
//! One home (memory, directory, "RAS") and `procs` processors (cache and
//! pending-message module, "PMM"), one address, `values` data values, and an
//! **unordered** network: a bounded set of `NetMax = procs + 3` messages kept
//! as an array whose first `count` entries are valid and whose other entries
//! are reset to a fixed default (all fields 0, type `Cache_Read`). Any valid
//! message may be received next. The original's constants are
//! `HomeCount = 1`, `ProcCount = 2`, `AddressCount = 1`, `ValueCount = 1`;
//! homes and addresses stay fixed at one here, processors and values are
//! parameters (rumur was also run with `ProcCount = 3` and `ValueCount = 2`,
//! see [`super::REFERENCE_COUNTS`]).
//!
//! Semantics kept from the original, since they change the counts:
//! - one startstate per data value (`Ruleset v : Value Do Startstate`), which
//!   sets memory *and every cache line's value* to `v`;
//! - the PMM receive rule (`Ruleset M_Index`) is enabled for *every* valid
//!   network slot, whoever the message is for; for messages it does not
//!   handle, and when it blocks, it fires without changing the state (those
//!   firings count as rules fired). The home receive rule is enabled only for
//!   valid slots holding a home-bound message type;
//! - blocking cases still perform the assignments that precede the block
//!   (e.g. an `Invalidate` received in `CR_Pend` clears the line's value);
//! - `Consume_Message` shifts the slots above the consumed one down and
//!   resets the last valid slot;
//! - node numbers are shared: home 0 and processor 0 are both node 0;
//! - Murphi run-time errors (`Error "..."`, an assignment out of a range type,
//!   an array index out of range) stop the verifier. Here they lead to a
//!   successor whose `error` field names the error; the invariant
//!   `no-error` reports it. rumur finds no error in the configurations of
//!   [`super::REFERENCE_COUNTS`], and neither does this model.
//!
//! Chart convention: a processor's request is an arrow to the home; every
//! reception is a local step of the receiving agent that names the message.

use std::fmt;

use crate::model::{ChartStep, Invariant, Model};

/// Largest number of processors this implementation holds.
pub const MAX_PROCS: usize = 4;
/// Largest number of data values.
pub const MAX_VALUES: usize = 4;
const MAX_NET: usize = MAX_PROCS + 3;
/// `HomeCount` of the original.
const HOME_COUNT: u8 = 1;

/// Message types (`Message_Type`), in declaration order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum MType {
    /// request for shared copy
    CacheRead = 0,
    /// request for master copy
    CacheReadEx,
    /// request for changing shared copy to master copy
    CachePromote,
    /// request for removing shared copy
    Uncache,
    /// request for removing master copy
    WriteBack,
    /// update data memory w/ new value
    Update,
    /// reply with data
    Data,
    /// request invalidate data at cache
    Invalidate,
    /// acknowledge for uncache data
    UncacheAck,
    /// acknowledge for write back
    WriteBackAck,
    /// acknowledge for invalidate
    InvAck,
    /// forwarded shared copy request to remote
    FwCacheR,
    /// forwarded master copy request to remote
    FwCacheREx,
    /// acknowledge for forwarded master copy
    AckFwCacheEx,
    /// grant permission to change to master copy
    CachePromoteAck,
}

impl MType {
    fn is_home_bound(self) -> bool {
        matches!(
            self,
            MType::CacheRead
                | MType::CacheReadEx
                | MType::CachePromote
                | MType::WriteBack
                | MType::Update
                | MType::Uncache
                | MType::AckFwCacheEx
                | MType::InvAck
        )
    }
}

/// Directory states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DirState {
    /// Invalid
    Inv = 0,
    /// Shared by remote clusters
    SharedRemote,
    /// Owned by a remote cluster
    MasterRemote,
    /// Waiting for Invalidate Acknowledge
    WaitInv,
    /// Waiting for Update to home
    WaitUpdate,
    /// Waiting for ack for the transfer of ownership or write back
    WaitWb,
}

/// Cache line states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum LineState {
    /// Invalid
    I = 0,
    /// Shared
    S,
    /// Master
    M,
}

/// Pending-message-module states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Pmm {
    /// nothing pending
    Nop = 0,
    /// waiting for Cache_Read reply
    CrPend,
    /// waiting for Cache_Read_Ex reply
    CrePend,
    /// waiting for Cache_Promote reply
    CpPend,
    /// waiting for Write_Back_Ack
    WbPend,
    /// waiting for Uncache_Ack
    UncachePend,
}

/// A network message (`Address` is always 0 with one address, so it is not
/// stored).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Msg {
    /// Message type.
    pub mtype: MType,
    /// Source node.
    pub source: u8,
    /// Destination node.
    pub destination: u8,
    /// `Aux`: the requester in `Fw_Cache_R(_Ex)`, the home in `Data`.
    pub aux: u8,
    /// Data value.
    pub value: u8,
}

/// The reset value of a network slot (`Clear` of a message: first enum
/// value, all numbers 0).
const EMPTY_MSG: Msg = Msg {
    mtype: MType::CacheRead,
    source: 0,
    destination: 0,
    aux: 0,
    value: 0,
};

impl fmt::Debug for Msg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?}(src={},dst={},aux={},val={})",
            self.mtype, self.source, self.destination, self.aux, self.value
        )
    }
}

/// A processor's cache line and PMM state for the one home and address.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProcState {
    /// Cache line state.
    pub line: LineState,
    /// Cache line value.
    pub value: u8,
    /// Pending message module.
    pub pmm: Pmm,
}

/// A state of `cache3`. Unused processor and network slots stay at their
/// reset values, so equality is equality of the Murphi state.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Cache3State {
    /// Number of valid network slots.
    pub net_count: u8,
    /// Network slots; `net[net_count..]` are reset.
    pub net: [Msg; MAX_NET],
    /// Home memory.
    pub mem: u8,
    /// Directory state.
    pub dir: DirState,
    /// Directory sharer count.
    pub shared_count: u8,
    /// Directory entries (processor numbers).
    pub entries: [u8; MAX_PROCS],
    /// Pending invalidations.
    pub inv_count: u8,
    /// The processors.
    pub procs: [ProcState; MAX_PROCS],
    /// 0, or 1 + the index in [`ERRORS`] of the Murphi run-time error raised
    /// on the way to this state.
    pub error: u8,
}

/// The Murphi run-time errors the model can raise (`error` field).
pub const ERRORS: &[&str] = &[
    "Network is full",
    "Invalid Message Index",
    "Directory overflow",
    "Cannot remove from empty directory",
    "Bad invalidation count",
    "Should be in RE state",
    "PMM state not Uncache_Pend",
    "PMM state not WB_Pend",
    "Data received in funny PMMState",
    "Got Invalidate with funny PMM state",
    "Invalidate message when in M state",
    "Fw_Cache_R received with funny PMMState",
    "Fw_Cache_R_Ex received, but Cache not M",
    "Fw_Cache_R_Ex received in funny PMMState",
    "Cache_Promote_Ack when PMMstate not CP_Pend",
    "Uncache_Ack received in funny PMMState",
    "Write_Back_Ack when PMMState not WB_Pend",
    "Cache_Read received in funny Dir state",
    "Cache_Read_Ex received in funny Dir state",
    "Home in Inv state on Cache_Promote",
    "Cache_Promote received in funny Dir state",
    "Writeback received in funny Dir state",
    "Update received in funny Dir state",
    "Uncache received in funny Dir state",
    "Ack_Fw_Cache_Ex received in funny Dir state",
    "value out of range in assignment",
    "array index out of bounds",
];

/// A Murphi run-time error: an index into [`ERRORS`].
type MurphiError = u8;

fn err(msg: &str) -> MurphiError {
    ERRORS
        .iter()
        .position(|e| *e == msg)
        .expect("error message listed in ERRORS") as u8
}

impl fmt::Debug for Cache3State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Home{{mem={} dir={:?} count={} entries={:?} inv={}}}",
            self.mem, self.dir, self.shared_count, self.entries, self.inv_count
        )?;
        for (p, st) in self.procs.iter().enumerate() {
            write!(f, " P{p}{{{:?} val={} {:?}}}", st.line, st.value, st.pmm)?;
        }
        write!(f, " Net[{}]=[", self.net_count)?;
        for (i, m) in self.net[..self.net_count as usize].iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{m:?}")?;
        }
        f.write_str("]")?;
        if self.error != 0 {
            write!(f, " ERROR: {}", ERRORS[self.error as usize - 1])?;
        }
        Ok(())
    }
}

/// A rule instance of `cache3`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cache3Action {
    /// Processor `n` issues a `Cache_Read` (I, NOP, room in the network).
    IssueCacheRead(u8),
    /// Processor `n` issues a `Cache_Read_Ex`.
    IssueCacheReadEx(u8),
    /// Processor `n` (Shared) issues a `Cache_Promote`.
    IssueCachePromote(u8),
    /// Processor `n` (Shared) issues an `Uncache`.
    IssueUncache(u8),
    /// Processor `n` (Master) writes back because of replacement.
    IssueWriteBack(u8),
    /// Processor `n` (Master, NOP) writes value `v`.
    Store(u8, u8),
    /// The PMM receive rule on network slot `M_Index`.
    PmmReceive(u8),
    /// The home (RAS) receive rule on network slot `M_Index`.
    HomeReceive(u8),
}

/// The `cache3` protocol (see the module docs).
#[derive(Clone, Debug)]
pub struct Cache3 {
    procs: u8,
    values: u8,
}

impl Cache3 {
    /// The original configuration: one home, two processors, one address,
    /// one value.
    pub fn new() -> Self {
        Cache3::with_params(2, 1)
    }

    /// `procs` processors (`ProcCount`, 1..=[`MAX_PROCS`]) and `values` data
    /// values (`ValueCount`, 1..=[`MAX_VALUES`]).
    ///
    /// # Panics
    /// If a parameter is out of range.
    pub fn with_params(procs: usize, values: usize) -> Self {
        assert!(
            (1..=MAX_PROCS).contains(&procs),
            "cache3: procs must be 1..={MAX_PROCS}"
        );
        assert!(
            (1..=MAX_VALUES).contains(&values),
            "cache3: values must be 1..={MAX_VALUES}"
        );
        Cache3 {
            procs: procs as u8,
            values: values as u8,
        }
    }

    /// `(procs, values)`: `ProcCount` and `ValueCount`.
    pub fn params(&self) -> (usize, usize) {
        (self.procs as usize, self.values as usize)
    }

    /// `DirMax` = `ProcCount`.
    fn dir_max(&self) -> u8 {
        self.procs
    }

    /// `NetMax` = `DirMax + 3`.
    fn net_max(&self) -> u8 {
        self.dir_max() + 3
    }

    // Written as in the original, hence the lint exception.
    #[allow(clippy::int_plus_one)]
    fn issue_guard_room(&self, s: &Cache3State) -> bool {
        // Net.Count <= NetMax - ProcCount - 1
        (s.net_count as i32) <= self.net_max() as i32 - self.procs as i32 - 1
    }

    fn guard(&self, s: &Cache3State, a: Cache3Action) -> bool {
        if s.error != 0 {
            return false;
        }
        let p = |n: u8| &s.procs[n as usize];
        match a {
            Cache3Action::IssueCacheRead(n) | Cache3Action::IssueCacheReadEx(n) => {
                p(n).line == LineState::I && p(n).pmm == Pmm::Nop && self.issue_guard_room(s)
            }
            Cache3Action::IssueCachePromote(n) | Cache3Action::IssueUncache(n) => {
                p(n).line == LineState::S && p(n).pmm == Pmm::Nop && self.issue_guard_room(s)
            }
            Cache3Action::IssueWriteBack(n) => {
                p(n).line == LineState::M && p(n).pmm == Pmm::Nop && self.issue_guard_room(s)
            }
            Cache3Action::Store(n, _) => p(n).line == LineState::M && p(n).pmm == Pmm::Nop,
            Cache3Action::PmmReceive(m) => m < s.net_count,
            Cache3Action::HomeReceive(m) => {
                m < s.net_count && s.net[m as usize].mtype.is_home_bound()
            }
        }
    }

    // ---- network procedures ----

    fn send(
        &self,
        s: &mut Cache3State,
        t: MType,
        dst: u8,
        src: u8,
        aux: u8,
        val: u8,
    ) -> Result<(), MurphiError> {
        if s.net_count == self.net_max() {
            return Err(err("Network is full"));
        }
        s.net[s.net_count as usize] = Msg {
            mtype: t,
            source: src,
            destination: dst,
            aux,
            value: val,
        };
        s.net_count += 1;
        Ok(())
    }

    fn consume(&self, s: &mut Cache3State, m: u8) -> Result<(), MurphiError> {
        if m >= s.net_count {
            return Err(err("Invalid Message Index"));
        }
        let net_max = self.net_max() as usize;
        for i in (m as usize)..net_max - 1 {
            s.net[i] = s.net[i + 1];
        }
        s.net[s.net_count as usize - 1] = EMPTY_MSG;
        s.net_count -= 1;
        Ok(())
    }

    // ---- directory procedures ----

    fn add_dir_entry(&self, s: &mut Cache3State, n: u8) -> Result<(), MurphiError> {
        if s.shared_count == self.dir_max() {
            return Err(err("Directory overflow"));
        }
        s.entries[s.shared_count as usize] = n;
        s.shared_count += 1;
        Ok(())
    }

    fn remove_dir_entry(&self, s: &mut Cache3State, n: u8) -> Result<(), MurphiError> {
        if s.shared_count == 0 {
            return Err(err("Cannot remove from empty directory"));
        }
        for i in 0..self.dir_max() {
            if i < s.shared_count && s.entries[i as usize] == n {
                let last = s.shared_count as usize - 1;
                s.entries[i as usize] = s.entries[last];
                s.entries[last] = 0;
                s.shared_count -= 1;
            }
        }
        if s.shared_count == 0 {
            s.dir = DirState::Inv;
        }
        Ok(())
    }

    fn handle_inv_ack(&self, s: &mut Cache3State) -> Result<(), MurphiError> {
        if s.inv_count == 0 {
            return Err(err("Bad invalidation count"));
        }
        s.inv_count -= 1;
        if s.inv_count == 0 {
            if s.dir != DirState::WaitInv {
                return Err(err("Should be in RE state"));
            }
            s.dir = DirState::MasterRemote;
        }
        Ok(())
    }

    fn handle_uncache_ack(&self, s: &mut Cache3State, n: u8) -> Result<(), MurphiError> {
        let p = &mut s.procs[n as usize];
        if p.pmm != Pmm::UncachePend {
            return Err(err("PMM state not Uncache_Pend"));
        }
        p.pmm = Pmm::Nop;
        p.line = LineState::I;
        p.value = 0;
        Ok(())
    }

    fn handle_write_back_ack(&self, s: &mut Cache3State, n: u8) -> Result<(), MurphiError> {
        let p = &mut s.procs[n as usize];
        if p.pmm != Pmm::WbPend {
            return Err(err("PMM state not WB_Pend"));
        }
        p.pmm = Pmm::Nop;
        p.line = LineState::I;
        p.value = 0;
        Ok(())
    }

    /// `Inv_Count : Proc` — assignments are range-checked.
    fn set_inv_count(&self, s: &mut Cache3State, v: i32) -> Result<(), MurphiError> {
        if v < 0 || v >= self.procs as i32 {
            return Err(err("value out of range in assignment"));
        }
        s.inv_count = v as u8;
        Ok(())
    }

    /// Indexing an `Array [Home]` with a node number.
    fn home_index(x: u8) -> Result<(), MurphiError> {
        if x < HOME_COUNT {
            Ok(())
        } else {
            Err(err("array index out of bounds"))
        }
    }

    // ---- rules ----

    fn fire(&self, s: &mut Cache3State, a: Cache3Action) -> Result<(), MurphiError> {
        const H: u8 = 0; // the only home
        match a {
            Cache3Action::IssueCacheRead(n) => {
                s.procs[n as usize].pmm = Pmm::CrPend;
                self.send(s, MType::CacheRead, H, n, 0, 0)
            }
            Cache3Action::IssueCacheReadEx(n) => {
                s.procs[n as usize].pmm = Pmm::CrePend;
                self.send(s, MType::CacheReadEx, H, n, 0, 0)
            }
            Cache3Action::IssueCachePromote(n) => {
                s.procs[n as usize].pmm = Pmm::CpPend;
                self.send(s, MType::CachePromote, H, n, 0, 0)
            }
            Cache3Action::IssueUncache(n) => {
                s.procs[n as usize].pmm = Pmm::UncachePend;
                self.send(s, MType::Uncache, H, n, 0, 0)
            }
            Cache3Action::IssueWriteBack(n) => {
                s.procs[n as usize].pmm = Pmm::WbPend;
                let v = s.procs[n as usize].value;
                self.send(s, MType::WriteBack, H, n, 0, v)
            }
            Cache3Action::Store(n, v) => {
                s.procs[n as usize].value = v;
                Ok(())
            }
            Cache3Action::PmmReceive(m) => self.pmm_receive(s, m),
            Cache3Action::HomeReceive(m) => self.home_receive(s, m),
        }
    }

    /// The PMM receive rule for slot `m` (`n` = the message's destination).
    fn pmm_receive(&self, s: &mut Cache3State, m: u8) -> Result<(), MurphiError> {
        let msg = s.net[m as usize];
        let n = msg.destination;
        let ni = n as usize;
        match msg.mtype {
            MType::Data => {
                Self::home_index(msg.aux)?;
                match s.procs[ni].pmm {
                    Pmm::CrPend => {
                        let p = &mut s.procs[ni];
                        p.pmm = Pmm::Nop;
                        p.line = LineState::S;
                        p.value = msg.value;
                        self.consume(s, m)
                    }
                    Pmm::CrePend => {
                        let p = &mut s.procs[ni];
                        p.pmm = Pmm::Nop;
                        p.line = LineState::M;
                        p.value = msg.value;
                        self.consume(s, m)
                    }
                    _ => Err(err("Data received in funny PMMState")),
                }
            }
            MType::Invalidate => {
                Self::home_index(msg.source)?;
                let line = s.procs[ni].line;
                if line == LineState::S || line == LineState::I {
                    s.procs[ni].line = LineState::I;
                    s.procs[ni].value = 0;
                    match s.procs[ni].pmm {
                        Pmm::Nop => {
                            self.send(s, MType::InvAck, msg.source, n, 0, 0)?;
                            self.consume(s, m)
                        }
                        Pmm::CrPend => Ok(()), // block: wait for the data
                        Pmm::CrePend | Pmm::CpPend => {
                            // abort; home treats the request as an Inv_Ack
                            s.procs[ni].pmm = Pmm::Nop;
                            self.consume(s, m)
                        }
                        Pmm::UncachePend => {
                            self.handle_uncache_ack(s, n)?;
                            self.consume(s, m)
                        }
                        Pmm::WbPend => Err(err("Got Invalidate with funny PMM state")),
                    }
                } else {
                    Err(err("Invalidate message when in M state"))
                }
            }
            MType::FwCacheR => {
                Self::home_index(msg.source)?;
                match s.procs[ni].pmm {
                    Pmm::Nop => {
                        s.procs[ni].line = LineState::S;
                        let v = s.procs[ni].value;
                        self.send(s, MType::Data, msg.aux, n, msg.source, v)?;
                        self.send(s, MType::Update, msg.source, n, 0, v)?;
                        self.consume(s, m)
                    }
                    Pmm::CrePend | Pmm::CpPend => Ok(()), // block
                    Pmm::WbPend => {
                        let v = s.procs[ni].value;
                        self.send(s, MType::Data, msg.aux, n, msg.source, v)?;
                        self.handle_write_back_ack(s, n)?;
                        self.consume(s, m)
                    }
                    _ => Err(err("Fw_Cache_R received with funny PMMState")),
                }
            }
            MType::FwCacheREx => {
                Self::home_index(msg.source)?;
                match s.procs[ni].pmm {
                    Pmm::Nop => {
                        if s.procs[ni].line != LineState::M {
                            return Err(err("Fw_Cache_R_Ex received, but Cache not M"));
                        }
                        let v = s.procs[ni].value;
                        self.send(s, MType::Data, msg.aux, n, msg.source, v)?;
                        s.procs[ni].line = LineState::I;
                        s.procs[ni].value = 0;
                        self.send(s, MType::AckFwCacheEx, msg.source, n, 0, 0)?;
                        self.consume(s, m)
                    }
                    Pmm::WbPend => {
                        let v = s.procs[ni].value;
                        self.send(s, MType::Data, msg.aux, n, msg.source, v)?;
                        self.handle_write_back_ack(s, n)?;
                        self.consume(s, m)
                    }
                    Pmm::CpPend | Pmm::CrePend => Ok(()), // block
                    _ => Err(err("Fw_Cache_R_Ex received in funny PMMState")),
                }
            }
            MType::CachePromoteAck => {
                Self::home_index(msg.source)?;
                if s.procs[ni].pmm == Pmm::CpPend {
                    s.procs[ni].pmm = Pmm::Nop;
                    s.procs[ni].line = LineState::M;
                    self.consume(s, m)
                } else {
                    Err(err("Cache_Promote_Ack when PMMstate not CP_Pend"))
                }
            }
            MType::UncacheAck => {
                Self::home_index(msg.source)?;
                if s.procs[ni].pmm == Pmm::UncachePend {
                    self.handle_uncache_ack(s, n)?;
                    self.consume(s, m)
                } else {
                    Err(err("Uncache_Ack received in funny PMMState"))
                }
            }
            MType::WriteBackAck => {
                Self::home_index(msg.source)?;
                if s.procs[ni].pmm == Pmm::WbPend {
                    self.handle_write_back_ack(s, n)?;
                    self.consume(s, m)
                } else {
                    Err(err("Write_Back_Ack when PMMState not WB_Pend"))
                }
            }
            // Not for a processor: the rule fires and does nothing.
            _ => Ok(()),
        }
    }

    /// The home (RAS) receive rule for slot `m` (`n` = the message's
    /// destination, the home).
    fn home_receive(&self, s: &mut Cache3State, m: u8) -> Result<(), MurphiError> {
        let msg = s.net[m as usize];
        let n = msg.destination;
        Self::home_index(n)?;
        let src = msg.source;
        match msg.mtype {
            MType::CacheRead => match s.dir {
                DirState::Inv => {
                    s.dir = DirState::SharedRemote;
                    s.shared_count = 1;
                    s.entries[0] = src;
                    self.send(s, MType::Data, src, n, n, s.mem)?;
                    self.consume(s, m)
                }
                DirState::SharedRemote => {
                    self.add_dir_entry(s, src)?;
                    self.send(s, MType::Data, src, n, n, s.mem)?;
                    self.consume(s, m)
                }
                DirState::MasterRemote => {
                    s.dir = DirState::WaitUpdate;
                    s.shared_count = 1;
                    self.send(s, MType::FwCacheR, s.entries[0], n, src, 0)?;
                    self.add_dir_entry(s, src)?;
                    s.dir = DirState::WaitUpdate;
                    self.consume(s, m)
                }
                DirState::WaitInv | DirState::WaitWb | DirState::WaitUpdate => Ok(()), // block
            },
            MType::CacheReadEx => match s.dir {
                DirState::Inv => {
                    s.dir = DirState::MasterRemote;
                    self.add_dir_entry(s, src)?;
                    self.send(s, MType::Data, src, n, n, s.mem)?;
                    self.consume(s, m)
                }
                DirState::SharedRemote => {
                    for i in 0..self.dir_max() {
                        if i < s.shared_count {
                            self.send(s, MType::Invalidate, s.entries[i as usize], n, 0, 0)?;
                        }
                    }
                    self.set_inv_count(s, s.shared_count as i32)?;
                    self.send(s, MType::Data, src, n, n, s.mem)?;
                    s.entries = [0; MAX_PROCS];
                    s.shared_count = 0;
                    s.dir = DirState::WaitInv;
                    self.add_dir_entry(s, src)?;
                    self.consume(s, m)
                }
                DirState::MasterRemote => {
                    self.send(s, MType::FwCacheREx, s.entries[0], n, src, 0)?;
                    s.entries = [0; MAX_PROCS];
                    s.shared_count = 0;
                    s.dir = DirState::WaitWb;
                    self.add_dir_entry(s, src)?;
                    self.consume(s, m)
                }
                DirState::WaitInv | DirState::WaitWb | DirState::WaitUpdate => Ok(()), // block
            },
            MType::CachePromote => match s.dir {
                DirState::Inv => Err(err("Home in Inv state on Cache_Promote")),
                DirState::SharedRemote => {
                    if s.shared_count == 1 {
                        s.dir = DirState::MasterRemote;
                    } else {
                        for i in 0..self.dir_max() {
                            if i < s.shared_count && s.entries[i as usize] != src {
                                self.send(s, MType::Invalidate, s.entries[i as usize], n, 0, 0)?;
                            }
                        }
                        self.set_inv_count(s, s.shared_count as i32 - 1)?;
                        s.entries = [0; MAX_PROCS];
                        s.shared_count = 0;
                        s.dir = DirState::WaitInv;
                        self.add_dir_entry(s, src)?;
                    }
                    self.send(s, MType::CachePromoteAck, src, n, 0, 0)?;
                    self.consume(s, m)
                }
                DirState::WaitInv | DirState::MasterRemote => {
                    self.handle_inv_ack(s)?;
                    self.consume(s, m)
                }
                DirState::WaitUpdate => Ok(()), // block
                DirState::WaitWb => Err(err("Cache_Promote received in funny Dir state")),
            },
            MType::WriteBack => match s.dir {
                DirState::MasterRemote => {
                    s.mem = msg.value;
                    self.remove_dir_entry(s, src)?;
                    self.send(s, MType::WriteBackAck, src, n, 0, 0)?;
                    self.consume(s, m)
                }
                DirState::WaitWb => {
                    if s.entries[0] != src {
                        s.mem = msg.value;
                        s.dir = DirState::MasterRemote;
                        self.consume(s, m)
                    } else {
                        Ok(()) // write-back from the new owner: block
                    }
                }
                DirState::WaitUpdate => {
                    s.mem = msg.value;
                    self.remove_dir_entry(s, src)?;
                    s.dir = DirState::SharedRemote;
                    self.consume(s, m)
                }
                DirState::WaitInv => {
                    if s.entries[0] != src {
                        self.handle_inv_ack(s)?;
                        self.consume(s, m)
                    } else {
                        Ok(()) // block
                    }
                }
                DirState::Inv | DirState::SharedRemote => {
                    Err(err("Writeback received in funny Dir state"))
                }
            },
            MType::Update => match s.dir {
                DirState::WaitUpdate => {
                    s.mem = msg.value;
                    s.dir = DirState::SharedRemote;
                    self.consume(s, m)
                }
                _ => Err(err("Update received in funny Dir state")),
            },
            MType::Uncache => match s.dir {
                DirState::WaitInv => {
                    self.handle_inv_ack(s)?;
                    self.consume(s, m)
                }
                DirState::WaitUpdate => Ok(()), // block
                DirState::SharedRemote => {
                    self.remove_dir_entry(s, src)?;
                    self.send(s, MType::UncacheAck, src, n, 0, 0)?;
                    self.consume(s, m)
                }
                DirState::Inv | DirState::MasterRemote | DirState::WaitWb => {
                    Err(err("Uncache received in funny Dir state"))
                }
            },
            MType::AckFwCacheEx => match s.dir {
                DirState::WaitWb => {
                    s.dir = DirState::MasterRemote;
                    self.consume(s, m)
                }
                _ => Err(err("Ack_Fw_Cache_Ex received in funny Dir state")),
            },
            MType::InvAck => {
                self.handle_inv_ack(s)?;
                self.consume(s, m)
            }
            // Not home-bound: excluded by the guard.
            _ => Ok(()),
        }
    }
}

impl Default for Cache3 {
    fn default() -> Self {
        Cache3::new()
    }
}

impl Model for Cache3 {
    type State = Cache3State;
    type Action = Cache3Action;

    fn init_states(&self) -> Vec<Cache3State> {
        (0..self.values)
            .map(|v| {
                let mut procs = [ProcState {
                    line: LineState::I,
                    value: 0,
                    pmm: Pmm::Nop,
                }; MAX_PROCS];
                for p in procs.iter_mut().take(self.procs as usize) {
                    p.value = v;
                }
                Cache3State {
                    net_count: 0,
                    net: [EMPTY_MSG; MAX_NET],
                    mem: v,
                    dir: DirState::Inv,
                    shared_count: 0,
                    entries: [0; MAX_PROCS],
                    inv_count: 0,
                    procs,
                    error: 0,
                }
            })
            .collect()
    }

    fn actions(&self, s: &Cache3State, out: &mut Vec<Cache3Action>) {
        if s.error != 0 {
            return;
        }
        for n in 0..self.procs {
            for a in [
                Cache3Action::IssueCacheRead(n),
                Cache3Action::IssueCacheReadEx(n),
                Cache3Action::IssueCachePromote(n),
                Cache3Action::IssueUncache(n),
                Cache3Action::IssueWriteBack(n),
            ] {
                if self.guard(s, a) {
                    out.push(a);
                }
            }
            for v in 0..self.values {
                let a = Cache3Action::Store(n, v);
                if self.guard(s, a) {
                    out.push(a);
                }
            }
        }
        for m in 0..s.net_count {
            out.push(Cache3Action::PmmReceive(m));
        }
        for m in 0..s.net_count {
            if s.net[m as usize].mtype.is_home_bound() {
                out.push(Cache3Action::HomeReceive(m));
            }
        }
    }

    fn next_state(&self, s: &Cache3State, a: &Cache3Action) -> Option<Cache3State> {
        if !self.guard(s, *a) {
            return None;
        }
        let mut next = s.clone();
        match self.fire(&mut next, *a) {
            Ok(()) => Some(next),
            Err(e) => {
                // Murphi stops at a run-time error; the successor records it.
                let mut errored = s.clone();
                errored.error = e + 1;
                Some(errored)
            }
        }
    }

    fn invariants(&self) -> Vec<Invariant<Self>> {
        vec![
            Invariant {
                name: "no-error",
                check: |_, s| {
                    if s.error == 0 {
                        Ok(())
                    } else {
                        Err(format!(
                            "Murphi run-time error: {}",
                            ERRORS[s.error as usize - 1]
                        ))
                    }
                },
            },
            Invariant {
                name: "directory-consistent",
                check: |m, s| m.inv1(s),
            },
            Invariant {
                name: "single-master",
                check: |m, s| m.inv2(s),
            },
            Invariant {
                name: "shared-value",
                check: |m, s| m.inv3(s),
            },
        ]
    }

    fn chart_step(&self, s: &Cache3State, a: &Cache3Action) -> ChartStep {
        let p = |n: u8| format!("p{n}");
        let home = || "home".to_string();
        let local = |who: String, label: String| ChartStep {
            from: who.clone(),
            to: who,
            label,
        };
        match *a {
            Cache3Action::IssueCacheRead(n) => arrow(p(n), home(), "Cache_Read"),
            Cache3Action::IssueCacheReadEx(n) => arrow(p(n), home(), "Cache_Read_Ex"),
            Cache3Action::IssueCachePromote(n) => arrow(p(n), home(), "Cache_Promote"),
            Cache3Action::IssueUncache(n) => arrow(p(n), home(), "Uncache"),
            Cache3Action::IssueWriteBack(n) => arrow(p(n), home(), "Write_Back"),
            Cache3Action::Store(n, v) => local(p(n), format!("store {v}")),
            Cache3Action::PmmReceive(m) => {
                let msg = s.net[m as usize];
                local(p(msg.destination), format!("PMM handles {msg:?}"))
            }
            Cache3Action::HomeReceive(m) => {
                let msg = s.net[m as usize];
                local(home(), format!("home handles {msg:?}"))
            }
        }
    }

    fn agents(&self) -> Vec<String> {
        (0..self.procs)
            .map(|n| format!("p{n}"))
            .chain(std::iter::once("home".to_string()))
            .collect()
    }
}

fn arrow(from: String, to: String, label: &str) -> ChartStep {
    ChartStep {
        from,
        to,
        label: label.to_string(),
    }
}

// ---- the original's three invariants ----
impl Cache3 {
    fn valid_msgs<'s>(&self, s: &'s Cache3State) -> &'s [Msg] {
        &s.net[..s.net_count as usize]
    }

    /// Directory in `Inv` has no sharers, and entries past the count are 0.
    fn inv1(&self, s: &Cache3State) -> Result<(), String> {
        if s.dir == DirState::Inv && s.shared_count != 0 {
            return Err(format!(
                "directory Inv with Shared_Count = {}",
                s.shared_count
            ));
        }
        for i in 0..self.dir_max() {
            if i >= s.shared_count && s.entries[i as usize] != 0 {
                return Err(format!("directory entry {i} set beyond Shared_Count"));
            }
        }
        Ok(())
    }

    /// No two processors both hold a usable copy while one is Master.
    fn inv2(&self, s: &Cache3State) -> Result<(), String> {
        let h = 0u8;
        for n1 in 0..self.procs {
            for n2 in 0..self.procs {
                if n1 == n2 {
                    continue;
                }
                let p1 = &s.procs[n1 as usize];
                let p2 = &s.procs[n2 as usize];
                let m1 = p1.line == LineState::M && p1.pmm != Pmm::WbPend;
                let m2 = p2.line == LineState::M && p2.pmm != Pmm::WbPend;
                let s2 = p2.line == LineState::S
                    && p2.pmm != Pmm::UncachePend
                    && !self.valid_msgs(s).iter().any(|m| {
                        m.mtype == MType::Invalidate && m.source == h && m.destination == n2
                    });
                if m1 && (m2 || s2) {
                    return Err(format!(
                        "processor {n1} is Master while processor {n2} holds a copy"
                    ));
                }
            }
        }
        Ok(())
    }

    /// A Shared copy holds memory's value unless an Invalidate, Update or
    /// Write_Back explains the difference.
    fn inv3(&self, s: &Cache3State) -> Result<(), String> {
        let h = 0u8;
        for n1 in 0..self.procs {
            let p1 = &s.procs[n1 as usize];
            if p1.line == LineState::S && p1.value != s.mem && p1.pmm != Pmm::UncachePend {
                let explained = self.valid_msgs(s).iter().any(|m| {
                    (m.mtype == MType::Invalidate && m.source == h && m.destination == n1)
                        || (m.mtype == MType::Update && m.destination == h && m.value == p1.value)
                        || (m.mtype == MType::WriteBack
                            && m.destination == h
                            && m.value == p1.value)
                });
                if !explained {
                    return Err(format!(
                        "processor {n1} is Shared with value {} but memory holds {}",
                        p1.value, s.mem
                    ));
                }
            }
        }
        Ok(())
    }
}
