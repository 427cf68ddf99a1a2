//! The traced process tree: the root child and every task it forks (threads
//! included — `sched_process_fork` fires for both), followed from the event
//! stream itself so no /proc polling is needed.
//!
//! Known approximation: events from CPUs are read one buffer after the
//! other, so a grandchild's first events can, rarely, be read before the
//! fork that created it; they are then not attributed to the tree. Exited
//! tasks are not removed (pid reuse within one run is ignored).

use rustc_hash::FxHashSet;

/// Most tasks tracked (a bound on memory); forks beyond it are not
/// followed and counted in [`ProcessTree::overflow`].
pub const MAX_TASKS: usize = 1 << 16;

/// The set of task ids belonging to the traced program.
#[derive(Clone, Debug, Default)]
pub struct ProcessTree {
    tasks: FxHashSet<u32>,
    /// Forks not followed because [`MAX_TASKS`] was reached.
    pub overflow: u64,
}

impl ProcessTree {
    /// A tree rooted at `root`.
    pub fn new(root: u32) -> Self {
        let mut tasks = FxHashSet::default();
        tasks.insert(root);
        ProcessTree { tasks, overflow: 0 }
    }

    /// Does `pid` belong to the tree?
    pub fn contains(&self, pid: u32) -> bool {
        self.tasks.contains(&pid)
    }

    /// `parent` forked `child`: follow it if the parent is ours. Returns
    /// whether the child was added.
    pub fn on_fork(&mut self, parent: u32, child: u32) -> bool {
        if !self.tasks.contains(&parent) {
            return false;
        }
        if self.tasks.len() >= MAX_TASKS {
            self.overflow += 1;
            return false;
        }
        self.tasks.insert(child)
    }

    /// Number of tasks seen.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Never true: the root is always there.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_forks_of_the_tree_only() {
        let mut t = ProcessTree::new(100);
        assert!(t.on_fork(100, 101)); // child
        assert!(t.on_fork(101, 102)); // grandchild
        assert!(!t.on_fork(7, 8)); // unrelated
        assert!(t.contains(102) && !t.contains(8));
        assert_eq!(t.len(), 3);
    }
}
