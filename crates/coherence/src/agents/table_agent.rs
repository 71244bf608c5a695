//! One agent of a generic system: any role of any protocol, its rows run
//! by the engine, its data real bytes.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use ccsim_kernel::prelude::*;
use ccsim_protocol::engine::{
    execute, pick, AgentId, Cell, CompiledTable, DataSource, DirEntry, DirOp, Effects, Row,
    SendStep, Step,
};
use ccsim_protocol::ir::{MsgClass, Target};
use rustc_hash::FxHashMap as HashMap;

use super::line_engine::{EngineOp, LineEngine, LineRmw};
use super::{InvariantChecker, SlicePlacement, SystemRef};
use crate::line_map::{DenseLineMap, Slot};
use crate::memory::MemTiming;
use crate::util::ns_to_ps;
use crate::{CohMsg, Line, Msg};

/// The declaration of `table_agent`.
pub static TABLE_AGENT: ComponentSpec = ComponentSpec {
    type_name: "table_agent",
    description: "An agent of a protocol given as data (a cache, a directory or home, a DMA engine, ...): keeps each line's state, copy or memory and directory entry, and runs the protocol's compiled table for its role through the protocol engine. The role comes from the system section; with a tester it issues random local events (loads, stores, evictions, DMA reads and writes).",
    params: &[
        ParamSpec {
            name: "occupancy_ns",
            kind: ParamKind::Float,
            default: ParamDefault::Float(1.0),
            unit: "ns",
            range: ParamRange::at_least(0.0),
            from: "assumed: one controller cycle at 1 GHz",
            description: "Time from a message's arrival to its row (the controller's lookup and update).",
        },
        ParamSpec {
            name: "access_ns",
            kind: ParamKind::Float,
            default: ParamDefault::Float(0.0),
            unit: "ns",
            range: ParamRange::at_least(0.0),
            from: "assumed: none",
            description: "A program operation's pipeline from its issue to its use (a load-store unit through the cache and back), added to every operation of a program; it does not hold up the next issue.",
        },
        ParamSpec {
            name: "hit_ns",
            kind: ParamKind::Float,
            default: ParamDefault::Float(0.0),
            unit: "ns",
            range: ParamRange::at_least(0.0),
            from: "assumed: none (hits take access_ns)",
            description: "When positive: a program operation that completes locally (a hit, in the near level if there is one) takes this from its issue in place of access_ns (a cache whose measured hit path is kept apart from a miss's, which access_ns and the links carry).",
        },
        ParamSpec {
            name: "near_lines",
            kind: ParamKind::Int,
            default: ParamDefault::Int(0),
            unit: "lines",
            range: ParamRange::at_least(0.0),
            from: "assumed: one level",
            description: "A smaller, inclusive level in front of the agent's cache (an L1 before the coherent L2): the near_lines lines the program used most recently. A hit among them takes hit_ns; a hit on another line takes access_ns (the far level). 0: every hit takes hit_ns. The near level holds only lines the agent holds (a snooped or evicted line misses), so it needs no protocol of its own.",
        },
        ParamSpec {
            name: "load_data_ns",
            kind: ParamKind::Float,
            default: ParamDefault::Float(0.0),
            unit: "ns",
            range: ParamRange::at_least(0.0),
            from: "assumed: none",
            description: "Added to a program's `load` that hits: the read data's way back to the requester (a data-array read and the response beats), which a store's acknowledgement does not wait for.",
        },
        ParamSpec {
            name: "issue_ns",
            kind: ParamKind::Float,
            default: ParamDefault::Float(0.0),
            unit: "ns",
            range: ParamRange::at_least(0.0),
            from: "assumed: none",
            description: "A program's issue interval after an operation that completes locally (a hit): the pipeline accepts one such operation per interval.",
        },
        ParamSpec {
            name: "miss_issue_ns",
            kind: ParamKind::Float,
            default: ParamDefault::Float(0.0),
            unit: "ns",
            range: ParamRange::at_least(0.0),
            from: "assumed: none",
            description: "A program's issue interval after an operation that sends a request (a miss): the pipeline's bubbles for the coherence request.",
        },
        ParamSpec {
            name: "memory_ns",
            kind: ParamKind::Float,
            default: ParamDefault::Float(0.0),
            unit: "ns",
            range: ParamRange::at_least(0.0),
            from: "assumed: none",
            description: "At a home: the memory access a request to a line its cache does not hold waits for before its row (the line is cached from then on; warm lines start cached). A memory timing model (the system's `memory = ...` instance) replaces it.",
        },
        ParamSpec {
            name: "memory_fills_cache",
            kind: ParamKind::Bool,
            default: ParamDefault::Bool(true),
            unit: "",
            range: ParamRange::ANY,
            from: "assumed: a home keeps what it read (an LLC in front of memory)",
            description: "At a home: whether a line read from memory stays in its cache, so later requests skip the memory (false: a memory controller with no cache in front, where every request reaches the memory).",
        },
        ParamSpec {
            name: "memory_read_for_data_only",
            kind: ParamKind::Bool,
            default: ParamDefault::Bool(false),
            unit: "",
            range: ParamRange::ANY,
            from: "assumed: every request to an uncached line reads memory",
            description: "At a home: whether a request waits for the memory only if the home's table may answer it with the line's data from memory (a send of memory data in some state's row for its event). A request whose rows never send memory data (a whole-line write that needs no old data, a CleanUnique, an Evict, a write-back whose write is posted) then skips the memory read. false: every request to a line the home's cache does not hold waits for the memory.",
        },
        ParamSpec {
            name: "cache_lines",
            kind: ParamKind::Int,
            default: ParamDefault::Int(0),
            unit: "lines",
            range: ParamRange::at_least(0.0),
            from: "assumed: unbounded",
            description: "At a home: lines its cache holds (0: unbounded). A line cached beyond it (a fill from memory, or a warm line) evicts another, chosen by a fixed pseudo-random sequence (assumed replacement), whose next request pays the memory again; the eviction is timing only, the directory and the memory keep every line.",
        },
        ParamSpec {
            name: "capacity_lines",
            kind: ParamKind::Int,
            default: ParamDefault::Int(0),
            unit: "lines",
            range: ParamRange::at_least(0.0),
            from: "assumed: unbounded",
            description: "A program's cache capacity (0: unbounded). Before a program operation allocates a line in a full set, the set's least recently used line that is not busy is evicted with the role's `evict` event (it leaves the set at once and finishes its eviction in the background, as from a victim buffer).",
        },
        ParamSpec {
            name: "ways",
            kind: ParamKind::Int,
            default: ParamDefault::Int(1),
            unit: "ways",
            range: ParamRange::at_least(1.0),
            from: "assumed: direct-mapped",
            description: "Associativity of that cache: capacity_lines / ways sets, line l in set l mod sets.",
        },
    ],
    ports: &[PortSpec {
        name: "net",
        description: "Coherent messages to and from the other agents (through a switch or a direct link).",
        required: true,
    }],
    stats: &[
        StatSpec { name: "ops", kind: StatKind::Counter, unit: "ops", description: "Tester operations completed." },
        StatSpec { name: "op_latency", kind: StatKind::Histogram, unit: "ps", description: "Tester operation latency: local event to the line's next stable state." },
        StatSpec { name: "rows", kind: StatKind::Counter, unit: "rows", description: "Table rows run." },
        StatSpec { name: "stalls", kind: StatKind::Counter, unit: "messages", description: "Requests stalled (queued until the line's state changes)." },
    ],
    check: Some(check_table_agent),
};

/// Whether some row of `cell` (either branch of a guard) has a step that
/// satisfies `step`.
fn some_step<D>(cell: &Cell<D>, step: &impl Fn(&Step<D>) -> bool) -> bool {
    match cell {
        Cell::Go(row) => row.steps.iter().any(step),
        Cell::Guarded(g) => some_step(&g.yes, step) || some_step(&g.no, step),
        Cell::Unspecified | Cell::Stall => false,
    }
}

/// Whether some row of `table` writes a result itself (`write`): at a
/// home, the far atomics it executes.
fn writes_results<D>(table: &CompiledTable<D>) -> bool {
    table
        .cells
        .iter()
        .any(|cell| some_step(cell, &|s| matches!(s, Step::Write)))
}

/// By catalogue message: whether some row of the home's `table` for the
/// message's event (in any state, either branch of a guard) sends the
/// line's data from memory. Only such a request needs the memory's copy
/// before the home can answer it (a whole-line WriteUniqueFull brings its
/// line and is answered with Comp, CCIX Base Spec 1.0 §3.11.2, as AMBA
/// CHI IHI0050 §2.3.2's is after its data: nothing of the old line is
/// read). Messages without an event at the home are `false`.
fn requests_answered_with_memory_data<D>(table: &CompiledTable<D>, n_msgs: usize) -> Vec<bool> {
    let sends_memory_data =
        |s: &Step<D>| matches!(s, Step::Send(x) if x.data && x.source == DataSource::Memory);
    let n_states = table.stable.len();
    (0..n_msgs)
        .map(|msg| {
            table
                .msg_event
                .get(msg)
                .copied()
                .flatten()
                .is_some_and(|event| {
                    (0..n_states)
                        .any(|state| some_step(table.cell(state, event).1, &sends_memory_data))
                })
        })
        .collect()
}

/// The cache's sets hold whole ways.
fn check_table_agent(p: &Params, _: Peers<'_>) -> Result<(), ParamProblem> {
    let (capacity, ways) = (p.int("capacity_lines"), p.int("ways"));
    if capacity % ways != 0 {
        return Err(ParamProblem::new(
            "capacity_lines",
            format!("must be a multiple of ways ({ways}), got {capacity}"),
        ));
    }
    Ok(())
}

const NET: PortId = 0;
const ST_OPS: usize = 0;
const ST_OP_LATENCY: usize = 1;
const ST_ROWS: usize = 2;
const ST_STALLS: usize = 3;
/// Wake-up token: the tester issues its next operation.
const NEXT_OP: u64 = 1;
/// Wake-up token: the program issues its next operations.
const PROGRAM_NEXT: u64 = 2;

/// The wake-up token a driver outside the simulation posts
/// (`Simulation::wake`) after [`TableAgent::append_program`], so that the
/// program issues what it was given.
pub const PROGRAM_WAKE: u64 = PROGRAM_NEXT;

/// The random tester of one agent (gem5 Ruby's random tester in spirit):
/// `ops` local events on random lines among `lines`, one at a time, each
/// with a fresh random value, `think` apart.
#[derive(Debug, Clone, Copy)]
pub struct TesterParams {
    /// Operations to issue.
    pub ops: u64,
    /// Lines the operations pick from (0 .. lines).
    pub lines: u64,
    /// Pause between one operation's end and the next one's start.
    pub think: Tick,
}

/// One line at the agent (its requests waiting for a state change are
/// kept apart, in `TableAgent::stalled`, so that this is a plain value a
/// dense line map can hold).
#[derive(Debug, Clone, Copy)]
struct LineState {
    state: u32,
    copy: Option<Line>,
    dir: DirEntry,
}

/// A directory entry with no owner, no sharers and no acks expected.
const EMPTY_DIR: DirEntry = DirEntry {
    owner: None,
    sharers: 0,
    acks: 0,
};

impl LineState {
    fn new(initial: usize) -> LineState {
        LineState {
            state: initial as u32,
            copy: None,
            dir: EMPTY_DIR,
        }
    }
}

impl Slot for LineState {
    const ABSENT: LineState = LineState {
        state: u32::MAX,
        copy: None,
        dir: EMPTY_DIR,
    };
    #[inline]
    fn is_absent(&self) -> bool {
        self.state == u32::MAX
    }
}

/// The line map's dense range: any agent may index its first 4,096 lines
/// directly, and more while the range holds at most 4 slots per stored
/// line (sequential streams stay dense; scattered lines go to the hash map).
const DENSE_MIN_LINES: u64 = 1 << 12;
const DENSE_SLOTS_PER_LINE: u64 = 4;

/// The mark of a line in a home's cache (a one-byte slot: the dense range
/// of that map may spread over 64 times more lines than the states').
const CACHED: u8 = 1;

/// The tester's open operation.
#[derive(Debug, Clone, Copy)]
struct OpenOp {
    line: u64,
    value: Line,
    start: Tick,
}

/// A directed stream of local events (a device's load-store unit): issued
/// in order, up to `window` open at once on distinct lines, paced by the
/// agent's `issue_ns` and `miss_issue_ns`; every operation's issue and
/// completion times are kept.
#[derive(Debug)]
struct Program {
    ops: Vec<(u64, usize)>,
    window: usize,
    next: usize,
    next_at: Tick,
    /// Open operations by line: (index in `ops`, the operation).
    open: HashMap<u64, (usize, OpenOp)>,
    /// (issue, completion) per operation, completion 0 until done.
    times: Vec<(Tick, Tick)>,
    /// The earliest wake-up already scheduled, so that each instant gets
    /// one.
    wake_at: Option<Tick>,
    /// A line the next operation waits for to become stable (not one of
    /// the program's own: their completion wakes the program anyway).
    blocked_on: Option<u64>,
    /// The cache's lines per set, least recently used first (with
    /// `capacity_lines`).
    cache: Option<SetCache>,
    /// Per operation, the earliest time it may issue (empty: from the
    /// start), e.g. when its address translation is known.
    release: Vec<Tick>,
    /// Per operation, an earlier operation whose completion it waits for
    /// (empty: none), e.g. the load of the pointer to its line.
    after: Vec<Option<usize>>,
    /// Per operation, when its row made it take effect at this agent (a
    /// hit at its issue, a miss when the line arrived), 0 until then:
    /// operations on one line at different agents take effect in the
    /// line's coherence order.
    effect: Vec<Tick>,
    /// The role's `load` event, which pays `load_data_ns` on a hit.
    load: Option<usize>,
    /// The near level (`near_lines`): the lines used most recently.
    near: Option<NearLevel>,
    /// Per operation, the value it writes (empty or `None`: a fresh random
    /// one), e.g. the bytes of the objects a device pushes.
    data: Vec<Option<Line>>,
    /// Per operation, a read-modify-write its store applies to the line's
    /// present value when it takes effect (empty or `None`: it writes its
    /// value), e.g. a core's compare-and-swap instruction.
    rmw: Vec<Option<LineRmw>>,
    /// Per operation with a read-modify-write, the line it found; per
    /// operation marked in `snapshot`, the line it read.
    found: Vec<Option<Line>>,
    /// Per operation, whether the line's value when it takes effect is
    /// kept in `found` (a driver's load whose value decides its next step).
    snapshot: Vec<bool>,
    /// Per operation, whether it is issued outside `window` (empty: none
    /// is), e.g. a cache's prefetch, which takes the cache's own miss
    /// registers rather than one of the requester's.
    unwindowed: Vec<bool>,
    /// Open operations issued outside `window`.
    open_unwindowed: usize,
    /// Whether each operation's completion ends the run (a driver that
    /// decides the next operations from each completion).
    stop_on_completion: bool,
}

/// An inclusive near level as a recency list: line → its last use, and
/// use → line, so the least recently used line is the first entry.
#[derive(Debug)]
struct NearLevel {
    capacity: usize,
    stamp: u64,
    last_use: HashMap<u64, u64>,
    by_use: std::collections::BTreeMap<u64, u64>,
}

impl NearLevel {
    fn new(capacity: usize) -> NearLevel {
        NearLevel {
            capacity,
            stamp: 0,
            last_use: HashMap::default(),
            by_use: std::collections::BTreeMap::new(),
        }
    }

    /// Whether `line` was among the most recent uses; then marks it the
    /// most recent (evicting the least recent one when full).
    fn touch(&mut self, line: u64) -> bool {
        self.stamp += 1;
        let held = match self.last_use.insert(line, self.stamp) {
            Some(old) => {
                self.by_use.remove(&old);
                true
            }
            None => false,
        };
        self.by_use.insert(self.stamp, line);
        if self.last_use.len() > self.capacity {
            let (_, victim) = self.by_use.pop_first().expect("a full level");
            self.last_use.remove(&victim);
        }
        held
    }
}

/// The sets of a program's bounded cache, each in LRU order, and the
/// role's eviction event.
#[derive(Debug)]
struct SetCache {
    sets: Vec<Vec<u64>>,
    ways: usize,
    evict: usize,
}

impl SetCache {
    fn set_of(&self, line: u64) -> usize {
        (line % self.sets.len() as u64) as usize
    }
}

#[derive(Debug)]
struct Tester {
    params: TesterParams,
    issued: u64,
    /// The role's local events (not message receptions).
    events: Vec<usize>,
    open: Option<OpenOp>,
}

/// An agent running one role's table.
pub struct TableAgent {
    sys: SystemRef,
    id: AgentId,
    role: usize,
    table: CompiledTable<()>,
    keeps_copy: bool,
    is_home: bool,
    lines: DenseLineMap<LineState>,
    /// Requests waiting for their line's state to change, oldest first
    /// (lines with none have no entry).
    stalled: HashMap<u64, VecDeque<CohMsg>>,
    /// The home's memory: lines a row ran on (others hold their initial
    /// value).
    memory: HashMap<u64, Line>,
    occupancy: Tick,
    access: Tick,
    /// A hit's time in the near level (or the only one), when positive.
    hit: Tick,
    near_lines: u64,
    load_data: Tick,
    capacity_lines: u64,
    ways: u64,
    issue_interval: Tick,
    miss_issue_interval: Tick,
    memory_latency: Tick,
    /// Whether a home keeps the lines it read from memory cached.
    memory_fills_cache: bool,
    /// By catalogue message: whether a home's request waits for the memory
    /// (`memory_read_for_data_only`: only the requests some row of the
    /// home's table answers with memory data; otherwise every request).
    request_reads_memory: Vec<bool>,
    /// A home's cached lines (with `memory_ns` or a timing model), marked
    /// [`CACHED`]: the others wait for memory.
    cached: DenseLineMap<u8>,
    /// A bounded home cache (`cache_lines`): its lines, to pick victims.
    home_cache: Option<HomeCache>,
    /// The memory timing (a DRAM model) of the agent where the line's
    /// memory lives, in place of `memory_ns`: at the home every request
    /// waits for its access before its row; at a memory-side agent (a
    /// type-2 DCOH) every message whose row reads or writes the copy.
    timing: Option<MemTiming>,
    /// A home's LLC slices on the mesh: every request goes to its line's
    /// slice and back before its row (and its memory access).
    placement: Option<SlicePlacement>,
    checker: Rc<RefCell<InvariantChecker>>,
    tester: Option<Tester>,
    program: Option<Program>,
    /// Device logic driving the program's lines (RAO PEs), with the
    /// role's `store` event its operations run.
    engine: Option<(Box<dyn LineEngine>, usize)>,
    /// The engine's open operations by line, with the line before the
    /// row that wrote it.
    engine_ops: HashMap<u64, (EngineOp, Option<Line>)>,
    /// An engine operation that found its cache set full of busy lines.
    engine_pending: Option<EngineOp>,
    /// Lines an engine holds after its operation: (release time, op id).
    /// Every message for a locked line waits in its stalled queue.
    locks: HashMap<u64, (Tick, u64)>,
    /// Whether this is a home whose table writes a result itself (a far
    /// atomic executed at the home): it buffers the data of requests that
    /// carry it (the operands) until the line's transaction is over, and
    /// its `write` runs the operation they encode on the line's bytes
    /// ([`LineRmw::from_operands`]; other operands are a line swapped in).
    buffers_operands: bool,
    /// A home's buffered request data by line (see `buffers_operands`).
    operands: HashMap<u64, Line>,
    /// When on (`record_home_writes`): every row in which this home wrote
    /// a result itself, as (line, requester, time, the line before an
    /// encoded operation).
    home_writes: Option<Vec<HomeWrite>>,
}

/// Fills the first `line_bytes` of `v` (the rest stays as it is) with
/// random bytes from the run's stream: an operation's fresh value.
#[inline]
fn fill_fresh(v: &mut Line, line_bytes: usize, ctx: &mut Ctx<'_, Msg>) {
    for chunk in v[..line_bytes].chunks_mut(8) {
        let r = ctx.rng().next_u64().to_le_bytes();
        chunk.copy_from_slice(&r[..chunk.len()]);
    }
}

/// A home's memory copy of `line`: the value written to it, or the
/// system's initial value ([`TableAgent::memory_of`]).
fn memory_line(memory: &HashMap<u64, Line>, sys: &SystemRef, line: u64) -> Line {
    memory
        .get(&line)
        .copied()
        .unwrap_or_else(|| sys.initial_value(line))
}

/// One row in which a home wrote a result itself (a far atomic executed
/// at the home): the line, the requester, when, and the line before it for
/// a request that encoded its operation (see [`TableAgent::home_writes`]).
pub type HomeWrite = (u64, AgentId, Tick, Option<Line>);

impl TableAgent {
    /// Agent `id` of `sys`, with its component parameters, the system's
    /// shared checker and optionally a tester.
    pub fn new(
        sys: SystemRef,
        id: AgentId,
        params: &Params,
        checker: Rc<RefCell<InvariantChecker>>,
        tester: Option<TesterParams>,
    ) -> TableAgent {
        let role = sys.agents[id as usize].role;
        let p = &sys.protocol;
        let table = CompiledTable::new(p, role, |_, _| ());
        let request_reads_memory = if params.bool("memory_read_for_data_only") {
            requests_answered_with_memory_data(&table, p.msgs.len())
        } else {
            vec![true; p.msgs.len()]
        };
        let received: Vec<usize> = p.msg_event[role].iter().flatten().copied().collect();
        let events: Vec<usize> = (0..table.n_events)
            .filter(|e| !received.contains(e))
            .collect();
        let tester = tester.filter(|_| !events.is_empty()).map(|params| Tester {
            params,
            issued: 0,
            events,
            open: None,
        });
        let buffers_operands = role == p.home && writes_results(&table);
        TableAgent {
            keeps_copy: p.keeps_copy(role),
            is_home: role == p.home,
            table,
            sys,
            id,
            role,
            lines: DenseLineMap::new(DENSE_MIN_LINES, DENSE_SLOTS_PER_LINE),
            stalled: HashMap::default(),
            memory: HashMap::default(),
            occupancy: ns_to_ps(params.float("occupancy_ns")),
            access: ns_to_ps(params.float("access_ns")),
            hit: ns_to_ps(params.float("hit_ns")),
            near_lines: params.uint("near_lines"),
            load_data: ns_to_ps(params.float("load_data_ns")),
            capacity_lines: params.uint("capacity_lines"),
            ways: params.uint("ways").max(1),
            issue_interval: ns_to_ps(params.float("issue_ns")),
            miss_issue_interval: ns_to_ps(params.float("miss_issue_ns")),
            memory_latency: ns_to_ps(params.float("memory_ns")),
            memory_fills_cache: params.bool("memory_fills_cache"),
            request_reads_memory,
            cached: DenseLineMap::new(DENSE_MIN_LINES, DENSE_SLOTS_PER_LINE * 64),
            home_cache: match params.uint("cache_lines") {
                0 => None,
                capacity => Some(HomeCache::new(capacity as usize)),
            },
            timing: None,
            placement: None,
            checker,
            tester,
            program: None,
            engine: None,
            engine_ops: HashMap::default(),
            engine_pending: None,
            locks: HashMap::default(),
            buffers_operands,
            operands: HashMap::default(),
            home_writes: None,
        }
    }

    /// The wake-up token of the agent's program (and engine): a caller that
    /// gives the agent a program after the run started wakes it with
    /// `sim.wake(component, at, TableAgent::PROGRAM_WAKE)`.
    pub const PROGRAM_WAKE: u64 = PROGRAM_NEXT;

    /// Puts `engine` in charge of the agent's lines (see
    /// [`line_engine`](super::line_engine)): its operations run the role's
    /// `store` event, as many open at once as it issues, paced by
    /// `issue_ns` / `miss_issue_ns`, each with `access_ns` of pipeline, in
    /// the bounded cache of `capacity_lines` / `ways` when set. The
    /// engine's operations are the agent's program, so an agent has either
    /// an engine or a program. Errors when the role has no `store` event or
    /// the agent already has a program.
    pub fn set_engine(&mut self, engine: Box<dyn LineEngine>) -> Result<(), String> {
        if self.program.is_some() {
            return Err(format!(
                "{}: a line engine issues the agent's operations, and the agent already has a program",
                self.sys.agents[self.id as usize].name
            ));
        }
        let role = &self.sys.protocol.ir.roles[self.role];
        let Some(store) = role
            .events
            .iter()
            .position(|e| e.name == "store" && !e.message)
        else {
            return Err(format!(
                "{}: a line engine needs a `store` event, and role `{}` has none",
                self.sys.agents[self.id as usize].name, role.role
            ));
        };
        self.set_program(&[], 64)?;
        self.program.as_mut().expect("program").window = usize::MAX;
        self.engine = Some((engine, store));
        Ok(())
    }

    /// The agent's engine, to read its results.
    pub fn engine(&self) -> Option<&dyn LineEngine> {
        self.engine.as_ref().map(|(e, _)| e.as_ref())
    }

    /// Whether `line` is held locked by the engine.
    pub fn is_locked(&self, line: u64) -> bool {
        self.locks.contains_key(&line)
    }

    /// Gives the agent a program: `ops` (line, local event name) issued in
    /// order from the start of the run, up to `window` open at once.
    /// Errors name an event the role does not have, or the agent's line
    /// engine (whose operations are the agent's program).
    pub fn set_program(&mut self, ops: &[(u64, &str)], window: usize) -> Result<(), String> {
        if self.engine.is_some() {
            return Err(format!(
                "{}: the agent's line engine issues its operations; it takes no program",
                self.sys.agents[self.id as usize].name
            ));
        }
        let p = &self.sys.protocol;
        let role = &p.ir.roles[self.role];
        let mut resolved = Vec::with_capacity(ops.len());
        for &(line, name) in ops {
            let Some(e) = role
                .events
                .iter()
                .position(|e| e.name == name && !e.message)
            else {
                return Err(format!(
                    "{}: role `{}` has no local event `{name}`",
                    self.sys.agents[self.id as usize].name, role.role
                ));
            };
            resolved.push((line, e));
        }
        let cache = if self.capacity_lines == 0 {
            None
        } else {
            let Some(evict) = role
                .events
                .iter()
                .position(|e| e.name == "evict" && !e.message)
            else {
                return Err(format!(
                    "{}: capacity_lines = {} needs an `evict` event, and role `{}` has none",
                    self.sys.agents[self.id as usize].name, self.capacity_lines, role.role
                ));
            };
            let sets = (self.capacity_lines / self.ways).max(1) as usize;
            Some(SetCache {
                sets: vec![Vec::new(); sets],
                ways: self.ways as usize,
                evict,
            })
        };
        self.program = Some(Program {
            times: vec![(0, 0); resolved.len()],
            effect: vec![0; resolved.len()],
            ops: resolved,
            window: window.max(1),
            next: 0,
            next_at: 0,
            open: HashMap::with_capacity_and_hasher(window.max(1), Default::default()),
            wake_at: None,
            blocked_on: None,
            cache,
            release: Vec::new(),
            after: Vec::new(),
            load: role
                .events
                .iter()
                .position(|e| e.name == "load" && !e.message),
            near: (self.near_lines > 0).then(|| NearLevel::new(self.near_lines as usize)),
            data: Vec::new(),
            rmw: Vec::new(),
            found: Vec::new(),
            snapshot: Vec::new(),
            unwindowed: Vec::new(),
            open_unwindowed: 0,
            stop_on_completion: false,
        });
        Ok(())
    }

    /// Makes each completion of a program operation end the run after its
    /// event, so that a driver sees every completion at its instant and
    /// can [`append_program`](Self::append_program) what it enables (a
    /// walker whose next reads depend on the lines that arrived). Errors
    /// without a program.
    pub fn set_program_stop_on_completion(&mut self, stop: bool) -> Result<(), String> {
        let name = &self.sys.agents[self.id as usize].name;
        let Some(p) = self.program.as_mut() else {
            return Err(format!(
                "{name}: stopping on completions needs a program first"
            ));
        };
        p.stop_on_completion = stop;
        Ok(())
    }

    /// Holds the program's first issue until `at` (an agent that starts
    /// once another has set the lines up). Call after `set_program`.
    pub fn start_program_at(&mut self, at: Tick) {
        if let Some(p) = self.program.as_mut() {
            p.next_at = at;
        }
    }

    /// Gives the program's operations earliest-issue times, one per
    /// operation (an operation whose physical address is known only once
    /// its translation arrives): operation `i` issues no earlier than
    /// `release[i]`, and, the program being in order, neither do the ones
    /// after it. Errors without a program or with a count that differs
    /// from its operations'.
    pub fn set_program_release(&mut self, release: Vec<Tick>) -> Result<(), String> {
        let name = &self.sys.agents[self.id as usize].name;
        let Some(p) = self.program.as_mut() else {
            return Err(format!("{name}: release times need a program first"));
        };
        if release.len() != p.ops.len() {
            return Err(format!(
                "{name}: {} release times for {} program operations",
                release.len(),
                p.ops.len()
            ));
        }
        p.release = release;
        Ok(())
    }

    /// Makes the program's operations wait for earlier ones: operation `i`
    /// issues no earlier than the completion of operation `after[i]` (a
    /// dependent load: its address is in the line the earlier one reads),
    /// and, the program being in order, neither do the ones after it.
    /// Errors without a program, with a count that differs from its
    /// operations', or with an operation that waits for itself or a later
    /// one.
    pub fn set_program_after(&mut self, after: Vec<Option<usize>>) -> Result<(), String> {
        let name = &self.sys.agents[self.id as usize].name;
        let Some(p) = self.program.as_mut() else {
            return Err(format!("{name}: dependencies need a program first"));
        };
        if after.len() != p.ops.len() {
            return Err(format!(
                "{name}: {} dependencies for {} program operations",
                after.len(),
                p.ops.len()
            ));
        }
        if let Some((i, j)) = after
            .iter()
            .enumerate()
            .find_map(|(i, a)| a.filter(|&j| j >= i).map(|j| (i, j)))
        {
            return Err(format!(
                "{name}: program operation {i} waits for operation {j}, not an earlier one"
            ));
        }
        p.after = after;
        Ok(())
    }

    /// Issues the program's operations marked in `unwindowed` outside its
    /// window: they do not wait for room in it and take none while open
    /// (a cache's prefetches, which use the cache's own miss registers,
    /// not the requester's), still in program order. Errors without a
    /// program or with a count that differs from its operations'.
    pub fn set_program_unwindowed(&mut self, unwindowed: Vec<bool>) -> Result<(), String> {
        let name = &self.sys.agents[self.id as usize].name;
        let Some(p) = self.program.as_mut() else {
            return Err(format!(
                "{name}: unwindowed operations need a program first"
            ));
        };
        if unwindowed.len() != p.ops.len() {
            return Err(format!(
                "{name}: {} unwindowed flags for {} program operations",
                unwindowed.len(),
                p.ops.len()
            ));
        }
        p.unwindowed = unwindowed;
        Ok(())
    }

    /// Appends `ops` to a running program (a driver that decides the next
    /// operations from the completions so far, as a lock's waiter), none
    /// issuing before `release`. The driver then posts [`PROGRAM_WAKE`] to
    /// this agent at `release` or later. Errors without a program or with
    /// an event the role does not have.
    pub fn append_program(&mut self, ops: &[(u64, &str)], release: Tick) -> Result<(), String> {
        let name = self.sys.agents[self.id as usize].name.clone();
        let role = &self.sys.protocol.ir.roles[self.role];
        let mut resolved = Vec::with_capacity(ops.len());
        for &(line, ev) in ops {
            let Some(e) = role.events.iter().position(|e| e.name == ev && !e.message) else {
                return Err(format!(
                    "{name}: role `{}` has no local event `{ev}`",
                    role.role
                ));
            };
            resolved.push((line, e));
        }
        let Some(p) = self.program.as_mut() else {
            return Err(format!("{name}: appending needs a program first"));
        };
        if p.release.is_empty() {
            p.release = vec![0; p.ops.len()];
        }
        for op in resolved {
            p.ops.push(op);
            p.times.push((0, 0));
            p.effect.push(0);
            p.release.push(release);
        }
        Ok(())
    }

    /// Keeps a log of the rows in which this home wrote a result itself (a
    /// far atomic executed at the home): see [`TableAgent::home_writes`].
    pub fn record_home_writes(&mut self) {
        self.home_writes.get_or_insert_with(Vec::new);
    }

    /// The rows in which this home wrote a result itself, as (line,
    /// requester, time, old line), since `record_home_writes` (empty
    /// before): the instants far atomics took effect, in the line's
    /// coherence order, and for a request that encoded its operation
    /// ([`LineRmw::to_operands`]) the line it found: the original value
    /// its completion returns, from which the requester learns whether a
    /// compare matched.
    pub fn home_writes(&self) -> &[HomeWrite] {
        self.home_writes.as_deref().unwrap_or(&[])
    }

    /// When each program operation took effect at this agent (0: not
    /// yet): a hit at its issue, a miss when its line arrived.
    pub fn program_effects(&self) -> &[Tick] {
        self.program.as_ref().map_or(&[], |p| &p.effect)
    }

    /// Gives the program's operations the values they write: operation
    /// `i` writes `data[i]` (at most the system's line size, zero-padded)
    /// instead of a fresh random value (`None`: the random one; an
    /// operation that writes nothing ignores it). Errors without a
    /// program, with a count that differs from its operations', or with a
    /// value longer than a line.
    pub fn set_program_data(&mut self, data: Vec<Option<Vec<u8>>>) -> Result<(), String> {
        let name = &self.sys.agents[self.id as usize].name;
        let line_bytes = self.sys.line_bytes;
        let Some(p) = self.program.as_mut() else {
            return Err(format!("{name}: data needs a program first"));
        };
        if data.len() != p.ops.len() {
            return Err(format!(
                "{name}: {} values for {} program operations",
                data.len(),
                p.ops.len()
            ));
        }
        let mut lines = Vec::with_capacity(data.len());
        for (i, d) in data.into_iter().enumerate() {
            lines.push(match d {
                None => None,
                Some(bytes) if bytes.len() > line_bytes => {
                    return Err(format!(
                        "{name}: program operation {i}'s value has {} bytes, a line {line_bytes}",
                        bytes.len()
                    ))
                }
                Some(bytes) => {
                    let mut l = [0u8; crate::LINE_BYTES];
                    l[..bytes.len()].copy_from_slice(&bytes);
                    Some(l)
                }
            });
        }
        p.data = lines;
        Ok(())
    }

    /// Gives program operation `index` the value it writes (one
    /// operation's [`set_program_data`](Self::set_program_data), for a
    /// driver that appends operations as it goes: a far atomic's encoded
    /// operands). Errors without a program, past its operations, or with a
    /// value longer than a line.
    pub fn set_program_value(&mut self, index: usize, value: &[u8]) -> Result<(), String> {
        let name = &self.sys.agents[self.id as usize].name;
        let line_bytes = self.sys.line_bytes;
        let Some(p) = self.program.as_mut() else {
            return Err(format!("{name}: a value needs a program first"));
        };
        if index >= p.ops.len() || value.len() > line_bytes {
            return Err(format!(
                "{name}: a value of {} bytes for program operation {index} (the program has {}, a line {line_bytes} bytes)",
                value.len(),
                p.ops.len()
            ));
        }
        let mut l = [0u8; crate::LINE_BYTES];
        l[..value.len()].copy_from_slice(value);
        if p.data.len() < p.ops.len() {
            p.data.resize(p.ops.len(), None);
        }
        p.data[index] = Some(l);
        Ok(())
    }

    /// Makes program operation `index`'s store a read-modify-write of the
    /// line's present value at the instant the store takes effect (the
    /// line held with write access: a hit at once, a miss when the line
    /// arrives), as a core's atomic instruction executed in its cache; the
    /// line it found is then in [`program_found`](Self::program_found).
    /// Errors without a program or past its operations.
    pub fn set_program_rmw(&mut self, index: usize, rmw: LineRmw) -> Result<(), String> {
        let name = &self.sys.agents[self.id as usize].name;
        let Some(p) = self.program.as_mut() else {
            return Err(format!("{name}: a read-modify-write needs a program first"));
        };
        if index >= p.ops.len() {
            return Err(format!(
                "{name}: a read-modify-write for program operation {index} (the program has {})",
                p.ops.len()
            ));
        }
        if p.rmw.len() < p.ops.len() {
            p.rmw.resize(p.ops.len(), None);
            p.found.resize(p.ops.len(), None);
        }
        p.rmw[index] = Some(rmw);
        Ok(())
    }

    /// Keeps the line program operation `index` sees when it takes effect
    /// (a hit at its issue, a miss when its line arrives) in
    /// [`program_found`](Self::program_found): what a load returned, for a
    /// driver that decides its next operation on it. Errors without a
    /// program or past its operations.
    pub fn set_program_snapshot(&mut self, index: usize) -> Result<(), String> {
        let name = &self.sys.agents[self.id as usize].name;
        let Some(p) = self.program.as_mut() else {
            return Err(format!("{name}: a snapshot needs a program first"));
        };
        if index >= p.ops.len() {
            return Err(format!(
                "{name}: a snapshot of program operation {index} (the program has {})",
                p.ops.len()
            ));
        }
        if p.snapshot.len() < p.ops.len() {
            p.snapshot.resize(p.ops.len(), false);
            p.found.resize(p.ops.len(), None);
        }
        p.snapshot[index] = true;
        Ok(())
    }

    /// Per program operation, the line its read-modify-write found when it
    /// took effect, or the line a snapshot operation read (`None`: none yet, or no read-modify-write; the vector
    /// may be shorter than the program).
    pub fn program_found(&self) -> &[Option<Line>] {
        self.program.as_ref().map_or(&[], |p| &p.found)
    }

    /// The program's (issue, completion) times, completion 0 for an
    /// operation that did not complete.
    pub fn program_times(&self) -> &[(Tick, Tick)] {
        self.program.as_ref().map_or(&[], |p| &p.times)
    }

    /// Puts a memory timing model behind a home: each request (a read, or
    /// a write when it carries data) for a line its cache does not hold
    /// waits for its access to the memory before its row runs, in place of
    /// `memory_ns` (with `memory_fills_cache = false` the home holds no
    /// line and every request reaches the memory). Behind a memory-side
    /// agent (one that keeps the line's memory as its copy, as a type-2
    /// DCOH its DRAM), each message whose row writes the copy (fill, store)
    /// and then reads it (a send of its data) waits for those accesses; the
    /// row a stalled message runs later is not charged (a known
    /// simplification).
    pub fn set_memory_timing(&mut self, timing: MemTiming) {
        self.timing = Some(timing);
    }

    /// Spreads a home's lines over LLC slices on the mesh: each request
    /// first travels to its line's slice and back.
    pub fn set_slice_placement(&mut self, placement: SlicePlacement) {
        self.placement = Some(placement);
    }

    /// The home's memory timing model, if it has one.
    pub fn memory_timing(&self) -> Option<&MemTiming> {
        self.timing.as_ref()
    }

    /// Marks `lines` as held by a home's cache (they skip `memory_ns`).
    pub fn warm(&mut self, lines: impl IntoIterator<Item = u64>) {
        for line in lines {
            self.cache_line(line);
        }
    }

    /// Marks `line` cached at a home, evicting another when a bounded
    /// cache is full.
    fn cache_line(&mut self, line: u64) {
        if self.cached.get(line).is_some() {
            return;
        }
        self.cached.insert(line, CACHED);
        if let Some(victim) = self.home_cache.as_mut().and_then(|c| c.admit(line)) {
            self.cached.remove(victim);
        }
    }

    /// A program operation's pipeline (`access_ns`): an operation that
    /// took no longer completed locally (a hit).
    pub fn access_time(&self) -> Tick {
        self.access
    }

    /// The longest a program operation that completes locally can take
    /// (its hit in either level, with a load's data return): an operation
    /// that took no longer was a hit.
    pub fn local_time_bound(&self) -> Tick {
        self.access.max(self.hit) + self.load_data
    }

    /// The agent's id.
    pub fn id(&self) -> AgentId {
        self.id
    }

    /// Tester operations completed (0 without a tester).
    pub fn ops_done(&self) -> u64 {
        self.tester
            .as_ref()
            .map_or(0, |t| t.issued - u64::from(t.open.is_some()))
    }

    /// Whether the tester has issued all its operations and none is open.
    pub fn finished(&self) -> bool {
        self.tester
            .as_ref()
            .is_none_or(|t| t.issued == t.params.ops && t.open.is_none())
            && self
                .program
                .as_ref()
                .is_none_or(|p| p.next == p.ops.len() && p.open.is_empty())
            && self.engine.as_ref().is_none_or(|(e, _)| e.done())
            && self.locks.is_empty()
    }

    /// Lines in a transient state or with stalled requests (open work at
    /// the end of a run), as `agent line 0x..: state (+n stalled)`.
    pub fn open_lines(&self) -> Vec<String> {
        let mut lines: Vec<u64> = self
            .lines
            .iter()
            .filter(|(_, l)| !self.table.stable[l.state as usize])
            .map(|(line, _)| line)
            .chain(self.stalled.keys().copied())
            .collect();
        lines.sort_unstable();
        lines.dedup();
        let mut out: Vec<(u64, String)> = lines
            .into_iter()
            .map(|line| {
                (
                    line,
                    format!(
                        "{} line {line:#x}: {} (+{} stalled)",
                        self.sys.agents[self.id as usize].name,
                        self.state_of(line),
                        self.stalled.get(&line).map_or(0, VecDeque::len)
                    ),
                )
            })
            .collect();
        out.sort();
        out.into_iter().map(|(_, s)| s).collect()
    }

    /// The state name of `line` here.
    pub fn state_of(&self, line: u64) -> &str {
        let st = self
            .lines
            .get_ref(line)
            .map_or(self.table.initial, |l| l.state as usize);
        self.sys.protocol.state_name(self.role, st)
    }

    /// Whether this agent has write access to `line`.
    pub fn writes(&self, line: u64) -> bool {
        let st = self
            .lines
            .get_ref(line)
            .map_or(self.table.initial, |l| l.state as usize);
        self.table.access[st] == ccsim_protocol::ir::Access::Write
    }

    /// The agent's copy of `line`, if it holds one.
    pub fn copy_of(&self, line: u64) -> Option<&Line> {
        self.lines.get_ref(line).and_then(|l| l.copy.as_ref())
    }

    /// Puts `value` in a home's memory for `line` before the run (data
    /// the host initialised); the system's checker must be told the same
    /// ([`InvariantChecker::preload`]). Errors at an agent that is not a
    /// home.
    pub fn preload_memory(&mut self, line: u64, value: Line) -> Result<(), String> {
        if !self.is_home {
            return Err(format!(
                "{}: only a home has memory to preload",
                self.sys.agents[self.id as usize].name
            ));
        }
        self.memory.insert(line, value);
        Ok(())
    }

    /// The line's value in a home's memory (its initial value until a row
    /// writes it).
    pub fn memory_of(&self, line: u64) -> Line {
        memory_line(&self.memory, &self.sys, line)
    }

    fn fresh(&self, ctx: &mut Ctx<'_, Msg>) -> Line {
        let mut v = [0u8; crate::LINE_BYTES];
        fill_fresh(&mut v, self.sys.line_bytes, ctx);
        v
    }

    /// The tester's next operation: a random local event on a random line
    /// whose table has a row for it in the line's (stable) state.
    fn issue(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let Some(t) = self.tester.as_ref() else {
            return;
        };
        if t.issued == t.params.ops || t.open.is_some() {
            return;
        }
        let (lines, n_events) = (t.params.lines, t.events.len() as u64);
        for _ in 0..64 {
            let line = ctx.rng().below(lines);
            let pick_event = ctx.rng().below(n_events) as usize;
            let event = self.tester.as_ref().expect("tester").events[pick_event];
            let state = self
                .lines
                .get_ref(line)
                .map_or(self.table.initial, |l| l.state as usize);
            if !self.table.stable[state] {
                continue;
            }
            if !matches!(self.table.cell(state, event).1, Cell::Go(_)) {
                continue;
            }
            let value = self.fresh(ctx);
            let t = self.tester.as_mut().expect("tester");
            t.issued += 1;
            t.open = Some(OpenOp {
                line,
                value,
                start: ctx.now(),
            });
            let ran = self.run(line, event, None, ctx);
            debug_assert!(ran, "the tester picked a Go cell");
            return;
        }
        ctx.stop();
        self.checker.borrow_mut().violation(
            ctx.now(),
            format!(
                "{}: the tester found no line with a row for a local event in 64 tries",
                self.sys.agents[self.id as usize].name
            ),
        );
    }

    /// Issues the program's next operations: in order, while the window
    /// has room, the next line is stable and the issue interval has
    /// passed.
    fn issue_program(&mut self, ctx: &mut Ctx<'_, Msg>) {
        if self.engine.is_some() {
            return self.issue_engine(ctx);
        }
        loop {
            let Some(p) = self.program.as_ref() else {
                return;
            };
            if p.next == p.ops.len() {
                return;
            }
            let unwindowed = p.unwindowed.get(p.next).copied().unwrap_or(false);
            if !unwindowed && p.open.len() - p.open_unwindowed >= p.window {
                return;
            }
            let now = ctx.now();
            let mut at = p.next_at.max(p.release.get(p.next).copied().unwrap_or(0));
            if let Some(&Some(j)) = p.after.get(p.next) {
                match p.times[j].1 {
                    // Its completion wakes the program.
                    0 => return,
                    done => at = at.max(done),
                }
            }
            if now < at {
                self.wake_program(at, ctx);
                return;
            }
            let (line, event) = p.ops[p.next];
            let state = self
                .lines
                .get_ref(line)
                .map_or(self.table.initial, |l| l.state as usize);
            if p.open.contains_key(&line) {
                // Waits for the line's open operation; its completion wakes us.
                return;
            }
            if !self.table.stable[state] {
                // Waits for the line (an eviction of it, say) to settle.
                self.program.as_mut().expect("program").blocked_on = Some(line);
                return;
            }
            if !self.make_room(line, ctx) {
                return;
            }
            if !matches!(self.table.cell(state, event).1, Cell::Go(_)) {
                ctx.stop();
                let name = &self.sys.agents[self.id as usize].name;
                let ev = &self.sys.protocol.ir.roles[self.role].events[event].name;
                let st = self.sys.protocol.state_name(self.role, state);
                self.checker.borrow_mut().violation(
                    now,
                    format!(
                        "{name}: the program's {ev} on line {line:#x} has no row in state {st}"
                    ),
                );
                return;
            }
            let line_bytes = self.sys.line_bytes;
            let p = self.program.as_mut().expect("program");
            let index = p.next;
            p.next += 1;
            p.times[index].0 = now;
            p.open_unwindowed += usize::from(unwindowed);
            // The op's value is made where the open op keeps it (a line,
            // not copied there): a fresh one, drawn even when the program
            // gives one, so that the run's random stream does not depend
            // on the data; then the given one over it.
            let open = OpenOp {
                line,
                value: [0; crate::LINE_BYTES],
                start: now,
            };
            let (_, op) = p.open.entry(line).insert_entry((index, open)).into_mut();
            fill_fresh(&mut op.value, line_bytes, ctx);
            if let Some(Some(given)) = p.data.get(index) {
                op.value = *given;
            }
            let near = p.near.as_mut().map(|n| n.touch(line));
            self.run(line, event, None, ctx);
            let p = self.program.as_mut().expect("program");
            let hit = !p.open.contains_key(&line);
            if hit && p.times[index].1 != 0 {
                // A local completion: the hit's own time, by level.
                let level = match near {
                    Some(false) => self.access,
                    _ if self.hit > 0 => self.hit,
                    _ => self.access,
                };
                let data = if Some(event) == p.load {
                    self.load_data
                } else {
                    0
                };
                p.times[index].1 = now + level + data;
                if p.stop_on_completion {
                    ctx.stop();
                }
            }
            p.next_at = now
                + if hit {
                    self.issue_interval
                } else {
                    self.miss_issue_interval
                };
        }
    }

    /// Releases the locks whose hold is over (their waiting messages run),
    /// then issues the engine's operations while the pipeline accepts
    /// them, and wakes the agent for the next release, issue slot or
    /// engine event.
    fn issue_engine(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let now = ctx.now();
        let mut expired: Vec<(u64, u64)> = self
            .locks
            .iter()
            .filter(|(_, &(until, _))| until <= now)
            .map(|(&line, &(_, id))| (line, id))
            .collect();
        expired.sort_unstable();
        for (line, id) in expired {
            self.locks.remove(&line);
            self.engine.as_mut().expect("engine").0.released(id, now);
            self.retry_stalled(line, ctx);
        }
        let store = self.engine.as_ref().expect("engine").1;
        loop {
            let next_at = self.program.as_ref().expect("program").next_at;
            if now < next_at {
                self.wake_program(next_at, ctx);
                break;
            }
            let op = match self.engine_pending.take() {
                Some(op) => Some(op),
                None => {
                    let p = self.program.as_ref().expect("program");
                    let (lines, locks, stable) = (&self.lines, &self.locks, &self.table.stable);
                    let initial = self.table.initial;
                    let mut busy = |line: u64| {
                        p.open.contains_key(&line)
                            || locks.contains_key(&line)
                            || !stable[lines.get_ref(line).map_or(initial, |l| l.state as usize)]
                    };
                    self.engine.as_mut().expect("engine").0.poll(now, &mut busy)
                }
            };
            let Some(op) = op else { break };
            if !self.make_room(op.line, ctx) {
                self.engine_pending = Some(op);
                break;
            }
            let state = self
                .lines
                .get_ref(op.line)
                .map_or(self.table.initial, |l| l.state as usize);
            if !matches!(self.table.cell(state, store).1, Cell::Go(_)) {
                ctx.stop();
                let name = &self.sys.agents[self.id as usize].name;
                let st = self.sys.protocol.state_name(self.role, state);
                self.checker.borrow_mut().violation(
                    now,
                    format!(
                        "{name}: the engine's store on line {:#x} has no row in state {st}",
                        op.line
                    ),
                );
                return;
            }
            let p = self.program.as_mut().expect("program");
            let index = p.times.len();
            p.times.push((now, 0));
            p.effect.push(0);
            p.open.insert(
                op.line,
                (
                    index,
                    OpenOp {
                        line: op.line,
                        value: [0; crate::line::LINE_BYTES],
                        start: now,
                    },
                ),
            );
            self.engine_ops.insert(op.line, (op, None));
            self.run(op.line, store, None, ctx);
            let p = self.program.as_mut().expect("program");
            let hit = !p.open.contains_key(&op.line);
            p.next_at = now
                + if hit {
                    self.issue_interval
                } else {
                    self.miss_issue_interval
                };
        }
        let release = self.locks.values().map(|&(until, _)| until).min();
        let own = self.engine.as_ref().expect("engine").0.next_wake(now);
        if let Some(at) = release.into_iter().chain(own).min() {
            self.wake_program(at.max(now), ctx);
        }
    }

    /// With a bounded cache: marks `line` most recently used in its set,
    /// first evicting the set's least recently used line that is not busy
    /// when `line` is not in it and the set is full. Lines a snoop
    /// invalidated leave their set here. False (and the program waits) when
    /// every line of a full set is busy.
    fn make_room(&mut self, line: u64, ctx: &mut Ctx<'_, Msg>) -> bool {
        let initial = self.table.initial;
        let Some(p) = self.program.as_mut() else {
            return true;
        };
        let Some(cache) = p.cache.as_mut() else {
            return true;
        };
        let set = cache.set_of(line);
        let lines = &self.lines;
        cache.sets[set].retain(|&l| {
            lines
                .get_ref(l)
                .is_some_and(|st| st.state as usize != initial)
        });
        let ways = &mut cache.sets[set];
        if let Some(i) = ways.iter().position(|&l| l == line) {
            ways.remove(i);
            ways.push(line);
            return true;
        }
        if ways.len() < cache.ways {
            ways.push(line);
            return true;
        }
        let stable = &self.table.stable;
        let locks = &self.locks;
        let victim = ways.iter().position(|&l| {
            !p.open.contains_key(&l)
                && !locks.contains_key(&l)
                && lines.get_ref(l).is_some_and(|st| stable[st.state as usize])
        });
        let Some(i) = victim else {
            // Every way is busy: an open operation's completion wakes us,
            // and so does a line that is busy otherwise (a snoop in flight).
            p.blocked_on = ways.iter().copied().find(|l| !p.open.contains_key(l));
            return false;
        };
        let (victim, evict) = (ways.remove(i), cache.evict);
        ways.push(line);
        let state = self
            .lines
            .get_ref(victim)
            .map_or(initial, |l| l.state as usize);
        if !matches!(self.table.cell(state, evict).1, Cell::Go(_)) {
            ctx.stop();
            let name = &self.sys.agents[self.id as usize].name;
            let st = self.sys.protocol.state_name(self.role, state);
            self.checker.borrow_mut().violation(
                ctx.now(),
                format!("{name}: no eviction row for line {victim:#x} in state {st}"),
            );
            return false;
        }
        self.run(victim, evict, None, ctx);
        true
    }

    /// Schedules the program's next issue at `at`, unless a wake-up at or
    /// before it is already pending.
    fn wake_program(&mut self, at: Tick, ctx: &mut Ctx<'_, Msg>) {
        let Some(p) = self.program.as_mut() else {
            return;
        };
        if p.wake_at.is_some_and(|w| w <= at) {
            return;
        }
        p.wake_at = Some(at);
        ctx.wake_after(at - ctx.now(), PROGRAM_NEXT);
    }

    /// Whether the row message `msg` runs on `line` in the line's present
    /// state (writes, reads) the agent's copy: at a memory-side agent, its
    /// DRAM. A guarded or stalling cell touches nothing.
    fn memory_side_access(&self, line: u64, msg: u16) -> (bool, bool) {
        let Some(event) = self.sys.protocol.msg_event[self.role][msg as usize] else {
            return (false, false);
        };
        let state = self
            .lines
            .get_ref(line)
            .map_or(self.table.initial, |l| l.state as usize);
        let Some(row) = self.table.row(state, event) else {
            return (false, false);
        };
        let writes = row
            .steps
            .iter()
            .any(|s| matches!(s, Step::Fill | Step::Store));
        let reads = row
            .steps
            .iter()
            .any(|s| matches!(s, Step::Send(x) if x.data && x.source == DataSource::Copy));
        (writes, reads)
    }

    /// Handles a message, then gives the line's stalled requests another
    /// chance if it ran a row.
    fn receive(&mut self, m: CohMsg, ctx: &mut Ctx<'_, Msg>) {
        let line = m.line;
        // Nothing stalled on any line (most deliveries): no retry to make,
        // and no call to make for it.
        if self.deliver(m, ctx) && !self.stalled.is_empty() {
            self.retry_stalled(line, ctx);
        }
    }

    /// Runs a message's row, stalls it, or reports an unspecified
    /// reception. True if a row ran.
    fn deliver(&mut self, m: CohMsg, ctx: &mut Ctx<'_, Msg>) -> bool {
        if !self.locks.is_empty() && self.locks.contains_key(&m.line) {
            // The engine holds the line for its read-modify-write: the
            // message (a snoop) waits for the release.
            ctx.count(ST_STALLS, 1);
            self.stalled.entry(m.line).or_default().push_back(m);
            return false;
        }
        match self.sys.protocol.msg_event[self.role][m.msg as usize] {
            Some(event) => self.run(m.line, event, Some(m), ctx),
            None => {
                let state = self
                    .lines
                    .get_ref(m.line)
                    .map_or(self.table.initial, |l| l.state as usize);
                self.fail_unspecified(m.line, m.msg, state, ctx);
                false
            }
        }
    }

    fn fail_unspecified(&mut self, line: u64, msg: u16, state: usize, ctx: &mut Ctx<'_, Msg>) {
        self.checker
            .borrow_mut()
            .unspecified(ctx.now(), line, msg, self.id, state);
        ctx.stop();
    }

    /// Gives the stalled requests of `line` another chance, oldest first:
    /// after each one that runs its row, from the oldest again; until a
    /// whole pass runs none.
    fn retry_stalled(&mut self, line: u64, ctx: &mut Ctx<'_, Msg>) {
        'pass: loop {
            let n = self.stalled.get(&line).map_or(0, VecDeque::len);
            for _ in 0..n {
                let Some(m) = self.pop_stalled(line) else {
                    return;
                };
                if self.deliver(m, ctx) {
                    continue 'pass;
                }
            }
            return;
        }
    }

    /// The oldest stalled request of `line` (its queue leaves the map when
    /// it empties).
    fn pop_stalled(&mut self, line: u64) -> Option<CohMsg> {
        let queue = self.stalled.get_mut(&line)?;
        let m = queue.pop_front();
        if queue.is_empty() {
            self.stalled.remove(&line);
        }
        m
    }

    /// Runs the row of `event` on `line` for message `m` (or a tester
    /// event), then closes the tester's operation if the line is stable.
    /// A request the row stalls waits in the line's queue; an unspecified
    /// reception stops the run. True if a row ran.
    fn run(&mut self, line: u64, event: usize, m: Option<CohMsg>, ctx: &mut Ctx<'_, Msg>) -> bool {
        let sys = self.sys.clone();
        let initial = self.table.initial;
        // A stored line's state changes where it is stored, not in a copy
        // (about 150 bytes) taken out of the map and inserted back; a line
        // the map does not hold starts in `unstored`, stored at the end
        // unless the row leaves it pristine.
        let mut unstored = None;
        let ls: &mut LineState = match self.lines.get_mut(line) {
            Some(ls) => ls,
            None => unstored.insert({
                let mut l = LineState::new(initial);
                // A role that holds the line from the start (a memory-side
                // agent, such as a type-2 DCOH in front of its DRAM) starts
                // with the line's initial value, as the checker's does.
                if self.keeps_copy && sys.protocol.holds[self.role][initial] {
                    l.copy = Some(sys.initial_value(line));
                }
                l
            }),
        };
        let (src, req, ack, input) = match &m {
            Some(m) => {
                let f = &sys.protocol.msgs[m.msg as usize];
                let req = if f.requester { m.req } else { m.src };
                (m.src, req, f.ack, m.data.as_deref())
            }
            None => (self.id, self.id, false, None),
        };
        let mut dir = ls.dir;
        if ack {
            dir.acks -= 1;
        }
        let row = match pick(self.table.cell(ls.state as usize, event).1, |g| {
            dir.holds(g, req)
        }) {
            Cell::Go(row) => row,
            cell => {
                let (state, stalled) = (ls.state as usize, matches!(cell, Cell::Stall));
                match m {
                    Some(m) if stalled => {
                        ctx.count(ST_STALLS, 1);
                        self.stalled.entry(line).or_default().push_back(m);
                    }
                    Some(m) => self.fail_unspecified(line, m.msg, state, ctx),
                    None => unreachable!("the tester fires rows only"),
                }
                return false;
            }
        };
        if let Some(m) = &m {
            self.checker.borrow_mut().in_flight(line, m.msg, -1);
        }
        // Only a request the home takes brings its data into the buffer: a
        // stalled one (a later WriteUniqueFull or atomic on a busy line)
        // must leave the running transaction's operands alone.
        if self.buffers_operands {
            if let (Some(m), Some(data)) = (&m, input) {
                if sys.protocol.msgs[m.msg as usize].class == MsgClass::Request {
                    self.operands.insert(line, *data);
                }
            }
        }
        // The open operation on the line, by reference: it holds a line
        // (about 150 bytes), and only its index, start and value are used.
        let tester_open = self
            .tester
            .as_ref()
            .and_then(|t| t.open.as_ref())
            .filter(|o| o.line == line);
        let program_open = self.program.as_ref().and_then(|p| p.open.get(&line));
        let program_index = program_open.map(|&(index, _)| index);
        let (program_start, tester_start) = (
            program_open.map(|(_, o)| o.start),
            tester_open.map(|o| o.start),
        );
        let open = tester_open.or(program_open.map(|(_, o)| o));
        // The engine's operation on this line (an agent with an engine has
        // no program of its own), else the program operation's own (a
        // core's atomic instruction).
        let rmw = program_index.and_then(|index| {
            if self.engine.is_some() {
                self.engine_ops.get(&line).map(|(op, _)| op.rmw)
            } else {
                self.program
                    .as_ref()
                    .and_then(|p| p.rmw.get(index).copied().flatten())
            }
        });
        let fresh = open.map(|o| &o.value);
        let mut rmw_old = None;
        let row: &Row<()> = row;
        // The home's memory copy of the line, read when the row first uses
        // it (`RowEffects::memory`): most rows at a home never do.
        let mut memory = None;
        let mut fx = RowEffects {
            sys: &sys,
            me: self.id,
            line,
            copy: &mut ls.copy,
            home_memory: if self.is_home {
                Some(&self.memory)
            } else {
                None
            },
            memory: &mut memory,
            memory_written: false,
            keeps_copy: self.keeps_copy,
            dir: &mut dir,
            // A local event's data is the op's own value.
            input: if m.is_some() { input } else { fresh },
            fresh,
            src,
            req,
            state: ls.state as usize,
            ctx,
            checker: &self.checker,
            rmw,
            rmw_old: &mut rmw_old,
            operand: if self.buffers_operands {
                self.operands.get(&line)
            } else {
                None
            },
        };
        let executed = execute(row, &mut fx);
        let memory_written = fx.memory_written;
        if let Err(e) = executed {
            let who = &sys.agents[self.id as usize].name;
            self.checker
                .borrow_mut()
                .violation(ctx.now(), format!("{who} line {line:#x}: {e}"));
            ctx.stop();
        }
        ctx.count(ST_ROWS, 1);
        if self.buffers_operands {
            if let Some(log) = self.home_writes.as_mut() {
                if row.steps.iter().any(|s| matches!(s, Step::Write)) {
                    log.push((line, req, ctx.now(), rmw_old));
                }
            }
            if row.next_stable {
                self.operands.remove(&line);
            }
        }
        ls.state = row.next as u32;
        ls.dir = dir;
        if self.keeps_copy && !row.holds_after {
            ls.copy = None;
        }
        // Only a written value is stored: an absent line reads its
        // initial value, so a row that left memory alone need not grow it.
        if let Some(mem) = memory.filter(|_| memory_written) {
            self.memory.insert(line, mem);
        }
        // The checker sees the home's memory after every row (as it was
        // before the row if the row did not read it).
        if self.is_home && memory.is_none() && self.checker.borrow().enabled {
            memory = Some(memory_line(&self.memory, &sys, line));
        }
        let value = if self.keeps_copy {
            ls.copy.as_ref()
        } else {
            None
        };
        // A program operation that takes effect in this row and keeps a
        // snapshot: the line it sees.
        let snapshot = match (program_index, self.program.as_ref()) {
            (Some(index), Some(p))
                if row.next_stable && p.snapshot.get(index).copied().unwrap_or(false) =>
            {
                value.copied()
            }
            _ => None,
        };
        self.checker.borrow_mut().row(
            ctx.now(),
            line,
            self.id,
            ls.state as usize,
            value,
            memory.as_ref(),
        );
        let stable = row.next_stable;
        // Sparse: a line back to nothing (initial state, no copy, empty
        // directory entry, nothing stalled) leaves the map.
        let pristine = ls.state as usize == initial
            && ls.copy.is_none()
            && ls.dir == EMPTY_DIR
            && !self.stalled.contains_key(&line);
        match unstored {
            // Changed in place.
            None if pristine => self.lines.remove(line),
            None => {}
            Some(new) if !pristine => self.lines.insert(line, new),
            Some(_) => {}
        }
        if let Some(old) = rmw_old {
            if let Some(entry) = self.engine_ops.get_mut(&line) {
                entry.1 = Some(old);
            } else if let (Some(index), Some(p)) = (program_index, self.program.as_mut()) {
                if let Some(found) = p.found.get_mut(index) {
                    *found = Some(old);
                }
            }
        }
        if stable {
            if let Some(p) = self.program.as_mut().filter(|p| p.blocked_on == Some(line)) {
                p.blocked_on = None;
                let now = ctx.now();
                self.wake_program(now, ctx);
            } else if self.engine.is_some() && program_index.is_none() {
                // A line settled (an eviction or a snoop is over): an engine
                // operation may have been waiting for it.
                let now = ctx.now();
                self.wake_program(now, ctx);
            }
            if let (Some(index), Some(start)) = (program_index, program_start) {
                let p = self.program.as_mut().expect("program");
                if snapshot.is_some() {
                    p.found[index] = snapshot;
                }
                p.open.remove(&line);
                if p.unwindowed.get(index).copied().unwrap_or(false) {
                    p.open_unwindowed -= 1;
                }
                p.effect[index] = ctx.now();
                p.times[index].1 = ctx.now() + self.access;
                if p.stop_on_completion {
                    ctx.stop();
                }
                ctx.count(ST_OPS, 1);
                ctx.record(ST_OP_LATENCY, ctx.now() + self.access - start);
                let now = ctx.now();
                let engine_op = if self.engine_ops.is_empty() {
                    None
                } else {
                    self.engine_ops.remove(&line)
                };
                if let Some((op, old)) = engine_op {
                    self.engine_acquired(op, old, line, ctx);
                }
                self.wake_program(now, ctx);
            } else if let Some(start) = tester_start {
                let t = self.tester.as_mut().expect("tester");
                t.open = None;
                ctx.count(ST_OPS, 1);
                ctx.record(ST_OP_LATENCY, ctx.now() - start);
                let think = t.params.think;
                ctx.wake_after(think, NEXT_OP);
            }
        }
        // The message is consumed: its payload's buffer goes back to the
        // pool, for the next data message this thread sends (a buffer
        // dropped here would cost a free, and that send a malloc).
        if let Some(b) = m.and_then(|m| m.data) {
            crate::recycle_line(b);
        }
        true
    }
}

impl TableAgent {
    /// The engine's operation `op` holds `line` exclusively: the engine
    /// sees the line before and after its write once the pipeline
    /// (`access_ns`) is through, and the line stays locked from now until
    /// the hold the engine asks for is over.
    fn engine_acquired(
        &mut self,
        op: EngineOp,
        old: Option<Line>,
        line: u64,
        ctx: &mut Ctx<'_, Msg>,
    ) {
        let now = ctx.now();
        let new = self.lines.get_ref(line).and_then(|l| l.copy);
        let (Some(old), Some(new)) = (old, new) else {
            ctx.stop();
            let name = &self.sys.agents[self.id as usize].name;
            self.checker.borrow_mut().violation(
                now,
                format!("{name}: the engine's store on line {line:#x} completed without writing the line"),
            );
            return;
        };
        let seen = now + self.access;
        let hold = self
            .engine
            .as_mut()
            .expect("engine")
            .0
            .acquired(op.id, &old, &new, seen);
        self.locks.insert(line, (seen + hold, op.id));
        self.wake_program(seen + hold, ctx);
    }
}

/// A row's effects on an agent's line: the simulator's side of
/// [`Effects`].
struct RowEffects<'a, 'c, 'w> {
    sys: &'a SystemRef,
    me: AgentId,
    line: u64,
    copy: &'a mut Option<Line>,
    /// At the home: the lines written to its memory (absent ones hold
    /// their initial value); `None` elsewhere.
    home_memory: Option<&'a HashMap<u64, Line>>,
    /// The home's memory copy of the line once the row has read or
    /// written it (see [`RowEffects::memory`]).
    memory: &'a mut Option<Line>,
    /// Whether the row wrote `memory` (so the home stores it).
    memory_written: bool,
    keeps_copy: bool,
    dir: &'a mut DirEntry,
    input: Option<&'a Line>,
    /// The open operation's own value (by reference, as `operand`: the
    /// effects are built for every row, and two lines copied in would be
    /// about 260 bytes a row).
    fresh: Option<&'a Line>,
    src: AgentId,
    req: AgentId,
    state: usize,
    ctx: &'a mut Ctx<'w, Msg>,
    checker: &'c Rc<RefCell<InvariantChecker>>,
    /// An engine's read-modify-write: the row's write (or a hit's store)
    /// writes its function of the line's present value.
    rmw: Option<LineRmw>,
    /// The line before that write.
    rmw_old: &'a mut Option<Line>,
    /// At a home that executes far atomics: the line's buffered request
    /// data (the operands), which its `write` stores.
    operand: Option<&'a Line>,
}

impl RowEffects<'_, '_, '_> {
    fn put(&mut self, s: &SendStep<()>, dst: AgentId, data: Option<Box<Line>>) {
        let mut m = CohMsg::new(self.sys.catalogue, s.msg, self.line, data);
        m.src = self.me;
        m.dst = dst;
        m.req = if s.requester { self.req } else { self.me };
        self.checker.borrow_mut().in_flight(self.line, s.msg, 1);
        let (bytes, vc) = (self.sys.wire_bytes(s.msg), self.sys.vc(s.msg));
        self.ctx.send(NET, Msg::Coh(m), bytes, vc);
    }

    /// The home's memory copy of the line, read on first use (`None` at
    /// an agent that is not the home).
    #[inline]
    fn memory(&mut self) -> Option<&mut Line> {
        if self.memory.is_none() {
            if let Some(written) = self.home_memory {
                *self.memory = Some(memory_line(written, self.sys, self.line));
            }
        }
        self.memory.as_mut()
    }

    fn value(&mut self) -> Option<Line> {
        self.value_ref().copied()
    }

    /// The line's present value here: the agent's copy, or the home's
    /// memory.
    fn value_ref(&mut self) -> Option<&Line> {
        if self.keeps_copy {
            self.copy.as_ref()
        } else {
            self.memory().map(|m| &*m)
        }
    }

    /// A line engine's operation: the new value from the old one, which
    /// the agent keeps for the engine.
    fn read_modify_write(&mut self) -> Result<(), String> {
        let rmw = self.rmw.expect("a line engine's operation");
        let old = self.value().ok_or("a read-modify-write without a value")?;
        *self.rmw_old = Some(old);
        self.set_value(rmw.apply(&old))
    }

    fn set_value(&mut self, v: Line) -> Result<(), String> {
        if self.keeps_copy {
            *self.copy = Some(v);
        } else if let Some(m) = self.memory() {
            *m = v;
            self.memory_written = true;
        } else {
            return Err("store at an agent with neither a copy nor memory".into());
        }
        self.checker.borrow_mut().store(self.line, self.me, &v);
        Ok(())
    }
}

impl Effects<()> for RowEffects<'_, '_, '_> {
    fn send(&mut self, s: &SendStep<()>) -> Result<(), String> {
        // The payload is copied once, from its source into the message's
        // buffer.
        let data = if !s.data {
            None
        } else {
            let src: &Line = match s.source {
                DataSource::Copy => self.copy.as_ref().ok_or("send of the copy without one")?,
                DataSource::Memory => self.memory().ok_or("send of memory at a non-home")?,
                DataSource::Fresh => self
                    .fresh
                    .ok_or("send of a fresh value without an open op")?,
            };
            Some(crate::boxed_line_with(|b| *b = *src))
        };
        let facts = &self.sys.protocol.msgs[s.msg as usize];
        if facts.counts_ack && s.target != Target::Sharers {
            self.dir.acks += 1;
        }
        match s.target {
            Target::Default => {
                let dst = if facts.to == self.sys.protocol.home {
                    self.sys.home_of(self.line)
                } else {
                    self.sys
                        .agents_of(facts.to)
                        .next()
                        .ok_or_else(|| format!("no agent plays the receiver of {}", s.name))?
                };
                self.put(s, dst, data);
            }
            Target::Home => {
                let home = self.sys.home_of(self.line);
                self.put(s, home, data);
            }
            Target::Src => self.put(s, self.src, data),
            Target::Req => self.put(s, self.req, data),
            Target::Owner => {
                let o = self
                    .dir
                    .owner
                    .ok_or_else(|| format!("{} to the owner, but the line has none", s.name))?;
                self.put(s, o, data);
            }
            Target::Sharers => {
                // The sharers of the message's receiving role.
                let others = self.dir.others(self.req);
                for a in 0..self.sys.agents.len() as AgentId {
                    if others & (1u64 << a) != 0 && self.sys.agents[a as usize].role == facts.to {
                        let data = data.as_deref().map(|d| crate::boxed_line(*d));
                        self.put(s, a, data);
                        self.dir.acks += 1;
                    }
                }
                if let Some(b) = data {
                    crate::recycle_line(b);
                }
            }
        }
        Ok(())
    }

    fn fill(&mut self) -> Result<(), String> {
        *self.copy = Some(*self.input.ok_or("fill without received data")?);
        Ok(())
    }

    fn store(&mut self) -> Result<(), String> {
        if self.rmw.is_some() {
            return self.read_modify_write();
        }
        let v = *self.input.ok_or("store without data")?;
        self.set_value(v)
    }

    fn check(&mut self) -> Result<(), String> {
        let (now, line, me, state) = (self.ctx.now(), self.line, self.me, self.state);
        let checker = self.checker;
        // The line by reference: the checker, off in a timing run, reads
        // nothing, and a copy would cost a 128-byte move a read.
        let v = self.value_ref().ok_or("a read without a value")?;
        checker.borrow_mut().read(now, line, me, state, v);
        Ok(())
    }

    fn write(&mut self) -> Result<(), String> {
        if self.rmw.is_some() {
            return self.read_modify_write();
        }
        // An agent's own op writes its value; a home executing a far
        // atomic runs the operation its request encodes on the line's
        // bytes (an AtomicCompare writes its swap value only where the
        // addressed word equals its compare value) and keeps the old line
        // for its log; any other operand line is swapped in whole.
        let v = match (self.fresh, self.operand) {
            (Some(v), _) => *v,
            (None, Some(op)) => match LineRmw::from_operands(op, self.sys.line_bytes) {
                Some(rmw) => {
                    let rmw = rmw?;
                    let old = self
                        .value()
                        .ok_or("a far atomic without the line's value")?;
                    *self.rmw_old = Some(old);
                    rmw.apply(&old)
                }
                None => *op,
            },
            (None, None) => return Err("write without an open op or a request's operands".into()),
        };
        self.set_value(v)
    }

    fn write_mem(&mut self) -> Result<(), String> {
        let v = *self.input.ok_or("write_mem without received data")?;
        // The whole line is written: no need to read it first.
        if self.home_memory.is_none() {
            return Err("write_mem at a non-home".into());
        }
        *self.memory = Some(v);
        self.memory_written = true;
        Ok(())
    }

    fn directory(&mut self, op: DirOp) -> Result<(), String> {
        self.dir.apply(op, self.req);
        Ok(())
    }
}

/// The lines of a home cache with a capacity (`cache_lines`), and the
/// fixed pseudo-random sequence that picks its victims (its own, so that
/// evictions leave the simulation's random streams alone).
#[derive(Debug, Clone)]
struct HomeCache {
    capacity: usize,
    lines: Vec<u64>,
    rng: u64,
}

impl HomeCache {
    fn new(capacity: usize) -> HomeCache {
        HomeCache {
            capacity,
            lines: Vec::with_capacity(capacity.min(1 << 20) + 1),
            rng: 0x9e37_79b9_7f4a_7c15,
        }
    }

    /// Adds `line` (not yet held); returns the line it evicts when full,
    /// never `line` itself.
    fn admit(&mut self, line: u64) -> Option<u64> {
        if self.lines.len() < self.capacity {
            self.lines.push(line);
            return None;
        }
        // xorshift64*: a victim among the lines held before this one.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let k = (self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) % self.lines.len() as u64) as usize;
        Some(std::mem::replace(&mut self.lines[k], line))
    }
}

impl Component<Msg> for TableAgent {
    fn spec(&self) -> &'static ComponentSpec {
        &TABLE_AGENT
    }

    fn init(&mut self, ctx: &mut Ctx<'_, Msg>) {
        if self.tester.is_some() {
            ctx.wake_after(0, NEXT_OP);
        }
        self.wake_program(0, ctx);
    }

    fn on_message(&mut self, _port: PortId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let name = &self.sys.agents[self.id as usize].name;
        let m = match msg.into_coh_of(name, self.sys.catalogue) {
            Ok(m) => m,
            Err(e) => {
                self.checker.borrow_mut().violation(ctx.now(), e);
                return ctx.stop();
            }
        };
        let (class, carries_data) = {
            let facts = &self.sys.protocol.msgs[m.msg as usize];
            (facts.class, facts.data)
        };
        // Only the agent where the line's memory lives has a timing model
        // (the home, or a memory-side agent: the platform checks it).
        let is_home = self.is_home;
        let mut delay = self.occupancy;
        if is_home && class == MsgClass::Request {
            if let Some(p) = &self.placement {
                delay += p.round_trip_ps(m.line);
            }
        }
        let memory_side =
            (!is_home && self.timing.is_some()).then(|| self.memory_side_access(m.line, m.msg));
        if let (Some((writes, reads)), Some(timing)) = (memory_side, self.timing.as_mut()) {
            // A memory-side agent's DRAM is touched by the rows that use its
            // copy: a write (fill or store) first, then a read (a send of
            // the copy's data), each after the lookup.
            let mut at = ctx.now() + self.occupancy;
            if writes {
                at = timing.access(at, m.line, true);
            }
            if reads {
                at = timing.access(at, m.line, false);
            }
            delay = at - ctx.now();
        } else if is_home
            && class == MsgClass::Request
            && (self.timing.is_some() || self.memory_latency > 0)
            && self.cached.get(m.line).is_none()
            && self.request_reads_memory[m.msg as usize]
        {
            // A home's request for a line its cache does not hold waits for
            // the memory first: the timing model's access, or `memory_ns`.
            if let Some(timing) = self.timing.as_mut() {
                // The controller's lookup, then the memory access (a
                // request with data is a write).
                let at = ctx.now() + delay;
                delay = timing.access(at, m.line, carries_data) - ctx.now();
            } else {
                delay += self.memory_latency;
            }
            if self.memory_fills_cache {
                self.cache_line(m.line);
            }
        }
        if delay == 0 {
            self.receive(m, ctx);
        } else {
            let at = ctx.now() + delay;
            ctx.schedule_local(at, 0, Msg::Coh(m));
        }
    }

    fn on_local(&mut self, _token: u64, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        self.receive(msg.local_coh(), ctx);
    }

    fn on_wake(&mut self, token: u64, ctx: &mut Ctx<'_, Msg>) {
        match token {
            NEXT_OP => self.issue(ctx),
            PROGRAM_NEXT => {
                if let Some(p) = self.program.as_mut() {
                    if p.wake_at.is_some_and(|w| w <= ctx.now()) {
                        p.wake_at = None;
                    }
                }
                self.issue_program(ctx);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::HomeCache;

    #[test]
    fn a_home_cache_evicts_only_when_full_and_never_the_line_it_admits() {
        let mut c = HomeCache::new(4);
        assert_eq!((0..4).filter_map(|l| c.admit(l)).count(), 0);
        let mut held: Vec<u64> = (0..4).collect();
        for line in 4..1000 {
            let victim = c.admit(line).expect("full: evicts");
            assert_ne!(victim, line);
            let k = held.iter().position(|&h| h == victim).expect("a held line");
            held[k] = line;
        }
        // Exactly the capacity is held, and the victims are spread: the
        // first four lines are long gone.
        assert_eq!(held.len(), 4);
        assert!(held.iter().all(|&l| l >= 4));
        // The sequence is fixed: the same admissions evict the same lines.
        let mut a = HomeCache::new(8);
        let mut b = HomeCache::new(8);
        let va: Vec<_> = (0..100).filter_map(|l| a.admit(l)).collect();
        let vb: Vec<_> = (0..100).filter_map(|l| b.admit(l)).collect();
        assert_eq!(va, vb);
    }
}

#[cfg(test)]
mod memory_read_tests {
    use super::requests_answered_with_memory_data;
    use ccsim_protocol::engine::{CompiledTable, Protocol};

    /// CCIX's home (AMBA CHI's flows): only the requests it answers with
    /// the line (CompData) need memory's copy; a whole-line write, an
    /// ownership upgrade and the evictions complete without it.
    #[test]
    fn a_ccix_home_reads_memory_only_for_the_requests_it_answers_with_data() {
        let spec = ccsim_protocol::load_spec("ccix").unwrap();
        let (ir, _) = ccsim_protocol::generate(&spec).unwrap();
        let p = Protocol::new(ir).unwrap();
        let table = CompiledTable::new(&p, p.home, |_, _| ());
        let reads = requests_answered_with_memory_data(&table, p.msgs.len());
        let reads_for = |name: &str| reads[p.msg(name).unwrap() as usize];
        for name in ["ReadShared", "ReadUnique"] {
            assert!(reads_for(name), "{name} is answered with memory data");
        }
        for name in ["WriteUniqueFull", "CleanUnique", "Evict", "WriteBackFull"] {
            assert!(!reads_for(name), "{name} needs no old data");
        }
        // Responses have no request row that sends memory data either.
        assert!(!reads_for("CompAck"));
    }
}
