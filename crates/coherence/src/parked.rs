//! Items parked until a wake-up that names them by slot.
//!
//! A component's own pipeline whose items are not messages (a core's
//! completions) cannot ride in the kernel event as a local message
//! (`Ctx::schedule_local` carries the system's message type), so each item
//! waits here and its wake-up carries the slot: stored once, found in one
//! step, with no ordering work (the kernel orders the wake-ups).
//!
//! Items are filled **in place**: [`Parked::park`] hands out a slot's item
//! to write, and [`Parked::release`] frees the slot and lends the item to
//! read. A completion carries a whole 128-byte line, so it is written once
//! where it waits and read once from there, never moved in between.

/// A slab of items, each parked once and released once by its slot.
pub struct Parked<T> {
    items: Vec<T>,
    /// Whether each slot holds a parked item (a slot released twice is a bug).
    held: Vec<bool>,
    free: Vec<u32>,
}

impl<T: Default> Default for Parked<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Default> Parked<T> {
    /// An empty slab.
    pub fn new() -> Self {
        Parked {
            items: Vec::new(),
            held: Vec::new(),
            free: Vec::new(),
        }
    }

    /// Parks an item: returns its slot and the item to fill. A reused slot
    /// still holds the fields of its previous item, so the caller sets
    /// every field.
    #[inline]
    pub fn park(&mut self) -> (u64, &mut T) {
        let slot = match self.free.pop() {
            Some(s) => s as usize,
            None => {
                self.items.push(T::default());
                self.held.push(false);
                self.items.len() - 1
            }
        };
        self.held[slot] = true;
        (slot as u64, &mut self.items[slot])
    }

    /// Frees `slot` and lends its item, which stays as it was until the
    /// next [`Parked::park`].
    #[inline]
    pub fn release(&mut self, slot: u64) -> &T {
        let slot = slot as usize;
        assert!(
            std::mem::replace(&mut self.held[slot], false),
            "an item parked in slot {slot}"
        );
        self.free.push(slot as u32);
        &self.items[slot]
    }
}

#[cfg(test)]
mod tests {
    use super::Parked;

    #[test]
    fn slots_are_reused_and_items_come_back() {
        let mut p: Parked<&str> = Parked::new();
        let (a, item) = p.park();
        *item = "a";
        let (b, item) = p.park();
        *item = "b";
        assert_eq!(*p.release(a), "a");
        let (c, item) = p.park();
        assert_eq!(c, a, "a freed slot is reused");
        assert_eq!(
            *item, "a",
            "a reused slot holds its previous item until set"
        );
        *item = "c";
        assert_eq!(*p.release(b), "b");
        assert_eq!(*p.release(c), "c");
        assert!(p.held.iter().all(|h| !h));
    }

    #[test]
    #[should_panic(expected = "an item parked in slot 0")]
    fn a_slot_released_twice_panics() {
        let mut p: Parked<u8> = Parked::new();
        let (a, _) = p.park();
        p.release(a);
        p.release(a);
    }
}
