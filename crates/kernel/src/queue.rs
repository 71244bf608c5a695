//! The event queue: events pop in `(tick, priority, sequence)` order.
//!
//! The sequence number is the insertion order, so two events at the same tick
//! and priority pop in the order they were scheduled. That makes every run
//! with the same inputs pop the same events in the same order, which is the
//! determinism contract of the kernel.
//!
//! ## Structure: sorted lanes merged by a small heap
//!
//! Most events are scheduled a fixed distance ahead of the tick being
//! handled: a link latency, a pipeline delay, zero for a wake-up at the same
//! tick. Events of one such *class* (same distance, same priority) are pushed
//! already sorted: their tick is `now + distance` with `now` (the tick of the
//! last pop) never going back, and their sequence number grows. So a class
//! waits in a FIFO *lane*: a push appends, a pop takes the front, nothing is
//! sifted.
//!
//! ```text
//!   push ─ tick == now, after current's last ─────────▶ current (FIFO)  ─┐
//!     │ else: lane k = hash(tick - now, priority) + 0..PROBES            │
//!     ├─ lane k's class, after its last ──────────────▶ lane k (FIFO)   │ pop: the
//!     │                                       its front ─▶ heap of keys ─┤ smaller of
//!     └─ else (another class's lane, reserved sequence) ─▶ heap of keys ─┘ the two
//!                                              event ─▶ slab    fronts
//! ```
//!
//! * **Lanes.** A push joins the lane of its class (a hash into `LANES`,
//!   a fixed array of rings of power-of-two capacity, and the next
//!   `PROBES - 1` lanes after it)
//!   if it is later than the lane's last entry, which every push of a class
//!   is. Only the lane's front has a key in the heap; a pop from the lane
//!   moves the next entry's key into the top's place (one sift-down) or
//!   removes the key when the lane empties. A lane belongs to one class at
//!   a time: another class hashed to it tries the next lanes of its probe,
//!   waits in the heap if none is free, and takes a lane over only once its
//!   owner has stopped pushing (the lane is found empty a few times). Without that, one event of a rare class far ahead
//!   (a DRAM access's completion, a per-line mesh delay) took a busy
//!   class's lane in a moment it was empty, and the busy class's next
//!   events, all due before it, went to the heap until it popped.
//! * **Heap.** Every other push (a class whose lane another class owns,
//!   a sequence number reserved earlier and used now, a tick
//!   before `now`) puts its key in the heap and its event in the slab, a
//!   map by order word (a key is the event's rank with a 7-bit tag for
//!   where the event waits, so it has no room for a slot number). So the
//!   heap holds about one key per active class, not one per pending event.
//! * **Current.** Wake-ups at the tick being handled are the most common
//!   class and would enter and leave the heap at once (their lane is
//!   usually empty), so events due at `now` wait in one more FIFO outside
//!   the heap; a pop compares its front with the heap's top.
//!
//! Each FIFO is sorted and the heap holds the smallest key of every other
//! pending event's FIFO, so a pop always returns the smallest pending
//! event: the order is exactly that of one heap holding every event. Where
//! an event waits only changes the speed.

use std::collections::BTreeMap;

use crate::time::Tick;

/// Why events at the same tick are ordered the way they are. Lower runs first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Priority {
    /// Credit returns run first: a receive buffer freed at tick `t` may be
    /// reused by a sender at the same tick, as in hardware credit loops.
    /// Running them after deliveries would add an order-dependent extra cycle.
    Credit = 0,
    /// Message deliveries. Components that give responses precedence over
    /// requests (the DC's rule) do so in their own schedulers, not here.
    Deliver = 1,
    /// Self-scheduled wake-ups (and local messages, which are wake-ups with
    /// a payload) run after the deliveries of the same tick, so a clocked
    /// unit waking at an edge sees every message that arrived at it.
    Wake = 2,
    /// Observation (sampling, watchdogs, end-of-run hooks) runs last, on a
    /// settled state.
    Observe = 3,
}

/// Bits of the order word holding the insertion sequence; 2^55 events is
/// beyond any run length we care about.
const SEQ_BITS: u32 = 55;

/// Low bits of an order word (and so of a [`Rank`]) below the priority and
/// sequence: zeros in an order word, the place of the event in a [`Key`].
const TAG_BITS: u32 = 7;
const TAG_MASK: u128 = (1 << TAG_BITS) - 1;

/// One step of the sequence: [`EventQueue::reserve`] hands out the
/// insertion count already shifted above the tag bits, so building an
/// order word is one `or` (no shift on every push).
const SEQ_STEP: u64 = 1 << TAG_BITS;

/// The order word of an event of `priority` with sequence number `seq`
/// (from [`EventQueue::reserve`], a multiple of 128):
/// `priority << 62 | seq`, that is `(priority << 55 | count) << 7` with the
/// insertion count `count`. Only its order matters outside the queue; its
/// seven low zeros let the queue's heap keys carry a tag in their ranks.
#[inline]
pub fn order_word(priority: Priority, seq: u64) -> u64 {
    debug_assert!(seq % SEQ_STEP == 0);
    ((priority as u64) << (SEQ_BITS + TAG_BITS)) | seq
}

/// The sequence number in an order word.
#[inline]
pub fn seq_of(order: u64) -> u64 {
    order & ((1 << (SEQ_BITS + TAG_BITS)) - 1)
}

/// What the heap orders: an event's rank with its low [`TAG_BITS`] bits
/// (zeros in a rank) naming where the event waits, [`LANE`]` | k` for the front of lane `k`,
/// 0 for an event in the slab (found there by its order word). Ranks are
/// unique and the tag sits below the order word, so keys sort exactly as
/// their ranks, and a key is one 16-byte number: a sift moves and compares
/// one `u128` a key (a key with the tick, the order word and a slot apart
/// was 24 bytes, and each comparison built two ranks).
#[derive(Clone, Copy)]
struct Key(u128);

/// Marks a [`Key`] that stands for the front of a lane (the tag bit above
/// the lane's index).
const LANE: u128 = 1 << LANE_BITS;

/// Number of lanes (a power of two). A workload has a few dozen classes
/// at most; fewer lanes make two classes share one more often (their
/// interleaved pushes then go to the heap), more cost an empty ring
/// and a rank each.
const LANE_BITS: u32 = 6;
const LANES: usize = 1 << LANE_BITS;

/// `(tick, order word)` as one number: the total order of events.
type Rank = u128;

/// The rank of an empty FIFO or heap, and of the heap's sentinel key:
/// above any event's (an event would need tick `Tick::MAX`, priority
/// `Observe` and the last of the 2^55 sequence numbers to reach it).
const NONE: Rank = !TAG_MASK;

/// The place `(tick, order word)` as one number, `tick << 64 | order`,
/// ordered as the run orders events (see [`EventQueue::peek_rank`]).
#[inline]
pub fn rank(tick: Tick, order: u64) -> Rank {
    ((tick as u128) << 64) | order as u128
}

/// The tick of a rank.
#[inline]
fn tick_of(r: Rank) -> Tick {
    (r >> 64) as Tick
}

/// The order word of a rank.
#[inline]
fn order_of(r: Rank) -> u64 {
    r as u64
}

impl Key {
    /// The key of the front of lane `k`, of rank `r`.
    #[inline]
    fn lane(r: Rank, k: usize) -> Self {
        Key(r | LANE | k as u128)
    }
    /// The key of an event of rank `r` in the slab.
    #[inline]
    fn slab(r: Rank) -> Self {
        Key(r)
    }
    #[inline]
    fn rank(&self) -> Rank {
        self.0 & !TAG_MASK
    }
    /// The lane whose front this key stands for, if any. (The mask only
    /// spares a bounds check: the index is a lane's.)
    #[inline]
    fn lane_index(&self) -> Option<usize> {
        (self.0 & LANE != 0).then_some((self.0 as usize) & (LANES - 1))
    }
}

/// A binary min-heap of [`Key`]s by rank. Hand-written rather than std's
/// `BinaryHeap` for one operation std lacks: replacing the top in place
/// (a lane's next front takes its front's place) with a single sift-down.
/// It holds about one key per active class, so it stays a few levels deep.
///
/// The key array ends with a *sentinel*, a key of rank [`NONE`] after the
/// last real key. A sift-down reads both children of a node as one pair
/// (`keys[left..left + 2]`): the pair exists exactly when the left child is
/// a real key, and a missing right child reads as the sentinel, which never
/// wins. So each level makes one bounds check instead of a check for the
/// left child, one for the right and one per index. The top of an empty
/// heap is the sentinel, whose rank is the empty heap's ([`NONE`]).
struct KeyHeap {
    keys: Vec<Key>,
}

/// The key after the last real key of a [`KeyHeap`].
/// Its value is [`NONE`] (a slab tag, never read), so an empty heap's top
/// key is [`NONE`] too; it still sorts after every real key.
const SENTINEL: Key = Key(NONE);

impl KeyHeap {
    fn with_capacity(capacity: usize) -> Self {
        let mut keys = Vec::with_capacity(capacity + 1);
        keys.push(SENTINEL);
        KeyHeap { keys }
    }
    /// Number of real keys.
    #[inline]
    fn len(&self) -> usize {
        self.keys.len() - 1
    }
    #[inline]
    fn top(&self) -> Option<&Key> {
        self.keys[..self.len()].first()
    }
    /// The top key with its tag ([`NONE`] for an empty heap).
    #[inline]
    fn top_key(&self) -> u128 {
        self.keys.first().map_or(NONE, |k| k.0)
    }
    #[inline]
    fn top_rank(&self) -> Rank {
        self.keys.first().map_or(NONE, Key::rank)
    }
    fn push(&mut self, key: Key) {
        // The sentinel's place becomes the hole; a new sentinel follows.
        let pos = self.len();
        self.keys.push(SENTINEL);
        self.sift_up(pos, key);
    }
    /// Puts `key` in the hole at `pos`, moving parents down into the hole
    /// until the key fits.
    #[inline]
    fn sift_up(&mut self, mut pos: usize, key: Key) {
        let r = key.0;
        while pos > 0 {
            let parent = (pos - 1) / 2;
            if self.keys[parent].0 < r {
                break;
            }
            self.keys[pos] = self.keys[parent];
            pos = parent;
        }
        self.keys[pos] = key;
    }
    /// Puts `key` in the top's place and sifts it down.
    #[inline]
    fn replace_top(&mut self, key: Key) {
        self.sift_down_from_top(key);
    }
    /// Removes the top: the last key takes its place. The last key of a
    /// heap is among the latest, so it would sink to the bottom comparing
    /// itself at every level; instead the hole at the top goes down to a
    /// leaf along the smaller children (one comparison a level) and the
    /// last key rises from there, usually not at all (Floyd's bottom-up
    /// deletion; every rank is unique, so the pops come out in the same
    /// order).
    #[inline(always)]
    fn pop_top(&mut self) {
        // `n` real keys are left; the last one leaves its place to the
        // sentinel.
        let n = self.len() - 1;
        let last = std::mem::replace(&mut self.keys[n], SENTINEL);
        self.keys.pop();
        if n == 0 {
            return;
        }
        let keys = &mut self.keys[..];
        let mut pos = 0;
        while let Some(pair) = keys.get(2 * pos + 1..2 * pos + 3) {
            let right_wins = pair[1].0 < pair[0].0;
            let child = 2 * pos + 1 + right_wins as usize;
            keys[pos] = pair[right_wins as usize];
            pos = child;
        }
        self.sift_up(pos, last);
    }
    #[inline]
    fn sift_down_from_top(&mut self, key: Key) {
        // Move the smaller child up into the hole until the key fits.
        let r = key.0;
        let keys = &mut self.keys[..];
        let mut pos = 0;
        while let Some(pair) = keys.get(2 * pos + 1..2 * pos + 3) {
            // The smaller child, chosen without a branch: which child wins
            // is as good as random, a branch on it a misprediction.
            let (left, right) = (pair[0], pair[1]);
            let right_wins = right.0 < left.0;
            let child = if right_wins { right } else { left };
            if r < child.0 {
                break;
            }
            keys[pos] = child;
            pos = 2 * pos + 1 + right_wins as usize;
        }
        keys[pos] = key;
    }
}

/// The class of events `distance` ticks ahead with `priority`.
#[inline]
fn class_of(distance: Tick, priority: Priority) -> u64 {
    (distance << 2) | priority as u64
}

/// The lane of `class` (a multiplicative hash; a collision only sends
/// events to the heap).
#[inline]
fn lane_of(class: u64) -> usize {
    (class.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - LANE_BITS)) as usize
}

/// Lanes a class may use: its home lane ([`lane_of`]) and the ones after
/// it. With the home lane only, three busy classes of the Enzian bench
/// (two pipeline delays and a link latency) hashed to one lane of 64 and
/// sent 1.5 events a transaction through the heap; a short probe lets
/// each class have a lane of its own.
const PROBES: usize = 4;

/// How many contested moments a lane's owner survives: an owner's push
/// adds one (up to this), another class finding the lane empty takes one
/// and takes the lane at zero.
const OWNER_HOLD: u8 = 3;

/// A queued event with its place in the run.
pub struct Entry<E> {
    /// The tick it is due at.
    pub tick: Tick,
    /// Its order word (`priority << 62 | seq`, see [`order_word`]).
    pub order: u64,
    /// The event.
    pub event: E,
}

/// A FIFO of entries sorted by `(tick, order)`: a ring whose capacity is a
/// power of two and whose free places hold `None`, so a push and a pop are
/// an index under a mask (no wrap-around arithmetic, no length to keep).
struct Lane<E> {
    /// Rank of the last entry pushed (0 when the lane is empty: any push
    /// may join).
    last: Rank,
    /// The class the lane serves. Another class hashed here goes to the
    /// heap: one event of a rare class, far ahead (a DRAM access's
    /// completion, a per-line delay), would otherwise take an owner's lane
    /// in a moment it is empty and send the owner's next events, all due
    /// before it, to the heap until it pops.
    owner: u64,
    /// The owner's hold on the lane (see [`OWNER_HOLD`]).
    hold: u8,
    /// The entries, at positions `head..tail` modulo the capacity.
    ring: Vec<Option<Entry<E>>>,
    head: usize,
    tail: usize,
}

impl<E> Lane<E> {
    fn new() -> Self {
        Lane {
            last: 0,
            owner: 0,
            hold: 0,
            ring: Vec::new(),
            head: 0,
            tail: 0,
        }
    }
    #[inline]
    fn is_empty(&self) -> bool {
        self.head == self.tail
    }
    fn len(&self) -> usize {
        self.tail.wrapping_sub(self.head)
    }
    /// Whether `class`, which owns no lane of its probes, may take this
    /// one: only an empty lane whose owner has stopped pushing (each such
    /// contested moment wears the owner's hold down by one).
    #[inline(always)]
    fn yields_to_newcomer(&mut self, class: u64) -> bool {
        if !self.is_empty() {
            return false;
        }
        if self.hold > 0 {
            self.hold -= 1;
            return false;
        }
        self.owner = class;
        self.hold = 1;
        true
    }
    #[inline]
    fn mask(&self) -> usize {
        self.ring.len().wrapping_sub(1)
    }
    /// Appends the entry of `event` at `(tick, order)`. The entry is put
    /// together only once the ring has room for it, so it is written
    /// straight into its place (built before a possible `grow`, it was
    /// built on the stack and copied over).
    #[inline(always)]
    fn push_back(&mut self, tick: Tick, order: u64, event: E) {
        if self.tail.wrapping_sub(self.head) == self.ring.len() {
            self.grow();
        }
        let at = self.tail & self.mask();
        // The place is free (`None`), so there is nothing to drop: skip
        // the check for an old value that `*place = Some(..)` would make.
        let free = self.ring[at].replace(Entry { tick, order, event });
        debug_assert!(free.is_none());
        std::mem::forget(free);
        self.tail = self.tail.wrapping_add(1);
    }
    #[inline(always)]
    fn pop_front(&mut self) -> Option<Entry<E>> {
        let at = self.head & self.mask();
        let entry = self.ring.get_mut(at)?.take()?;
        self.head = self.head.wrapping_add(1);
        Some(entry)
    }
    #[inline(always)]
    fn front(&self) -> Option<&Entry<E>> {
        self.ring.get(self.head & self.mask())?.as_ref()
    }
    /// Doubles the capacity (at least 8), keeping the order.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let capacity = (self.ring.len() * 2).max(8);
        let mask = self.mask();
        let mut ring: Vec<Option<Entry<E>>> = Vec::with_capacity(capacity);
        let mut at = self.head;
        while at != self.tail {
            ring.push(self.ring[at & mask].take());
            at = at.wrapping_add(1);
        }
        let len = ring.len();
        ring.resize_with(capacity, || None);
        self.ring = ring;
        self.head = 0;
        self.tail = len;
    }
    fn iter(&self) -> impl Iterator<Item = &E> + '_ {
        self.ring.iter().flatten().map(|e| &e.event)
    }
}

/// A priority queue of events of type `E` (see the module docs).
pub struct EventQueue<E> {
    /// One key per non-empty lane and one per slab event.
    heap: KeyHeap,
    /// The lanes of the event classes, by [`lane_of`].
    lanes: [Lane<E>; LANES],
    /// The lane of events due at `now`, outside the heap: a pop compares
    /// its front with the heap's top.
    current: Lane<E>,
    /// Rank of `current`'s front ([`NONE`] when empty).
    current_front: Rank,
    /// Events that joined no lane, by order word (their heap key gives
    /// their rank, so their order word): rare, so a map's cost does not
    /// matter, and the heap's keys need no room for a slot number.
    slab: BTreeMap<u64, E>,
    /// The tick of the last event popped: classes are distances from it.
    now: Tick,
    next_seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue {
            heap: KeyHeap::with_capacity(LANES),
            lanes: std::array::from_fn(|_| Lane::new()),
            current: Lane::new(),
            current_front: NONE,
            slab: BTreeMap::new(),
            now: 0,
            next_seq: 0,
        }
    }
    /// Schedules `event` at `tick` with `priority`.
    #[inline(always)]
    pub fn push(&mut self, tick: Tick, priority: Priority, event: E) {
        let seq = self.reserve();
        self.push_reserved(tick, priority, seq, event);
    }
    /// Takes the next insertion sequence number without scheduling anything
    /// (the insertion count times 128, ready for [`order_word`]).
    ///
    /// With [`EventQueue::push_reserved`] this lets a caller decide *later*
    /// whether an event is needed at all and, if it is, queue it exactly
    /// where a `push` made now would have put it: same tick, same priority,
    /// same place among the events of that tick. A reserved number that is
    /// never used leaves a gap, which changes no order.
    #[inline]
    pub fn reserve(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += SEQ_STEP;
        debug_assert!(seq < 1 << (SEQ_BITS + TAG_BITS));
        seq
    }
    /// Schedules `event` with a sequence number from [`EventQueue::reserve`].
    #[inline(always)]
    pub fn push_reserved(&mut self, tick: Tick, priority: Priority, seq: u64, event: E) {
        let order = order_word(priority, seq);
        let r = rank(tick, order);
        if tick == self.now && self.current.last < r {
            self.current.last = r;
            if self.current.is_empty() {
                self.current_front = r;
            }
            self.current.push_back(tick, order, event);
            return;
        }
        // A tick before `now` wraps to a huge distance: some lane, and the
        // rank check below decides, as for any push.
        let class = class_of(tick.wrapping_sub(self.now), priority);
        match self.lane_for(class, r) {
            Some(k) => {
                let lane = &mut self.lanes[k];
                lane.last = r;
                let started = lane.is_empty();
                lane.push_back(tick, order, event);
                if started {
                    self.lane_started(k, r);
                }
            }
            None => self.push_slab(r, order, event),
        }
    }
    /// The lane a push of `class` with rank `r` joins, if any: the lane
    /// the class owns among its [`PROBES`] (if `r` is after its last
    /// entry), else the first of them that an idle owner yields. The
    /// owner's hold is kept up to date.
    #[inline(always)]
    fn lane_for(&mut self, class: u64, r: Rank) -> Option<usize> {
        let home = lane_of(class);
        for i in 0..PROBES {
            let k = (home + i) & (LANES - 1);
            let lane = &mut self.lanes[k];
            if lane.owner == class {
                if lane.last >= r {
                    // A reserved sequence number used late: the heap.
                    return None;
                }
                lane.hold += (lane.hold < OWNER_HOLD) as u8;
                return Some(k);
            }
        }
        (0..PROBES)
            .map(|i| (home + i) & (LANES - 1))
            .find(|&k| self.lanes[k].yields_to_newcomer(class))
    }
    /// Lane `k` has a first entry: its key joins the heap (the later
    /// entries of a lane wait behind the front, outside the heap).
    #[inline(never)]
    fn lane_started(&mut self, k: usize, r: Rank) {
        self.heap.push(Key::lane(r, k));
    }
    /// Puts `event` (of rank `r` and order word `order`) in the slab, its
    /// key in the heap: a push that joins no FIFO.
    #[cold]
    fn push_slab(&mut self, r: Rank, order: u64, event: E) {
        let old = self.slab.insert(order, event);
        debug_assert!(old.is_none(), "order words are unique");
        self.heap.push(Key::slab(r));
    }
    /// Removes and returns the earliest event with its tick.
    #[inline]
    pub fn pop(&mut self) -> Option<(Tick, E)> {
        self.pop_ordered().map(|(t, _, e)| (t, e))
    }
    /// Like [`EventQueue::pop`], also returning the event's order word
    /// (`priority << 62 | seq`, see [`order_word`]): `(tick, order)` is its place in
    /// the run.
    #[inline]
    pub fn pop_ordered(&mut self) -> Option<(Tick, u64, E)> {
        self.pop_until(Tick::MAX)
    }
    /// Like [`EventQueue::pop_ordered`], but only an event due by `limit`.
    #[inline]
    pub fn pop_until(&mut self, limit: Tick) -> Option<(Tick, u64, E)> {
        self.pop_entry(limit).map(|e| (e.tick, e.order, e.event))
    }
    /// Like [`EventQueue::pop_until`], returning the entry as it was
    /// stored: the event loop's pop, which moves the entry once instead of
    /// taking it apart and putting it together again.
    #[inline]
    pub fn pop_entry(&mut self, limit: Tick) -> Option<Entry<E>> {
        self.pop_entry_before(limit, NONE)
    }
    /// Like [`EventQueue::pop_entry`], but only an event whose place
    /// (see [`EventQueue::peek_rank`]) is before `before`: the event
    /// loop's pop while a reserved send waits at `before`. (The check
    /// rides on the comparisons the pop makes anyway.)
    #[inline]
    pub fn pop_entry_before(&mut self, limit: Tick, before: u128) -> Option<Entry<E>> {
        // The top key with its tag compares with another event's rank
        // (whose tag bits are zeros) as its rank does: the ranks differ
        // above the tag.
        let heap_top = self.heap.top_key();
        if self.current_front < heap_top {
            if self.now > limit || self.current_front > before {
                return None;
            }
            let popped = self.current.pop_front().expect("current front");
            match self.current.front() {
                Some(next) => self.current_front = rank(next.tick, next.order),
                None => {
                    self.current_front = NONE;
                    self.current.last = 0;
                }
            }
            return Some(popped);
        }
        let top = *self.heap.top()?;
        let tick = tick_of(heap_top);
        if tick > limit || heap_top > before {
            return None;
        }
        let popped = if let Some(k) = top.lane_index() {
            let lane = &mut self.lanes[k];
            let popped = lane.pop_front().expect("lane of a heap key");
            match lane.front() {
                // The lane's next event takes its place in the heap.
                Some(next) => self
                    .heap
                    .replace_top(Key::lane(rank(next.tick, next.order), k)),
                None => {
                    lane.last = 0;
                    self.heap.pop_top();
                }
            }
            popped
        } else {
            self.heap.pop_top();
            let order = order_of(heap_top);
            Entry {
                tick,
                order,
                event: self.slab.remove(&order).expect("queued slab event"),
            }
        };
        self.now = tick;
        Some(popped)
    }
    /// The place of the earliest event as one number, its [`rank`]
    /// (above every event's rank when the queue is empty):
    /// what the event loop compares a reserved send's place with.
    #[inline]
    pub fn peek_rank(&self) -> u128 {
        self.heap.top_rank().min(self.current_front)
    }
    /// Moves the queue's notion of now to `tick`, the place of something
    /// the event loop ran between two pops (a reserved send), so that the
    /// events it pushes are classed by their distance from it. Every
    /// event before that place has popped, so no event waits at the old
    /// now.
    #[inline]
    pub fn advance_to(&mut self, tick: Tick) {
        debug_assert!(self.current.is_empty() || tick == self.now);
        debug_assert!(tick >= self.now);
        self.now = tick;
    }
    /// The place `(tick, order word)` of the earliest event.
    #[inline]
    pub fn peek_place(&self) -> Option<(Tick, u64)> {
        let r = self.heap.top_rank().min(self.current_front);
        (r != NONE).then_some((tick_of(r), order_of(r)))
    }
    /// The tick of the earliest event.
    #[inline]
    pub fn peek_tick(&self) -> Option<Tick> {
        self.peek_place().map(|(t, _)| t)
    }
    /// Every pending event, in no particular order (for reports on a
    /// stopped run, e.g. the messages still in flight; not for the hot
    /// path).
    pub fn iter(&self) -> impl Iterator<Item = &E> + '_ {
        self.current
            .iter()
            .chain(self.lanes.iter().flat_map(Lane::iter))
            .chain(self.slab.values())
    }
    /// Number of pending events (counted, not kept: a count kept up to
    /// date cost every push and pop a write; this is for reports).
    pub fn len(&self) -> usize {
        self.current.len() + self.lanes.iter().map(Lane::len).sum::<usize>() + self.slab.len()
    }
    /// Whether no event is pending: the current FIFO is empty and the heap
    /// holds no key (one per non-empty lane and per slab event).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.current_front == NONE && self.heap.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_heap_keeps_the_smallest_rank_on_top() {
        // Pushes, pops and replacements of the top in a deterministic mix,
        // with heaps from empty to a few hundred keys (several levels),
        // against a sorted reference: the sentinel never surfaces while a
        // real key is left, and an empty heap's top rank is `NONE`.
        let mut heap = KeyHeap::with_capacity(4);
        let mut reference: Vec<Rank> = Vec::new();
        let mut x: u64 = 3;
        for step in 0..20_000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Lane and slab keys alike (the tag never decides an order).
            let r = rank((x >> 40) % 1000, u64::from(step) << TAG_BITS);
            let key = if step % 3 == 0 {
                Key::slab(r)
            } else {
                Key::lane(r, step as usize % LANES)
            };
            let grow = (step / 2_000) % 2 == 0;
            match (x >> 20) % 4 {
                0 | 1 if grow || reference.is_empty() => {
                    heap.push(key);
                    reference.push(key.rank());
                }
                2 if !reference.is_empty() => {
                    heap.replace_top(key);
                    reference.remove(0);
                    reference.push(key.rank());
                }
                _ if !reference.is_empty() => {
                    heap.pop_top();
                    reference.remove(0);
                }
                _ => {}
            }
            reference.sort_unstable();
            assert_eq!(heap.len(), reference.len());
            assert_eq!(heap.top_rank(), reference.first().copied().unwrap_or(NONE));
            assert_eq!(heap.top().map(Key::rank), reference.first().copied());
            // The pop's tagged top: the top's rank under its tag, NONE
            // when empty.
            assert_eq!(heap.top_key() & !TAG_MASK, heap.top_rank());
            assert_eq!(heap.top_key() == NONE, reference.is_empty());
        }
    }

    #[test]
    fn pops_by_tick_then_priority_then_insertion() {
        let mut q = EventQueue::new();
        q.push(10, Priority::Wake, "wake@10");
        q.push(10, Priority::Deliver, "deliver@10 first");
        q.push(5, Priority::Observe, "observe@5");
        q.push(10, Priority::Deliver, "deliver@10 second");
        q.push(10, Priority::Credit, "credit@10");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (5, "observe@5"),
                (10, "credit@10"),
                (10, "deliver@10 first"),
                (10, "deliver@10 second"),
                (10, "wake@10"),
            ]
        );
    }

    #[test]
    fn matches_a_sorted_order_under_interleaved_pushes_and_pops() {
        // A deterministic mix of pushes and pops against a reference that
        // sorts by (tick, priority, insertion).
        let mut q = EventQueue::new();
        let mut reference: Vec<(Tick, u8, u64)> = Vec::new();
        let mut x: u64 = 1;
        let mut seq = 0;
        for step in 0..5000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if x >> 62 != 0 || reference.is_empty() {
                let tick = (x >> 20) % 50 + step / 10;
                let prio =
                    [Priority::Credit, Priority::Deliver, Priority::Wake][(x >> 8) as usize % 3];
                q.push(tick, prio, seq);
                reference.push((tick, prio as u8, seq));
                seq += 1;
            } else {
                reference.sort_unstable();
                let (t, _, s) = reference.remove(0);
                assert_eq!(q.pop(), Some((t, s)));
            }
            assert_eq!(q.len(), reference.len());
        }
        reference.sort_unstable();
        for (t, _, s) in reference {
            assert_eq!(q.pop(), Some((t, s)));
        }
        assert!(q.is_empty());
    }

    #[test]
    fn lanes_and_heap_pop_in_one_total_order() {
        // Fixed distances (lanes), random distances and reserved sequence
        // numbers used late (the heap), and ticks before the last pop,
        // against a reference that sorts by (tick, priority, sequence).
        let mut q = EventQueue::new();
        let mut reference: Vec<(Tick, u8, u64)> = Vec::new();
        let mut reserved: Vec<u64> = Vec::new();
        let mut now: Tick = 0;
        let mut x: u64 = 7;
        for step in 0..20000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let prio = [
                Priority::Credit,
                Priority::Deliver,
                Priority::Wake,
                Priority::Observe,
            ][(x >> 40) as usize % 4];
            match (x >> 59) % 8 {
                0..=3 => {
                    let tick = now + [0, 3, 10, 17, 1000, 64][(x >> 20) as usize % 6];
                    let seq = q.reserve();
                    q.push_reserved(tick, prio, seq, seq);
                    reference.push((tick, prio as u8, seq));
                }
                4 => {
                    let tick = now.saturating_sub((x >> 10) % 5) + (x >> 30) % 40;
                    let seq = q.reserve();
                    q.push_reserved(tick, prio, seq, seq);
                    reference.push((tick, prio as u8, seq));
                }
                5 => reserved.push(q.reserve()),
                6 if !reserved.is_empty() => {
                    let seq = reserved.swap_remove((x >> 8) as usize % reserved.len());
                    let tick = now + (x >> 16) % 30;
                    q.push_reserved(tick, prio, seq, seq);
                    reference.push((tick, prio as u8, seq));
                }
                _ => {
                    reference.sort_unstable();
                    if reference.is_empty() {
                        assert_eq!(q.pop(), None);
                    } else {
                        let (t, p, s) = reference.remove(0);
                        assert_eq!(q.peek_place(), Some((t, order_word_raw(p, s))));
                        assert_eq!(q.pop(), Some((t, s)), "step {step}");
                        now = t;
                    }
                }
            }
            assert_eq!(q.len(), reference.len());
        }
        reference.sort_unstable();
        for (t, _, s) in reference {
            assert_eq!(q.pop(), Some((t, s)));
        }
        assert!(q.is_empty());
        assert_eq!(q.pop(), None);
    }

    fn order_word_raw(priority: u8, seq: u64) -> u64 {
        ((priority as u64) << (SEQ_BITS + TAG_BITS)) | seq
    }

    #[test]
    fn iter_visits_every_pending_event_once() {
        // Events in the current FIFO, in lanes and in the slab (a push
        // before the lane's last, a reserved sequence used late).
        let mut q = EventQueue::new();
        let late = q.reserve();
        q.push(0, Priority::Wake, 1);
        q.push(10, Priority::Deliver, 2);
        q.push(20, Priority::Deliver, 3);
        q.push(5, Priority::Deliver, 4);
        // Same class as event 2 but an earlier sequence: to the slab.
        q.push_reserved(10, Priority::Deliver, late, 5);
        assert!(!q.slab.is_empty());
        q.push(30, Priority::Observe, 6);
        let mut seen: Vec<i32> = q.iter().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, vec![1, 2, 3, 4, 5, 6]);
        // Popped events are gone; the rest are still visited.
        q.pop();
        q.pop();
        let mut seen: Vec<i32> = q.iter().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen.len(), q.len());
        assert_eq!(seen, vec![2, 3, 5, 6]);
    }

    #[test]
    fn a_lane_grows_while_wrapped_around_and_keeps_its_order() {
        // One class (distance 7 from the last pop): pops move the ring's
        // head forward, so later growth happens with the entries wrapped
        // around the end of the ring.
        let mut q = EventQueue::new();
        let mut next_pop = 0u64;
        let mut pushed = 0u64;
        let mut now = 0;
        for round in 0..40u64 {
            for _ in 0..(round % 5 + 1) * 3 {
                q.push(now + 7, Priority::Deliver, pushed);
                pushed += 1;
            }
            for _ in 0..round % 4 + 2 {
                if let Some((t, e)) = q.pop() {
                    assert_eq!(e, next_pop);
                    next_pop += 1;
                    now = t;
                }
            }
        }
        while let Some((_, e)) = q.pop() {
            assert_eq!(e, next_pop);
            next_pop += 1;
        }
        assert_eq!(next_pop, pushed);
    }

    #[test]
    fn a_rare_far_class_does_not_take_a_busy_class_lane() {
        // A class with one event at a time (its lane empties after each
        // pop) and a rare class far ahead whose home lane is the same:
        // the rare events take the next lane of their probe, and every
        // event of the busy class still goes to its own lane.
        let busy = 2_000;
        let home = lane_of(class_of(busy, Priority::Wake));
        let far = (100 * busy..)
            .find(|&d| lane_of(class_of(d, Priority::Deliver)) == home)
            .expect("a colliding distance");
        let mut q = EventQueue::new();
        let mut now = 0;
        let mut busy_events = 0;
        for round in 0..50u64 {
            q.push(now + busy, Priority::Wake, 0u64);
            busy_events += 1;
            let (t, e) = q.pop().expect("the busy event");
            assert_eq!(e, 0);
            now = t;
            if round % 10 == 5 {
                // The busy lane is empty now: the rare class arrives.
                q.push(now + far, Priority::Deliver, 1);
            }
        }
        assert_eq!(busy_events, 50);
        assert!(q.slab.is_empty(), "nothing in the slab");
        assert_eq!(q.lanes[home].owner, class_of(busy, Priority::Wake));
        let rare = &q.lanes[(home + 1) & (LANES - 1)];
        assert_eq!(rare.owner, class_of(far, Priority::Deliver));
        assert_eq!(rare.iter().count(), 5);
    }

    #[test]
    fn classes_with_one_home_lane_each_get_a_lane_of_their_own() {
        // Three busy classes whose hash names the same lane, pushed in
        // turn (as the Enzian bench's two pipeline delays and link latency
        // once were): each owns a lane of its probe, none waits in the
        // slab, and the pops keep the total order.
        let first = 10_000;
        let home = lane_of(class_of(first, Priority::Wake));
        let mut same_home = (first + 1..)
            .filter(|&d| lane_of(class_of(d, Priority::Wake)) == home)
            .take(2);
        let distances = [
            first,
            same_home.next().expect("a colliding distance"),
            same_home.next().expect("another"),
        ];
        let mut q = EventQueue::new();
        let mut reference = Vec::new();
        let mut now = 0;
        for round in 0..200u64 {
            for d in distances {
                let seq = q.reserve();
                q.push_reserved(now + d, Priority::Wake, seq, seq);
                reference.push((now + d, seq));
            }
            reference.sort_unstable();
            let (t, s) = reference.remove(0);
            assert_eq!(q.pop(), Some((t, s)), "round {round}");
            now = t;
            assert!(q.slab.is_empty(), "round {round}");
        }
        let owners: Vec<u64> = (0..PROBES)
            .map(|i| q.lanes[(home + i) & (LANES - 1)].owner)
            .collect();
        for d in distances {
            assert!(owners.contains(&class_of(d, Priority::Wake)), "{owners:?}");
        }
    }

    #[test]
    fn the_priority_changes_a_class_lane() {
        // The priority enters the hash below the distance: the classes of
        // one distance at the four priorities use four lanes (it once
        // entered above, changing only the top bits, so distance 2,000 at
        // Wake and 209,400 at Deliver shared a lane).
        let lanes: Vec<usize> = [
            Priority::Credit,
            Priority::Deliver,
            Priority::Wake,
            Priority::Observe,
        ]
        .iter()
        .map(|&p| lane_of(class_of(2_000, p)))
        .collect();
        for (i, a) in lanes.iter().enumerate() {
            assert!(!lanes[i + 1..].contains(a), "{lanes:?}");
        }
        assert_ne!(
            lane_of(class_of(2_000, Priority::Wake)),
            lane_of(class_of(209_400, Priority::Deliver))
        );
    }

    #[test]
    fn every_event_is_dropped_once() {
        // Events that are popped, and events still queued when the queue
        // is dropped, wherever they wait (current FIFO, lanes, heap).
        let token = std::rc::Rc::new(());
        let mut q = EventQueue::new();
        let late = q.reserve();
        q.push(0, Priority::Wake, token.clone());
        q.push(5, Priority::Deliver, token.clone());
        q.push(5, Priority::Deliver, token.clone());
        q.push_reserved(5, Priority::Deliver, late, token.clone());
        assert_eq!(std::rc::Rc::strong_count(&token), 5);
        drop(q.pop());
        drop(q.pop());
        q.push(9, Priority::Credit, token.clone());
        assert_eq!(std::rc::Rc::strong_count(&token), 4);
        drop(q);
        assert_eq!(std::rc::Rc::strong_count(&token), 1);
    }

    #[test]
    fn same_tick_events_pop_in_sequence_wherever_they_wait() {
        // Events of one tick and priority in the current FIFO (pushed at
        // that tick), in a lane (pushed 10 ticks ahead) and in the heap (a
        // sequence reserved early, used late): they pop by sequence.
        let mut q = EventQueue::new();
        let early = q.reserve();
        q.push(10, Priority::Deliver, "lane, second");
        q.push(0, Priority::Wake, "now");
        assert_eq!(q.pop(), Some((0, "now")));
        q.push_reserved(10, Priority::Deliver, early, "heap, first");
        q.push(10, Priority::Deliver, "lane, third");
        q.push(10, Priority::Credit, "credit, before all");
        assert_eq!(q.pop(), Some((10, "credit, before all")));
        // Now at tick 10: a push at `now` waits in the current FIFO.
        q.push(10, Priority::Deliver, "current, fourth");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(
            order,
            [
                "heap, first",
                "lane, second",
                "lane, third",
                "current, fourth"
            ]
        );
    }

    #[test]
    fn pop_until_leaves_later_events() {
        let mut q = EventQueue::new();
        q.push(5, Priority::Wake, 'a');
        q.push(9, Priority::Deliver, 'b');
        assert_eq!(q.pop_until(4), None);
        assert_eq!(q.pop_until(5).map(|(t, _, e)| (t, e)), Some((5, 'a')));
        assert_eq!(q.pop_until(8), None);
        assert_eq!(q.len(), 1);
        assert_eq!(q.pop_until(9).map(|(t, _, e)| (t, e)), Some((9, 'b')));
    }

    #[test]
    fn pop_entry_before_leaves_events_after_a_reserved_place() {
        let mut q = EventQueue::new();
        let pop =
            |q: &mut EventQueue<char>, before| q.pop_entry_before(100, before).map(|e| e.event);
        q.push(5, Priority::Wake, 'x');
        assert_eq!(pop(&mut q, u128::MAX), Some('x'));
        // Now is 5: 'a' and 'b' wait in the current lane, 'c' in a lane;
        // a place is reserved between 'a' and 'b' and one before 'c'.
        q.push(5, Priority::Wake, 'a');
        let between = rank(5, order_word(Priority::Wake, q.reserve()));
        q.push(5, Priority::Wake, 'b');
        let before_c = rank(9, order_word(Priority::Wake, q.reserve()));
        q.push(9, Priority::Wake, 'c');
        assert_eq!(pop(&mut q, between), Some('a'));
        assert_eq!(pop(&mut q, between), None);
        assert!(q.peek_rank() > between);
        assert_eq!(pop(&mut q, before_c), Some('b'));
        assert_eq!(pop(&mut q, before_c), None);
        assert_eq!(q.len(), 1);
        assert_eq!(pop(&mut q, u128::MAX), Some('c'));
    }
}
