//! Two independent pieces of work on the two cores a machine like ours has: the reader's halves of
//! a large node list, the stock reproduction beside the plan's search, the checker's two taggings,
//! the two pieces of a large plan's JSON.
//! Each caller decides from the size of its work whether a second thread pays for its start.

use std::sync::OnceLock;
use std::thread::ScopedJoinHandle;

/// Graphs from this many nodes split planning, checking and writing the plan JSON between two
/// threads. Starting and joining a thread costs 0.1–0.15 ms on the 2-core development VM; at
/// Qwen3.5's 2,898 nodes the stock reproduction (1.4 ms) beside the search (0.4 ms) was 1.09x
/// slower as a whole process, at 10^5 nodes 0.92x, at 10^6 0.89x (docs/performance.md).
pub const BESIDE_FROM_NODES: usize = 50_000;

/// Whether a second thread can run beside this one (asked of the system once).
pub fn two_cores() -> bool {
    static TWO: OnceLock<bool> = OnceLock::new();
    *TWO.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2))
}

/// A scoped thread's result; its panic, if it panicked, goes on in this thread.
pub fn join<T>(handle: ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// `(beside(), here())`: `beside` on a second thread while this one runs `here`, when `worth_it`
/// and the machine has a second core; one after the other otherwise. The results are the same
/// either way: the two must not depend on each other.
pub fn both<A: Send, B>(
    worth_it: bool,
    beside: impl FnOnce() -> A + Send,
    here: impl FnOnce() -> B,
) -> (A, B) {
    if !worth_it || !two_cores() {
        let b = here();
        return (beside(), b);
    }
    std::thread::scope(|scope| {
        let a = scope.spawn(beside);
        let b = here();
        (join(a), b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_gives_the_same_pair_on_one_thread_or_two() {
        let data: Vec<u64> = (0..1000).collect();
        let sum = || data.iter().sum::<u64>();
        let max = || data.iter().max().copied();
        assert_eq!(both(true, sum, max), (499_500, Some(999)));
        assert_eq!(both(false, sum, max), (499_500, Some(999)));
    }

    #[test]
    #[should_panic(expected = "beside")]
    fn a_panic_beside_goes_on_here() {
        both(true, || panic!("beside"), || 1);
    }
}
