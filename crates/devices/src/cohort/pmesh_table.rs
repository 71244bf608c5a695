//! # The SoC's directory runs the verified P-Mesh table
//!
//! `protocols/pmesh.toml` is OpenPiton's P-Mesh in the role form: the
//! `l15` role (a tile's L1.5, MESI with transient states) and the `l2` role
//! (the line's home, a blocking directory with an owner or sharers). The
//! checker verifies it (`ccsim protocol check pmesh`, rumur agrees). This
//! module makes the Cohort SoC's directory ([`super::World::coherent`])
//! *execute* it: every coherence transaction of the SoC is one **walk** of
//! the table, run atomically (the SoC serialises a line's transactions
//! behind its `busy_until`, so nothing interleaves inside one):
//!
//! ```text
//!   requester L1.5 (state, load/store/evict) ─LOAD_REQ/STORE_REQ/WB_REQ─▶ L2 (I/S/O)
//!        ▲                                       │ LOAD_FWD / STORE_FWD to the owner,
//!        │ DATA_ACK_E/S/M, NODATA_ACK            │ INV_FWD to each sharer (ack counter)
//!        └──────────────── L2 completes ◀─ FWDACKs (more_acks / last_ack)
//! ```
//!
//! A walk returns the messages exchanged ([`Walk`]) and leaves the end
//! states in the [`LineView`]: the requester's, the L2's with its owner and
//! sharers ([`DirEntry`]), and every other tile's. The SoC takes the next
//! directory state from it and prices the transaction by its messages
//! (LOAD_FWDACK_DATA: `load_fwd`, LOAD_FWDACK: `load_fwd_clean`, the
//! STORE_FWDACKs likewise, n INV_FWDs: `store_inv` + (n − 1) ×
//! `store_inv_extra`, a request the L2 answers itself: `load_miss` or
//! `store_miss`, no message: a hit). A cell the table does not have
//! (unspecified, a stall inside an atomic walk, or a walk that ends in a
//! transient state) is a panic naming the cell: the SoC would be running
//! a protocol other than the verified one.
//!
//! Rows are compiled once ([`CompiledTable`]); names are resolved to
//! indices when the table is loaded ([`PmeshTable::new`]), so a walk does
//! no string lookups. Every row taken is counted per cell ([`Walker::taken`]).
//!
//! ## Where the SoC's state has no table counterpart (the mapping)
//!
//! * **16 B L1.5 lines in a 64 B L2 line.** The table is per line; the SoC's
//!   directory entry is per 64 B L2 line and each tile's L1.5 holds it as
//!   16 B lines (OpenPiton's `L15_LINE_SIZE`). A tile's table state is the
//!   entry's view of it (the owner: M if it wrote the line, else E; a listed
//!   sharer: S; else I), except that the requester is in I for a 16 B line
//!   it has not got: its access is then a LOAD_REQ or STORE_REQ the L2
//!   answers itself (`S + LOAD_REQ`, `O + *_REQ from_owner`), the SoC's
//!   *sub-line fill*. The owner stays dirty across such a fill (the table's
//!   DATA_ACK_E is about the 16 B, the entry's M about the line). Which
//!   16 B lines each tile has (the presence bits) is the SoC's alone.
//! * **A write-back of one 16 B line** (a Modified L1.5 victim, `M + evict`
//!   → WB_REQ → `O + WB_REQ from_owner` → I) ends the owner's entry only
//!   when it was the owner's last 16 B of the line; before that the walk
//!   gives its messages (its cost) and the entry keeps the owner.
//! * **An L2 victim** (the inclusive L2 recalls the line): the table has no
//!   L2 eviction event, so the recall ([`Walker::recall`]) sends the L1.5
//!   rows the forwards the table has: STORE_FWD to an owner (E and M have
//!   no INV_FWD row), INV_FWD to each sharer; their answers are counted and
//!   the entry ends in I.
//! * **The baseline unit's loads and stores** are the table's
//!   `load_noshare` and `store_noshare` rows ([`super::World::load_noshare`],
//!   [`super::World::store_noshare`]): MAPLE reads memory with
//!   LOAD_NOSHARE_REQ from its own NoC1 port, which the L2 answers without
//!   recording the tile (an owner elsewhere is downgraded by a LOAD_FWD
//!   first, and may be left S's only sharer), and writes it with
//!   SWAPWB_REQ, which the L2 performs itself once it has taken the line
//!   from the tiles (module doc of [`super::maple`]). No directory change
//!   of the SoC is outside the table. A store by S's only sharer takes
//!   OpenPiton's INV_FWD to the requester itself (`S + STORE_REQ
//!   [no_other_sharers]`; `l2_pipe1_ctrl.v.pyv` at 41a14a05: `L2_MESI_S`
//!   → `MSG_TYPE_INV_FWD` over `dir_data_S4`, no mask for the requester),
//!   priced as an invalidation round of one.

use std::sync::{Arc, OnceLock};

use ccsim_protocol::engine::{pick, Cell, CompiledTable, DirEntry, Protocol, Step};
use ccsim_protocol::ir::Target;

/// The most tiles a walk tracks (the SoC's sharer masks are 32 bits).
pub const MAX_AGENTS: usize = 32;

/// The most message types a table may have (the [`Walk`] tally's size).
const MAX_MSGS: usize = 32;

/// A walk's destination for the L2 (tiles are 0..[`MAX_AGENTS`]).
const TO_L2: u16 = u16::MAX;

/// The P-Mesh table, compiled, with the names the SoC uses resolved to
/// indices.
pub struct PmeshTable {
    proto: Protocol,
    l15: CompiledTable<()>,
    l2: CompiledTable<()>,
    l15_role: usize,
    l2_role: usize,
    /// Where the table came from (for messages).
    pub origin: String,
    /// L1.5 states `I`, `S`, `E`, `M`.
    pub l15_i: u8,
    /// See `l15_i`.
    pub l15_s: u8,
    /// See `l15_i`.
    pub l15_e: u8,
    /// See `l15_i`.
    pub l15_m: u8,
    /// L1.5 events `load`, `load_noshare`, `store`, `store_noshare`,
    /// `evict`.
    pub load: usize,
    /// See `load`.
    pub load_noshare: usize,
    /// See `load`.
    pub store_noshare: usize,
    /// See `load`.
    pub store: usize,
    /// See `load`.
    pub evict: usize,
    /// L2 states `I`, `S`, `O`.
    pub l2_i: u8,
    /// See `l2_i`.
    pub l2_s: u8,
    /// See `l2_i`.
    pub l2_o: u8,
    /// Message indices the SoC prices transactions by.
    pub msg: Msgs,
}

/// Catalogue indices of the P-Mesh messages the SoC reads a walk by.
#[derive(Debug, Clone, Copy)]
pub struct Msgs {
    /// Load miss.
    pub load_req: u16,
    /// Store miss or upgrade.
    pub store_req: u16,
    /// Write-back.
    pub wb_req: u16,
    /// Forward to the owner for a load.
    pub load_fwd: u16,
    /// Forward to the owner for a store.
    pub store_fwd: u16,
    /// Invalidation of a sharer.
    pub inv_fwd: u16,
    /// LOAD_FWD answered, nothing dirty.
    pub load_fwdack: u16,
    /// LOAD_FWD answered with the dirty line.
    pub load_fwdack_data: u16,
    /// STORE_FWD answered, nothing dirty.
    pub store_fwdack: u16,
    /// STORE_FWD answered with the dirty line.
    pub store_fwdack_data: u16,
}

impl PmeshTable {
    /// The shipped `pmesh` spec, generated and compiled once per process.
    pub fn builtin() -> Arc<PmeshTable> {
        static TABLE: OnceLock<Arc<PmeshTable>> = OnceLock::new();
        TABLE
            .get_or_init(|| {
                let spec = ccsim_protocol::load_spec("pmesh").expect("the shipped pmesh spec");
                Arc::new(PmeshTable::new(&spec).expect("the shipped pmesh spec compiles"))
            })
            .clone()
    }

    /// Compiles a P-Mesh spec (the shipped one, or a variant of it: a
    /// mutation test's). Fails with the reason when it does not generate or
    /// lacks a role, state, event or message the SoC needs.
    pub fn new(spec: &ccsim_protocol::Spec) -> Result<PmeshTable, String> {
        let (ir, _) = ccsim_protocol::generate(spec).map_err(|e| e.to_string())?;
        let proto = Protocol::new(ir)?;
        if proto.msgs.len() > MAX_MSGS {
            return Err(format!(
                "{} messages, the walk tallies at most {MAX_MSGS}",
                proto.msgs.len()
            ));
        }
        let role = |r: &str| {
            proto
                .ir
                .role_index(r)
                .ok_or_else(|| format!("no role {r:?}"))
        };
        let (l15_role, l2_role) = (role("l15")?, role("l2")?);
        let state = |r: usize, s: &str| {
            proto
                .state(r, s)
                .map(|i| i as u8)
                .ok_or_else(|| format!("no {} state {s:?}", proto.agent(r)))
        };
        let event = |s: &str| {
            proto
                .event(l15_role, s)
                .ok_or_else(|| format!("no l15 event {s:?}"))
        };
        let m = |s: &str| proto.msg(s).ok_or_else(|| format!("no message {s:?}"));
        let msg = Msgs {
            load_req: m("LOAD_REQ")?,
            store_req: m("STORE_REQ")?,
            wb_req: m("WB_REQ")?,
            load_fwd: m("LOAD_FWD")?,
            store_fwd: m("STORE_FWD")?,
            inv_fwd: m("INV_FWD")?,
            load_fwdack: m("LOAD_FWDACK")?,
            load_fwdack_data: m("LOAD_FWDACK_DATA")?,
            store_fwdack: m("STORE_FWDACK")?,
            store_fwdack_data: m("STORE_FWDACK_DATA")?,
        };
        Ok(PmeshTable {
            l15: CompiledTable::new(&proto, l15_role, |_, _| ()),
            l2: CompiledTable::new(&proto, l2_role, |_, _| ()),
            origin: spec.origin.clone(),
            l15_i: state(l15_role, "I")?,
            l15_s: state(l15_role, "S")?,
            l15_e: state(l15_role, "E")?,
            l15_m: state(l15_role, "M")?,
            load: event("load")?,
            load_noshare: event("load_noshare")?,
            store_noshare: event("store_noshare")?,
            store: event("store")?,
            evict: event("evict")?,
            l2_i: state(l2_role, "I")?,
            l2_s: state(l2_role, "S")?,
            l2_o: state(l2_role, "O")?,
            msg,
            l15_role,
            l2_role,
            proto,
        })
    }

    /// How many message types the table has (indices 0..).
    pub fn messages(&self) -> usize {
        self.proto.msgs.len()
    }

    /// The name of message `m`.
    pub fn msg_name(&self, m: u16) -> &'static str {
        self.proto.msgs[m as usize].name
    }

    fn l15_state_name(&self, s: u8) -> &str {
        self.proto.state_name(self.l15_role, s as usize)
    }

    fn l2_state_name(&self, s: u8) -> &str {
        self.proto.state_name(self.l2_role, s as usize)
    }

    fn event_name(&self, role: usize, e: usize) -> &str {
        &self.proto.ir.roles[role].events[e].name
    }
}

impl std::fmt::Debug for PmeshTable {
    // The compiled tables are large; a SoC's debug output names the table.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PmeshTable")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

/// One line as the table sees it: the L2's state and directory entry, and
/// every tile's L1.5 state. A walk leaves the end states in it.
#[derive(Debug, Clone, Copy)]
pub struct LineView {
    /// The L2's state (an index of the `l2` role).
    pub l2: u8,
    /// The L2's owner, sharers and ack counter.
    pub dir: DirEntry,
    /// Each tile's L1.5 state (indices of the `l15` role).
    pub l15: [u8; MAX_AGENTS],
}

/// What one walk exchanged.
#[derive(Debug, Clone, Copy, Default)]
pub struct Walk {
    /// Messages sent, by catalogue index.
    pub sent: [u16; MAX_MSGS],
    /// Tiles other than the requester that received a forward.
    pub forwarded: u64,
    /// Tiles other than the requester whose L1.5 lost access to the line.
    pub lost: u64,
}

impl Walk {
    /// How many `m` were sent.
    #[inline]
    pub fn count(&self, m: u16) -> u16 {
        self.sent[m as usize]
    }

    /// Whether any message was sent (else the access was a hit or a silent
    /// eviction).
    pub fn any(&self) -> bool {
        self.sent.iter().any(|&n| n != 0)
    }
}

/// A message in flight inside a walk.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    msg: u16,
    to: u16,
    src: u16,
    req: u16,
}

/// Runs walks of one [`PmeshTable`] and counts the rows taken (one per
/// SoC: [`super::World`] owns it).
#[derive(Debug, Clone)]
pub struct Walker {
    table: Arc<PmeshTable>,
    s: Scratch,
}

/// A walker's counters and its queue of messages in flight.
#[derive(Debug, Clone)]
struct Scratch {
    /// Rows taken by the L1.5s, by cell.
    l15_taken: Vec<u64>,
    /// Rows taken by the L2, by cell × 2 + branch (0: unguarded or the
    /// guard's `yes`, 1: its `no`).
    l2_taken: Vec<u64>,
    queue: Vec<InFlight>,
    /// Tiles whose L1.5 took a row in this walk.
    touched: u64,
}

impl Walker {
    /// A walker of `table` with its counters at zero.
    pub fn new(table: Arc<PmeshTable>) -> Walker {
        Walker {
            s: Scratch {
                l15_taken: vec![0; table.l15.cells.len()],
                l2_taken: vec![0; 2 * table.l2.cells.len()],
                queue: Vec::with_capacity(8),
                touched: 0,
            },
            table,
        }
    }

    /// The table.
    pub fn table(&self) -> &PmeshTable {
        &self.table
    }

    /// A line no tile holds.
    pub fn idle_line(&self) -> LineView {
        LineView {
            l2: self.table.l2_i,
            dir: DirEntry::default(),
            l15: [self.table.l15_i; MAX_AGENTS],
        }
    }

    /// Tile `req`'s L1.5 takes local event `event` (`load`, `store` or
    /// `evict`: [`PmeshTable::load`] ...) on `line`; the table's messages
    /// run to completion. Panics, naming the cell, when the table has no
    /// row for a step or leaves the transaction unfinished.
    pub fn walk(&mut self, req: usize, event: usize, line: &mut LineView) -> Walk {
        let (t, s) = (&*self.table, &mut self.s);
        let mut walk = Walk::default();
        // A hit or a silent eviction: one row, no message.
        let (cell, c) = t.l15.cell(line.l15[req] as usize, event);
        if let Cell::Go(row) = c {
            if !row.sends() {
                s.l15_taken[cell] += 1;
                line.l15[req] = row.next as u8;
                return walk;
            }
        }
        let req = req as u16;
        let before = line.l15;
        s.queue.clear();
        s.touched = 0;
        s.l15_row(t, req, event, req, req, line, &mut walk);
        s.drain(t, false, line, &mut walk);
        s.finish(t, req, event, line, &before, &mut walk);
        walk
    }

    /// The L2 recalls `line` (an inclusive L2's victim): STORE_FWD to the
    /// owner, INV_FWD to every sharer, run through their L1.5 rows; the
    /// entry ends in I. The table has no L2 row for a recall (no eviction
    /// event), so the answers are counted, not handled.
    pub fn recall(&mut self, line: &mut LineView) -> Walk {
        let (t, s) = (&*self.table, &mut self.s);
        let mut walk = Walk::default();
        let before = line.l15;
        s.queue.clear();
        let victim = TO_L2;
        let mut send = |q: &mut Vec<InFlight>, msg: u16, to: u16| {
            walk.sent[msg as usize] += 1;
            q.push(InFlight {
                msg,
                to,
                src: TO_L2,
                req: victim,
            });
        };
        if let Some(o) = line.dir.owner {
            send(&mut s.queue, t.msg.store_fwd, o);
        }
        let mut sharers = line.dir.sharers & !line.dir.owner.map_or(0, |o| 1u64 << o);
        while sharers != 0 {
            let a = sharers.trailing_zeros() as u16;
            sharers &= sharers - 1;
            send(&mut s.queue, t.msg.inv_fwd, a);
        }
        s.drain(t, true, line, &mut walk);
        line.l2 = t.l2_i;
        line.dir = DirEntry::default();
        for (a, (&was, &now)) in before.iter().zip(line.l15.iter()).enumerate() {
            if now != was && !t.l15.stable[now as usize] {
                panic!(
                    "P-Mesh table ({}): an L2 recall leaves tile {a}'s L1.5 in {}",
                    t.origin,
                    t.l15_state_name(now)
                );
            }
            if t.l15.access[was as usize] != ccsim_protocol::ir::Access::None
                && t.l15.access[now as usize] == ccsim_protocol::ir::Access::None
            {
                walk.lost |= 1 << a;
            }
        }
        walk
    }

    /// The rows taken so far, by role, state, event and guard branch, with
    /// their counts (cells never taken are left out), in table order.
    pub fn taken(&self) -> Vec<(String, u64)> {
        let t = &self.table;
        let mut out = Vec::new();
        let n = t.l15.n_events;
        for (cell, &k) in self.s.l15_taken.iter().enumerate() {
            if k != 0 {
                out.push((
                    format!(
                        "l15 {} {}",
                        t.l15_state_name((cell / n) as u8),
                        t.event_name(t.l15_role, cell % n)
                    ),
                    k,
                ));
            }
        }
        let n = t.l2.n_events;
        for (i, &k) in self.s.l2_taken.iter().enumerate() {
            if k == 0 {
                continue;
            }
            let cell = i / 2;
            let guard = match &t.l2.cells[cell] {
                Cell::Guarded(g) if i % 2 == 0 => format!(" {}", g.guard.as_str()),
                Cell::Guarded(g) => format!(" {}", g.guard.complement().as_str()),
                _ => String::new(),
            };
            out.push((
                format!(
                    "l2 {} {}{guard}",
                    t.l2_state_name((cell / n) as u8),
                    t.event_name(t.l2_role, cell % n)
                ),
                k,
            ));
        }
        out
    }
}

impl Scratch {
    /// Handles every message in flight, in the order sent; with `recall`,
    /// messages to the L2 are only counted.
    fn drain(&mut self, t: &PmeshTable, recall: bool, line: &mut LineView, walk: &mut Walk) {
        let mut head = 0;
        while head < self.queue.len() {
            let m = self.queue[head];
            head += 1;
            let facts = &t.proto.msgs[m.msg as usize];
            let req = if facts.requester { m.req } else { m.src };
            if m.to == TO_L2 {
                if !recall {
                    self.l2_row(t, m, req, line, walk);
                }
            } else {
                let Some(event) = t.l15.msg_event[m.msg as usize] else {
                    panic!(
                        "P-Mesh table ({}): the L1.5 has no event {}",
                        t.origin, facts.name
                    );
                };
                self.l15_row(t, m.to, event, req, m.src, line, walk);
            }
        }
    }

    /// Tile `agent`'s L1.5 takes its row for `event`.
    #[allow(clippy::too_many_arguments)]
    fn l15_row(
        &mut self,
        t: &PmeshTable,
        agent: u16,
        event: usize,
        req: u16,
        src: u16,
        line: &mut LineView,
        walk: &mut Walk,
    ) {
        let state = line.l15[agent as usize];
        let (cell, c) = t.l15.cell(state as usize, event);
        let Cell::Go(row) = c else {
            panic!(
                "P-Mesh table ({}): no L1.5 transition for tile {agent} in {} on {} ({}): the SoC's directory runs the verified table and the table does not have this cell",
                t.origin,
                t.l15_state_name(state),
                t.event_name(t.l15_role, event),
                describe(c)
            );
        };
        self.l15_taken[cell] += 1;
        self.touched |= 1 << agent;
        for step in row.steps.iter() {
            if let Step::Send(s) = step {
                let to = match s.target {
                    Target::Default | Target::Home => TO_L2,
                    Target::Src => src,
                    Target::Req => req,
                    other => panic!(
                        "P-Mesh table ({}): an L1.5 row sends {} to {}, which an L1.5 cannot",
                        t.origin,
                        s.name,
                        other.as_str()
                    ),
                };
                walk.sent[s.msg as usize] += 1;
                self.queue.push(InFlight {
                    msg: s.msg,
                    to,
                    src: agent,
                    req,
                });
            }
        }
        line.l15[agent as usize] = row.next as u8;
    }

    /// The L2 takes its row for message `m` acting for `req`.
    fn l2_row(
        &mut self,
        t: &PmeshTable,
        m: InFlight,
        req: u16,
        line: &mut LineView,
        walk: &mut Walk,
    ) {
        let facts = &t.proto.msgs[m.msg as usize];
        let Some(event) = t.l2.msg_event[m.msg as usize] else {
            panic!(
                "P-Mesh table ({}): the L2 has no event {}",
                t.origin, facts.name
            );
        };
        if facts.ack {
            line.dir.acks -= 1;
        }
        let (cell, outer) = t.l2.cell(line.l2 as usize, event);
        let c = pick(outer, |g| line.dir.holds(g, req));
        let branch = match outer {
            Cell::Guarded(g) if !std::ptr::eq(c, &g.yes) => 1,
            _ => 0,
        };
        let Cell::Go(row) = c else {
            let guard = match outer {
                Cell::Guarded(g) => format!(
                    " (guard {})",
                    if branch == 0 {
                        g.guard
                    } else {
                        g.guard.complement()
                    }
                    .as_str()
                ),
                _ => String::new(),
            };
            panic!(
                "P-Mesh table ({}): no L2 transition in {} on {} from tile {req}{guard} ({}): the SoC's directory runs the verified table and the table does not have this cell",
                t.origin,
                t.l2_state_name(line.l2),
                facts.name,
                describe(c)
            );
        };
        self.l2_taken[2 * cell + branch] += 1;
        for step in row.steps.iter() {
            match step {
                Step::Send(s) => {
                    let mut push = |q: &mut Vec<InFlight>, to: u16| {
                        walk.sent[s.msg as usize] += 1;
                        // A forward (it carries the requester) to another tile.
                        let f = &t.proto.msgs[s.msg as usize];
                        if to != req && f.to == t.l15_role && f.requester {
                            walk.forwarded |= 1 << to;
                        }
                        q.push(InFlight {
                            msg: s.msg,
                            to,
                            src: TO_L2,
                            req,
                        });
                    };
                    // A counted forward to one tile (the owner, or the
                    // requester itself: OpenPiton's INV_FWD to S's only
                    // sharer) is one ack to wait for, as in the checker.
                    let counted = t.proto.msgs[s.msg as usize].counts_ack;
                    match s.target {
                        Target::Req => {
                            line.dir.acks += i16::from(counted);
                            push(&mut self.queue, req)
                        }
                        Target::Src => {
                            line.dir.acks += i16::from(counted);
                            push(&mut self.queue, m.src)
                        }
                        Target::Owner => {
                            let o = line.dir.owner.unwrap_or_else(|| {
                                panic!(
                                    "P-Mesh table ({}): the L2 in {} sends {} to the owner, and there is none",
                                    t.origin,
                                    t.l2_state_name(line.l2),
                                    s.name
                                )
                            });
                            line.dir.acks += i16::from(counted);
                            push(&mut self.queue, o);
                        }
                        Target::Sharers => {
                            let mut others = line.dir.others(req);
                            while others != 0 {
                                let a = others.trailing_zeros() as u16;
                                others &= others - 1;
                                line.dir.acks += 1;
                                push(&mut self.queue, a);
                            }
                        }
                        Target::Default | Target::Home => panic!(
                            "P-Mesh table ({}): the L2 sends {} without a target tile",
                            t.origin, s.name
                        ),
                    }
                }
                Step::Dir(op) => line.dir.apply(*op, req),
                // The SoC's bytes are its own (`PhysMem`): data steps move nothing here.
                _ => {}
            }
        }
        line.l2 = row.next as u8;
    }

    /// Checks that the walk finished (every state stable) and notes the
    /// tiles that lost the line.
    fn finish(
        &self,
        t: &PmeshTable,
        req: u16,
        event: usize,
        line: &LineView,
        before: &[u8; MAX_AGENTS],
        walk: &mut Walk,
    ) {
        let unfinished = |what: String| -> ! {
            panic!(
                "P-Mesh table ({}): tile {req}'s {} leaves {what} when no message is left: the table does not finish this transaction",
                t.origin,
                t.event_name(t.l15_role, event)
            )
        };
        if !t.l2.stable[line.l2 as usize] {
            unfinished(format!(
                "the L2 in {} (acks {}, owner {:?}, sharers {:#b})",
                t.l2_state_name(line.l2),
                line.dir.acks,
                line.dir.owner,
                line.dir.sharers
            ));
        }
        let mut touched = self.touched;
        while touched != 0 {
            let a = touched.trailing_zeros() as usize;
            touched &= touched - 1;
            let s = line.l15[a];
            if !t.l15.stable[s as usize] {
                unfinished(format!("tile {a}'s L1.5 in {}", t.l15_state_name(s)));
            }
            if a != req as usize
                && t.l15.access[before[a] as usize] != ccsim_protocol::ir::Access::None
                && t.l15.access[s as usize] == ccsim_protocol::ir::Access::None
            {
                walk.lost |= 1 << a;
            }
        }
    }
}

fn describe<D>(c: &Cell<D>) -> &'static str {
    match c {
        Cell::Unspecified => "unspecified",
        Cell::Stall => "a stall, which an atomic walk cannot wait out",
        Cell::Go(_) => "a row",
        Cell::Guarded(_) => "guarded",
    }
}
